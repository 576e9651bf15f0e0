/* test_hooks.h - the test seams of the library and the board, in one list.
 *
 * Each seam is an environment variable DIRLOCK_TEST_<NAME> that only builds
 * compiled with DIRLOCK_TEST_HOOKS read: the hook build of the library and
 * the board (build/hooks/, tests/tests.mk), which the test programs that
 * need a seam link; never what is built for use or installed.  Code asks
 * for one with dl_test_hook(NAME): a name missing from this list does not
 * compile, and outside test builds the answer is NULL and the seam's code
 * is dead.  tests/README.md and the tests that set them point here.
 *
 *   X(NAME, where it acts, what a test does with it)
 */
#ifndef DIRLOCK_TEST_HOOKS_H
#define DIRLOCK_TEST_HOOKS_H

#include <stdlib.h>

#define DL_TEST_HOOK_LIST(X)                                                                                 \
        X(RECHECK_MS, "lib/wait.c",                                                                          \
          "the waiters' re-check interval in ms: a lost wake-up becomes a stall a test cannot miss "         \
          "(tests/rw-wake.t)")                                                                               \
        X(STOP_VICTIM, "lib/dir/deadlock.c, lib/redis/redis_deadlock.c",                                     \
          "a deadlock check that finds its own wait a knot's victim stops (SIGSTOP) before it reports, so "  \
          "that a test shows the other members wait on, untold, and a victim killed there tells nobody "     \
          "(tests/deadlock.t)")                                                                              \
        X(STOP_BEFORE_BREAK, "lib/dir/exclusive.c",                                                          \
          "a breaker stops between its judgement and the removal, so that a test shows a breaker "           \
          "resumed late cannot remove a newer lock (tests/core-crash.t)")                                    \
        X(REDIS_NO_LOCK, "lib/redis/redis_scripts.c",                                                        \
          "the acquire script takes without looking: the counter's twin that must lose updates "             \
          "(tests/core-counter.t)")                                                                          \
        X(REDIS_LAZY_FENCE, "lib/redis/redis_backend.c",                                                     \
          "a fence is drawn late without checking the lock: the twin of the paused-holder test "             \
          "(tests/core-paused.t)")                                                                           \
        X(ETCD_NO_LOCK, "lib/etcd/etcd_queue.c",                                                             \
          "every request may hold, the queue unread: the counter's twin that must lose updates on an etcd "  \
          "space (tests/core-counter.t)")                                                                    \
        X(REDIS_CLOCK_SKEW_MS, "lib/redis/redis_conn.c",                                                     \
          "skews a connection's idea of the server's clock, as a suspended host would "                      \
          "(tests/core-redis.t)")                                                                            \
        X(STOP_AFTER_CHECK, "cgi-bin/store_log.c",                                                           \
          "the one board process that removes the file it names stops between its check and the "            \
          "fence gate, so that a test shows the fence refuses a late write (tests/http-cluster.t)")          \
        X(STOP_BEFORE_VIEW_READ, "cgi-bin/store_log.c",                                                      \
          "the one board process that removes the file it names stops with the log opened and not "          \
          "read, so that a test sees which locks a view holds (tests/unit/test_board_view_lock.c)")          \
        X(STOP_AT, "bin/run.c",                                                                              \
          "the dirlock command stops (SIGSTOP) once its locks are taken, before it looks at the signals "    \
          "that came meanwhile (=taken), or right after it let its command run (=started), so that a "       \
          "test signals it at either moment (tests/core-signals.t)")                                         \
        X(COUNT_HASHES, "cgi-bin/password.c",                                                                \
          "every password checked against a hash appends one byte to the file it names, so that a test "     \
          "counts the hashes concurrent deletes ran (tests/unit/test_board_delete_limit.c)")                 \
        X(DELETE_LIMIT_UNLOCKED, "cgi-bin/board.c",                                                          \
          "a delete counts its attempt without the deletelimit lock: the twin that must let more "           \
          "hashes through than the limit (tests/unit/test_board_delete_limit.c)")

enum dl_test_hook {
#define DL_TEST_HOOK_ENUM(name, where, what) DL_TEST_HOOK_##name,
        DL_TEST_HOOK_LIST(DL_TEST_HOOK_ENUM)
#undef DL_TEST_HOOK_ENUM
            DL_TEST_HOOK_COUNT
};

/* The value of seam NAME (DIRLOCK_TEST_NAME), or NULL: always NULL outside
 * test builds. */
#ifdef DIRLOCK_TEST_HOOKS
#define dl_test_hook(NAME) ((void)DL_TEST_HOOK_##NAME, (const char *)getenv("DIRLOCK_TEST_" #NAME))
#else
#define dl_test_hook(NAME) ((void)DL_TEST_HOOK_##NAME, (const char *)NULL)
#endif

#endif
