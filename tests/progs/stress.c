/* stress.c - many processes taking one lock with a short stale age, with a
 * shared-memory checker: the stress test of the exclusive and
 * reader-writer locks (tests/core-stale.t).
 *
 *   stress SPACE STALE PROCS SECONDS [OPTION...]   (a directory or redis://...)
 *     --mix        readers (shared), intent holders and writers at random,
 *                  under a random policy each, some with DIRLOCK_FIFO;
 *                  default: exclusive only
 *     --cleanup    one more process runs dirlock_cleanup() in a loop
 *     --hold MS    longest critical section (default: 2 x STALE)
 *     --long P     the share of critical sections that may last up to --hold
 *                  (default 0.1; the others last up to STALE / 10)
 *     --no-refresh holders do not refresh (they must lose long sections)
 *     --nolock     take no lock at all: the checker must see overlaps (the
 *                  twin that shows it can fail, wherever it runs)
 *     --also DIR   odd workers (and the cleaner) use DIR instead of SPACE:
 *                  the same lock directory reached another way, e.g. a
 *                  second mount of one network filesystem
 *     --lib-stale S  give the library stale age S instead of STALE (the
 *                  checker still expects STALE): with S well below STALE / 4
 *                  holders refresh too late for their locks, which are then
 *                  broken under them -- violations the checker must report
 *
 * Each worker loops: acquire (60 s timeout, canceled when the run ends:
 * a waiter then leaves without taking the lock once more); check at once (an OK for a
 * lock that is already broken counts as "ok_lost"); enter the critical
 * section; hold it for a random time (one in ten up to --hold, the others
 * up to STALE / 10) while refreshing every STALE / 4 (within the
 * documented STALE / 3); check again before leaving; leave; release.
 *
 * What counts.  Every process has a slot in shared memory: whether it is
 * inside and in which mode, and when it last renewed its lock (acquire or
 * refresh returned).  Entering, a process looks at the others inside: one
 * whose mode conflicts with its own is an overlap.  A lock lost while
 * inside (the check before leaving, or release saying DIRLOCK_ELOST) is a
 * loss.  The protocol promises these never happen to a holder that
 * refreshes as documented; a holder that the scheduler kept from its
 * refresh for most of the stale age (here: more than 3/4 of it, three
 * refresh intervals) is a paused holder, which the protocol may and must
 * treat as gone.  So an overlap with, or a loss of, such a holder counts
 * as "delayed" (reported, excused), every other one as a violation.
 *
 * Prints one line:
 *   acquisitions=N overlaps=N ok_lost=N lost=N delayed=N errors=N cleanups=N
 * and exits 0 when overlaps, ok_lost, lost and errors are all 0, else 1.
 * Every violation and every delayed case is described on stderr. */
#include "dirlock.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 256

struct slot {
        _Atomic int mode;          /* dirlock_mode while inside, -1 outside */
        _Atomic double last_renew; /* monotonic seconds                    */
};

struct shared {
        atomic_long acquisitions, overlaps, ok_lost, lost, delayed, errors, cleanups;
        atomic_int stop;
        struct slot slot[MAX_PROCS];
};

static struct shared *s;
static int procs, me;
static int stop_fd = -1; /* readable (end of file) once the run ends */
static double stale, lib_stale, delay_limit;
static double long_share = 0.1; /* --long */

static double now_s(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_s(double secs)
{
        if (secs <= 0)
                return;
        struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

/* xorshift, seeded per process */
static unsigned long long rng;
static double unit(void)
{
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return (double)(rng >> 11) / 9007199254740992.0;
}

static int conflicts(int a, int b)
{
        if (a == DIRLOCK_EXCLUSIVE || b == DIRLOCK_EXCLUSIVE)
                return 1;
        return a == DIRLOCK_INTENT && b == DIRLOCK_INTENT;
}

/* The lock was renewed at `at` or later: an acquire's return, or the
 * start of a refresh call (the entry is renewed somewhere inside it, so
 * a call held up on a busy machine counts from its start, as the gaps
 * of count_loss do). */
static void renewed(double at)
{
        s->slot[me].last_renew = at;
}

/* Enter in `mode`; count an overlap with every conflicting process inside. */
static void enter(int mode)
{
        s->slot[me].mode = mode;
        double now = now_s();
        for (int i = 0; i < procs; i++) {
                int m = s->slot[i].mode;
                if (i == me || m < 0 || !conflicts(m, mode))
                        continue;
                double quiet = now - s->slot[i].last_renew;
                if (quiet > delay_limit) {
                        atomic_fetch_add(&s->delayed, 1);
                        fprintf(
                            stderr,
                            "stress: delayed: overlap with process %d, which last renewed its lock %.1f ms "
                            "ago (stale age %.0f ms)\n",
                            i, quiet * 1e3, stale * 1e3);
                } else {
                        atomic_fetch_add(&s->overlaps, 1);
                        fprintf(
                            stderr,
                            "stress: VIOLATION: modes %d and %d inside at once; the other renewed its lock "
                            "%.1f ms ago (stale age %.0f ms)\n",
                            mode, m, quiet * 1e3, stale * 1e3);
                }
        }
}

static void leave(void)
{
        s->slot[me].mode = -1;
}

static void report(const char *what, const dirlock_error *e)
{
        atomic_fetch_add(&s->errors, 1);
        fprintf(stderr, "stress[%d]: %s: %s\n", me, what, e->message);
}

/* A lock lost while inside: a violation unless we were kept from renewing
 * it for most of the stale age. */
static void count_loss(const char *when, double longest_gap, const dirlock_options *o)
{
        if (longest_gap > delay_limit) {
                atomic_fetch_add(&s->delayed, 1);
                fprintf(stderr, "stress[%d]: delayed: lost %s after a gap of %.1f ms between renewals\n", me,
                        when, longest_gap * 1e3);
                return;
        }
        atomic_fetch_add(&s->lost, 1);
        fprintf(stderr,
                "stress[%d pid %d]: VIOLATION: lost %s although renewed every %.1f ms or sooner (mode %d "
                "policy %d "
                "flags %u, stale age %.0f ms)\n",
                me, (int)getpid(), when, longest_gap * 1e3, o->mode, o->policy, o->flags, stale * 1e3);
}

/* --nolock: enter, hold a moment, leave; overlaps are all the checker can
 * count. */
static void unlocked_worker(double hold)
{
        while (!atomic_load(&s->stop)) {
                atomic_fetch_add(&s->acquisitions, 1);
                renewed(now_s());
                enter(DIRLOCK_EXCLUSIVE);
                sleep_s(unit() * hold / 10);
                leave();
                sleep_s(unit() * stale / 20);
        }
}

static void worker(const char *dir, double hold, int mix, int refresh)
{
        const double refresh_every = refresh ? stale / 4 : 1e9;
        while (!atomic_load(&s->stop)) {
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 60;
                o.stale_age = lib_stale;
                o.flags |= DIRLOCK_CANCEL_FD;
                o.cancel_fd = stop_fd;
                if (mix) {
                        double u = unit();
                        o.mode = u < 0.5 ? DIRLOCK_SHARED : u < 0.7 ? DIRLOCK_INTENT : DIRLOCK_EXCLUSIVE;
                        o.policy = (int)(unit() * 3); /* fair, writer, reader */
                        if (unit() < 0.3)
                                o.flags |= DIRLOCK_FIFO;
                }
                dirlock *h;
                dirlock_error e;
                int rc = dirlock_acquire(dir, "stress", &o, &h, &e);
                if (rc != DIRLOCK_OK) {
                        if ((rc != DIRLOCK_ETIMEDOUT && rc != DIRLOCK_ECANCELED) || !atomic_load(&s->stop))
                                report("acquire", &e);
                        continue;
                }
                renewed(now_s());
                atomic_fetch_add(&s->acquisitions, 1);
                if (dirlock_check(h, &e) != DIRLOCK_OK) {
                        atomic_fetch_add(&s->ok_lost, 1);
                        fprintf(stderr, "stress[%d]: VIOLATION: acquire returned a lock already broken\n",
                                me);
                        dirlock_release(h, NULL);
                        continue;
                }
                enter(o.mode);
                /* Mostly short critical sections, one in ten (--long) longer
                 * than the stale age (up to --hold), kept only by refreshing. */
                double span = unit() < long_share ? unit() * hold : unit() * stale / 10;
                double end = now_s() + span, last = now_s(), gap = 0;
                for (double t = last; t < end; t = now_s()) {
                        double nap =
                            end - t < refresh_every - (t - last) ? end - t : refresh_every - (t - last);
                        sleep_s(nap);
                        if (now_s() - last >= refresh_every) {
                                /* The entry is renewed somewhere inside
                                 * the call: the gap counts from the start
                                 * of the last renewal to the end of this
                                 * one, so that a call held up on a busy
                                 * machine is a delay, not a violation. */
                                double began = now_s();
                                int refreshed = dirlock_refresh(h, &e);
                                if (now_s() - last > gap)
                                        gap = now_s() - last;
                                if (refreshed != DIRLOCK_OK) {
                                        if (e.code != DIRLOCK_ELOST)
                                                report("refresh", &e);
                                        break; /* the check below counts it */
                                }
                                last = began;
                                renewed(began);
                        }
                }
                if (now_s() - last > gap)
                        gap = now_s() - last;
                int lost = dirlock_check(h, &e) != DIRLOCK_OK;
                if (lost)
                        count_loss("in its critical section", gap, &o);
                leave();
                double before_release = now_s();
                rc = dirlock_release(h, &e);
                if (rc == DIRLOCK_ELOST && !lost)
                        count_loss("at release", before_release - last > gap ? before_release - last : gap,
                                   &o);
                else if (rc != DIRLOCK_OK && rc != DIRLOCK_ELOST)
                        report("release", &e);
                sleep_s(unit() * stale / 20); /* let the others in */
        }
}

static void cleaner(const char *dir)
{
        while (!atomic_load(&s->stop)) {
                dirlock_error e;
                if (dirlock_cleanup(dir, &e) != DIRLOCK_OK)
                        report("cleanup", &e);
                atomic_fetch_add(&s->cleanups, 1);
                sleep_s(0.002);
        }
}

int main(int argc, char **argv)
{
        if (argc < 5) {
                fprintf(stderr, "usage: stress LOCKDIR STALE PROCS SECONDS [--mix] [--cleanup] [--hold MS] "
                                "[--long P] [--no-refresh] [--nolock] [--also DIR] [--lib-stale S]\n");
                return 2;
        }
        const char *dir = argv[1];
        stale = atof(argv[2]);
        procs = atoi(argv[3]);
        double seconds = atof(argv[4]);
        int mix = 0, clean = 0, refresh = 1, nolock = 0;
        const char *also = NULL;
        double hold = 2 * stale;
        for (int i = 5; i < argc; i++) {
                if (strcmp(argv[i], "--mix") == 0)
                        mix = 1;
                else if (strcmp(argv[i], "--cleanup") == 0)
                        clean = 1;
                else if (strcmp(argv[i], "--nolock") == 0)
                        nolock = 1;
                else if (strcmp(argv[i], "--no-refresh") == 0)
                        refresh = 0;
                else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc)
                        hold = atof(argv[++i]) / 1e3;
                else if (strcmp(argv[i], "--long") == 0 && i + 1 < argc)
                        long_share = atof(argv[++i]);
                else if (strcmp(argv[i], "--also") == 0 && i + 1 < argc)
                        also = argv[++i];
                else if (strcmp(argv[i], "--lib-stale") == 0 && i + 1 < argc)
                        lib_stale = atof(argv[++i]);
                else {
                        fprintf(stderr, "stress: unknown option '%s'\n", argv[i]);
                        return 2;
                }
        }
        if (procs < 1 || procs > MAX_PROCS || stale <= 0 || seconds <= 0)
                return 2;
        if (lib_stale <= 0)
                lib_stale = stale;
        delay_limit = stale * 3 / 4;
        /* A directory space is made first (the cleaner may start before any
         * worker); a server's space (redis://...) needs nothing. */
        if (strstr(dir, "://") == NULL && mkdir(dir, 0777) != 0 && errno != EEXIST) {
                perror(dir);
                return 2;
        }
        s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (s == MAP_FAILED)
                return 2;
        memset(s, 0, sizeof *s);
        for (int i = 0; i < MAX_PROCS; i++)
                s->slot[i].mode = -1;
        /* The workers' cancel_fd: the read end of a pipe whose only write
         * end the parent closes when the run ends. */
        int stop_pipe[2];
        if (pipe(stop_pipe) != 0)
                return 2;
        stop_fd = stop_pipe[0];
        int total = procs + clean;
        pid_t *pids = calloc((size_t)total, sizeof *pids);
        if (pids == NULL)
                return 2;
        for (int i = 0; i < total; i++) {
                pids[i] = fork();
                if (pids[i] < 0)
                        return 2;
                if (pids[i] == 0) {
                        close(stop_pipe[1]);
                        me = i;
                        rng = (unsigned long long)getpid() * 0x9E3779B97F4A7C15ULL ^
                              (unsigned long long)time(NULL);
                        if (rng == 0)
                                rng = 1;
                        const char *mine = also != NULL && i % 2 == 1 ? also : dir;
                        if (i < procs)
                                nolock ? unlocked_worker(hold) : worker(mine, hold, mix, refresh);
                        else
                                cleaner(mine);
                        _exit(0);
                }
        }
        sleep_s(seconds);
        atomic_store(&s->stop, 1);
        close(stop_pipe[1]);
        for (int i = 0; i < total; i++)
                waitpid(pids[i], NULL, 0);
        free(pids);
        long bad = s->overlaps + s->ok_lost + s->lost + s->errors;
        printf("acquisitions=%ld overlaps=%ld ok_lost=%ld lost=%ld delayed=%ld errors=%ld cleanups=%ld\n",
               (long)s->acquisitions, (long)s->overlaps, (long)s->ok_lost, (long)s->lost, (long)s->delayed,
               (long)s->errors, (long)s->cleanups);
        return bad == 0 ? 0 : 1;
}
