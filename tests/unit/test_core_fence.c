/* test_core_fence.c - unit tests of fences in a directory space
 * (lib/dir/dir_fence.c, docs/fencing.md): they grow with every acquisition,
 * whoever takes the lock; a holder whose lock was broken gets none; they
 * do not go back when the counter is removed or rolled back; they stop
 * at DIRLOCK_FENCE_MAX, and a counter past it is refused; concurrent
 * readers get distinct ones; flock spaces have none. */
#include "core_fixture.h"
#include "dirlock_fence.h"
#include "dirlock_flock.h"

#include <sys/mman.h>

static unsigned long long fence_of(dirlock *h)
{
        unsigned long long f = 0;
        dirlock_error e;
        assert_int_equal(dirlock_fence(h, &f, &e), DIRLOCK_OK);
        return f;
}

static void test_fences_grow(void **state)
{
        (void)state;
        unsigned long long prev = 0;
        for (int i = 0; i < 20; i++) {
                dirlock *h = take("grow", 0);
                assert_non_null(h);
                unsigned long long f = fence_of(h);
                assert_true(f > prev);
                assert_int_equal(fence_of(h), f); /* the same for the handle */
                prev = f;
                assert_int_equal(dirlock_release(h, NULL), DIRLOCK_OK);
        }
}

/* A holder stopped past its stale age: its successor's fence is higher,
 * and the late holder gets none. */
static void test_paused_holder(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.stale_age = 0.2;
        dirlock *a = NULL, *b = NULL, *a2 = NULL, *b2 = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "paused", &o, &a, &e), DIRLOCK_OK);
        unsigned long long fa = fence_of(a);
        assert_int_equal(dirlock_acquire(lockdir, "paused2", &o, &a2, &e), DIRLOCK_OK);
        sleep_ms(300); /* both unrefreshed past their stale age */
        assert_int_equal(dirlock_acquire(lockdir, "paused", &o, &b, &e), DIRLOCK_OK);
        unsigned long long fb = fence_of(b);
        assert_true(fb > fa);
        assert_int_equal(dirlock_acquire(lockdir, "paused2", &o, &b2, &e), DIRLOCK_OK);
        unsigned long long f;
        assert_int_equal(dirlock_fence(a2, &f, &e), DIRLOCK_ELOST); /* never drew: gets none */
        assert_int_equal(dirlock_release(a, NULL), DIRLOCK_ELOST);
        assert_int_equal(dirlock_release(a2, NULL), DIRLOCK_ELOST);
        dirlock_release(b, NULL);
        dirlock_release(b2, NULL);
}

/* The counter removed, or set back: fences still grow (the clock term). */
static void test_counter_lost(void **state)
{
        (void)state;
        dirlock *h = take("lost", 0);
        unsigned long long f1 = fence_of(h);
        dirlock_release(h, NULL);
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s/lost.fence'", lockdir);
        assert_int_equal(system(cmd), 0);
        h = take("lost", 0);
        unsigned long long f2 = fence_of(h);
        assert_true(f2 > f1);
        dirlock_release(h, NULL);
        snprintf(cmd, sizeof cmd, "cd '%s/lost.fence' && mv * 00000000000000000007", lockdir);
        assert_int_equal(system(cmd), 0);
        h = take("lost", 0);
        assert_true(fence_of(h) > f2);
        dirlock_release(h, NULL);
}

/* The counter of lock `name` set to one entry named `leaf`. */
static void set_counter(const char *name, const char *leaf)
{
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s/%s.fence' && mkdir '%s/%s.fence' && touch '%s/%s.fence/%s'",
                 lockdir, name, lockdir, name, lockdir, name, leaf);
        assert_int_equal(system(cmd), 0);
}

/* The fence of a new acquisition of `name`: its code, and the message. */
static int draw(const char *name, unsigned long long *f, dirlock_error *e)
{
        dirlock *h = take(name, 0);
        assert_non_null(h);
        *f = 0;
        int rc = dirlock_fence(h, f, e);
        assert_int_equal(dirlock_release(h, NULL), DIRLOCK_OK);
        return rc;
}

/* Fences stop at DIRLOCK_FENCE_MAX: the last one is handed out once, and
 * a counter at or past it -- or one that names no number -- is corrupt
 * data, never a fence given before (nor 0). */
static void test_counter_limit(void **state)
{
        (void)state;
        unsigned long long f;
        dirlock_error e;
        set_counter("limit", "00009007199254740990");
        assert_int_equal(draw("limit", &f, &e), DIRLOCK_OK);
        assert_true(f == DIRLOCK_FENCE_MAX);
        assert_int_equal(draw("limit", &f, &e), DIRLOCK_EDATA);
        assert_non_null(strstr(e.message, "9007199254740991, the largest fence"));
        static const char *const corrupt[] = {"00009007199254740992", "99999999999999999999",
                                              "18446744073709551615", "junk"};
        for (size_t i = 0; i < sizeof corrupt / sizeof corrupt[0]; i++) {
                set_counter("limit", corrupt[i]);
                f = 0;
                if (draw("limit", &f, &e) != DIRLOCK_EDATA)
                        fail_msg("counter %s: fence %llu (%s)", corrupt[i], f, e.message);
                assert_non_null(strstr(e.message, "not a counter dirlock wrote"));
        }
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s/limit.fence'", lockdir);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(draw("limit", &f, &e), DIRLOCK_OK); /* removed: from the clock again */
        assert_true(f > 1000000000000000ULL && f < DIRLOCK_FENCE_MAX);
}

/* Shared holders at the same time draw distinct fences; flock has none. */
static void test_readers_and_flock(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.mode = DIRLOCK_SHARED;
        dirlock *r1 = NULL, *r2 = NULL, *f = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "shared", &o, &r1, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire(lockdir, "shared", &o, &r2, &e), DIRLOCK_OK);
        unsigned long long a = fence_of(r1), b = fence_of(r2);
        assert_true(a != 0 && b > a);
        dirlock_release(r1, NULL);
        dirlock_release(r2, NULL);
        o.mode = DIRLOCK_EXCLUSIVE;
        assert_int_equal(dirlock_flock_acquire(lockdir, "flocked", &o, &f, &e), DIRLOCK_OK);
        unsigned long long x;
        assert_int_equal(dirlock_fence(f, &x, &e), DIRLOCK_EINVAL);
        dirlock_release(f, NULL);
}

/* 6 processes x 50 acquisitions: in the order the lock was held, every
 * fence is higher than the one before. */
#define PROCS  6
#define ROUNDS 50
static void test_order_across_processes(void **state)
{
        (void)state;
        struct log {
                long n;
                unsigned long long fence[PROCS * ROUNDS];
        } *lg = mmap(NULL, sizeof *lg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(lg != MAP_FAILED);
        lg->n = 0;
        for (int p = 0; p < PROCS; p++) {
                if (fork() != 0)
                        continue;
                for (int i = 0; i < ROUNDS; i++) {
                        dirlock *h = NULL;
                        dirlock_options o = DIRLOCK_OPTIONS_INIT;
                        o.timeout = 30;
                        unsigned long long f;
                        if (dirlock_acquire(lockdir, "order", &o, &h, NULL) != DIRLOCK_OK ||
                            dirlock_fence(h, &f, NULL) != DIRLOCK_OK)
                                _exit(1);
                        lg->fence[lg->n++] = f; /* under the lock: in holding order */
                        dirlock_release(h, NULL);
                }
                _exit(0);
        }
        int status, failed = 0;
        while (wait(&status) > 0)
                failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        assert_false(failed);
        assert_int_equal(lg->n, PROCS * ROUNDS);
        for (long i = 1; i < lg->n; i++)
                assert_true(lg->fence[i] > lg->fence[i - 1]);
        munmap(lg, sizeof *lg);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_fences_grow),       cmocka_unit_test(test_paused_holder),
            cmocka_unit_test(test_counter_lost),      cmocka_unit_test(test_counter_limit),
            cmocka_unit_test(test_readers_and_flock), cmocka_unit_test(test_order_across_processes),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
