/* test_rw.c - unit tests of the reader-writer layer in one process:
 * compatibility of the modes, upgrade and downgrade, the policies' static
 * rules, reentrant hold counting, dead readers, refresh/check, the
 * uncontended writer's fast path and a lock taken again after it was
 * broken.  Multi-process behaviour (waiting, lock-outs, crashes, FIFO) is
 * in tests/rw-*.t. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dirlock.h"
#include "dirlock_rw.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct fixture {
        char dir[64];
} fixture;

static int setup(void **state)
{
        fixture *f = calloc(1, sizeof *f);
        strcpy(f->dir, "/tmp/test_rw.XXXXXX");
        if (mkdtemp(f->dir) == NULL)
                return -1;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture *f = *state;
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
        int rc = system(cmd);
        free(f);
        return rc == 0 ? 0 : -1;
}

/* The holds of one thread here stand for those of several (the file's
 * subject is who excludes whom, not deadlocks): DIRLOCK_NO_DEADLOCK. */
static int take(const fixture *f, int mode, int policy, double timeout, dirlock **h)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = mode;
        o.policy = policy;
        o.timeout = timeout;
        o.flags = DIRLOCK_NO_DEADLOCK;
        dirlock_error err;
        return dirlock_acquire(f->dir, "x", &o, h, &err);
}

static void drop(dirlock *h)
{
        dirlock_error err;
        assert_int_equal(dirlock_release(h, &err), DIRLOCK_OK);
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_readers_share(void **state)
{
        fixture *f = *state;
        for (int p = DIRLOCK_POLICY_FAIR; p <= DIRLOCK_POLICY_READER; p++) {
                dirlock *a, *b;
                assert_int_equal(take(f, DIRLOCK_SHARED, p, 0, &a), DIRLOCK_OK);
                assert_int_equal(take(f, DIRLOCK_SHARED, p, 0, &b), DIRLOCK_OK);
                assert_int_equal(dirlock_mode_of(a), DIRLOCK_SHARED);
                dirlock_owner o;
                assert_int_equal(dirlock_inspect(f->dir, "x", 0, &o, NULL), DIRLOCK_OK);
                assert_int_equal(o.readers, 2);
                drop(a);
                drop(b);
        }
}

static void test_writer_excludes_readers(void **state)
{
        fixture *f = *state;
        for (int p = DIRLOCK_POLICY_FAIR; p <= DIRLOCK_POLICY_SIMPLE; p++) {
                dirlock *w, *r;
                assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, p, 0, &w), DIRLOCK_OK);
                assert_int_equal(take(f, DIRLOCK_SHARED, p, 0, &r), DIRLOCK_EBUSY);
                drop(w);
                assert_int_equal(take(f, DIRLOCK_SHARED, p, 0, &r), DIRLOCK_OK);
                assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, p, 0, &w), DIRLOCK_EBUSY);
                assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, p, 0.05, &w), DIRLOCK_ETIMEDOUT);
                drop(r);
        }
}

static void test_simple_is_one_at_a_time(void **state)
{
        fixture *f = *state;
        dirlock *a, *b;
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_SIMPLE, 0, &a), DIRLOCK_OK);
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_SIMPLE, 0, &b), DIRLOCK_EBUSY);
        /* a simple reader is a writer to everyone else */
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &b), DIRLOCK_EBUSY);
        drop(a);
}

static void test_intent_compatibility(void **state)
{
        fixture *f = *state;
        dirlock *i, *r, *x;
        assert_int_equal(take(f, DIRLOCK_INTENT, DIRLOCK_POLICY_FAIR, 0, &i), DIRLOCK_OK);
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &r), DIRLOCK_OK);
        assert_int_equal(take(f, DIRLOCK_INTENT, DIRLOCK_POLICY_FAIR, 0, &x), DIRLOCK_EBUSY);
        assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0, &x), DIRLOCK_EBUSY);
        dirlock_owner o;
        assert_int_equal(dirlock_inspect(f->dir, "x", 0, &o, NULL), DIRLOCK_OK);
        assert_int_equal(o.readers, 2);
        drop(r);
        drop(i);
}

static void test_upgrade_shared_refused(void **state)
{
        fixture *f = *state;
        dirlock *r;
        dirlock_error err;
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &r), DIRLOCK_OK);
        assert_int_equal(dirlock_upgrade(r, NULL, &err), DIRLOCK_EUPGRADE);
        assert_int_equal(err.code, DIRLOCK_EUPGRADE);
        assert_non_null(strstr(err.message, "intent"));
        assert_int_equal(dirlock_mode_of(r), DIRLOCK_SHARED);
        drop(r);
}

static void test_upgrade_waits_for_present_readers(void **state)
{
        fixture *f = *state;
        dirlock *i, *r, *r2;
        dirlock_error err;
        assert_int_equal(take(f, DIRLOCK_INTENT, DIRLOCK_POLICY_FAIR, 0, &i), DIRLOCK_OK);
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &r), DIRLOCK_OK);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0.1;
        assert_int_equal(dirlock_upgrade(i, &o, &err), DIRLOCK_ETIMEDOUT);
        /* on timeout the intent lock is kept and readers may come again */
        assert_int_equal(dirlock_mode_of(i), DIRLOCK_INTENT);
        assert_int_equal(dirlock_check(i, NULL), DIRLOCK_OK);
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &r2), DIRLOCK_OK);
        drop(r2);
        drop(r);
        assert_int_equal(dirlock_upgrade(i, &o, &err), DIRLOCK_OK);
        assert_int_equal(dirlock_mode_of(i), DIRLOCK_EXCLUSIVE);
        for (int p = DIRLOCK_POLICY_FAIR; p <= DIRLOCK_POLICY_SIMPLE; p++)
                assert_int_equal(take(f, DIRLOCK_SHARED, p, 0, &r), DIRLOCK_EBUSY);
        /* upgrading an exclusive lock is a no-op */
        assert_int_equal(dirlock_upgrade(i, NULL, &err), DIRLOCK_OK);
        drop(i);
        assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0, &i), DIRLOCK_OK);
        drop(i);
}

static void test_downgrade(void **state)
{
        fixture *f = *state;
        dirlock *w, *r, *x;
        dirlock_error err;
        assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0, &w), DIRLOCK_OK);
        assert_int_equal(dirlock_downgrade(w, &err), DIRLOCK_OK);
        assert_int_equal(dirlock_mode_of(w), DIRLOCK_SHARED);
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &r), DIRLOCK_OK);
        assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0, &x), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_downgrade(w, &err), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_refresh(w, &err), DIRLOCK_OK);
        drop(w);
        drop(r);
        /* intent -> upgrade -> downgrade */
        assert_int_equal(take(f, DIRLOCK_INTENT, DIRLOCK_POLICY_FAIR, 0, &w), DIRLOCK_OK);
        assert_int_equal(dirlock_upgrade(w, NULL, &err), DIRLOCK_OK);
        assert_int_equal(dirlock_downgrade(w, &err), DIRLOCK_OK);
        assert_int_equal(take(f, DIRLOCK_INTENT, DIRLOCK_POLICY_FAIR, 0, &x), DIRLOCK_OK);
        drop(x);
        drop(w);
}

/* A reader waiting while the upgraded intent holder writes. */
struct waiting_reader {
        const fixture *f;
        int rc;
        dirlock *h;
};

static void *waiting_reader_fn(void *arg)
{
        struct waiting_reader *w = arg;
        w->rc = take(w->f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 5, &w->h);
        return NULL;
}

/* Upgraded intent -> intent: readers (waiting ones too) enter, writers and
 * intents still wait; it may upgrade again; only intent locks may. */
static void test_downgrade_intent(void **state)
{
        fixture *f = *state;
        dirlock *i, *r, *x;
        dirlock_error err;
        assert_int_equal(take(f, DIRLOCK_INTENT, DIRLOCK_POLICY_FAIR, 0, &i), DIRLOCK_OK);
        assert_int_equal(dirlock_downgrade_intent(i, &err), DIRLOCK_OK); /* not upgraded: no-op */
        assert_int_equal(dirlock_upgrade(i, NULL, &err), DIRLOCK_OK);
        struct waiting_reader wr = {f, -1, NULL};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, waiting_reader_fn, &wr), 0);
        usleep(100 * 1000); /* the reader waits for the write phase */
        assert_int_equal(dirlock_downgrade_intent(i, &err), DIRLOCK_OK);
        assert_int_equal(dirlock_mode_of(i), DIRLOCK_INTENT);
        pthread_join(th, NULL);
        assert_int_equal(wr.rc, DIRLOCK_OK); /* in while the intent is still held */
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &r), DIRLOCK_OK);
        assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0, &x), DIRLOCK_EBUSY);
        assert_int_equal(take(f, DIRLOCK_INTENT, DIRLOCK_POLICY_FAIR, 0, &x), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_check(i, &err), DIRLOCK_OK);
        drop(r);
        drop(wr.h);
        assert_int_equal(dirlock_upgrade(i, NULL, &err), DIRLOCK_OK);
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &r), DIRLOCK_EBUSY);
        drop(i);
        /* a lock taken exclusive or shared has no intent to go back to */
        assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0, &x), DIRLOCK_OK);
        assert_int_equal(dirlock_downgrade_intent(x, &err), DIRLOCK_EINVAL);
        assert_non_null(strstr(err.message, "intent"));
        drop(x);
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &r), DIRLOCK_OK);
        assert_int_equal(dirlock_downgrade_intent(r, &err), DIRLOCK_EINVAL);
        drop(r);
}

static void test_reentrant(void **state)
{
        fixture *f = *state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_REENTRANT;
        o.mode = DIRLOCK_SHARED;
        dirlock *h, *w;
        dirlock_error err;
        assert_int_equal(dirlock_acquire(f->dir, "x", &o, &h, &err), DIRLOCK_OK);
        assert_int_equal(dirlock_reacquire(h, &err), DIRLOCK_OK);
        assert_int_equal(dirlock_reacquire(h, &err), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &err), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &err), DIRLOCK_OK);
        /* still held: one hold left */
        assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0, &w), DIRLOCK_EBUSY);
        assert_int_equal(dirlock_release(h, &err), DIRLOCK_OK);
        assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0, &w), DIRLOCK_OK);
        drop(w);
        assert_int_equal(dirlock_release(h, &err), DIRLOCK_EBALANCE);
        assert_int_equal(err.code, DIRLOCK_EBALANCE);
        assert_int_equal(dirlock_free(h, &err), DIRLOCK_OK);
        /* without the flag a second hold is refused */
        assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0, &w), DIRLOCK_OK);
        assert_int_equal(dirlock_reacquire(w, &err), DIRLOCK_EINVAL);
        drop(w);
}

static void test_dead_reader_is_broken(void **state)
{
        fixture *f = *state;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dirlock *r;
                _exit(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &r) == DIRLOCK_OK ? 0 : 1);
        }
        int st;
        waitpid(pid, &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        double t0 = now_s();
        dirlock *w;
        assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 2, &w), DIRLOCK_OK);
        assert_true(now_s() - t0 < 1.0);
        drop(w);
        assert_int_equal(dirlock_cleanup(f->dir, NULL), DIRLOCK_OK);
}

static void test_reader_lost_and_refresh(void **state)
{
        fixture *f = *state;
        dirlock *r;
        dirlock_error err;
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &r), DIRLOCK_OK);
        assert_int_equal(dirlock_refresh(r, &err), DIRLOCK_OK);
        assert_int_equal(dirlock_check(r, &err), DIRLOCK_OK);
        char path[256];
        snprintf(path, sizeof path, "%s/x.readers/r.%s", f->dir, dirlock_token(r));
        assert_int_equal(unlink(path), 0); /* as a breaker would */
        assert_int_equal(dirlock_check(r, &err), DIRLOCK_ELOST);
        assert_int_equal(dirlock_refresh(r, &err), DIRLOCK_ELOST);
        assert_int_equal(dirlock_release(r, &err), DIRLOCK_ELOST);
}

static int not_dot(const struct dirent *d)
{
        return d->d_name[0] != '.';
}

static void test_readers_dir_kept_writer_tidies(void **state)
{
        fixture *f = *state;
        dirlock *r, *w;
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &r), DIRLOCK_OK);
        drop(r);
        /* the readers directory stays for the next reader (no mkdir and
         * rmdir per read), empty */
        char path[256];
        struct stat st;
        snprintf(path, sizeof path, "%s/x.readers", f->dir);
        assert_int_equal(stat(path, &st), 0);
        struct dirent **names;
        int n = scandir(path, &names, not_dot, NULL);
        assert_int_equal(n, 0);
        free(names);
        /* a writer that found no reader removes it: the next writer's
         * "no readers" is one failing stat() */
        assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0, &w), DIRLOCK_OK);
        assert_int_equal(stat(path, &st), -1);
        drop(w);
        snprintf(path, sizeof path, "%s/x.lock", f->dir);
        assert_int_equal(stat(path, &st), -1);
}

/* The owner entry of W of lock "x" in f->dir (dirlock_inspect's token):
 * its path in `out`, 1 if W is held. */
static int owner_entry(const fixture *f, char *out, size_t n)
{
        dirlock_owner o;
        if (dirlock_inspect(f->dir, "x", 0, &o, NULL) != DIRLOCK_OK || o.mode == DIRLOCK_SHARED)
                return 0;
        snprintf(out, n, "%s/x.lock/owner.%s", f->dir, o.token);
        return 1;
}

typedef struct retaker {
        const fixture *f;
        dirlock *h;
        int rc;
} retaker;

static void *take_exclusive(void *arg)
{
        retaker *r = arg;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 10;
        o.stale_age = 2;
        r->rc = dirlock_acquire(r->f->dir, "x", &o, &r->h, NULL);
        return NULL;
}

/* A writer whose W is broken while it drains (it was paused past the
 * stale age) takes W again under a new token: a second breaker that
 * judged the old hold, and unlinks the path it judged late, must find
 * nothing (INVARIANT B).  Under the old token its unlink removed the new
 * hold, and another writer got the lock too. */
static void test_retaken_lock_has_new_token(void **state)
{
        fixture *f = *state;
        dirlock *reader;
        assert_int_equal(take(f, DIRLOCK_SHARED, DIRLOCK_POLICY_FAIR, 0, &reader), DIRLOCK_OK);
        retaker r = {f, NULL, -1};
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, take_exclusive, &r), 0);
        char judged[256], now[256];
        double give_up = now_s() + 5;
        while (!owner_entry(f, judged, sizeof judged) && now_s() < give_up)
                usleep(1000); /* the writer holds W and drains for the reader */
        assert_true(now_s() < give_up);
        char lock[128];
        snprintf(lock, sizeof lock, "%s/x.lock", f->dir);
        assert_int_equal(unlink(judged), 0); /* the first breaker */
        rmdir(lock);
        give_up = now_s() + 5; /* the writer sees it at its next renewal */
        while (!owner_entry(f, now, sizeof now) && now_s() < give_up)
                usleep(1000);
        assert_true(now_s() < give_up);
        assert_string_not_equal(now, judged);
        assert_int_equal(unlink(judged), -1); /* the late breaker */
        drop(reader);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(r.rc, DIRLOCK_OK);
        dirlock *other;
        assert_int_equal(take(f, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, 0, &other), DIRLOCK_EBUSY);
        drop(r.h);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_readers_share, setup, teardown),
            cmocka_unit_test_setup_teardown(test_writer_excludes_readers, setup, teardown),
            cmocka_unit_test_setup_teardown(test_simple_is_one_at_a_time, setup, teardown),
            cmocka_unit_test_setup_teardown(test_intent_compatibility, setup, teardown),
            cmocka_unit_test_setup_teardown(test_upgrade_shared_refused, setup, teardown),
            cmocka_unit_test_setup_teardown(test_upgrade_waits_for_present_readers, setup, teardown),
            cmocka_unit_test_setup_teardown(test_downgrade, setup, teardown),
            cmocka_unit_test_setup_teardown(test_downgrade_intent, setup, teardown),
            cmocka_unit_test_setup_teardown(test_reentrant, setup, teardown),
            cmocka_unit_test_setup_teardown(test_dead_reader_is_broken, setup, teardown),
            cmocka_unit_test_setup_teardown(test_reader_lost_and_refresh, setup, teardown),
            cmocka_unit_test_setup_teardown(test_readers_dir_kept_writer_tidies, setup, teardown),
            cmocka_unit_test_setup_teardown(test_retaken_lock_has_new_token, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
