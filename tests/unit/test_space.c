/* test_space.c - unit tests of lock spaces (lib/core/space.c, backend.h):
 * the space string picks the backend (a directory, flock:DIR, an unknown
 * scheme refused), every public call goes through the backend, a flock:
 * space refuses what flock(2) cannot keep, dirlock_list() lists the
 * locks of a space with their owners, and a process is named by its pid
 * and start time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dirlock.h"
#include "dirlock_flock.h"
#include "dirlock_rw.h"
#include "open_fds.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char lockdir[256], flockspace[300];

static int setup(void **state)
{
        (void)state;
        snprintf(lockdir, sizeof lockdir, "%s/dirlock-space.XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(lockdir) == NULL)
                return -1;
        snprintf(flockspace, sizeof flockspace, "flock:%s", lockdir);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", lockdir);
        return system(cmd) == 0 ? 0 : -1;
}

/* "flock:DIR" through dirlock_acquire is the same lock as
 * dirlock_flock_acquire on DIR, and not the directory lock of DIR. */
static void test_flock_space(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *a = NULL, *b = NULL, *c = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(flockspace, "k", &o, &a, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_flock_acquire(lockdir, "k", &o, &b, &e), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_acquire(lockdir, "k", &o, &c, &e), DIRLOCK_OK); /* another backend */
        assert_int_equal(dirlock_upgrade(a, NULL, &e), DIRLOCK_EUPGRADE);
        assert_non_null(strstr(e.message, "flock"));
        dirlock_owner own;
        assert_int_equal(dirlock_inspect(flockspace, "k", 0, &own, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_release(a, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(c, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_flock_acquire(lockdir, "k", &o, &b, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(b, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_cleanup(flockspace, &e), DIRLOCK_OK);
}

/* A reentrant flock handle is a lock object: each release really lets
 * go (another handle gets the lock), each dirlock_reacquire takes it
 * again, and the file stays open in between (flock.c). */
static void test_flock_reentrant(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.flags |= DIRLOCK_REENTRANT;
        o.mode = DIRLOCK_SHARED;
        dirlock_options x = DIRLOCK_OPTIONS_INIT;
        x.timeout = 0;
        dirlock *r = NULL, *w = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(flockspace, "re", &o, &r, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire(flockspace, "re", &x, &w, &e), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_release(r, &e), DIRLOCK_OK); /* to zero holds */
        assert_int_equal(dirlock_release(r, &e), DIRLOCK_EBALANCE);
        assert_int_equal(dirlock_acquire(flockspace, "re", &x, &w, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_reacquire(r, &e), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_release(w, &e), DIRLOCK_OK);
        char path[400];
        snprintf(path, sizeof path, "%s/re.flock", lockdir);
        assert_int_equal(fds_open_on(path), 1); /* kept open, released */
        for (int i = 0; i < 3; i++) {
                assert_int_equal(dirlock_reacquire(r, &e), DIRLOCK_OK);
                assert_int_equal(dirlock_acquire(flockspace, "re", &x, &w, &e), DIRLOCK_EBUSY);
                assert_int_equal(dirlock_release(r, &e), DIRLOCK_OK);
                assert_int_equal(fds_open_on(path), 1);
        }
        assert_int_equal(dirlock_free(r, &e), DIRLOCK_OK);
        assert_int_equal(fds_open_on(path), 0);
}

/* Another handle holds lock `name` of `space` now: the kept handle is
 * refused; once the other lets go, the kept one gets the lock and a new
 * locker is refused.  Leaves the kept handle holding it. */
static void kept_takes_turn_with(dirlock *kept, const char *space, const char *name, dirlock *other)
{
        dirlock_options x = DIRLOCK_OPTIONS_INIT;
        x.timeout = 0;
        dirlock *late = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_reacquire(kept, &e), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_release(other, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_reacquire(kept, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire(space, name, &x, &late, &e), DIRLOCK_EBUSY);
}

/* A lock file removed between two holds of a kept handle, and made again
 * by another locker: the kept handle must lock the new file, not the
 * removed one it still has open (flock.c, confirm_grant). */
static void test_flock_removed_file(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.flags |= DIRLOCK_REENTRANT;
        dirlock *kept = NULL, *other = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(flockspace, "gone", &o, &kept, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(kept, &e), DIRLOCK_OK);
        char path[400];
        snprintf(path, sizeof path, "%s/gone.flock", lockdir);
        assert_int_equal(unlink(path), 0);
        dirlock_options x = DIRLOCK_OPTIONS_INIT;
        x.timeout = 0;
        assert_int_equal(dirlock_acquire(flockspace, "gone", &x, &other, &e), DIRLOCK_OK);
        kept_takes_turn_with(kept, flockspace, "gone", other);
        assert_int_equal(dirlock_free(kept, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire(flockspace, "gone", &x, &other, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(other, &e), DIRLOCK_OK);
}

/* The lock directory renamed away and made again (or removed): a kept
 * handle must lock the file its name leads to now, not the one it has
 * open, or it would not exclude a handle made after the change. */
static void test_flock_renamed_dir(void **state)
{
        (void)state;
        char dir[400], moved[420], space[420];
        snprintf(dir, sizeof dir, "%s/moving", lockdir);
        snprintf(moved, sizeof moved, "%s/moving.old", lockdir);
        snprintf(space, sizeof space, "flock:%s", dir);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.flags |= DIRLOCK_REENTRANT;
        dirlock *kept = NULL, *other = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(space, "m", &o, &kept, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(kept, &e), DIRLOCK_OK);
        assert_int_equal(rename(dir, moved), 0);
        assert_int_equal(mkdir(dir, 0777), 0);
        dirlock_options x = DIRLOCK_OPTIONS_INIT;
        x.timeout = 0;
        assert_int_equal(dirlock_acquire(space, "m", &x, &other, &e), DIRLOCK_OK);
        kept_takes_turn_with(kept, space, "m", other);
        assert_int_equal(dirlock_release(kept, &e), DIRLOCK_OK);

        /* Removed altogether: the kept handle makes it again. */
        char file[440];
        snprintf(file, sizeof file, "%s/m.flock", dir);
        assert_int_equal(unlink(file), 0);
        assert_int_equal(rmdir(dir), 0);
        assert_int_equal(dirlock_reacquire(kept, &e), DIRLOCK_OK);
        assert_int_equal(access(file, F_OK), 0);
        assert_int_equal(dirlock_acquire(space, "m", &x, &other, &e), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_free(kept, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire(space, "m", &x, &other, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(other, &e), DIRLOCK_OK);
}

/* What a space string names, without touching it: the board asks this
 * instead of parsing the grammar itself. */
static void test_space_query(void **state)
{
        (void)state;
        dirlock_space_info info;
        dirlock_error e;
        assert_int_equal(dirlock_space_query("/nonexistent/locks", &info, &e), DIRLOCK_OK);
        assert_string_equal(info.backend, "directory");
        assert_string_equal(info.dir, "/nonexistent/locks");
        assert_true(info.ranges && info.fences && info.upgrade && info.owner_records);
        assert_int_equal(access("/nonexistent", F_OK), -1); /* nothing made */
        const char *space = "flock:/run/board";
        assert_int_equal(dirlock_space_query(space, &info, &e), DIRLOCK_OK);
        assert_string_equal(info.backend, "flock");
        assert_ptr_equal(info.dir, space + 6);
        assert_false(info.ranges || info.fences || info.upgrade || info.owner_records);
        int redis = dirlock_space_query("redis://127.0.0.1:1/0", &info, &e);
        if (redis == DIRLOCK_OK) {
                assert_string_equal(info.backend, "Redis");
                assert_null(info.dir);
                assert_true(info.ranges && info.fences);
        } else {
                assert_int_equal(redis, DIRLOCK_EINVAL);
                assert_non_null(strstr(e.message, "no Redis support"));
        }
        /* The kinds known are listed from the registered backends: local
         * ones first, then by prefix. */
        assert_int_equal(dirlock_space_query("nosuch://x", &info, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "known: a directory path, flock:DIR, "));
        assert_true(redis != DIRLOCK_OK || strstr(e.message, ", redis://, rediss://, redis+unix://") != NULL);
        assert_int_equal(dirlock_space_query("", &info, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_space_query("/x", NULL, &e), DIRLOCK_EINVAL);
}

/* The forms for usage texts come from the registered backends: a
 * directory first, each backend's forms once, then NULL. */
static void test_space_forms(void **state)
{
        (void)state;
        int built = -1;
        assert_non_null(strstr(dirlock_space_form(0, &built), "DIR"));
        assert_int_equal(built, 1);
        size_t n = 0, redis = 0;
        const char *form;
        for (size_t i = 0; (form = dirlock_space_form(i, NULL)) != NULL; i++) {
                n++;
                redis += strncmp(form, "redis", 5) == 0;
        }
        assert_int_equal(redis, 2); /* redis:// and redis+unix://, once each */
        assert_true(n >= 4);
        assert_null(dirlock_space_form(n, &built));
}

static void test_bad_spaces(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *h = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire("nosuch://host/x", "k", &o, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "unknown kind 'nosuch'"));
        assert_null(h);
        assert_int_equal(dirlock_acquire("", "k", &o, &h, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_acquire(NULL, "k", &o, &h, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_acquire("flock:", "k", &o, &h, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_cleanup("nosuch://x", &e), DIRLOCK_EINVAL);
        dirlock_owner *list;
        size_t n;
        assert_int_equal(dirlock_list("nosuch://x", 0, &list, &n, &e), DIRLOCK_EINVAL);
        /* A path with a colon that is not a scheme stays a directory. */
        char odd[400];
        snprintf(odd, sizeof odd, "%s/a:b", lockdir);
        assert_int_equal(dirlock_acquire(odd, "k", &o, &h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
}

/* A malformed server address never shows its password in the message:
 * not in the user information (a raw '@' in it too), not in the query,
 * not behind a mistyped scheme. */
static void test_bad_space_secret(void **state)
{
        (void)state;
        static const char *const spaces[] = {
            "etcds://locker:S3CRET@127.0.0.1:1/p",      "etcd://127.0.0.1:1/p?password=S3CRET",
            "etcd://127.0.0.1:1/p?x=1&pasword=S3CRET",  "Redis://:S3CRET@127.0.0.1:1",
            "redis://:p@ss-S3CRET@127.0.0.1:1",         "redis://:S3CRET@127.0.0.1:99999",
            "rediss://u:S3CRET@127.0.0.1:1?cacert=%00", "nosuch://:S3CRET@h",
        };
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++) {
                dirlock *h = NULL;
                dirlock_error e;
                assert_int_equal(dirlock_acquire(spaces[i], "k", &o, &h, &e), DIRLOCK_EINVAL);
                print_message("%s -> %s\n", spaces[i], e.message);
                assert_null(strstr(e.message, "S3CRET"));
                assert_null(strstr(e.message, "CRET"));
        }
}

/* Every lock that exists, once, in name order, with its owner. */
static void test_list(void **state)
{
        (void)state;
        char space[400];
        snprintf(space, sizeof space, "%s/listed", lockdir);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *x = NULL, *r = NULL, *i = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(space, "zeta", &o, &x, &e), DIRLOCK_OK);
        o.mode = DIRLOCK_SHARED;
        assert_int_equal(dirlock_acquire(space, "alpha", &o, &r, &e), DIRLOCK_OK);
        o.mode = DIRLOCK_INTENT;
        assert_int_equal(dirlock_acquire(space, "mid", &o, &i, &e), DIRLOCK_OK);
        dirlock_owner *list;
        size_t n;
        assert_int_equal(dirlock_list(space, 0, &list, &n, &e), DIRLOCK_OK);
        assert_int_equal(n, 3);
        assert_string_equal(list[0].name, "alpha");
        assert_int_equal(list[0].mode, DIRLOCK_SHARED);
        assert_int_equal(list[0].readers, 1);
        assert_string_equal(list[1].name, "mid");
        assert_int_equal(list[1].mode, DIRLOCK_INTENT);
        assert_int_equal(list[1].pid, getpid());
        assert_string_equal(list[2].name, "zeta");
        assert_int_equal(list[2].mode, DIRLOCK_EXCLUSIVE);
        assert_string_equal(list[2].token, dirlock_token(x));
        free(list);
        dirlock_release(x, NULL);
        dirlock_release(r, NULL);
        dirlock_release(i, NULL);
        assert_int_equal(dirlock_list(space, 0, &list, &n, &e), DIRLOCK_OK);
        assert_int_equal(n, 0);
        free(list);
        char missing[400];
        snprintf(missing, sizeof missing, "%s/none-here", lockdir);
        assert_int_equal(dirlock_list(missing, 0, &list, &n, &e), DIRLOCK_EIO);
}

static void test_process_alive(void **state)
{
        (void)state;
        unsigned long long start = dirlock_process_start(getpid());
        assert_true(start > 0);
        assert_int_equal(dirlock_process_alive(getpid(), start), 1);
        assert_int_equal(dirlock_process_alive(getpid(), start + 1), 0); /* a reused pid */
        assert_int_equal(dirlock_process_alive(0, start), 0);
        /* No such process: 0, errno ESRCH (a reaped child, a pid out of
         * range, 0 and below), as dirlock_process_alive(3) says. */
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0)
                _exit(0);
        assert_int_equal(waitpid(child, NULL, 0), child);
        const pid_t none[] = {child, 0, -1, 0x7fffffff};
        for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
                errno = 0;
                assert_int_equal(dirlock_process_start(none[i]), 0);
                assert_int_equal(errno, ESRCH);
        }
}

/* A flock: space has flock(2)'s shared and exclusive locks and nothing
 * else: an intent lock (two holders would both get LOCK_SH), arrival
 * order and the writer policy are refused (the previous build took the
 * first two as shared locks, and let two intent holders in at once); a
 * shared lock under policy simple (one holder at a time) is exclusive. */
static void test_flock_refuses(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *a = NULL, *b = NULL;
        dirlock_error e;
        o.mode = DIRLOCK_INTENT;
        assert_int_equal(dirlock_acquire(flockspace, "m", &o, &a, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "no intent lock"));
        o.mode = DIRLOCK_EXCLUSIVE;
        o.flags = DIRLOCK_FIFO;
        assert_int_equal(dirlock_acquire(flockspace, "m", &o, &a, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "arrival order"));
        o.flags = 0;
        o.mode = DIRLOCK_SHARED;
        o.policy = DIRLOCK_POLICY_WRITER;
        assert_int_equal(dirlock_flock_acquire(lockdir, "m", &o, &a, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "writer policy"));
        o.policy = DIRLOCK_POLICY_SIMPLE;
        assert_int_equal(dirlock_acquire(flockspace, "m", &o, &a, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire(flockspace, "m", &o, &b, &e), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_release(a, &e), DIRLOCK_OK);
        o.policy = DIRLOCK_POLICY_FAIR;
        assert_int_equal(dirlock_acquire(flockspace, "m", &o, &a, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire(flockspace, "m", &o, &b, &e), DIRLOCK_OK); /* two readers */
        assert_int_equal(dirlock_release(b, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(a, &e), DIRLOCK_OK);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_flock_space),
            cmocka_unit_test(test_flock_reentrant),
            cmocka_unit_test(test_flock_removed_file),
            cmocka_unit_test(test_flock_renamed_dir),
            cmocka_unit_test(test_bad_spaces),
            cmocka_unit_test(test_bad_space_secret),
            cmocka_unit_test(test_list),
            cmocka_unit_test(test_process_alive),
            cmocka_unit_test(test_flock_refuses),
            cmocka_unit_test(test_space_query),
            cmocka_unit_test(test_space_forms),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
