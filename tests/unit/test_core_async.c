/* test_core_async.c - unit tests of acquires an event loop drives
 * (dirlock_acquire_start and the other *_start calls, dirlock_pending_*):
 * a free lock at once, a wait that ends when the holder lets go, the
 * deadline with no timer of the caller's, cancel and free at any point
 * leaving nothing behind, every mode, ranges, many names, an upgrade, many
 * pending acquires in one epoll loop served one at a time, with and
 * without inotify, an upgrade canceled, a dead but unreaped holder whose
 * partner holds on, and the fork guard. */
#include "core_fixture.h"
#include "dirlock_async.h"
#include "dirlock_range.h"
#include "dirlock_rw.h"

#include <dirent.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>

static bool readable_within(dirlock_pending *p, int ms)
{
        struct pollfd w = {.fd = dirlock_pending_fd(p), .events = POLLIN};
        return poll(&w, 1, ms) == 1;
}

/* For `ms`, step whenever the descriptor is readable: the acquire must
 * still be waiting at every step, and be stepped only a few times (its
 * re-checks, wait.c: no busy loop).  Returns the number of steps. */
static int still_waiting(dirlock_pending *p, int ms)
{
        dirlock_error e;
        int steps = 0;
        double until = now_ms() + ms;
        while (now_ms() < until) {
                if (!readable_within(p, (int)(until - now_ms()) + 1))
                        continue;
                steps++;
                assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_EAGAIN);
        }
        assert_true(steps <= 2 * ms / 30 + 2);
        return steps;
}

/* Step until done, polling the descriptor (at most `ms` in all). */
static int finish(dirlock_pending *p, int ms, dirlock_error *e)
{
        double until = now_ms() + ms;
        int rc;
        while ((rc = dirlock_pending_step(p, e)) == DIRLOCK_EAGAIN && now_ms() < until)
                readable_within(p, (int)(until - now_ms()) + 1);
        return rc;
}

/* What is left in the lock directory: "" when nothing. */
/* What is left in the lock directory, but the wait register (D/.waits,
 * kept for the next waiter: lib/dir/waits.c) when it is empty. */
static void leftovers(char *out, size_t size)
{
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "rmdir '%s/.waits' 2>/dev/null; ls -A '%s' | tr '\\n' ' '", lockdir,
                 lockdir);
        FILE *f = popen(cmd, "r");
        out[0] = '\0';
        if (f != NULL) {
                if (fgets(out, (int)size, f) == NULL)
                        out[0] = '\0';
                pclose(f);
        }
}

static void test_free_lock_at_once(void **state)
{
        (void)state;
        dirlock_pending *p = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_start(lockdir, "free", NULL, &p, &e), DIRLOCK_OK);
        assert_true(readable_within(p, 0)); /* done: the loop learns it */
        assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_OK);
        dirlock *h = dirlock_pending_lock(p);
        assert_non_null(h);
        assert_null(dirlock_pending_lock(p));                      /* handed over once */
        assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_OK); /* and the same result again */
        dirlock_pending_free(p);
        assert_int_equal(dirlock_check(h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
}

/* Held by another handle: the pending acquire waits, its descriptor is
 * quiet, and becomes readable when the holder lets go. */
static void wait_for_release(int mode, unsigned flags)
{
        dirlock *holder = take("w", 0);
        assert_non_null(holder);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = mode;
        o.flags = flags;
        dirlock_pending *p = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_start(lockdir, "w", &o, &p, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_EAGAIN);
        still_waiting(p, 300);
        assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_EAGAIN); /* a step too many is harmless */
        assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK);
        assert_true(readable_within(p, 2000));
        assert_int_equal(finish(p, 2000, &e), DIRLOCK_OK);
        dirlock *h = dirlock_pending_lock(p);
        dirlock_pending_free(p);
        assert_int_equal(dirlock_mode_of(h), mode);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
}

static void test_wait_exclusive(void **state)
{
        (void)state;
        wait_for_release(DIRLOCK_EXCLUSIVE, 0);
}

static void test_wait_shared(void **state)
{
        (void)state;
        wait_for_release(DIRLOCK_SHARED, 0);
}

static void test_wait_intent(void **state)
{
        (void)state;
        wait_for_release(DIRLOCK_INTENT, 0);
}

static void test_wait_fifo(void **state)
{
        (void)state;
        wait_for_release(DIRLOCK_EXCLUSIVE, DIRLOCK_FIFO);
}

static void test_wait_without_inotify(void **state)
{
        (void)state;
        wait_for_release(DIRLOCK_EXCLUSIVE, DIRLOCK_NO_NOTIFY);
}

/* The deadline makes the descriptor readable: no timer of the caller's. */
static void test_deadline(void **state)
{
        (void)state;
        dirlock *holder = take("d", 0);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0.3;
        dirlock_pending *p = NULL;
        dirlock_error e;
        double t0 = now_ms();
        assert_int_equal(dirlock_acquire_start(lockdir, "d", &o, &p, &e), DIRLOCK_OK);
        int rc;
        while ((rc = dirlock_pending_step(p, &e)) == DIRLOCK_EAGAIN)
                assert_true(readable_within(p, 5000));
        double took = now_ms() - t0;
        assert_int_equal(rc, DIRLOCK_ETIMEDOUT);
        assert_true(took >= 299);
        assert_null(dirlock_pending_lock(p));
        dirlock_pending_free(p);
        assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK);
}

/* Cancel while waiting, in each mode and with FIFO: the acquire ends
 * DIRLOCK_ECANCELED and leaves nothing of its own in the lock directory. */
static void test_cancel(void **state)
{
        (void)state;
        const int modes[] = {DIRLOCK_EXCLUSIVE, DIRLOCK_SHARED, DIRLOCK_INTENT, DIRLOCK_EXCLUSIVE};
        const unsigned flags[] = {0, 0, 0, DIRLOCK_FIFO};
        for (size_t i = 0; i < 4; i++) {
                dirlock *holder = take("c", 0);
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.mode = modes[i];
                o.flags = flags[i];
                dirlock_pending *p = NULL;
                dirlock_error e;
                assert_int_equal(dirlock_acquire_start(lockdir, "c", &o, &p, &e), DIRLOCK_OK);
                assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_EAGAIN);
                dirlock_pending_cancel(p);
                assert_true(readable_within(p, 2000));
                assert_int_equal(finish(p, 2000, &e), DIRLOCK_ECANCELED);
                dirlock_pending_free(p);
                assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK);
                char left[256];
                leftovers(left, sizeof left);
                /* What stays by design: the readers' directory (kept for
                 * the next reader, rwlock.c). */
                assert_true(left[0] == '\0' || strcmp(left, "c.readers ") == 0);
                rmdir(strcat(strcat(strcpy(left, lockdir), "/"), "c.readers"));
        }
}

/* The caller's own cancel descriptor (DIRLOCK_CANCEL_FD) works too. */
static void test_cancel_fd(void **state)
{
        (void)state;
        dirlock *holder = take("cf", 0);
        int efd = eventfd(0, EFD_CLOEXEC);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_CANCEL_FD;
        o.cancel_fd = efd;
        dirlock_pending *p = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_start(lockdir, "cf", &o, &p, &e), DIRLOCK_OK);
        still_waiting(p, 100);
        uint64_t one = 1;
        assert_int_equal(write(efd, &one, sizeof one), (ssize_t)sizeof one);
        assert_true(readable_within(p, 2000));
        assert_int_equal(finish(p, 2000, &e), DIRLOCK_ECANCELED);
        dirlock_pending_free(p);
        close(efd);
        assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK);
}

/* Freed while waiting: canceled and cleaned up, the holder untouched;
 * freed done but not taken: the lock is released. */
static void test_free_any_time(void **state)
{
        (void)state;
        dirlock *holder = take("f", 0);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_FIFO;
        dirlock_pending *p = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_start(lockdir, "f", &o, &p, &e), DIRLOCK_OK);
        dirlock_pending_free(p);
        assert_int_equal(dirlock_check(holder, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK);
        char left[256];
        leftovers(left, sizeof left);
        assert_string_equal(left, "");
        assert_int_equal(dirlock_acquire_start(lockdir, "f", NULL, &p, &e), DIRLOCK_OK);
        dirlock_pending_free(p); /* got it, nobody took it */
        dirlock *again = take("f", 0);
        assert_non_null(again);
        assert_int_equal(dirlock_release(again, &e), DIRLOCK_OK);
}

/* Ranges, many names, an upgrade. */
static void test_other_calls(void **state)
{
        (void)state;
        dirlock_error e;
        dirlock_pending *p = NULL;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        dirlock *r1 = NULL;
        assert_int_equal(dirlock_acquire_range(lockdir, "r", 0, 10, &o, &r1, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire_range_start(lockdir, "r", 5, 15, &o, &p, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_EAGAIN);
        assert_int_equal(dirlock_release(r1, &e), DIRLOCK_OK);
        assert_int_equal(finish(p, 2000, &e), DIRLOCK_OK);
        dirlock *r2 = dirlock_pending_lock(p);
        double lo, hi;
        assert_true(dirlock_range_of(r2, &lo, &hi) && lo == 5 && hi == 15);
        dirlock_pending_free(p);
        assert_int_equal(dirlock_release(r2, &e), DIRLOCK_OK);

        dirlock *q = take("Q", 0);
        const char *names[] = {"Q", "P"};
        assert_int_equal(dirlock_acquire_many_start(lockdir, names, 2, NULL, &p, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_EAGAIN);
        assert_int_equal(dirlock_release(q, &e), DIRLOCK_OK);
        assert_int_equal(finish(p, 2000, &e), DIRLOCK_OK);
        dirlock_set *set = dirlock_pending_set(p);
        assert_non_null(set);
        assert_int_equal(dirlock_set_count(set), 2);
        dirlock_pending_free(p);
        assert_int_equal(dirlock_release_many(set, &e), DIRLOCK_OK);

        o.mode = DIRLOCK_INTENT;
        dirlock *i = NULL, *reader = NULL;
        assert_int_equal(dirlock_acquire(lockdir, "u", &o, &i, &e), DIRLOCK_OK);
        o.mode = DIRLOCK_SHARED;
        assert_int_equal(dirlock_acquire(lockdir, "u", &o, &reader, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_upgrade_start(i, NULL, &p, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_EAGAIN);
        assert_int_equal(dirlock_release(reader, &e), DIRLOCK_OK);
        assert_int_equal(finish(p, 2000, &e), DIRLOCK_OK);
        assert_null(dirlock_pending_lock(p));
        dirlock_pending_free(p);
        assert_int_equal(dirlock_mode_of(i), DIRLOCK_EXCLUSIVE);
        assert_int_equal(dirlock_release(i, &e), DIRLOCK_OK);
}

/* An upgrade gives up when canceled, pending (dirlock_pending_cancel) or
 * blocking (the call's own DIRLOCK_CANCEL_FD), and keeps its intent lock;
 * whole locks and ranges alike. */
static void test_cancel_upgrade(void **state)
{
        (void)state;
        for (int ranged = 0; ranged < 2; ranged++) {
                dirlock_error e;
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                dirlock *i = NULL, *reader = NULL;
                o.mode = DIRLOCK_INTENT;
                assert_int_equal(ranged ? dirlock_acquire_range(lockdir, "cu", 0, 10, &o, &i, &e)
                                        : dirlock_acquire(lockdir, "cu", &o, &i, &e),
                                 DIRLOCK_OK);
                o.mode = DIRLOCK_SHARED;
                assert_int_equal(ranged ? dirlock_acquire_range(lockdir, "cu", 5, 6, &o, &reader, &e)
                                        : dirlock_acquire(lockdir, "cu", &o, &reader, &e),
                                 DIRLOCK_OK);
                dirlock_pending *p = NULL;
                assert_int_equal(dirlock_upgrade_start(i, NULL, &p, &e), DIRLOCK_OK);
                still_waiting(p, 100);
                dirlock_pending_cancel(p);
                assert_int_equal(finish(p, 2000, &e), DIRLOCK_ECANCELED);
                dirlock_pending_free(p);
                assert_int_equal(dirlock_mode_of(i), DIRLOCK_INTENT);

                int efd = eventfd(1, EFD_CLOEXEC); /* readable from the start */
                dirlock_options u = DIRLOCK_OPTIONS_INIT;
                u.timeout = 1;
                u.flags = DIRLOCK_CANCEL_FD;
                u.cancel_fd = efd;
                assert_int_equal(dirlock_upgrade(i, &u, &e), DIRLOCK_ECANCELED);
                close(efd);
                assert_int_equal(dirlock_mode_of(i), DIRLOCK_INTENT);
                assert_int_equal(dirlock_release(reader, &e), DIRLOCK_OK);
                assert_int_equal(dirlock_upgrade(i, NULL, &e), DIRLOCK_OK);
                assert_int_equal(dirlock_release(i, &e), DIRLOCK_OK);
        }
}

/* The holder died but is not reaped yet (a zombie: its parent, this
 * process, has not waited for it) and its partner still holds the lock
 * (partner_pid, as the dirlock command's command does).  The acquire
 * waits for the partner -- its first step returns, the lock still held --
 * and gets the lock once the partner exits. */
static void test_zombie_owner_live_partner(void **state)
{
        (void)state;
        int ready[2], go[2];
        assert_int_equal(pipe(ready), 0);
        assert_int_equal(pipe(go), 0);
        pid_t owner = fork();
        if (owner == 0) {
                /* Neither keeps the test's output open, should it fail. */
                int null = open("/dev/null", O_WRONLY);
                dup2(null, 1);
                dup2(null, 2);
                pid_t partner = fork();
                if (partner == 0) { /* holds with the owner until told (10 s at most) */
                        struct pollfd w = {.fd = go[0], .events = POLLIN};
                        _exit(poll(&w, 1, 10000) == 1 ? 0 : 1);
                }
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.partner_pid = partner;
                dirlock *h = NULL;
                int rc = dirlock_acquire(lockdir, "z", &o, &h, NULL);
                ssize_t w = write(ready[1], rc == DIRLOCK_OK ? "y" : "n", 1);
                (void)w;
                _exit(0); /* holds it, unreaped, until the test waits for it */
        }
        char c = 0;
        assert_int_equal(read(ready[0], &c, 1), 1);
        assert_int_equal(c, 'y');
        while (dirlock_process_alive(owner, dirlock_process_start(owner)) == 1)
                sleep_ms(5); /* the owner is a zombie from here */
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 5;
        dirlock_pending *p = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_start(lockdir, "z", &o, &p, &e), DIRLOCK_OK);
        double t0 = now_ms();
        assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_EAGAIN);
        assert_true(now_ms() - t0 < 1000); /* it waits in the loop, not in the step */
        still_waiting(p, 200);
        assert_int_equal(write(go[1], "x", 1), 1); /* the partner exits */
        assert_int_equal(finish(p, 4000, &e), DIRLOCK_OK);
        dirlock *h = dirlock_pending_lock(p);
        dirlock_pending_free(p);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        waitpid(owner, NULL, 0);
        for (int i = 0; i < 2; i++) {
                close(ready[i]);
                close(go[i]);
        }
}

/* N pending acquires in one epoll loop, one thread.  A lock taken is
 * held until the end of the loop's round (every ready descriptor stepped),
 * so that two holders at once would both be counted.  With one name:
 * each is served once, never two at a time.  With a name each (`spread`,
 * the twin: nothing to exclude) many are held at once, so the count can
 * tell. */
static int many_in_one_loop(int n, unsigned flags, bool spread)
{
        struct rlimit nofile;
        getrlimit(RLIMIT_NOFILE, &nofile);
        rlim_t need = (rlim_t)(8 * n + 64);
        if (nofile.rlim_cur < need && nofile.rlim_max >= need) {
                nofile.rlim_cur = need;
                setrlimit(RLIMIT_NOFILE, &nofile);
        }
        dirlock_pending **ps = calloc((size_t)n, sizeof *ps);
        dirlock **round = calloc((size_t)n, sizeof *round);
        int ep = epoll_create1(EPOLL_CLOEXEC);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = flags;
        o.timeout = 60;
        dirlock_error e;
        dirlock *first = take("m", 0);
        for (int i = 0; i < n; i++) {
                char name[16];
                snprintf(name, sizeof name, spread ? "m%d" : "m", i);
                assert_int_equal(dirlock_acquire_start(lockdir, name, &o, &ps[i], &e), DIRLOCK_OK);
                struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
                assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, dirlock_pending_fd(ps[i]), &ev), 0);
        }
        assert_int_equal(dirlock_release(first, &e), DIRLOCK_OK);
        int served = 0, most = 0;
        double until = now_ms() + 60000;
        while (served < n && now_ms() < until) {
                struct epoll_event evs[256];
                int k = epoll_wait(ep, evs, 256, 1000), held = 0;
                for (int j = 0; j < k; j++) {
                        dirlock_pending *p = ps[evs[j].data.u32];
                        if (p == NULL)
                                continue;
                        int rc = dirlock_pending_step(p, &e);
                        if (rc == DIRLOCK_EAGAIN)
                                continue;
                        assert_int_equal(rc, DIRLOCK_OK);
                        round[held++] = dirlock_pending_lock(p);
                        epoll_ctl(ep, EPOLL_CTL_DEL, dirlock_pending_fd(p), NULL);
                        dirlock_pending_free(p);
                        ps[evs[j].data.u32] = NULL;
                        served++;
                }
                most = held > most ? held : most;
                while (held > 0)
                        assert_int_equal(dirlock_release(round[--held], &e), DIRLOCK_OK);
        }
        close(ep);
        for (int i = 0; i < n; i++)
                dirlock_pending_free(ps[i]);
        free(ps);
        free(round);
        assert_int_equal(served, n);
        return most;
}

static void test_many_in_one_loop(void **state)
{
        (void)state;
        assert_int_equal(many_in_one_loop(200, 0, false), 1);
        assert_true(many_in_one_loop(100, 0, true) > 1); /* the twin */
}

/* A thousand pending acquires in one loop, each waiting for a lock of its
 * own that this thread holds: all are woken by their own release (the
 * inotify hub kicks each) and end with their lock. */
static void test_thousand_pending(void **state)
{
        (void)state;
        enum { N = 1000 };
        struct rlimit nofile;
        getrlimit(RLIMIT_NOFILE, &nofile);
        if (nofile.rlim_cur < 8 * N && nofile.rlim_max >= 8 * N) {
                nofile.rlim_cur = 8 * N;
                setrlimit(RLIMIT_NOFILE, &nofile);
        }
        if (nofile.rlim_cur < 6 * N + 64) {
                print_message("skipped: %d descriptors allowed, %d needed\n", (int)nofile.rlim_cur,
                              6 * N + 64);
                return;
        }
        dirlock **holders = calloc(N, sizeof *holders);
        dirlock_pending **ps = calloc(N, sizeof *ps);
        int ep = epoll_create1(EPOLL_CLOEXEC);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 60;
        dirlock_error e;
        for (int i = 0; i < N; i++) {
                char name[16];
                snprintf(name, sizeof name, "t%d", i);
                holders[i] = take(name, 0);
                assert_non_null(holders[i]);
                assert_int_equal(dirlock_acquire_start(lockdir, name, &o, &ps[i], &e), DIRLOCK_OK);
                struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
                assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, dirlock_pending_fd(ps[i]), &ev), 0);
        }
        for (int i = 0; i < N; i++)
                assert_int_equal(dirlock_release(holders[i], &e), DIRLOCK_OK);
        int served = 0;
        double until = now_ms() + 60000;
        while (served < N && now_ms() < until) {
                struct epoll_event evs[256];
                int k = epoll_wait(ep, evs, 256, 1000);
                for (int j = 0; j < k; j++) {
                        int i = (int)evs[j].data.u32;
                        if (ps[i] == NULL)
                                continue;
                        int rc = dirlock_pending_step(ps[i], &e);
                        if (rc == DIRLOCK_EAGAIN)
                                continue;
                        assert_int_equal(rc, DIRLOCK_OK);
                        holders[i] = dirlock_pending_lock(ps[i]);
                        epoll_ctl(ep, EPOLL_CTL_DEL, dirlock_pending_fd(ps[i]), NULL);
                        dirlock_pending_free(ps[i]);
                        ps[i] = NULL;
                        served++;
                }
        }
        close(ep);
        assert_int_equal(served, N);
        for (int i = 0; i < N; i++)
                assert_int_equal(dirlock_release(holders[i], &e), DIRLOCK_OK);
        free(holders);
        free(ps);
}

static void test_many_in_one_loop_fifo(void **state)
{
        (void)state;
        assert_int_equal(many_in_one_loop(100, DIRLOCK_FIFO, false), 1);
}

static void test_many_in_one_loop_without_inotify(void **state)
{
        (void)state;
        assert_int_equal(many_in_one_loop(50, DIRLOCK_NO_NOTIFY, false), 1);
}

/* ---- DIRLOCK_THREAD_FD: one descriptor for the thread's acquires ------------ */

static int open_fd_count(void)
{
        DIR *d = opendir("/proc/self/fd");
        int n = 0;
        while (d != NULL && readdir(d) != NULL)
                n++;
        if (d != NULL)
                closedir(d);
        return n - 3; /* ".", ".." and the listing's own */
}

/* Poll the thread's descriptor until `want` acquires ended (or `ms`
 * passed), counting the rounds (calls of dirlock_pending_next until NULL)
 * and calling `ended` for each one.  Returns the number that ended. */
static int run_rounds(int fd, int want, int ms, int *rounds, void (*ended)(dirlock_pending *p, void *arg),
                      void *arg)
{
        int got = 0;
        double until = now_ms() + ms;
        while (got < want && now_ms() < until) {
                struct pollfd w = {.fd = fd, .events = POLLIN};
                if (poll(&w, 1, 1000) != 1)
                        continue;
                dirlock_pending *p;
                while ((p = dirlock_pending_next()) != NULL) {
                        got++;
                        if (ended == NULL)
                                fail_msg("acquire %d ended", (int)(intptr_t)dirlock_pending_data(p));
                        ended(p, arg);
                }
                if (rounds != NULL)
                        (*rounds)++;
        }
        return got;
}

/* What the served acquires of one name saw: the order they were served
 * in, and how many held at once (a holder keeps its lock until the end of
 * its round, as in many_in_one_loop). */
struct served {
        int *order;
        int n, held_now, most;
        dirlock **round;
        unsigned flags;
};

static void serve(dirlock_pending *p, void *arg)
{
        struct served *sv = arg;
        dirlock_error e;
        int rc = dirlock_pending_step(p, &e);
        if (rc != DIRLOCK_OK)
                fail_msg("acquire %d: %s", (int)(intptr_t)dirlock_pending_data(p), e.message);
        sv->order[sv->n++] = (int)(intptr_t)dirlock_pending_data(p);
        sv->round[sv->held_now++] = dirlock_pending_lock(p);
        if (sv->held_now > sv->most)
                sv->most = sv->held_now;
        dirlock_pending_free(p);
}

/* N acquires started with DIRLOCK_THREAD_FD in one thread, all waiting for
 * one lock this thread holds (or, `spread`, each for a lock of its own: the
 * twin, where many hold at once).  Each is served once, one at a time, in
 * the order they were started (their queue order), and while they wait the
 * thread holds no more descriptors than before, whatever N. */
static int thread_fd_loop(int n, unsigned flags, bool spread, int *fds_added)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_THREAD_FD | flags;
        o.timeout = 120;
        dirlock_error e;
        dirlock **holders = calloc((size_t)n, sizeof *holders);
        dirlock_pending **ps = calloc((size_t)n, sizeof *ps);
        struct served sv = {calloc((size_t)n, sizeof(int)),       0,    0, 0,
                            calloc((size_t)n, sizeof(dirlock *)), flags};
        for (int i = 0; i < (spread ? n : 1); i++) {
                char name[16];
                snprintf(name, sizeof name, spread ? "s%d" : "one", i);
                holders[i] = take(name, 0);
                assert_non_null(holders[i]);
        }
        int fds_before = open_fd_count();
        for (int i = 0; i < n; i++) {
                char name[16];
                snprintf(name, sizeof name, spread ? "s%d" : "one", i);
                assert_int_equal(dirlock_acquire_start(lockdir, name, &o, &ps[i], &e), DIRLOCK_OK);
                dirlock_pending_set_data(ps[i], (void *)(intptr_t)i);
        }
        int fd = dirlock_pending_fd(ps[0]);
        for (int i = 1; i < n; i++)
                assert_int_equal(dirlock_pending_fd(ps[i]), fd); /* one for all */
        /* Every one runs to its first wait (rounds of the loop, until the
         * descriptor is quiet for a while: only the first waiter's
         * re-checks wake it then); none ends. */
        double settle_until = now_ms() + 60000;
        struct pollfd w = {.fd = fd, .events = POLLIN};
        while (poll(&w, 1, 30) == 1 && now_ms() < settle_until)
                assert_null(dirlock_pending_next());
        *fds_added = open_fd_count() - fds_before;
        for (int i = 0; i < (spread ? n : 1); i++)
                assert_int_equal(dirlock_release(holders[i], &e), DIRLOCK_OK);
        double until = now_ms() + 120000;
        while (sv.n < n && now_ms() < until) {
                if (poll(&w, 1, 1000) != 1)
                        continue;
                dirlock_pending *p;
                while ((p = dirlock_pending_next()) != NULL)
                        serve(p, &sv);
                while (sv.held_now > 0) /* the end of the round */
                        assert_int_equal(dirlock_release(sv.round[--sv.held_now], &e), DIRLOCK_OK);
        }
        assert_int_equal(sv.n, n);
        if (!spread)
                for (int i = 0; i < n; i++)
                        assert_int_equal(sv.order[i], i); /* in queue order */
        free(sv.order);
        free(sv.round);
        free(holders);
        free(ps);
        return sv.most;
}

static void test_thread_fd_one_lock(void **state)
{
        (void)state;
        int added;
        assert_int_equal(thread_fd_loop(1000, 0, false, &added), 1);
        /* The thread's set, timer, two eventfds, inotify instance, the
         * first waiter's pidfd: not one per acquire. */
        print_message("1000 waiting: %d descriptors more\n", added);
        assert_true(added <= 8);
        assert_int_equal(thread_fd_loop(300, DIRLOCK_FIFO, false, &added), 1);
        assert_true(added <= 8);
        assert_true(thread_fd_loop(100, 0, true, &added) > 1); /* the twin */
}

static void end_at_once(dirlock_pending *p, void *arg)
{
        (void)arg;
        dirlock_error e;
        assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(dirlock_pending_lock(p), &e), DIRLOCK_OK);
        dirlock_pending_free(p);
}

/* Starting many at once does not run them all there and then: the starts
 * of a turn run about a millisecond of acquires, the others are queued,
 * and each round of dirlock_pending_next runs about a millisecond of
 * them, the descriptor staying readable for the rest -- so that a loop
 * with thousands of them still turns.  (Free locks: each ends at its
 * first run.) */
static void test_thread_fd_rounds(void **state)
{
        (void)state;
        enum { N = 400 };
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_THREAD_FD;
        dirlock_pending *ps[N];
        dirlock_error e;
        double t0 = now_ms();
        for (int i = 0; i < N; i++) {
                char name[16];
                snprintf(name, sizeof name, "r%d", i);
                assert_int_equal(dirlock_acquire_start(lockdir, name, &o, &ps[i], &e), DIRLOCK_OK);
        }
        double started = now_ms() - t0;
        int rounds = 0;
        t0 = now_ms();
        assert_int_equal(run_rounds(dirlock_pending_fd(ps[0]), N, 60000, &rounds, end_at_once, NULL), N);
        double ran = now_ms() - t0;
        print_message("%d started in %.1f ms, ended in %d rounds, %.1f ms\n", N, started, rounds, ran);
        assert_true(rounds >= 2);
        assert_true(started < ran); /* the starts queued most of the work */
}

/* Canceled and freed while they wait, among others that are served:
 * nothing of theirs is left, and the others go on. */
static void test_thread_fd_cancel_free(void **state)
{
        (void)state;
        enum { N = 30 };
        dirlock *holder = take("cx", 0);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_THREAD_FD | DIRLOCK_FIFO;
        o.timeout = 30;
        dirlock_pending *ps[N];
        dirlock_error e;
        for (int i = 0; i < N; i++) {
                assert_int_equal(dirlock_acquire_start(lockdir, "cx", &o, &ps[i], &e), DIRLOCK_OK);
                dirlock_pending_set_data(ps[i], (void *)(intptr_t)i);
        }
        for (int i = 0; i < N; i += 3)
                dirlock_pending_cancel(ps[i]);
        for (int i = 1; i < N; i += 3) {
                dirlock_pending_free(ps[i]); /* finished here, never reported */
                ps[i] = NULL;
        }
        int fd = dirlock_pending_fd(ps[2]);
        int canceled = 0, served = 0;
        double until = now_ms() + 30000;
        bool released = false;
        while (canceled + served < N - N / 3 && now_ms() < until) {
                struct pollfd w = {.fd = fd, .events = POLLIN};
                poll(&w, 1, 200);
                dirlock_pending *p;
                while ((p = dirlock_pending_next()) != NULL) {
                        int i = (int)(intptr_t)dirlock_pending_data(p);
                        assert_non_null(ps[i]);
                        int rc = dirlock_pending_step(p, &e);
                        if (i % 3 == 0) {
                                assert_int_equal(rc, DIRLOCK_ECANCELED);
                                canceled++;
                        } else {
                                assert_int_equal(rc, DIRLOCK_OK);
                                assert_int_equal(dirlock_release(dirlock_pending_lock(p), &e), DIRLOCK_OK);
                                served++;
                        }
                        dirlock_pending_free(p);
                        ps[i] = NULL;
                }
                if (!released && canceled == (N + 2) / 3) {
                        assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK);
                        released = true;
                }
        }
        assert_int_equal(canceled, (N + 2) / 3);
        assert_int_equal(served, N - N / 3 - (N + 2) / 3);
        char left[256];
        leftovers(left, sizeof left); /* (earlier tests' range meta-locks stay, by design) */
        assert_null(strstr(left, "cx"));
}

/* A queue shared with another process: this thread's acquires (through
 * its view of the queue) and another process's blocking one, all FIFO,
 * are served in arrival order -- the other's between the thread's fifth
 * and sixth -- each writing its mark to a log while it holds the lock;
 * and when that other process is killed while it waits, the thread's
 * acquires behind its ticket go on. */
static void queue_with_another(bool kill_it)
{
        char log[300];
        snprintf(log, sizeof log, "%s/order.log", lockdir);
        int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        assert_true(logfd >= 0);
        dirlock *holder = take("q", 0);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_THREAD_FD | DIRLOCK_FIFO;
        o.timeout = 30;
        dirlock_pending *ps[10];
        dirlock_error e;
        char fifo_dir[300];
        snprintf(fifo_dir, sizeof fifo_dir, "%s/q.fifo", lockdir);
        for (int i = 0; i < 5; i++) {
                assert_int_equal(dirlock_acquire_start(lockdir, "q", &o, &ps[i], &e), DIRLOCK_OK);
                dirlock_pending_set_data(ps[i], (void *)(intptr_t)i);
        }
        int fd = dirlock_pending_fd(ps[0]);
        run_rounds(fd, 1, 50, NULL, NULL, NULL); /* each to its first wait */
        pid_t child = fork();
        if (child == 0) {
                dirlock_options b = DIRLOCK_OPTIONS_INIT;
                b.flags = DIRLOCK_FIFO;
                b.timeout = 30;
                dirlock *h = NULL;
                if (dirlock_acquire(lockdir, "q", &b, &h, NULL) != DIRLOCK_OK)
                        _exit(1);
                ssize_t w = write(logfd, "b\n", 2);
                _exit(w == 2 && dirlock_release(h, NULL) == DIRLOCK_OK ? 0 : 1);
        }
        char cmd[400];
        snprintf(cmd, sizeof cmd, "ls '%s' | grep -c '^t\\.'", fifo_dir);
        for (int tries = 0; tries < 500; tries++) { /* its ticket is the sixth */
                FILE *f = popen(cmd, "r");
                int count = 0;
                if (f != NULL) {
                        if (fscanf(f, "%d", &count) != 1)
                                count = 0;
                        pclose(f);
                }
                if (count >= 6)
                        break;
                sleep_ms(10);
        }
        for (int i = 5; i < 10; i++) {
                assert_int_equal(dirlock_acquire_start(lockdir, "q", &o, &ps[i], &e), DIRLOCK_OK);
                dirlock_pending_set_data(ps[i], (void *)(intptr_t)i);
        }
        run_rounds(fd, 1, 50, NULL, NULL, NULL);
        if (kill_it) {
                kill(child, SIGKILL);
                waitpid(child, NULL, 0);
        }
        assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK);
        int served = 0;
        double until = now_ms() + 20000;
        while (served < 10 && now_ms() < until) {
                struct pollfd w = {.fd = fd, .events = POLLIN};
                poll(&w, 1, 200);
                dirlock_pending *p;
                while ((p = dirlock_pending_next()) != NULL) {
                        assert_int_equal(dirlock_pending_step(p, &e), DIRLOCK_OK);
                        char mark[8];
                        int len = snprintf(mark, sizeof mark, "%d\n", (int)(intptr_t)dirlock_pending_data(p));
                        assert_int_equal(write(logfd, mark, (size_t)len), len);
                        assert_int_equal(dirlock_release(dirlock_pending_lock(p), &e), DIRLOCK_OK);
                        dirlock_pending_free(p);
                        served++;
                }
        }
        assert_int_equal(served, 10);
        int st = 0;
        if (!kill_it) {
                waitpid(child, &st, 0);
                assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
        close(logfd);
        char order[64] = "";
        FILE *f = fopen(log, "r");
        assert_non_null(f);
        size_t got = fread(order, 1, sizeof order - 1, f);
        order[got] = '\0';
        fclose(f);
        assert_string_equal(order,
                            kill_it ? "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n" : "0\n1\n2\n3\n4\nb\n5\n6\n7\n8\n9\n");
        unlink(log);
}

static void test_thread_fd_queue_with_another_process(void **state)
{
        (void)state;
        queue_with_another(false);
        queue_with_another(true);
}

/* The thread's view of a queue is followed while two of its acquires or
 * more wait there; down to one, that one goes back to watching the
 * ticket ahead itself -- here another process's -- and is served when
 * that process lets go, not after its long wait behind one of its own. */
static void test_thread_fd_view_down_to_one(void **state)
{
        (void)state;
        int go[2];
        assert_int_equal(pipe(go), 0);
        dirlock *holder = take("v1", 0);
        char cmd[400];
        snprintf(cmd, sizeof cmd, "ls '%s/v1.fifo' 2>/dev/null | grep -c '^t\\.'", lockdir);
        pid_t child = fork();
        if (child == 0) { /* ahead of ours in the queue; holds until told */
                dirlock_options b = DIRLOCK_OPTIONS_INIT;
                b.flags = DIRLOCK_FIFO;
                b.timeout = 30;
                dirlock *h = NULL;
                if (dirlock_acquire(lockdir, "v1", &b, &h, NULL) != DIRLOCK_OK)
                        _exit(1);
                char c;
                _exit(read(go[0], &c, 1) == 1 && dirlock_release(h, NULL) == DIRLOCK_OK ? 0 : 1);
        }
        for (int tries = 0; tries < 500; tries++) {
                FILE *f = popen(cmd, "r");
                int count = 0;
                if (f != NULL) {
                        if (fscanf(f, "%d", &count) != 1)
                                count = 0;
                        pclose(f);
                }
                if (count >= 1)
                        break;
                sleep_ms(10);
        }
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_THREAD_FD | DIRLOCK_FIFO;
        o.timeout = 30;
        dirlock_pending *p1, *p2;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_start(lockdir, "v1", &o, &p1, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire_start(lockdir, "v1", &o, &p2, &e), DIRLOCK_OK);
        int fd = dirlock_pending_fd(p1);
        run_rounds(fd, 1, 100, NULL, NULL, NULL);
        dirlock_pending_free(p1); /* p2 alone: the view stops */
        run_rounds(fd, 1, 100, NULL, NULL, NULL);
        assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK); /* the child takes it */
        run_rounds(fd, 1, 300, NULL, NULL, NULL);
        double t0 = now_ms();
        assert_int_equal(write(go[1], "x", 1), 1); /* and lets go */
        struct pollfd w = {.fd = fd, .events = POLLIN};
        dirlock_pending *p = NULL;
        while (p == NULL && now_ms() - t0 < 5000)
                if (poll(&w, 1, 100) == 1)
                        p = dirlock_pending_next();
        double took = now_ms() - t0;
        assert_ptr_equal(p, p2);
        assert_int_equal(dirlock_pending_step(p2, &e), DIRLOCK_OK);
        print_message("served %.0f ms after the other process let go\n", took);
        assert_true(took < 2000); /* its follower's wait would be seconds */
        assert_int_equal(dirlock_release(dirlock_pending_lock(p2), &e), DIRLOCK_OK);
        dirlock_pending_free(p2);
        int st;
        waitpid(child, &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        close(go[0]);
        close(go[1]);
}

/* A forked child may not step its parent's pending acquire; freeing its
 * copy leaves the parent's alone. */
static void test_fork(void **state)
{
        (void)state;
        dirlock *holder = take("k", 0);
        dirlock_pending *p = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire_start(lockdir, "k", NULL, &p, &e), DIRLOCK_OK);
        pid_t child = fork();
        if (child == 0) {
                int rc = dirlock_pending_step(p, &e);
                dirlock_pending_free(p);
                dirlock_free(holder, NULL);
                /* Exec, as a forked CGI child does: what the parent's acquire
                 * had under way is not the child's to free (dirlock.h). */
                execl("/bin/sh", "sh", "-c", rc == DIRLOCK_ENOTOWNER ? "exit 0" : "exit 1", (char *)NULL);
                _exit(2);
        }
        int st;
        waitpid(child, &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_int_equal(dirlock_release(holder, &e), DIRLOCK_OK);
        assert_int_equal(finish(p, 2000, &e), DIRLOCK_OK);
        dirlock *h = dirlock_pending_lock(p);
        dirlock_pending_free(p);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_free_lock_at_once),
            cmocka_unit_test(test_wait_exclusive),
            cmocka_unit_test(test_wait_shared),
            cmocka_unit_test(test_wait_intent),
            cmocka_unit_test(test_wait_fifo),
            cmocka_unit_test(test_wait_without_inotify),
            cmocka_unit_test(test_deadline),
            cmocka_unit_test(test_cancel),
            cmocka_unit_test(test_cancel_fd),
            cmocka_unit_test(test_free_any_time),
            cmocka_unit_test(test_other_calls),
            cmocka_unit_test(test_cancel_upgrade),
            cmocka_unit_test(test_zombie_owner_live_partner),
            cmocka_unit_test(test_many_in_one_loop),
            cmocka_unit_test(test_thousand_pending),
            cmocka_unit_test(test_many_in_one_loop_fifo),
            cmocka_unit_test(test_many_in_one_loop_without_inotify),
            cmocka_unit_test(test_fork),
            cmocka_unit_test(test_thread_fd_one_lock),
            cmocka_unit_test(test_thread_fd_rounds),
            cmocka_unit_test(test_thread_fd_cancel_free),
            cmocka_unit_test(test_thread_fd_queue_with_another_process),
            cmocka_unit_test(test_thread_fd_view_down_to_one),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
