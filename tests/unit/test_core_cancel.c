/* test_core_cancel.c - unit tests of waits ended by a cancel descriptor
 * (DIRLOCK_CANCEL_FD) in every mode and in flock, and of a descriptor
 * that is for the acquire call only. */
#include "core_fixture.h"
#include "dirlock_flock.h"
#include "dirlock_rw.h"

struct cancel_later {
        int fd;
        int ms;
};

static void *cancel_later_fn(void *arg)
{
        const struct cancel_later *c = arg;
        usleep((useconds_t)c->ms * 1000);
        uint64_t one = 1;
        if (write(c->fd, &one, sizeof one) != (ssize_t)sizeof one)
                abort();
        return NULL;
}

/* Wait for `name` in `mode` (flock: the kernel lock) with a 5 s timeout
 * and an eventfd written after 100 ms: DIRLOCK_ECANCELED, long before the
 * timeout; and the handle, once acquired, does not keep the descriptor. */
static void cancel_case(const char *name, int mode, int policy, int use_flock)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = DIRLOCK_EXCLUSIVE;
        o.timeout = 0;
        o.flags = DIRLOCK_NO_DEADLOCK; /* stands for another process's hold */
        dirlock *holder = NULL, *b = NULL;
        dirlock_error e;
        int rc = use_flock ? dirlock_flock_acquire(lockdir, name, &o, &holder, &e)
                           : dirlock_acquire(lockdir, name, &o, &holder, &e);
        assert_int_equal(rc, DIRLOCK_OK);
        int efd = eventfd(0, EFD_CLOEXEC);
        assert_true(efd >= 0);
        struct cancel_later c = {efd, 100};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, cancel_later_fn, &c), 0);
        o.mode = mode;
        o.policy = policy;
        o.timeout = 5;
        o.flags = DIRLOCK_CANCEL_FD;
        o.cancel_fd = efd;
        double t0 = now_ms();
        rc = use_flock ? dirlock_flock_acquire(lockdir, name, &o, &b, &e)
                       : dirlock_acquire(lockdir, name, &o, &b, &e);
        double took = now_ms() - t0;
        pthread_join(th, NULL);
        assert_int_equal(rc, DIRLOCK_ECANCELED);
        assert_null(b);
        assert_non_null(strstr(e.message, "cancel"));
        assert_true(took >= 99 && took < 2000);
        /* Already readable: given up at once, still after one try... */
        t0 = now_ms();
        rc = use_flock ? dirlock_flock_acquire(lockdir, name, &o, &b, &e)
                       : dirlock_acquire(lockdir, name, &o, &b, &e);
        assert_int_equal(rc, DIRLOCK_ECANCELED);
        assert_true(now_ms() - t0 < 1000);
        /* ...which wins when the lock is free. */
        assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK);
        rc = use_flock ? dirlock_flock_acquire(lockdir, name, &o, &b, &e)
                       : dirlock_acquire(lockdir, name, &o, &b, &e);
        assert_int_equal(rc, DIRLOCK_OK);
        assert_int_equal(dirlock_release(b, &e), DIRLOCK_OK);
        close(efd);
}

static void test_cancel_fd(void **state)
{
        (void)state;
        cancel_case("cancel-x", DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0);
        cancel_case("cancel-i", DIRLOCK_INTENT, DIRLOCK_POLICY_FAIR, 0);
        cancel_case("cancel-s", DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0);
        cancel_case("cancel-r", DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_READER, 0);
        cancel_case("cancel-f", DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 1);
        /* The flag without a descriptor is refused. */
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_CANCEL_FD;
        o.cancel_fd = -1;
        dirlock *h = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "cancel-bad", &o, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "cancel_fd"));
        /* So is a descriptor that is not open: an argument error at once,
         * not a wait that ends as if canceled. */
        int fd = eventfd(0, EFD_CLOEXEC);
        assert_true(fd >= 0);
        close(fd);
        o.cancel_fd = fd;
        o.timeout = 5;
        dirlock *holder = take("cancel-closed", 0);
        assert_non_null(holder);
        assert_int_equal(dirlock_acquire(lockdir, "cancel-closed", &o, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "not an open descriptor"));
        dirlock_release(holder, NULL);
}

static void *release_later_fn(void *arg)
{
        usleep(150 * 1000);
        dirlock_release(arg, NULL);
        return NULL;
}

/* A cancel descriptor is for the acquire call only: the upgrade of an
 * intent lock taken with one waits for the readers even though the
 * descriptor is readable all along. */
static void test_cancel_fd_not_kept(void **state)
{
        (void)state;
        int efd = eventfd(1, EFD_CLOEXEC); /* readable from the start */
        assert_true(efd >= 0);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = DIRLOCK_INTENT;
        o.timeout = 5;
        o.flags = DIRLOCK_CANCEL_FD;
        o.cancel_fd = efd;
        dirlock *h = NULL, *r = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "keep", &o, &h, &e), DIRLOCK_OK);
        dirlock_options ro = DIRLOCK_OPTIONS_INIT;
        ro.mode = DIRLOCK_SHARED;
        ro.timeout = 0;
        ro.flags = DIRLOCK_NO_DEADLOCK; /* stands for another process's hold */
        assert_int_equal(dirlock_acquire(lockdir, "keep", &ro, &r, &e), DIRLOCK_OK);
        pthread_t th;
        double t0 = now_ms();
        assert_int_equal(pthread_create(&th, NULL, release_later_fn, r), 0);
        assert_int_equal(dirlock_upgrade(h, NULL, &e), DIRLOCK_OK);
        assert_true(now_ms() - t0 >= 100);
        pthread_join(th, NULL);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        close(efd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_cancel_fd),
            cmocka_unit_test(test_cancel_fd_not_kept),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
