/* test_range.c - unit tests of range locks in a directory space
 * (lib/range.c): disjoint ranges never wait, overlapping ones follow the
 * reader-writer rules, whole locks conflict with every range, shrinking
 * lets a waiter in at once, an intent range upgrades, a fair waiting
 * writer holds off new overlapping readers, a killed holder's range is
 * freed at once, and what is refused. */
#include "core_fixture.h"

static dirlock *range(double lo, double hi, int mode, double timeout)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = timeout;
        o.mode = mode;
        dirlock *h = NULL;
        dirlock_error e;
        return dirlock_acquire_range(lockdir, "tree", lo, hi, &o, &h, &e) == DIRLOCK_OK ? h : NULL;
}

static int try_range(double lo, double hi, int mode)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.mode = mode;
        dirlock *h = NULL;
        dirlock_error e;
        int rc = dirlock_acquire_range(lockdir, "tree", lo, hi, &o, &h, &e);
        if (rc == DIRLOCK_OK)
                dirlock_release(h, NULL);
        return rc;
}

static void test_modes_and_overlap(void **state)
{
        (void)state;
        dirlock *x = range(0, 10, DIRLOCK_EXCLUSIVE, 0);
        assert_non_null(x);
        double lo, hi;
        assert_int_equal(dirlock_range_of(x, &lo, &hi), 1);
        assert_true(lo == 0 && hi == 10);
        assert_int_equal(try_range(10, 20, DIRLOCK_EXCLUSIVE), DIRLOCK_OK); /* half-open: no overlap */
        assert_int_equal(try_range(-5, 0, DIRLOCK_EXCLUSIVE), DIRLOCK_OK);
        assert_int_equal(try_range(9.5, 11, DIRLOCK_SHARED), DIRLOCK_EBUSY);
        assert_int_equal(try_range(2, 3, DIRLOCK_INTENT), DIRLOCK_EBUSY);
        dirlock_release(x, NULL);
        dirlock *s = range(0, 10, DIRLOCK_SHARED, 0), *i = range(5, 15, DIRLOCK_INTENT, 0);
        assert_non_null(s);
        assert_non_null(i);                                                 /* intent and readers mix */
        assert_int_equal(try_range(1, 2, DIRLOCK_SHARED), DIRLOCK_OK);      /* readers share */
        assert_int_equal(try_range(14, 16, DIRLOCK_INTENT), DIRLOCK_EBUSY); /* intents do not */
        assert_int_equal(try_range(15, 16, DIRLOCK_INTENT), DIRLOCK_OK);
        assert_int_equal(try_range(0, 1, DIRLOCK_EXCLUSIVE), DIRLOCK_EBUSY);
        dirlock_release(s, NULL);
        dirlock_release(i, NULL);
}

/* A whole lock of the name conflicts with every range, whatever the modes. */
static void test_whole_lock(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.mode = DIRLOCK_SHARED;
        dirlock *whole = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "tree", &o, &whole, &e), DIRLOCK_OK);
        assert_int_equal(try_range(0, 1, DIRLOCK_SHARED), DIRLOCK_EBUSY);
        dirlock_release(whole, NULL);
        dirlock *r = range(100, 101, DIRLOCK_SHARED, 0);
        assert_non_null(r);
        assert_int_equal(dirlock_acquire(lockdir, "tree", &o, &whole, &e), DIRLOCK_EBUSY);
        o.mode = DIRLOCK_EXCLUSIVE;
        assert_int_equal(dirlock_acquire(lockdir, "tree", &o, &whole, &e), DIRLOCK_EBUSY);
        dirlock_release(r, NULL);
        assert_int_equal(dirlock_acquire(lockdir, "tree", &o, &whole, &e), DIRLOCK_OK);
        dirlock_release(whole, NULL);
}

struct later {
        dirlock *h;
        double lo, hi; /* shrink to this; release when lo == hi */
        long ms;
};

static void *later_fn(void *arg)
{
        struct later *l = arg;
        sleep_ms(l->ms);
        if (l->lo == l->hi)
                dirlock_release(l->h, NULL);
        else
                dirlock_shrink(l->h, l->lo, l->hi, NULL);
        return NULL;
}

/* Shrinking lets a waiter that no longer overlaps in at once. */
static void test_shrink(void **state)
{
        (void)state;
        dirlock *big = range(0, 100, DIRLOCK_EXCLUSIVE, 0);
        assert_non_null(big);
        dirlock_error e;
        assert_int_equal(dirlock_shrink(big, -1, 50, &e), DIRLOCK_EINVAL); /* never grows */
        assert_int_equal(dirlock_shrink(big, 10, 10, &e), DIRLOCK_EINVAL);
        struct later l = {big, 0, 40, 150};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, later_fn, &l), 0);
        double t0 = now_ms();
        dirlock *w = range(60, 70, DIRLOCK_EXCLUSIVE, 5);
        double waited = now_ms() - t0;
        pthread_join(th, NULL);
        assert_non_null(w);
        assert_true(waited >= 100 && waited < 2000);
        assert_int_equal(try_range(30, 41, DIRLOCK_SHARED), DIRLOCK_EBUSY); /* still holds [0, 40) */
        assert_int_equal(try_range(40, 50, DIRLOCK_SHARED), DIRLOCK_OK);
        dirlock_release(big, NULL);
        dirlock_release(w, NULL);
}

/* An intent range upgrades once the overlapping readers are gone; new
 * overlapping readers wait meanwhile; a read range cannot upgrade. */
static void test_upgrade(void **state)
{
        (void)state;
        dirlock *i = range(0, 10, DIRLOCK_INTENT, 0), *r = range(5, 6, DIRLOCK_SHARED, 0);
        assert_non_null(i);
        assert_non_null(r);
        dirlock_error e;
        assert_int_equal(dirlock_upgrade(r, NULL, &e), DIRLOCK_EUPGRADE);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0.2;
        assert_int_equal(dirlock_upgrade(i, &o, &e), DIRLOCK_ETIMEDOUT); /* the reader stays */
        assert_int_equal(dirlock_mode_of(i), DIRLOCK_INTENT);
        assert_int_equal(try_range(7, 8, DIRLOCK_SHARED), DIRLOCK_OK); /* back to intent */
        struct later l = {r, 0, 0, 150};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, later_fn, &l), 0);
        o.timeout = 5;
        assert_int_equal(dirlock_upgrade(i, &o, &e), DIRLOCK_OK);
        pthread_join(th, NULL);
        assert_int_equal(dirlock_mode_of(i), DIRLOCK_EXCLUSIVE);
        assert_int_equal(try_range(7, 8, DIRLOCK_SHARED), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_downgrade(i, &e), DIRLOCK_OK);
        assert_int_equal(try_range(7, 8, DIRLOCK_SHARED), DIRLOCK_OK);
        dirlock_release(i, NULL);
}

/* fair: a writer waiting for a reader holds off new overlapping readers
 * (and not the disjoint ones). */
static void test_fair_reservation(void **state)
{
        (void)state;
        dirlock *r = range(0, 10, DIRLOCK_SHARED, 0);
        assert_non_null(r);
        pid_t pid = fork();
        if (pid == 0) {
                dirlock *w = range(5, 15, DIRLOCK_EXCLUSIVE, 60);
                _exit(w != NULL && dirlock_release(w, NULL) == DIRLOCK_OK ? 0 : 1);
        }
        /* The writer waits, with its reservation (slow machines: poll). */
        bool reserved = false;
        for (int i = 0; i < 1000 && !reserved; i++) {
                dirlock_range_info *list;
                size_t n;
                assert_int_equal(dirlock_ranges(lockdir, "tree", &list, &n, NULL), DIRLOCK_OK);
                for (size_t k = 0; k < n; k++)
                        reserved |= list[k].waiting && list[k].mode == DIRLOCK_EXCLUSIVE;
                free(list);
                if (!reserved)
                        sleep_ms(10);
        }
        assert_true(reserved);
        assert_int_equal(try_range(8, 9, DIRLOCK_SHARED), DIRLOCK_EBUSY);
        assert_int_equal(try_range(20, 30, DIRLOCK_SHARED), DIRLOCK_OK);
        dirlock_release(r, NULL);
        int status;
        waitpid(pid, &status, 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(try_range(8, 9, DIRLOCK_SHARED), DIRLOCK_OK);
}

/* A SIGKILLed holder's range is free at once for a waiter on this host. */
static void test_killed_holder(void **state)
{
        (void)state;
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        if (pid == 0) {
                dirlock *h = range(0, 10, DIRLOCK_EXCLUSIVE, 0);
                char c = h ? 'y' : 'n';
                if (write(p[1], &c, 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        char c;
        assert_int_equal(read(p[0], &c, 1), 1);
        assert_int_equal(c, 'y');
        assert_int_equal(try_range(5, 6, DIRLOCK_SHARED), DIRLOCK_EBUSY);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        double t0 = now_ms();
        dirlock *h = range(5, 6, DIRLOCK_EXCLUSIVE, 5);
        assert_non_null(h);
        assert_true(now_ms() - t0 < 1000);
        unsigned long long f1, f2;
        assert_int_equal(dirlock_fence(h, &f1, NULL), DIRLOCK_OK); /* range locks have fences */
        dirlock_release(h, NULL);
        h = range(5, 6, DIRLOCK_EXCLUSIVE, 5);
        assert_int_equal(dirlock_fence(h, &f2, NULL), DIRLOCK_OK);
        assert_true(f2 > f1);
        dirlock_release(h, NULL);
        close(p[0]);
        close(p[1]);
}

static void test_refused(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *h = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_range(lockdir, "tree", 5, 5, &o, &h, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_acquire_range(lockdir, "tree", 6, 5, &o, &h, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_acquire_range(lockdir, "tree", 0, 1.0 / 0.0, &o, &h, &e), DIRLOCK_EINVAL);
        o.flags = DIRLOCK_REENTRANT;
        assert_int_equal(dirlock_acquire_range(lockdir, "tree", 0, 1, &o, &h, &e), DIRLOCK_EINVAL);
        o.flags = 0;
        char flock_space[300];
        snprintf(flock_space, sizeof flock_space, "flock:%s", lockdir);
        assert_int_equal(dirlock_acquire_range(flock_space, "tree", 0, 1, &o, &h, &e), DIRLOCK_EINVAL);
        dirlock *whole = take("plain", 0);
        assert_int_equal(dirlock_shrink(whole, 0, 1, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_range_of(whole, NULL, NULL), 0);
        dirlock_release(whole, NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_modes_and_overlap),
            cmocka_unit_test(test_whole_lock),
            cmocka_unit_test(test_shrink),
            cmocka_unit_test(test_upgrade),
            cmocka_unit_test(test_fair_reservation),
            cmocka_unit_test(test_killed_holder),
            cmocka_unit_test(test_refused),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
