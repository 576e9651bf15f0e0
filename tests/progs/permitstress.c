/* permitstress.c - many processes taking permits of one counting lock, with
 * a shared-memory count of the holders: the stress test of counting locks
 * (tests/permits-stress.t).
 *
 *   permitstress SPACE N EXPECT PROCS SECONDS [--kill] [--stale S]
 *     N        the permits every worker asks for
 *     EXPECT   the most holders the checker allows at once (N, or less
 *              to show that the checker catches a lock letting more in)
 *     --kill   the parent kills a random worker with SIGKILL every 50 ms,
 *              while it holds or waits, and starts another
 *     --stale  the stale age the workers give (default 10 s)
 *
 * Each worker loops: take a permit (timeout 30 s), set its bit in one
 * shared word and count the bits that were set (one atomic step: a
 * snapshot of who is inside), hold 0-2 ms, clear its bit, release.  A bit
 * is set only while its worker holds a permit, so the count never
 * exceeds the holders.  To kill a worker the parent stops it (SIGSTOP:
 * alive, its permit still held), clears its bit, then kills it: its
 * permit becomes free only then.  At the end the parent takes all N
 * permits at once with a 5 s timeout: a permit leaked by a killed holder
 * would make that fail.
 *
 * Prints one line:
 *   acquisitions=N max_inside=N over=N errors=N kills=N reclaimed=0|1
 * and exits 0 when over and errors are 0, reclaimed is 1, and max_inside
 * reached EXPECT (the permits were used in parallel), else 1. */
#include "dirlock.h"
#include "dirlock_permit.h"

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

#define MAX_PROCS 64

struct shared {
        atomic_long acquisitions, over, errors;
        atomic_int max_inside;
        _Atomic unsigned long long inside; /* a bit per worker holding a permit */
};

static struct shared *s;
static const char *space;
static unsigned n_permits;
static int expect, procs;
static double stale = 10;

static double now_s(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_us(long us)
{
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
}

static void worker(int me, double until)
{
        unsigned seed = (unsigned)getpid() * 2654435761u;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 30;
        o.stale_age = stale;
        while (now_s() < until) {
                dirlock *h;
                dirlock_error e;
                int rc = dirlock_acquire_permit(space, "stress", n_permits, &o, &h, &e);
                if (rc != DIRLOCK_OK) {
                        fprintf(stderr, "worker %d: %s\n", me, e.message);
                        atomic_fetch_add(&s->errors, 1);
                        continue;
                }
                unsigned long long bit = 1ULL << me;
                int in = __builtin_popcountll(atomic_fetch_or(&s->inside, bit) | bit);
                if (in > expect) {
                        atomic_fetch_add(&s->over, 1);
                        fprintf(stderr, "worker %d: %d holders inside, at most %d allowed\n", me, in, expect);
                }
                int max = atomic_load(&s->max_inside);
                while (in > max && !atomic_compare_exchange_weak(&s->max_inside, &max, in))
                        ;
                atomic_fetch_add(&s->acquisitions, 1);
                sleep_us((long)(rand_r(&seed) % 2000));
                atomic_fetch_and(&s->inside, ~bit);
                if (dirlock_release(h, &e) != DIRLOCK_OK) {
                        fprintf(stderr, "worker %d: release: %s\n", me, e.message);
                        atomic_fetch_add(&s->errors, 1);
                }
        }
}

static pid_t start_worker(int i, double until)
{
        pid_t pid = fork();
        if (pid == 0) {
                worker(i, until);
                _exit(0);
        }
        return pid;
}

int main(int argc, char **argv)
{
        if (argc < 6) {
                fprintf(stderr, "usage: permitstress SPACE N EXPECT PROCS SECONDS [--kill] [--stale S]\n");
                return 2;
        }
        space = argv[1];
        n_permits = (unsigned)atoi(argv[2]);
        expect = atoi(argv[3]);
        procs = atoi(argv[4]);
        double seconds = atof(argv[5]);
        bool kill_some = false;
        for (int i = 6; i < argc; i++) {
                if (strcmp(argv[i], "--kill") == 0)
                        kill_some = true;
                else if (strcmp(argv[i], "--stale") == 0 && i + 1 < argc)
                        stale = atof(argv[++i]);
        }
        if (procs < 1 || procs > MAX_PROCS || n_permits < 1) {
                fprintf(stderr, "permitstress: bad arguments\n");
                return 2;
        }
        s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (s == MAP_FAILED)
                return 2;
        memset(s, 0, sizeof *s);
        double until = now_s() + seconds;
        pid_t pids[MAX_PROCS];
        for (int i = 0; i < procs; i++)
                pids[i] = start_worker(i, until);
        long kills = 0;
        unsigned seed = (unsigned)getpid();
        while (kill_some && now_s() < until - 0.1) {
                sleep_us(50000);
                int i = (int)(rand_r(&seed) % (unsigned)procs);
                kill(pids[i], SIGSTOP);
                siginfo_t si;
                waitid(P_PID, (id_t)pids[i], &si, WSTOPPED | WEXITED | WNOWAIT);
                atomic_fetch_and(&s->inside, ~(1ULL << i));
                kill(pids[i], SIGKILL);
                waitpid(pids[i], NULL, 0);
                kills++;
                pids[i] = start_worker(i, until);
        }
        for (int i = 0; i < procs; i++)
                waitpid(pids[i], NULL, 0);
        /* Every permit can be had again: none was leaked. */
        dirlock *all[MAX_PROCS];
        int reclaimed = 1;
        unsigned got = 0;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 5;
        for (; got < n_permits && got < MAX_PROCS; got++) {
                dirlock_error e;
                if (dirlock_acquire_permit(space, "stress", n_permits, &o, &all[got], &e) != DIRLOCK_OK) {
                        fprintf(stderr, "permit %u of %u cannot be had again: %s\n", got + 1, n_permits,
                                e.message);
                        reclaimed = 0;
                        break;
                }
        }
        while (got > 0)
                dirlock_release(all[--got], NULL);
        printf("acquisitions=%ld max_inside=%d over=%ld errors=%ld kills=%ld reclaimed=%d\n",
               atomic_load(&s->acquisitions), atomic_load(&s->max_inside), atomic_load(&s->over),
               atomic_load(&s->errors), kills, reclaimed);
        return atomic_load(&s->over) == 0 && atomic_load(&s->errors) == 0 && reclaimed &&
                       atomic_load(&s->max_inside) >= expect
                   ? 0
                   : 1;
}
