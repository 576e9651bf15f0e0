/* test_hooks.h - the names of the test seams of the library and the
 * board, in one list: environment variables DIRLOCK_TEST_<NAME> that only
 * builds with DIRLOCK_TEST_HOOKS read (the test-hook build, tests/tests.mk;
 * never what is installed).  dl_test_hook(NAME) does not compile for a
 * name not listed; outside test builds it is NULL.  Where each acts and
 * which test uses it: tests/README.md, "Test seams". */
#ifndef DIRLOCK_TEST_HOOKS_H
#define DIRLOCK_TEST_HOOKS_H

#include <stdlib.h>

#define DL_TEST_HOOK_LIST(X)                                                                                 \
        X(RECHECK_MS)                                                                                        \
        X(STOP_VICTIM)                                                                                       \
        X(STOP_BEFORE_BREAK)                                                                                 \
        X(REDIS_NO_LOCK)                                                                                     \
        X(REDIS_LAZY_FENCE)                                                                                  \
        X(ETCD_NO_LOCK)                                                                                      \
        X(REDIS_CLOCK_SKEW_MS)                                                                               \
        X(STOP_AFTER_CHECK)                                                                                  \
        X(STOP_BEFORE_VIEW_READ)                                                                             \
        X(STOP_AT)                                                                                           \
        X(KEEPER_END_DELAY_MS)                                                                               \
        X(COUNT_HASHES)                                                                                      \
        X(DELETE_LIMIT_UNLOCKED)

enum dl_test_hook {
#define DL_TEST_HOOK_ENUM(name) DL_TEST_HOOK_##name,
        DL_TEST_HOOK_LIST(DL_TEST_HOOK_ENUM)
#undef DL_TEST_HOOK_ENUM
            DL_TEST_HOOK_COUNT
};

#ifdef DIRLOCK_TEST_HOOKS
#define dl_test_hook(NAME) ((void)DL_TEST_HOOK_##NAME, (const char *)getenv("DIRLOCK_TEST_" #NAME))
#else
#define dl_test_hook(NAME) ((void)DL_TEST_HOOK_##NAME, (const char *)NULL)
#endif

#endif
