/* test_core_stale.c - unit tests of a lock's age and staleness: inspect
 * and refresh, the age counted from the last change (INVARIANT C of
 * exclusive.c), a judge waiting the holder's own recorded stale age, and
 * a lock directory holding foreign files. */
#include "core_fixture.h"

static void test_inspect_and_refresh(void **state)
{
        (void)state;
        dirlock_options opts = DIRLOCK_OPTIONS_INIT;
        opts.timeout = 0;
        opts.stale_age = 0.2;
        dirlock *a = NULL;
        assert_int_equal(dirlock_acquire(lockdir, "seen", &opts, &a, NULL), DIRLOCK_OK);
        dirlock_owner o;
        dirlock_error e;
        assert_int_equal(dirlock_inspect(lockdir, "seen", 0, &o, &e), DIRLOCK_OK);
        assert_int_equal(o.pid, getpid());
        assert_int_equal(o.start_time, dl_process_start_time(getpid()));
        assert_int_equal(o.owner_alive, 1);
        assert_int_equal(o.same_host, 1);
        assert_false(o.stale);
        assert_string_equal(o.token, dirlock_token(a));
        assert_true(o.age >= 0 && o.age < 0.1);
        assert_int_equal(o.mode, DIRLOCK_EXCLUSIVE);
        /* Unrefreshed, it ages; refresh renews it. */
        sleep_ms(300);
        assert_int_equal(dirlock_inspect(lockdir, "seen", 0.2, &o, &e), DIRLOCK_OK);
        assert_true(o.age > 0.25);
        assert_true(o.stale);
        assert_int_equal(dirlock_refresh(a, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_inspect(lockdir, "seen", 0.2, &o, &e), DIRLOCK_OK);
        assert_true(o.age < 0.1);
        assert_false(o.stale);
        /* An mtime set into the past does not age a lock: the age counts
         * from the entry's last change (its ctime), INVARIANT C. */
        char path[512];
        snprintf(path, sizeof path, "%s/seen.lock/owner.%s", lockdir, dirlock_token(a));
        struct timespec old[2] = {{time(NULL) - 1000, 0}, {time(NULL) - 1000, 0}};
        assert_int_equal(utimensat(AT_FDCWD, path, old, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(dirlock_inspect(lockdir, "seen", 0.2, &o, &e), DIRLOCK_OK);
        assert_true(o.age < 0.1);
        dirlock_release(a, NULL);
}

/* A judge with a shorter stale age still waits the holder's own. */
static void test_recorded_stale_age(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.stale_age = 0.8;
        dirlock *a;
        assert_int_equal(dirlock_acquire(lockdir, "long", &o, &a, NULL), DIRLOCK_OK);
        sleep_ms(400); /* older than the judge's 0.2 s, younger than its own 0.8 s */
        dirlock *b = NULL;
        o.stale_age = 0.2;
        assert_int_equal(dirlock_acquire(lockdir, "long", &o, &b, NULL), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_check(a, NULL), DIRLOCK_OK);
        sleep_ms(500); /* older than the holder's own 0.8 s */
        assert_int_equal(dirlock_acquire(lockdir, "long", &o, &b, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_release(a, NULL), DIRLOCK_ELOST);
        dirlock_release(b, NULL);
}

/* A lock directory holding files that are not an owner record: busy while
 * young; once stale, exactly those files go and the lock is taken. */
static void test_foreign_content(void **state)
{
        (void)state;
        char path[512];
        snprintf(path, sizeof path, "%s/foreign.lock", lockdir);
        assert_int_equal(mkdir(path, 0777), 0);
        snprintf(path, sizeof path, "%s/foreign.lock/junk", lockdir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.stale_age = 0.2;
        dirlock *h = NULL;
        assert_int_equal(dirlock_acquire(lockdir, "foreign", &o, &h, NULL), DIRLOCK_EBUSY);
        dirlock_owner own;
        assert_int_equal(dirlock_inspect(lockdir, "foreign", 0.2, &own, NULL), DIRLOCK_OK);
        assert_int_equal(own.pid, 0);
        dirlock_error e;
        assert_int_equal(dirlock_break(lockdir, "foreign", 0.2, 0, &e), DIRLOCK_ELIVE);
        sleep_ms(300);
        assert_int_equal(dirlock_acquire(lockdir, "foreign", &o, &h, NULL), DIRLOCK_OK);
        snprintf(path, sizeof path, "%s/foreign.lock/junk", lockdir);
        struct stat st;
        assert_int_not_equal(lstat(path, &st), 0);
        assert_int_equal(dirlock_release(h, NULL), DIRLOCK_OK);
        /* An empty lock directory is free: break says so and tidies it. */
        snprintf(path, sizeof path, "%s/empty.lock", lockdir);
        assert_int_equal(mkdir(path, 0777), 0);
        assert_int_equal(dirlock_break(lockdir, "empty", 0, 1, &e), DIRLOCK_ENOLOCK);
        assert_int_not_equal(lstat(path, &st), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_inspect_and_refresh),
            cmocka_unit_test(test_recorded_stale_age),
            cmocka_unit_test(test_foreign_content),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
