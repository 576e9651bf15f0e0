/* test_waiters.c - who holds and who waits, in a directory space
 * (dirlock_holders, dirlock_waiters, the wait register of lib/dir/waits.c)
 * and on a private redis-server (the HOLDERS and WAITERS scripts of
 * lib/redis/redis_scripts.c; space_fixture.h):
 * every kind of waiter is listed with its pid, thread, host, mode and
 * since when -- a whole lock in each mode and policy, with DIRLOCK_FIFO
 * and without inotify, an upgrade, a range, a permit, a pending acquire --
 * inspect counts them and list names a lock that has nothing but waiters;
 * a waiter that gave up, timed out or got the lock is gone from the list,
 * and one killed while it waited is dropped (and its entry removed) by
 * the next listing; the holders are listed one by one, readers and
 * permits included; records name the thread that took the lock. */
#include "deadlock.h"
#include "dirlock_async.h"
#include "dirlock_permit.h"
#include "dirlock_range.h"
#include "dirlock_rw.h"
#include "space_fixture.h"

#include <poll.h>

/* A thread that acquires with `o` (mode, flags) and waits until told to
 * release. */
struct taker {
        pthread_t th;
        const char *name;
        dirlock_options o;
        int kind; /* 0 lock, 1 range [0, 1), 2 permit of 1, 3 upgrade (takes intent first) */
        int rc;
        pid_t tid;
        volatile int release;
        volatile int done;
};

static void *take_fn(void *arg)
{
        struct taker *t = arg;
        t->tid = (pid_t)dl_self_tid();
        dirlock *h = NULL;
        dirlock_error e;
        if (t->kind == 1) {
                t->rc = dirlock_acquire_range(space, t->name, 0, 1, &t->o, &h, &e);
        } else if (t->kind == 2) {
                t->rc = dirlock_acquire_permit(space, t->name, 1, &t->o, &h, &e);
        } else if (t->kind == 3) {
                dirlock_options i = t->o;
                i.mode = DIRLOCK_INTENT;
                t->rc = dirlock_acquire(space, t->name, &i, &h, &e);
                if (t->rc == DIRLOCK_OK)
                        t->rc = dirlock_upgrade(h, NULL, &e);
        } else {
                t->rc = dirlock_acquire(space, t->name, &t->o, &h, &e);
        }
        t->done = 1;
        while (!t->release)
                sleep_ms(5);
        if (h != NULL)
                dirlock_release(h, NULL);
        return NULL;
}

static void start(struct taker *t)
{
        t->done = t->release = 0;
        assert_int_equal(pthread_create(&t->th, NULL, take_fn, t), 0);
}

static void finish(struct taker *t)
{
        t->release = 1;
        pthread_join(t->th, NULL);
}

/* The waiters of `name` once there are `want` of them (or 2 s). */
static size_t waiters_of(const char *name, size_t want, dirlock_waiter **w)
{
        size_t n = 0;
        for (int i = 0; i < 400; i++) {
                assert_int_equal(dirlock_waiters(space, name, w, &n, NULL), DIRLOCK_OK);
                if (n == want)
                        return n;
                free(*w);
                sleep_ms(5);
        }
        assert_int_equal(dirlock_waiters(space, name, w, &n, NULL), DIRLOCK_OK);
        return n;
}

static void expect_waiter(const dirlock_waiter *w, const char *name, int kind, int mode, pid_t tid)
{
        assert_string_equal(w->name, name);
        assert_int_equal(w->kind, kind);
        assert_int_equal(w->mode, mode);
        assert_int_equal(w->pid, getpid());
        assert_int_equal(w->tid, tid);
        assert_int_equal(w->start_time, dl_process_start_time(getpid()));
        assert_int_equal(w->owner_alive, 1);
        char host[256];
        gethostname(host, sizeof host);
        assert_string_equal(w->host, host);
        double now = (double)dl_wall_ns() / 1e9;
        assert_true(w->since > now - 10 && w->since <= now);
        assert_true(w->age >= 0 && w->age < 10);
}

/* One holder in `hold`, one waiter in `wait` on lock `name`: the waiter
 * is listed as asked, then gone once it has the lock. */
static void one_case(const char *name, int hold_mode, int hold_kind, int wait_mode, int wait_kind, int policy,
                     unsigned flags, int listed_kind, int listed_mode)
{
        struct taker a = {.name = name, .kind = hold_kind}, b = {.name = name, .kind = wait_kind};
        dirlock_options_init(&a.o);
        a.o.mode = hold_mode;
        a.o.policy = policy;
        dirlock_options_init(&b.o);
        b.o.mode = wait_mode;
        b.o.policy = policy;
        b.o.flags = flags;
        b.o.timeout = 10;
        start(&a);
        while (!a.done)
                sleep_ms(1);
        assert_int_equal(a.rc, DIRLOCK_OK);
        start(&b);
        dirlock_waiter *w;
        size_t n = waiters_of(name, 1, &w);
        assert_int_equal(n, 1);
        expect_waiter(&w[0], name, listed_kind, listed_mode, b.tid);
        if (listed_kind == DIRLOCK_WAIT_RANGE)
                assert_true(w[0].lo == 0 && w[0].hi == 1);
        if (listed_kind == DIRLOCK_WAIT_PERMIT)
                assert_int_equal(w[0].permits, 1);
        free(w);
        dirlock_owner o;
        assert_int_equal(dirlock_inspect(space, name, 0, &o, NULL), DIRLOCK_OK);
        assert_int_equal(o.waiters, 1);
        finish(&a);
        while (!b.done)
                sleep_ms(1);
        assert_int_equal(b.rc, DIRLOCK_OK);
        assert_int_equal(waiters_of(name, 0, &w), 0);
        free(w);
        finish(&b);
}

static void test_every_kind(void **state)
{
        (void)state;
        NEED_SPACE();
        int F = DIRLOCK_POLICY_FAIR, W = DIRLOCK_POLICY_WRITER, R = DIRLOCK_POLICY_READER;
        int X = DIRLOCK_EXCLUSIVE, S = DIRLOCK_SHARED, I = DIRLOCK_INTENT;
        one_case("x", X, 0, X, 0, F, 0, DIRLOCK_WAIT_LOCK, X);
        one_case("xf", X, 0, X, 0, F, DIRLOCK_FIFO, DIRLOCK_WAIT_LOCK, X);
        one_case("xn", X, 0, X, 0, F, DIRLOCK_NO_NOTIFY, DIRLOCK_WAIT_LOCK, X);
        one_case("s", X, 0, S, 0, F, 0, DIRLOCK_WAIT_LOCK, S);
        one_case("sw", X, 0, S, 0, W, 0, DIRLOCK_WAIT_LOCK, S);
        one_case("i", I, 0, I, 0, F, 0, DIRLOCK_WAIT_LOCK, I);
        one_case("drain", S, 0, X, 0, F, 0, DIRLOCK_WAIT_LOCK, X); /* a writer draining a reader */
        one_case("rpref", S, 0, X, 0, R, 0, DIRLOCK_WAIT_LOCK, X); /* policy reader: waits apart */
        one_case("up", S, 0, X, 3, F, 0, DIRLOCK_WAIT_UPGRADE, X); /* intent -> exclusive */
        one_case("rg", X, 1, S, 1, F, 0, DIRLOCK_WAIT_RANGE, S);   /* range after range */
        one_case("wr", X, 1, X, 0, F, 0, DIRLOCK_WAIT_LOCK, X);    /* whole lock after a range */
        one_case("pm", X, 2, X, 2, F, 0, DIRLOCK_WAIT_PERMIT, X);  /* a permit */
}

/* A pending acquire is listed, marked pending; a waiter killed while it
 * waited is dropped from the list, its entry removed; a name with nothing
 * but waiters is in dirlock_list. */
static void test_pending_killed_listed(void **state)
{
        (void)state;
        dirlock *a = take("pend", 0);
        assert_non_null(a);
        dirlock_pending *p;
        assert_int_equal(dirlock_acquire_start(lockdir, "pend", NULL, &p, NULL), DIRLOCK_OK);
        dirlock_waiter *w;
        assert_int_equal(waiters_of("pend", 1, &w), 1);
        assert_int_equal(w[0].pending, 1);
        assert_int_equal(w[0].tid, 0); /* blocks no thread */
        free(w);
        dirlock_pending_free(p);
        assert_int_equal(waiters_of("pend", 0, &w), 0);
        free(w);
        /* A child waits and is killed. */
        pid_t child = fork();
        if (child == 0) {
                dirlock *h = take("pend", 30);
                _exit(h != NULL ? 0 : 1);
        }
        assert_int_equal(waiters_of("pend", 1, &w), 1);
        assert_int_equal(w[0].pid, child);
        free(w);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        assert_int_equal(waiters_of("pend", 0, &w), 0);
        free(w);
        char path[512];
        snprintf(path, sizeof path, "ls -A '%s/.waits' 2>/dev/null | grep -q .", lockdir);
        assert_int_not_equal(system(path), 0); /* no entry left */
        /* A name with nothing but a waiter (an entry written here, as
         * this live process's) is listed, and inspect counts it. */
        dl_wait_record r;
        memset(&r, 0, sizeof r);
        strcpy(r.name, "ghost");
        r.kind = DIRLOCK_WAIT_LOCK;
        r.target = 'w';
        strcpy(r.id, "0123456789abcdef0123456789abcdef");
        dl_record_self(&r.who, r.id, DIRLOCK_EXCLUSIVE, 180, 0, 0);
        char text[DL_WAIT_RECORD_MAX], entry[512];
        assert_true(dl_wait_record_format(&r, text, sizeof text) > 0);
        snprintf(entry, sizeof entry, "%s/.waits/o.%s", lockdir, r.id);
        assert_int_equal(symlink(text, entry), 0);
        dirlock_owner *all;
        size_t n;
        assert_int_equal(dirlock_list(lockdir, 0, &all, &n, NULL), DIRLOCK_OK);
        bool found = false;
        for (size_t i = 0; i < n; i++)
                found =
                    found || (strcmp(all[i].name, "ghost") == 0 && all[i].waiters == 1 && all[i].pid == 0);
        free(all);
        assert_true(found);
        dirlock_owner o;
        assert_int_equal(dirlock_inspect(lockdir, "ghost", 0, &o, NULL), DIRLOCK_OK);
        assert_int_equal(o.waiters, 1);
        unlink(entry);
        assert_int_equal(dirlock_inspect(lockdir, "ghost", 0, &o, NULL), DIRLOCK_ENOLOCK);
        dirlock_release(a, NULL);
}

/* Holders one by one: the exclusive holder, or each reader; the permits. */
static void test_holders(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = DIRLOCK_SHARED;
        dirlock *r1, *r2, *p1;
        assert_int_equal(dirlock_acquire(space, "h", &o, &r1, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire(space, "h", &o, &r2, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire_permit(space, "h", 3, NULL, &p1, NULL), DIRLOCK_OK);
        dirlock_owner *h;
        size_t n;
        assert_int_equal(dirlock_holders(space, "h", 0, &h, &n, NULL), DIRLOCK_OK);
        assert_int_equal(n, 3);
        int readers = 0, permits = 0;
        for (size_t i = 0; i < n; i++) {
                assert_string_equal(h[i].name, "h");
                assert_int_equal(h[i].pid, getpid());
                readers += h[i].mode == DIRLOCK_SHARED && h[i].permits == 0;
                permits += h[i].permits == 3;
        }
        assert_int_equal(readers, 2);
        assert_int_equal(permits, 1);
        free(h);
        dirlock_release(r1, NULL);
        dirlock_release(r2, NULL);
        dirlock_release(p1, NULL);
        dirlock_options xo = DIRLOCK_OPTIONS_INIT;
        xo.timeout = 0;
        dirlock *x = NULL;
        assert_int_equal(dirlock_acquire(space, "h", &xo, &x, NULL), DIRLOCK_OK);
        assert_int_equal(dirlock_holders(space, "h", 0, &h, &n, NULL), DIRLOCK_OK);
        assert_int_equal(n, 1);
        assert_string_equal(h[0].token, dirlock_token(x));
        assert_int_equal(h[0].mode, DIRLOCK_EXCLUSIVE);
        free(h);
        dirlock_release(x, NULL);
        assert_int_equal(dirlock_holders(space, "h", 0, &h, &n, NULL), DIRLOCK_OK);
        assert_int_equal(n, 0);
        free(h);
}

/* An owner record names the thread that took the lock. */
static void test_record_thread(void **state)
{
        (void)state;
        dirlock *x = take("t", 0);
        char cmd[512], text[DL_RECORD_MAX];
        snprintf(cmd, sizeof cmd, "%s/t.lock/owner.%s", lockdir, dirlock_token(x));
        ssize_t n = readlink(cmd, text, sizeof text - 1);
        assert_true(n > 0);
        text[n] = '\0';
        char want[32];
        snprintf(want, sizeof want, " tid=%ld ", (long)dl_self_tid());
        assert_non_null(strstr(text, want));
        dl_record r;
        assert_int_equal(dl_record_parse(text, (size_t)n, &r), 0);
        assert_int_equal(r.tid, dl_self_tid());
        dirlock_release(x, NULL);
}

/* A waiter killed while it waits is left out of the list. */
static void test_killed_waiter(void **state)
{
        (void)state;
        NEED_SPACE();
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *a = NULL;
        assert_int_equal(dirlock_acquire(space, "kw", &o, &a, NULL), DIRLOCK_OK);
        pid_t child = fork();
        if (child == 0) {
                dirlock_options c = DIRLOCK_OPTIONS_INIT;
                c.timeout = 30;
                dirlock *h = NULL;
                _exit(dirlock_acquire(space, "kw", &c, &h, NULL) == DIRLOCK_OK ? 0 : 1);
        }
        dirlock_waiter *w;
        assert_int_equal(waiters_of("kw", 1, &w), 1);
        assert_int_equal(w[0].pid, child);
        free(w);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        assert_int_equal(waiters_of("kw", 0, &w), 0);
        free(w);
        dirlock_release(a, NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup(test_every_kind, fresh),
            cmocka_unit_test_setup(test_holders, fresh),
            cmocka_unit_test_setup(test_killed_waiter, fresh),
        };
        /* The wait register's own: pending acquires, entries, records. */
        const struct CMUnitTest dir_only[] = {
            cmocka_unit_test_setup(test_pending_killed_listed, fresh),
            cmocka_unit_test_setup(test_record_thread, fresh),
        };
        int failed = cmocka_run_group_tests_name("directory space", tests, dir_setup, teardown);
        failed += cmocka_run_group_tests_name("directory space only", dir_only, dir_setup, teardown);
        return failed + cmocka_run_group_tests_name("Redis space", tests, redis_setup, redis_teardown);
}
