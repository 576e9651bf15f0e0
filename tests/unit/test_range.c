/* test_range.c - unit tests of range locks, run twice: in a directory
 * space (lib/dir/range.c) and on a private redis-server (lib/redis/redis_range.c)
 * that this program starts on a unix socket in its directory and kills at
 * the end (that group is skipped, saying why, when redis-server is not
 * installed or the library was built without Redis support): disjoint
 * ranges never wait, overlapping ones follow the reader-writer rules,
 * whole locks conflict with every range both ways and a waiter of either
 * kind gets in when the other lets go, shrinking lets a waiter in at once,
 * an intent range upgrades, a fair waiting writer holds off new
 * overlapping readers and readers queued before a writer go before it, a
 * killed holder's range is freed at once, a cancel descriptor ends a
 * wait and its reservation, what is refused, and the text form of a
 * range (dirlock_range_parse): its grammar, and that what it accepts the
 * space takes. */
#include "dirlock_fence.h"
#include "dirlock_range.h"
#include "dirlock_rw.h"
#include "space_fixture.h"

/* The holds of one thread here stand for those of several, handed to
 * other threads to let go (the file's subject is ranges, not deadlocks):
 * DIRLOCK_NO_DEADLOCK. */
static dirlock *range(double lo, double hi, int mode, double timeout)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = timeout;
        o.mode = mode;
        o.flags = DIRLOCK_NO_DEADLOCK;
        dirlock *h = NULL;
        dirlock_error e;
        return dirlock_acquire_range(space, "tree", lo, hi, &o, &h, &e) == DIRLOCK_OK ? h : NULL;
}

static int try_range(double lo, double hi, int mode)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.mode = mode;
        dirlock *h = NULL;
        dirlock_error e;
        int rc = dirlock_acquire_range(space, "tree", lo, hi, &o, &h, &e);
        if (rc == DIRLOCK_OK)
                dirlock_release(h, NULL);
        return rc;
}

static void test_modes_and_overlap(void **state)
{
        (void)state;
        NEED_SPACE();
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
        NEED_SPACE();
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.mode = DIRLOCK_SHARED;
        dirlock *whole = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(space, "tree", &o, &whole, &e), DIRLOCK_OK);
        assert_int_equal(try_range(0, 1, DIRLOCK_SHARED), DIRLOCK_EBUSY);
        dirlock_release(whole, NULL);
        dirlock *r = range(100, 101, DIRLOCK_SHARED, 0);
        assert_non_null(r);
        assert_int_equal(dirlock_acquire(space, "tree", &o, &whole, &e), DIRLOCK_EBUSY);
        o.mode = DIRLOCK_EXCLUSIVE;
        assert_int_equal(dirlock_acquire(space, "tree", &o, &whole, &e), DIRLOCK_EBUSY);
        dirlock_release(r, NULL);
        assert_int_equal(dirlock_acquire(space, "tree", &o, &whole, &e), DIRLOCK_OK);
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
        NEED_SPACE();
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
        NEED_SPACE();
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
        /* upgraded intent range -> intent: readers share it again, writers
         * and intents still wait */
        i = range(0, 10, DIRLOCK_INTENT, 0);
        assert_non_null(i);
        assert_int_equal(dirlock_upgrade(i, &o, &e), DIRLOCK_OK);
        assert_int_equal(try_range(7, 8, DIRLOCK_SHARED), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_downgrade_intent(i, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_mode_of(i), DIRLOCK_INTENT);
        assert_int_equal(try_range(7, 8, DIRLOCK_SHARED), DIRLOCK_OK);
        assert_int_equal(try_range(7, 8, DIRLOCK_EXCLUSIVE), DIRLOCK_EBUSY);
        assert_int_equal(try_range(7, 8, DIRLOCK_INTENT), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_upgrade(i, &o, &e), DIRLOCK_OK);
        assert_int_equal(try_range(7, 8, DIRLOCK_SHARED), DIRLOCK_EBUSY);
        dirlock_release(i, NULL);
}

struct whole_later {
        dirlock *h;
        long ms;
};

static void *release_later(void *arg)
{
        struct whole_later *l = arg;
        sleep_ms(l->ms);
        dirlock_release(l->h, NULL);
        return NULL;
}

/* A waiter of either kind gets in, promptly, when the other kind lets go. */
static void test_whole_and_range_wait(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock *r = range(0, 1, DIRLOCK_SHARED, 0);
        assert_non_null(r);
        struct whole_later l = {r, 150};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, release_later, &l), 0);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 5;
        o.mode = DIRLOCK_SHARED;
        o.flags = DIRLOCK_NO_DEADLOCK; /* handed to another thread to let go */
        dirlock *whole = NULL;
        dirlock_error e;
        double t0 = now_ms();
        assert_int_equal(dirlock_acquire(space, "tree", &o, &whole, &e), DIRLOCK_OK);
        double waited = now_ms() - t0;
        pthread_join(th, NULL);
        assert_true(waited >= 100 && waited < 2000);
        l.h = whole;
        assert_int_equal(pthread_create(&th, NULL, release_later, &l), 0);
        t0 = now_ms();
        dirlock *r2 = range(50, 60, DIRLOCK_EXCLUSIVE, 5);
        waited = now_ms() - t0;
        pthread_join(th, NULL);
        assert_non_null(r2);
        assert_true(waited >= 100 && waited < 2000);
        dirlock_release(r2, NULL);
}

struct timed {
        double lo, hi;
        int mode;
        long hold_ms;
        double got, done; /* when it acquired and released (now_ms), -1: failed */
};

static void *take_timed(void *arg)
{
        struct timed *t = arg;
        dirlock *h = range(t->lo, t->hi, t->mode, 10);
        t->got = h ? now_ms() : -1;
        sleep_ms(t->hold_ms);
        t->done = now_ms();
        if (h)
                dirlock_release(h, NULL);
        return NULL;
}

/* Wait until `n` reservations (waiting entries) of mode `mode` are listed. */
static bool reserved(size_t n, int mode)
{
        for (int i = 0; i < 1000; i++) {
                dirlock_range_info *list;
                size_t count, got = 0;
                if (dirlock_ranges(space, "tree", &list, &count, NULL) != DIRLOCK_OK)
                        return false;
                for (size_t k = 0; k < count; k++)
                        got += list[k].waiting && list[k].mode == mode;
                free(list);
                if (got >= n)
                        return true;
                sleep_ms(5);
        }
        return false;
}

/* fair, the other side: a reader queued behind a writer goes before a
 * writer that queued after it (writers do not lock readers out). */
static void test_fair_readers_not_locked_out(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock *w1 = range(0, 10, DIRLOCK_EXCLUSIVE, 0);
        assert_non_null(w1);
        struct timed rd = {2, 8, DIRLOCK_SHARED, 200, 0, 0}, w2 = {0, 10, DIRLOCK_EXCLUSIVE, 0, 0, 0};
        pthread_t a, b;
        assert_int_equal(pthread_create(&a, NULL, take_timed, &rd), 0);
        assert_true(reserved(1, DIRLOCK_SHARED));
        assert_int_equal(pthread_create(&b, NULL, take_timed, &w2), 0);
        assert_true(reserved(1, DIRLOCK_EXCLUSIVE));
        dirlock_release(w1, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        assert_true(rd.got > 0 && w2.got > 0);
        assert_true(w2.got >= rd.done - 1); /* the writer only after the reader */
}

/* fair: a writer waiting for a reader holds off new overlapping readers
 * (and not the disjoint ones). */
static void test_fair_reservation(void **state)
{
        (void)state;
        NEED_SPACE();
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
                assert_int_equal(dirlock_ranges(space, "tree", &list, &n, NULL), DIRLOCK_OK);
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
        NEED_SPACE();
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        if (pid == 0) {
                dirlock *h = range(0, 10, DIRLOCK_EXCLUSIVE, 0);
                char c = h ? 'y' : 'n';
                if (write(p[1], &c, 1) != 1 || h == NULL)
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

/* A range waiter ends promptly when its cancel descriptor fires, and its
 * reservation goes with it (a new overlapping reader is not held off). */
static void test_cancel(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock *r = range(0, 10, DIRLOCK_SHARED, 0);
        assert_non_null(r);
        int efd = eventfd(0, EFD_CLOEXEC);
        assert_true(efd >= 0);
        pid_t pid = fork();
        if (pid == 0) {
                sleep_ms(300);
                uint64_t one = 1;
                _exit(write(efd, &one, sizeof one) == sizeof one ? 0 : 1);
        }
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 30;
        o.mode = DIRLOCK_EXCLUSIVE;
        o.flags = DIRLOCK_CANCEL_FD;
        o.cancel_fd = efd;
        dirlock *w = NULL;
        dirlock_error e;
        double t0 = now_ms();
        assert_int_equal(dirlock_acquire_range(space, "tree", 5, 15, &o, &w, &e), DIRLOCK_ECANCELED);
        double waited = now_ms() - t0;
        waitpid(pid, NULL, 0);
        assert_true(waited >= 200 && waited < 5000);
        assert_non_null(strstr(e.message, "cancel"));
        assert_int_equal(try_range(8, 9, DIRLOCK_SHARED), DIRLOCK_OK); /* no reservation left */
        close(efd);
        dirlock_release(r, NULL);
}

static void test_refused(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *h = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_range(space, "tree", 5, 5, &o, &h, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_acquire_range(space, "tree", 6, 5, &o, &h, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_acquire_range(space, "tree", 0, 1.0 / 0.0, &o, &h, &e), DIRLOCK_EINVAL);
        o.flags = DIRLOCK_REENTRANT;
        assert_int_equal(dirlock_acquire_range(space, "tree", 0, 1, &o, &h, &e), DIRLOCK_EINVAL);
        o.flags = 0;
        char flock_space[300];
        snprintf(flock_space, sizeof flock_space, "flock:%s", lockdir);
        assert_int_equal(dirlock_acquire_range(flock_space, "tree", 0, 1, &o, &h, &e), DIRLOCK_EINVAL);
        dirlock *whole = NULL;
        assert_int_equal(dirlock_acquire(space, "plain", &o, &whole, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_shrink(whole, 0, 1, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_range_of(whole, NULL, NULL), 0);
        dirlock_release(whole, NULL);
}

/* The text form of a range (dirlock_range_parse): the grammar's edges,
 * and every text it accepts is a range the space takes. */
static void test_range_text(void **state)
{
        (void)state;
        NEED_SPACE();
        static const struct {
                const char *text;
                double lo, hi;
        } good[] = {
            {"0:10", 0, 10},
            {"-1.5:2e3", -1.5, 2000},
            {"1e-320:2e-320", 1e-320, 2e-320},
            {".5:1.", 0.5, 1},
            {"+1:+2", 1, 2},
            {"1E2:1e+3", 100, 1000},
            {"-0:1", 0, 1},
            {"1e-400:1", 0, 1},
            {"-5e-324:5e-324", -5e-324, 5e-324},
            {"0.1:0.30000000000000004", 0.1, 0.30000000000000004},
        };
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock_error e;
        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
                double lo = -7, hi = -7;
                int rc = dirlock_range_parse(good[i].text, &lo, &hi, &e);
                if (rc != DIRLOCK_OK)
                        fail_msg("'%s' refused: %s", good[i].text, e.message);
                assert_true(lo == good[i].lo && hi == good[i].hi);
                dirlock *h = NULL;
                if (dirlock_acquire_range(space, "text", lo, hi, &o, &h, &e) != DIRLOCK_OK)
                        fail_msg("'%s' parsed, but the space refused it: %s", good[i].text, e.message);
                assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        }
        static const char *const bad[] = {
            " 1:2",  "1:2 ",  "1 :2",        "1: 2",     "\t1:2",   "1:2\n", "0x1:2", "1:0x2",
            "inf:1", "0:inf", "nan:1",       "1:",       ":1",      "1",     "",      "1:2:3",
            "1e:2",  "1:2e",  "1e+:2",       "2:1",      "1:1",     "-0:0",  ".:1",   "1..:2",
            "--1:2", "1,5:2", "1e400:1e401", "-1e400:0", "0:1e309", "1:2x",  "1;2",   "１:２",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                double lo = -7, hi = -7;
                e.message[0] = '\0';
                if (dirlock_range_parse(bad[i], &lo, &hi, &e) != DIRLOCK_EINVAL)
                        fail_msg("'%s' accepted as [%g, %g)", bad[i], lo, hi);
                assert_int_equal(e.code, DIRLOCK_EINVAL);
                assert_non_null(strstr(e.message, "invalid range"));
                assert_true(lo == -7 && hi == -7); /* left alone */
        }
        assert_int_equal(dirlock_range_parse("1:2e400", &(double){0}, &(double){0}, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "HI (2e400) is too large"));
        assert_int_equal(dirlock_range_parse("3:2", &(double){0}, &(double){0}, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "LO must be below HI"));
        assert_int_equal(dirlock_range_parse(NULL, &(double){0}, &(double){0}, &e), DIRLOCK_EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup(test_modes_and_overlap, fresh),
            cmocka_unit_test_setup(test_whole_lock, fresh),
            cmocka_unit_test_setup(test_shrink, fresh),
            cmocka_unit_test_setup(test_upgrade, fresh),
            cmocka_unit_test_setup(test_whole_and_range_wait, fresh),
            cmocka_unit_test_setup(test_fair_reservation, fresh),
            cmocka_unit_test_setup(test_fair_readers_not_locked_out, fresh),
            cmocka_unit_test_setup(test_killed_holder, fresh),
            cmocka_unit_test_setup(test_cancel, fresh),
            cmocka_unit_test_setup(test_refused, fresh),
            cmocka_unit_test_setup(test_range_text, fresh),
        };
        int failed = cmocka_run_group_tests_name("directory space", tests, dir_setup, teardown);
        return failed + cmocka_run_group_tests_name("Redis space", tests, redis_setup, redis_teardown);
}
