/* test_permits.c - unit tests of counting locks (dirlock_acquire_permit)
 * in a directory space (lib/dir/permits.c) and on a private redis-server
 * (lib/redis/redis_permits.c; space_fixture.h): N holders and no more, each
 * with its own token and fence; a try, a timeout, a cancel descriptor; a
 * release letting a waiter in; holders asking another N refused, and any
 * N once they are gone; a killed holder's permit given back at once --
 * among live holders too, to a waiter and a try, and fixing no N -- and a
 * stale one of another host after its stale age; a broken permit lost
 * (check, refresh, release: DIRLOCK_ELOST); reentrant handles; a pending
 * acquire; a thread asking for one more of the N it holds (EDEADLK); what
 * inspect, list and dirlock_holders report; cleanup;
 * and what is refused (numbers, modes, flock spaces, mode changes). */
#include "dirlock_async.h"
#include "dirlock_deadlock.h"
#include "dirlock_fence.h"
#include "dirlock_permit.h"
#include "dirlock_range.h"
#include "dirlock_rw.h"
#include "space_fixture.h"

#include <sys/prctl.h>

static bool in_dir(void)
{
        return space == lockdir;
}

/* The permits of this one thread stand for those of several processes
 * (deadlocks are test_deadlock's): DIRLOCK_NO_DEADLOCK. */
static dirlock *permit(const char *name, unsigned n, double timeout, int *rc_out)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = timeout;
        o.flags = DIRLOCK_NO_DEADLOCK;
        dirlock *h = NULL;
        dirlock_error e;
        int rc = dirlock_acquire_permit(space, name, n, &o, &h, &e);
        if (rc_out != NULL)
                *rc_out = rc;
        return rc == DIRLOCK_OK ? h : NULL;
}

/* N holders at once, each with its own token and a fence greater than
 * every earlier one; the next waits (a try says busy, naming a holder). */
static void test_n_holders(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock *h[3];
        unsigned long long last = 0;
        for (int i = 0; i < 3; i++) {
                h[i] = permit("sem", 3, 0, NULL);
                assert_non_null(h[i]);
                assert_int_equal(dirlock_permits_of(h[i]), 3);
                unsigned long long f;
                assert_int_equal(dirlock_fence(h[i], &f, NULL), DIRLOCK_OK);
                assert_true(f > last);
                last = f;
                for (int j = 0; j < i; j++)
                        assert_string_not_equal(dirlock_token(h[i]), dirlock_token(h[j]));
        }
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *x = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_permit(space, "sem", 3, &o, &x, &e), DIRLOCK_EBUSY);
        if (in_dir())
                assert_non_null(strstr(e.message, "the 3 permits of lock 'sem' are all held, e.g. by pid"));
        else
                assert_non_null(strstr(e.message, "'sem'"));
        assert_null(x);
        /* Not the name's exclusive lock: that one is free. */
        dirlock_options wo = DIRLOCK_OPTIONS_INIT;
        wo.timeout = 0;
        wo.flags = DIRLOCK_NO_DEADLOCK;
        dirlock *w = NULL;
        assert_int_equal(dirlock_acquire(space, "sem", &wo, &w, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_release(w, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h[1], &e), DIRLOCK_OK);
        x = permit("sem", 3, 0, NULL);
        assert_non_null(x);
        unsigned long long f;
        assert_int_equal(dirlock_fence(x, &f, NULL), DIRLOCK_OK);
        assert_true(f > last);
        for (int i = 0; i < 3; i += 2)
                assert_int_equal(dirlock_check(h[i], NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h[0], NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h[2], NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_release(x, NULL), DIRLOCK_OK);
}

struct release_later {
        dirlock *h;
        long ms;
};

static void *release_later_fn(void *arg)
{
        struct release_later *r = arg;
        sleep_ms(r->ms);
        dirlock_release(r->h, NULL);
        return NULL;
}

/* A waiter gets in when a holder lets go, long before its timeout; with
 * nobody letting go it times out on time. */
static void test_wait_timeout_release(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock *a = permit("w", 2, 0, NULL), *b = permit("w", 2, 0, NULL);
        assert_non_null(a);
        assert_non_null(b);
        int rc;
        double t0 = now_ms();
        assert_null(permit("w", 2, 0.2, &rc));
        assert_int_equal(rc, DIRLOCK_ETIMEDOUT);
        double took = now_ms() - t0;
        assert_true(took >= 199 && took < 1000);
        struct release_later r = {b, 100};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, release_later_fn, &r), 0);
        t0 = now_ms();
        dirlock *c = permit("w", 2, 10, &rc);
        took = now_ms() - t0;
        pthread_join(th, NULL);
        assert_non_null(c);
        print_message("waited %.1f ms for a permit released after 100 ms\n", took);
        assert_true(took < 1000);
        dirlock_release(a, NULL);
        dirlock_release(c, NULL);
}

/* Holders that asked another N are there: refused, naming theirs; once
 * they are gone, any N. */
static void test_other_n(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock *a = permit("n", 2, 0, NULL);
        assert_non_null(a);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 5;
        dirlock *b = NULL;
        dirlock_error e;
        double t0 = now_ms();
        assert_int_equal(dirlock_acquire_permit(space, "n", 3, &o, &b, &e), DIRLOCK_EINVAL);
        assert_true(now_ms() - t0 < 1000); /* at once, not at the timeout */
        assert_non_null(strstr(e.message, "2 permits"));
        assert_non_null(strstr(e.message, "not 3"));
        assert_null(b);
        b = permit("n", 2, 0, NULL); /* the same N is fine */
        assert_non_null(b);
        dirlock_release(a, NULL);
        dirlock_release(b, NULL);
        b = permit("n", 3, 0, NULL);
        assert_non_null(b);
        assert_int_equal(dirlock_acquire_permit(space, "n", 2, &o, &a, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "3 permits"));
        dirlock_release(b, NULL);
        b = permit("n", 1, 0, NULL); /* one permit, in the singular */
        assert_non_null(b);
        assert_int_equal(dirlock_acquire_permit(space, "n", 2, &o, &a, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "held with 1 permit (by pid"));
        dirlock_release(b, NULL);
}

/* A holder killed with SIGKILL gives its permit back at once. */
static void test_killed_holder(void **state)
{
        (void)state;
        NEED_SPACE();
        int ready[2];
        assert_int_equal(pipe(ready), 0);
        pid_t child = fork();
        if (child == 0) {
                close(ready[0]);
                dirlock *h = permit("k", 1, 0, NULL);
                if (h == NULL)
                        _exit(1);
                if (write(ready[1], "x", 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        close(ready[1]);
        char c;
        assert_int_equal(read(ready[0], &c, 1), 1);
        close(ready[0]);
        int rc;
        assert_null(permit("k", 1, 0, &rc));
        assert_int_equal(rc, DIRLOCK_EBUSY);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        double t0 = now_ms();
        dirlock *h = permit("k", 1, 5, &rc);
        assert_non_null(h);
        assert_true(now_ms() - t0 < 1000);
        dirlock_release(h, NULL);
}

/* A child process that holds a permit of `name` (of n) until killed, or
 * until this test process ends (a failed test leaves none behind). */
static pid_t holder_child(const char *name, unsigned n)
{
        int ready[2];
        assert_int_equal(pipe(ready), 0);
        pid_t child = fork();
        if (child == 0) {
                close(ready[0]);
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || permit(name, n, 0, NULL) == NULL ||
                    write(ready[1], "x", 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        close(ready[1]);
        char c;
        assert_int_equal(read(ready[0], &c, 1), 1);
        close(ready[0]);
        return child;
}

static void kill_child(pid_t child)
{
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
}

struct waiter {
        const char *name;
        unsigned n;
        dirlock *h;
        int rc;
        double done_ms;
};

static void *waiter_fn(void *arg)
{
        struct waiter *w = arg;
        w->h = permit(w->name, w->n, 5, &w->rc);
        w->done_ms = now_ms();
        return NULL;
}

/* A killed holder gives its permit back at once while the other holders
 * keep theirs -- whichever of them it was: here not the first, whose
 * permit expires first.  A waiter queued before the kill gets it, and so
 * does a try. */
static void test_killed_among_holders(void **state)
{
        (void)state;
        NEED_SPACE();
        pid_t c[3];
        for (int i = 0; i < 3; i++)
                c[i] = holder_child("m", 3);
        struct waiter w = {.name = "m", .n = 3};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, waiter_fn, &w), 0);
        sleep_ms(200); /* it waits */
        double t0 = now_ms();
        kill_child(c[1]);
        pthread_join(th, NULL);
        assert_int_equal(w.rc, DIRLOCK_OK);
        print_message("a waiter got a killed holder's permit in %.1f ms\n", w.done_ms - t0);
        assert_true(w.done_ms - t0 < 1000);
        kill_child(c[2]);
        int rc;
        t0 = now_ms();
        dirlock *x = permit("m", 3, 0, &rc);
        assert_int_equal(rc, DIRLOCK_OK);
        assert_true(now_ms() - t0 < 1000);
        assert_null(permit("m", 3, 0, &rc)); /* the first holder still has its own */
        assert_int_equal(rc, DIRLOCK_EBUSY);
        dirlock_release(x, NULL);
        dirlock_release(w.h, NULL);
        kill_child(c[0]);
}

/* A killed holder fixes the number of permits no longer: another N is
 * let in at once, by a try too. */
static void test_killed_other_n(void **state)
{
        (void)state;
        NEED_SPACE();
        pid_t c = holder_child("dn", 3);
        int rc;
        assert_null(permit("dn", 1, 0, &rc)); /* alive: its N stands */
        assert_int_equal(rc, DIRLOCK_EINVAL);
        kill_child(c);
        dirlock *x = permit("dn", 1, 0, &rc);
        assert_int_equal(rc, DIRLOCK_OK);
        dirlock_release(x, NULL);
}

/* A thread that holds all N permits and asks for one more through a new
 * handle would wait for itself: DIRLOCK_EDEADLK at once.  Its twin, with
 * DIRLOCK_NO_DEADLOCK, waits out its timeout. */
static void test_self_all_permits(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *h[2];
        for (int i = 0; i < 2; i++)
                assert_int_equal(dirlock_acquire_permit(space, "self", 2, &o, &h[i], NULL), DIRLOCK_OK);
        o.timeout = 2;
        dirlock *x = NULL;
        dirlock_error e;
        double t0 = now_ms();
        assert_int_equal(dirlock_acquire_permit(space, "self", 2, &o, &x, &e), DIRLOCK_EDEADLK);
        double took = now_ms() - t0;
        print_message("EDEADLK in %.1f ms: %s\n", took, e.message);
        assert_true(took < 1000);
        assert_null(x);
        o.timeout = 0.3;
        o.flags = DIRLOCK_NO_DEADLOCK;
        assert_int_equal(dirlock_acquire_permit(space, "self", 2, &o, &x, &e), DIRLOCK_ETIMEDOUT);
        for (int i = 0; i < 2; i++)
                assert_int_equal(dirlock_release(h[i], NULL), DIRLOCK_OK);
}

/* A permit of another host, older than the stale age, is broken; a fresh
 * one is not. */
static void test_stale_other_host(void **state)
{
        (void)state;
        char cmd[1024];
        snprintf(cmd, sizeof cmd,
                 "mkdir -p '%s/st.permits/n1/0' && ln -s 'dirlock1 pid=4242 start=1 "
                 "token=0123456789abcdef0123456789abcdef acquired=1 boot=none pidns=1 mode=0 stale=0 "
                 "host=elsewhere.example' '%s/st.permits/n1/0/owner.0123456789abcdef0123456789abcdef'",
                 lockdir, lockdir);
        assert_int_equal(system(cmd), 0);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.stale_age = 1;
        dirlock *h = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_permit(lockdir, "st", 1, &o, &h, &e), DIRLOCK_EBUSY);
        assert_non_null(strstr(e.message, "elsewhere.example"));
        sleep_ms(1100);
        assert_int_equal(dirlock_acquire_permit(lockdir, "st", 1, &o, &h, &e), DIRLOCK_OK);
        dirlock_release(h, NULL);
}

/* A permit broken under its holder: check, refresh and release say
 * DIRLOCK_ELOST, and leave the next holder alone. */
static void test_lost(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.flags = DIRLOCK_NO_DEADLOCK;
        o.stale_age = DIRLOCK_MIN_STALE_AGE;
        dirlock *h = NULL;
        assert_int_equal(dirlock_acquire_permit(space, "lost", 1, &o, &h, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_refresh(h, NULL), DIRLOCK_OK);
        /* Not its W, and not broken from outside: held by a permit. */
        assert_int_equal(dirlock_break(space, "lost", 0, 1, NULL), DIRLOCK_ELIVE);
        if (in_dir()) {
                char cmd[512];
                snprintf(cmd, sizeof cmd, "rm -f '%s'/lost.permits/n1/0/owner.*", lockdir);
                assert_int_equal(system(cmd), 0);
        } else {
                sleep_ms((long)(DIRLOCK_MIN_STALE_AGE * 1000) + 100); /* the server expires it */
        }
        dirlock *next = permit("lost", 1, 0, NULL);
        assert_non_null(next);
        dirlock_error e;
        assert_int_equal(dirlock_check(h, &e), DIRLOCK_ELOST);
        assert_int_equal(dirlock_refresh(h, &e), DIRLOCK_ELOST);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_ELOST);
        assert_int_equal(dirlock_check(next, NULL), DIRLOCK_OK);
        dirlock_release(next, NULL);
}

struct cancel_later {
        int fd;
        long ms;
};

static void *cancel_later_fn(void *arg)
{
        struct cancel_later *c = arg;
        sleep_ms(c->ms);
        uint64_t one = 1;
        if (write(c->fd, &one, sizeof one) != sizeof one)
                abort();
        return NULL;
}

static void test_cancel(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock *a = permit("c", 1, 0, NULL);
        assert_non_null(a);
        int efd = eventfd(0, EFD_CLOEXEC);
        struct cancel_later c = {efd, 100};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, cancel_later_fn, &c), 0);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_CANCEL_FD;
        o.cancel_fd = efd;
        dirlock *b = NULL;
        dirlock_error e;
        double t0 = now_ms();
        assert_int_equal(dirlock_acquire_permit(space, "c", 1, &o, &b, &e), DIRLOCK_ECANCELED);
        assert_true(now_ms() - t0 < 2000);
        pthread_join(th, NULL);
        close(efd);
        dirlock_release(a, NULL);
        /* It left the queue it stood in. */
        dirlock_waiter *w;
        size_t n;
        assert_int_equal(dirlock_waiters(space, "c", &w, &n, NULL), DIRLOCK_OK);
        free(w);
        assert_int_equal(n, 0);
        if (in_dir()) {
                char path[512];
                struct stat st;
                snprintf(path, sizeof path, "%s/c.permits/queue", lockdir);
                assert_int_not_equal(lstat(path, &st), 0);
        }
}

/* A reentrant permit: holds counted, the last release gives it back, and
 * it is taken again under a new token. */
static void test_reentrant(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_REENTRANT;
        o.timeout = 0;
        dirlock *h = NULL;
        o.flags |= DIRLOCK_NO_DEADLOCK;
        assert_int_equal(dirlock_acquire_permit(space, "re", 1, &o, &h, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_reacquire(h, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, NULL), DIRLOCK_OK);
        int rc;
        assert_null(permit("re", 1, 0, &rc)); /* still held */
        assert_int_equal(dirlock_release(h, NULL), DIRLOCK_OK);
        dirlock *other = permit("re", 1, 0, NULL);
        assert_non_null(other);
        dirlock_release(other, NULL);
        char token[DIRLOCK_TOKEN_LEN + 1];
        snprintf(token, sizeof token, "%s", dirlock_token(h));
        assert_int_equal(dirlock_reacquire(h, NULL), DIRLOCK_OK);
        assert_string_not_equal(token, dirlock_token(h));
        assert_null(permit("re", 1, 0, &rc));
        assert_int_equal(dirlock_free(h, NULL), DIRLOCK_OK);
        other = permit("re", 1, 0, NULL);
        assert_non_null(other);
        dirlock_release(other, NULL);
}

/* A pending acquire waits for a permit without blocking, and gets it
 * when a holder lets go. */
static void test_pending(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock *a = permit("p", 1, 0, NULL);
        assert_non_null(a);
        dirlock_pending *p;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_permit_start(space, "p", 1, NULL, &p, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_EAGAIN);
        dirlock_release(a, NULL);
        int rc;
        double until = now_ms() + 5000;
        while ((rc = dirlock_pending_step(p, &e)) == DIRLOCK_EAGAIN && now_ms() < until) {
                struct pollfd pfd = {.fd = dirlock_pending_fd(p), .events = POLLIN};
                poll(&pfd, 1, 100);
        }
        assert_int_equal(rc, DIRLOCK_OK);
        dirlock *h = dirlock_pending_lock(p);
        assert_non_null(h);
        assert_int_equal(dirlock_permits_of(h), 1);
        dirlock_pending_free(p);
        dirlock_release(h, NULL);
}

/* inspect, list and dirlock_holders see the holders, their
 * records and N; cleanup leaves nothing of a dead one. */
static void test_views_and_cleanup(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock *a = permit("v", 4, 0, NULL), *b = permit("v", 4, 0, NULL);
        assert_non_null(a);
        assert_non_null(b);
        dirlock_owner o;
        assert_int_equal(dirlock_inspect(space, "v", 0, &o, NULL), DIRLOCK_OK);
        assert_int_equal(o.permits, 4);
        assert_int_equal(o.permit_holders, 2);
        dirlock_owner *holders;
        size_t n;
        assert_int_equal(dirlock_holders(space, "v", 0, &holders, &n, NULL), DIRLOCK_OK);
        assert_int_equal(n, 2);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(holders[i].pid, getpid());
                assert_int_equal(holders[i].permits, 4);
                assert_int_equal(holders[i].owner_alive, 1);
                assert_true(strcmp(holders[i].token, dirlock_token(a)) == 0 ||
                            strcmp(holders[i].token, dirlock_token(b)) == 0);
        }
        free(holders);
        dirlock_owner *all;
        assert_int_equal(dirlock_list(space, 0, &all, &n, NULL), DIRLOCK_OK);
        bool found = false;
        for (size_t i = 0; i < n; i++)
                found = found || (strcmp(all[i].name, "v") == 0 && all[i].permit_holders == 2);
        free(all);
        assert_true(found);
        dirlock_release(a, NULL);
        dirlock_release(b, NULL);
        assert_int_equal(dirlock_inspect(space, "v", 0, &o, NULL), DIRLOCK_ENOLOCK);
        /* A dead holder's permit: cleanup breaks it and removes it all. */
        pid_t child = fork();
        if (child == 0) {
                /* Kept reachable: under make valgrind a handle lost at
                 * _exit is a leak, and the child's status would say 1. */
                static dirlock *volatile dying;
                dying = permit("v", 4, 0, NULL);
                _exit(dying != NULL ? 0 : 1);
        }
        int st;
        waitpid(child, &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_int_equal(dirlock_cleanup(space, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_holders(space, "v", 0, &holders, &n, NULL), DIRLOCK_OK);
        free(holders);
        assert_int_equal(n, 0);
        if (in_dir()) {
                char path[512];
                struct stat sb;
                snprintf(path, sizeof path, "%s/v.permits", lockdir);
                assert_int_not_equal(lstat(path, &sb), 0);
        }
}

static void test_refused(void **state)
{
        (void)state;
        dirlock *h = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_permit(lockdir, "r", 0, NULL, &h, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_acquire_permit(lockdir, "r", DIRLOCK_PERMITS_MAX + 1, NULL, &h, &e),
                         DIRLOCK_EINVAL);
        assert_null(h);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = DIRLOCK_SHARED;
        assert_int_equal(dirlock_acquire_permit(lockdir, "r", 2, &o, &h, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_acquire_permit(lockdir, ".r", 2, NULL, &h, &e), DIRLOCK_ENAME);
        char flock_space[300];
        snprintf(flock_space, sizeof flock_space, "flock:%s", lockdir);
        assert_int_equal(dirlock_acquire_permit(flock_space, "r", 2, NULL, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "no counting locks"));
        dirlock_space_info info;
        assert_int_equal(dirlock_space_query(flock_space, &info, NULL), DIRLOCK_OK);
        assert_int_equal(info.permits, 0);
        assert_int_equal(dirlock_space_query(lockdir, &info, NULL), DIRLOCK_OK);
        assert_int_equal(info.permits, 1);
        h = permit("r", 2, 0, NULL);
        assert_non_null(h);
        assert_int_equal(dirlock_upgrade(h, NULL, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_downgrade(h, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_downgrade_intent(h, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_shrink(h, 0, 1, &e), DIRLOCK_EINVAL);
        assert_int_equal(dirlock_check(h, NULL), DIRLOCK_OK);
        dirlock_release(h, NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup(test_n_holders, fresh),
            cmocka_unit_test_setup(test_wait_timeout_release, fresh),
            cmocka_unit_test_setup(test_other_n, fresh),
            cmocka_unit_test_setup(test_killed_holder, fresh),
            cmocka_unit_test_setup(test_killed_among_holders, fresh),
            cmocka_unit_test_setup(test_killed_other_n, fresh),
            cmocka_unit_test_setup(test_self_all_permits, fresh),
            cmocka_unit_test_setup(test_lost, fresh),
            cmocka_unit_test_setup(test_cancel, fresh),
            cmocka_unit_test_setup(test_reentrant, fresh),
            cmocka_unit_test_setup(test_pending, fresh),
            cmocka_unit_test_setup(test_views_and_cleanup, fresh),
        };
        /* What only a directory space has, or refuses. */
        const struct CMUnitTest dir_only[] = {
            cmocka_unit_test_setup(test_stale_other_host, fresh),
            cmocka_unit_test_setup(test_refused, fresh),
        };
        int failed = cmocka_run_group_tests_name("directory space", tests, dir_setup, teardown);
        failed += cmocka_run_group_tests_name("directory space only", dir_only, dir_setup, teardown);
        return failed + cmocka_run_group_tests_name("Redis space", tests, redis_setup, redis_teardown);
}
