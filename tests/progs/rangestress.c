/* rangestress.c - many processes taking random ranges of one lock, with a
 * shared-memory checker: the stress test of range locks
 * (tests/rw-range.t).
 *
 *   rangestress SPACE PROCS SECONDS [--nolock] [--whole] [--kill] [--also DIR]
 *
 * The line [0, 64) is 64 cells.  Each worker loops: pick a random range
 * (a random start, a length of 1-16 cells, or a whole nested sub-interval)
 * and a random mode and policy; acquire it (30 s timeout); mark every
 * cell of it in shared memory (readers, intents and writers per cell),
 * counting a violation whenever a cell then holds a writer with anyone
 * else, or two intents; hold a moment; sometimes shrink to the left half
 * (unmarking the cells it gives up, before the shrink) or upgrade an
 * intent range; unmark; release.  --whole: a tenth of the acquisitions
 * take the whole lock instead, which conflicts with every range whatever
 * the modes, and with other whole holders by the reader-writer rules.  --nolock: no lock at all (the checker
 * must then see violations).  --kill: the parent SIGKILLs a random worker every 200 ms and starts another
 * (stopped first, so that the checker can drop its marks while it still holds its locks).  --also DIR:
 * odd workers use DIR instead of SPACE (the same lock directory reached
 * another way: a second mount of one network filesystem).
 *
 * Prints: acquisitions=N violations=N shrinks=N upgrades=N errors=N kills=N
 * and exits 0 when violations and errors are 0. */
#include "dirlock.h"
#include "dirlock_range.h"
#include "dirlock_rw.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CELLS     64
#define MAX_PROCS 64 /* one bit per worker slot */

/* Who holds a cell (or the whole lock), one bit per worker slot and
 * mode: setting and clearing a bit is idempotent, so a worker killed
 * halfway through marking or unmarking leaves nothing the parent cannot
 * clear exactly (drop_slot). */
struct cell {
        atomic_ullong readers, intents, writers;
};

struct shared {
        struct cell cell[CELLS];
        struct cell whole;    /* whole-lock holders by mode */
        atomic_ullong ranges; /* range holders              */
        atomic_long acquisitions, violations, shrinks, upgrades, errors, kills;
        atomic_int stop;
};

static struct shared *s;
static unsigned long long rng;

static double unit(void)
{
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return (double)(rng >> 11) / 9007199254740992.0;
}

static void sleep_s(double secs)
{
        struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

static atomic_ullong *holders(struct cell *x, int mode)
{
        return mode == DIRLOCK_EXCLUSIVE ? &x->writers : mode == DIRLOCK_INTENT ? &x->intents : &x->readers;
}

/* Slot `slot` enters cell x in `mode`: a violation when anyone else is
 * there in a mode that conflicts.  The bit is set before the look, so of
 * two conflicting entrants at least one sees the other. */
static void enter(struct cell *x, int slot, int mode)
{
        unsigned long long me = 1ULL << slot;
        atomic_fetch_or(holders(x, mode), me);
        unsigned long long others = atomic_load(&x->writers);
        if (mode != DIRLOCK_SHARED)
                others |= atomic_load(&x->intents);
        if (mode == DIRLOCK_EXCLUSIVE)
                others |= atomic_load(&x->readers);
        if (others & ~me)
                atomic_fetch_add(&s->violations, 1);
}

static void leave(struct cell *x, int slot, int mode)
{
        atomic_fetch_and(holders(x, mode), ~(1ULL << slot));
}

static void mark(int slot, int lo, int hi, int mode)
{
        atomic_fetch_or(&s->ranges, 1ULL << slot);
        if (atomic_load(&s->whole.readers) | atomic_load(&s->whole.intents) | atomic_load(&s->whole.writers))
                atomic_fetch_add(&s->violations, 1);
        for (int c = lo; c < hi; c++)
                enter(&s->cell[c], slot, mode);
}

static void unmark_cells(int slot, int lo, int hi, int mode)
{
        for (int c = lo; c < hi; c++)
                leave(&s->cell[c], slot, mode);
}

static void unmark(int slot, int lo, int hi, int mode)
{
        unmark_cells(slot, lo, hi, mode);
        atomic_fetch_and(&s->ranges, ~(1ULL << slot));
}

/* A whole-lock holder: compatible with other whole holders by the
 * reader-writer rules, never with a range holder. */
static void mark_whole(int slot, int mode)
{
        enter(&s->whole, slot, mode);
        if (atomic_load(&s->ranges))
                atomic_fetch_add(&s->violations, 1);
}

/* Everything slot `slot` holds, in every cell and mode: for a worker
 * that is stopped (and about to be killed). */
static void drop_slot(int slot)
{
        for (int m = 0; m < 3; m++) {
                int mode = m == 0 ? DIRLOCK_SHARED : m == 1 ? DIRLOCK_INTENT : DIRLOCK_EXCLUSIVE;
                unmark_cells(slot, 0, CELLS, mode);
                leave(&s->whole, slot, mode);
        }
        atomic_fetch_and(&s->ranges, ~(1ULL << slot));
}

static void report(const char *what, const dirlock_error *e)
{
        atomic_fetch_add(&s->errors, 1);
        fprintf(stderr, "rangestress[%ld]: %s: %s\n", (long)getpid(), what, e->message);
}

static void worker(int slot, const char *space, int nolock, int whole)
{
        while (!atomic_load(&s->stop)) {
                int lo, hi;
                if (unit() < 0.25) { /* a nested interval: [k*2^j, (k+1)*2^j) */
                        int level = (int)(unit() * 5), size = CELLS >> level;
                        lo = (int)(unit() * (CELLS / size)) * size;
                        hi = lo + size;
                } else {
                        lo = (int)(unit() * CELLS);
                        hi = lo + 1 + (int)(unit() * 16);
                        if (hi > CELLS)
                                hi = CELLS;
                }
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 30;
                o.stale_age = 2;
                double u = unit();
                o.mode = u < 0.5 ? DIRLOCK_SHARED : u < 0.7 ? DIRLOCK_INTENT : DIRLOCK_EXCLUSIVE;
                o.policy = (int)(unit() * 3);
                bool take_whole = whole && unit() < 0.1;
                dirlock *h = NULL;
                dirlock_error e;
                int rc = DIRLOCK_OK;
                if (!nolock)
                        rc = take_whole ? dirlock_acquire(space, "tree", &o, &h, &e)
                                        : dirlock_acquire_range(space, "tree", lo, hi, &o, &h, &e);
                if (rc != DIRLOCK_OK) {
                        if (!atomic_load(&s->stop))
                                report("acquire", &e);
                        continue;
                }
                atomic_fetch_add(&s->acquisitions, 1);
                if (take_whole)
                        mark_whole(slot, o.mode);
                else
                        mark(slot, lo, hi, o.mode);
                sleep_s(unit() * 0.002);
                if (!nolock && !take_whole && hi - lo >= 2 && unit() < 0.2) {
                        int mid = lo + (hi - lo) / 2;
                        unmark_cells(slot, mid, hi, o.mode); /* give the cells up first */
                        hi = mid;
                        if (dirlock_shrink(h, lo, hi, &e) != DIRLOCK_OK)
                                report("shrink", &e);
                        else
                                atomic_fetch_add(&s->shrinks, 1);
                        sleep_s(unit() * 0.001);
                } else if (!nolock && !take_whole && o.mode == DIRLOCK_INTENT && unit() < 0.3) {
                        dirlock_options uo = o;
                        uo.timeout = 30;
                        if (dirlock_upgrade(h, &uo, &e) != DIRLOCK_OK) {
                                report("upgrade", &e);
                        } else {
                                unmark(slot, lo, hi, o.mode);
                                o.mode = DIRLOCK_EXCLUSIVE;
                                mark(slot, lo, hi, o.mode);
                                atomic_fetch_add(&s->upgrades, 1);
                                sleep_s(unit() * 0.001);
                        }
                }
                if (take_whole)
                        leave(&s->whole, slot, o.mode);
                else
                        unmark(slot, lo, hi, o.mode);
                if (h != NULL && dirlock_release(h, &e) != DIRLOCK_OK)
                        report("release", &e);
        }
}

static pid_t start(int slot, const char *space, int nolock, int whole)
{
        pid_t p = fork();
        if (p == 0) {
                rng = (unsigned long long)getpid() * 0x9E3779B97F4A7C15ULL ^ (unsigned long long)time(NULL);
                if (rng == 0)
                        rng = 1;
                worker(slot, space, nolock, whole);
                _exit(0);
        }
        return p;
}

int main(int argc, char **argv)
{
        if (argc < 4) {
                fprintf(
                    stderr,
                    "usage: rangestress SPACE PROCS SECONDS [--nolock] [--whole] [--kill] [--also DIR]\n");
                return 2;
        }
        const char *space = argv[1], *also = NULL;
        int procs = atoi(argv[2]), nolock = 0, whole = 0, kill_some = 0;
        double seconds = atof(argv[3]);
        for (int i = 4; i < argc; i++) {
                if (strcmp(argv[i], "--nolock") == 0)
                        nolock = 1;
                else if (strcmp(argv[i], "--whole") == 0)
                        whole = 1;
                else if (strcmp(argv[i], "--kill") == 0)
                        kill_some = 1;
                else if (strcmp(argv[i], "--also") == 0 && i + 1 < argc)
                        also = argv[++i];
                else
                        return 2;
        }
        if (procs < 1 || procs > MAX_PROCS)
                return 2;
        s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (s == MAP_FAILED)
                return 2;
        memset(s, 0, sizeof *s);
        rng = (unsigned long long)time(NULL) | 1;
        pid_t pids[MAX_PROCS];
        for (int i = 0; i < procs; i++)
                pids[i] = start(i, also != NULL && i % 2 == 1 ? also : space, nolock, whole);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
                sleep_s(kill_some ? 0.2 : seconds);
                struct timespec t;
                clock_gettime(CLOCK_MONOTONIC, &t);
                if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
                        break;
                if (kill_some) {
                        int victim = (int)(unit() * procs);
                        /* Stopped first, it still holds its locks (its
                         * owner is alive): its marks go while no one else
                         * can have taken what it held; then it dies, and
                         * its locks go with it (same host: at once). */
                        int st;
                        kill(pids[victim], SIGSTOP);
                        waitpid(pids[victim], &st, WUNTRACED);
                        drop_slot(victim);
                        kill(pids[victim], SIGKILL);
                        waitpid(pids[victim], NULL, 0);
                        atomic_fetch_add(&s->kills, 1);
                        pids[victim] =
                            start(victim, also != NULL && victim % 2 == 1 ? also : space, nolock, whole);
                }
        }
        atomic_store(&s->stop, 1);
        for (int i = 0; i < procs; i++)
                waitpid(pids[i], NULL, 0);
        printf("acquisitions=%ld violations=%ld shrinks=%ld upgrades=%ld errors=%ld kills=%ld\n",
               (long)s->acquisitions, (long)s->violations, (long)s->shrinks, (long)s->upgrades,
               (long)s->errors, (long)s->kills);
        return s->violations == 0 && s->errors == 0 ? 0 : 1;
}
