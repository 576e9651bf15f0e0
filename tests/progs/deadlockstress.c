/* deadlockstress.c - processes taking names in random orders, one at a
 * time, with the truth about who holds and who waits kept in shared
 * memory: the stress test of deadlock detection (tests/deadlock.t, and
 * make bench-deadlock for the long run).
 *
 *   deadlockstress SPACE PROCS NAMES SECONDS [--no-check] [--timeout S] [--permits N]
 *
 * Each process loops: pick two or three of the NAMES names in a random
 * order and take them one by one (timeout S, default 3 s), holding each a
 * few milliseconds before asking for the next; then let all go.  With
 * --permits N, name n0 is a counting lock of N permits, of which each
 * process takes one: random mixes of permits and plain locks, whose
 * deadlocks are knots.  Around every call a process writes in shared
 * memory what it waits for (before the acquire) and what it holds (after
 * it got it; cleared before the release), under one process-shared mutex,
 * and after every change the truth is searched for deadlocks: the
 * greatest set of waiting processes each kept out by holds of the set --
 * a lock's one holder, or all N holders of a counting lock that N hold
 * (a cycle P waits for Q, Q for R, ... back to P is one).  The truth's
 * holds begin after the library's and end before them, its waits begin
 * before and end after, so a deadlock of the library's is one of the
 * truth's once its last member is waiting.
 *   - A process that gets DIRLOCK_EDEADLK checks that it was deadlocked in
 *     the truth at some moment of its wait (a flag set by the search,
 *     cleared when it starts a wait): if not, it is a FALSE report.
 *   - The parent looks every 20 ms: a process deadlocked for more than
 *     1 s is an UNREPORTED deadlock (a knot's victim is told within a
 *     recheck, and its letting go frees the rest).
 * --no-check takes the locks with DIRLOCK_NO_DEADLOCK: the twin whose
 * deadlocks wait out their timeouts, which the parent must see.
 *
 * Prints one line:
 *   acquired=N deadlocks=N false=N timeouts=N unreported=N errors=N
 *   cycles=N latency_ms_p50=X latency_ms_max=X longest_cycle_s=X
 * (cycles: times a process found itself deadlocked; latency: from the
 * moment a deadlock formed in the truth to its report)
 * and exits 0 when false, unreported and errors are 0 and at least one
 * deadlock was reported, else 1. */
#include "dirlock.h"
#include "dirlock_permit.h"

#include <pthread.h>
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

#define MAX_PROCS 32
#define MAX_NAMES 8
#define MAX_LAT   100000

struct truth {
        pthread_mutex_t mutex;
        int waits[MAX_PROCS];          /* name waited for, -1 none */
        unsigned holds[MAX_PROCS];     /* bit per name held        */
        bool on_cycle[MAX_PROCS];      /* deadlocked now           */
        bool was_on_cycle[MAX_PROCS];  /* ... at some moment of the current wait */
        double cycle_since[MAX_PROCS]; /* on a cycle since (0: not) */
        long acquired, deadlocks, false_reports, timeouts, unreported, errors, cycles;
        int nlat;
        double lat[MAX_LAT];
        atomic_int stop;
};

static struct truth *t;
static int procs, names;
static const char *space;
static double timeout_s = 3;
static bool no_check;
static int permits_n; /* --permits N: name n0 is a counting lock of N */

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Search the truth (mutex held): who is deadlocked now -- the greatest
 * set of waiting processes each kept out by holds of the set. */
static void search(void)
{
        double now = now_s();
        bool in[MAX_PROCS];
        for (int p = 0; p < procs; p++)
                in[p] = t->waits[p] >= 0;
        for (bool again = true; again;) {
                again = false;
                for (int p = 0; p < procs; p++) {
                        if (!in[p])
                                continue;
                        int n = t->waits[p], held = 0, held_in = 0;
                        for (int q = 0; q < procs; q++)
                                if (t->holds[q] & (1u << n)) {
                                        held++;
                                        held_in += in[q];
                                }
                        int need = n == 0 && permits_n > 0 ? permits_n : 1;
                        if (held < need || held_in < need)
                                in[p] = false, again = true;
                }
        }
        for (int p = 0; p < procs; p++) {
                bool cyc = in[p];
                if (cyc && !t->on_cycle[p]) {
                        t->cycle_since[p] = now;
                        t->cycles++;
                }
                if (!cyc)
                        t->cycle_since[p] = 0;
                t->on_cycle[p] = cyc;
                if (cyc)
                        t->was_on_cycle[p] = true;
        }
}

static void set_wait(int me, int n)
{
        pthread_mutex_lock(&t->mutex);
        t->waits[me] = n;
        if (n >= 0)
                t->was_on_cycle[me] = false;
        search();
        pthread_mutex_unlock(&t->mutex);
}

static void set_hold(int me, int n, bool held)
{
        pthread_mutex_lock(&t->mutex);
        if (held)
                t->holds[me] |= 1u << n;
        else
                t->holds[me] &= ~(1u << n);
        search();
        pthread_mutex_unlock(&t->mutex);
}

static void sleep_ms(double ms)
{
        struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
        nanosleep(&ts, NULL);
}

static void worker(int me)
{
        unsigned seed = (unsigned)getpid() * 2654435761u;
        char name_text[MAX_NAMES][16];
        for (int n = 0; n < names; n++)
                snprintf(name_text[n], sizeof name_text[n], "n%d", n);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = timeout_s;
        o.stale_age = 30;
        if (no_check)
                o.flags |= DIRLOCK_NO_DEADLOCK;
        while (!atomic_load(&t->stop)) {
                int order[MAX_NAMES];
                for (int n = 0; n < names; n++)
                        order[n] = n;
                for (int n = names - 1; n > 0; n--) {
                        int k = (int)(rand_r(&seed) % (unsigned)(n + 1)), x = order[n];
                        order[n] = order[k];
                        order[k] = x;
                }
                int want = 2 + (int)(rand_r(&seed) % (unsigned)(names - 1));
                dirlock *held[MAX_NAMES];
                int got = 0;
                for (int i = 0; i < want; i++) {
                        int n = order[i];
                        set_wait(me, n);
                        dirlock_error e;
                        double t0 = now_s();
                        int rc = n == 0 && permits_n > 0
                                     ? dirlock_acquire_permit(space, name_text[n], (unsigned)permits_n, &o,
                                                              &held[got], &e)
                                     : dirlock_acquire(space, name_text[n], &o, &held[got], &e);
                        pthread_mutex_lock(&t->mutex);
                        bool was = t->was_on_cycle[me];
                        double since = t->cycle_since[me];
                        t->waits[me] = -1;
                        if (rc == DIRLOCK_OK) {
                                t->holds[me] |= 1u << n;
                                t->acquired++;
                        } else if (rc == DIRLOCK_EDEADLK) {
                                t->deadlocks++;
                                if (!was) {
                                        t->false_reports++;
                                        fprintf(stderr, "FALSE report to process %d (name n%d): %s\n", me, n,
                                                e.message);
                                } else if (t->nlat < MAX_LAT) {
                                        /* since: 0 when the cycle already broke (another report) */
                                        t->lat[t->nlat++] = since > 0 ? (now_s() - since) * 1e3 : 0;
                                }
                        } else if (rc == DIRLOCK_ETIMEDOUT) {
                                t->timeouts++;
                        } else {
                                t->errors++;
                                fprintf(stderr, "process %d: %s\n", me, e.message);
                        }
                        search();
                        pthread_mutex_unlock(&t->mutex);
                        (void)t0;
                        if (rc != DIRLOCK_OK)
                                break;
                        got++;
                        sleep_ms((double)(rand_r(&seed) % 5000) / 1000.0);
                }
                while (got > 0) {
                        got--;
                        int n = -1;
                        for (int k = 0; k < names; k++)
                                if (strcmp(dirlock_name(held[got]), name_text[k]) == 0)
                                        n = k;
                        set_hold(me, n, false);
                        dirlock_release(held[got], NULL);
                }
                sleep_ms((double)(rand_r(&seed) % 2000) / 1000.0);
        }
}

static int by_value(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
        if (argc < 5) {
                fprintf(stderr, "usage: deadlockstress SPACE PROCS NAMES SECONDS [--no-check] [--timeout S] "
                                "[--permits N]\n");
                return 2;
        }
        space = argv[1];
        procs = atoi(argv[2]);
        names = atoi(argv[3]);
        double seconds = atof(argv[4]);
        for (int i = 5; i < argc; i++) {
                if (strcmp(argv[i], "--no-check") == 0)
                        no_check = true;
                else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
                        timeout_s = atof(argv[++i]);
                else if (strcmp(argv[i], "--permits") == 0 && i + 1 < argc)
                        permits_n = atoi(argv[++i]);
        }
        if (procs < 2 || procs > MAX_PROCS || names < 2 || names > MAX_NAMES) {
                fprintf(stderr, "deadlockstress: 2..%d processes, 2..%d names\n", MAX_PROCS, MAX_NAMES);
                return 2;
        }
        t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (t == MAP_FAILED)
                return 2;
        memset(t, 0, sizeof *t);
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&t->mutex, &a);
        for (int p = 0; p < procs; p++)
                t->waits[p] = -1;
        pid_t pids[MAX_PROCS];
        for (int p = 0; p < procs; p++) {
                pids[p] = fork();
                if (pids[p] == 0) {
                        worker(p);
                        _exit(0);
                }
        }
        double until = now_s() + seconds, worst = 0;
        while (now_s() < until) {
                sleep_ms(20);
                pthread_mutex_lock(&t->mutex);
                double now = now_s();
                for (int p = 0; p < procs; p++) {
                        double d = t->cycle_since[p] > 0 ? now - t->cycle_since[p] : 0;
                        if (d > worst)
                                worst = d;
                        if (d > 1.0) {
                                t->unreported++;
                                fprintf(stderr, "process %d deadlocked for %.2f s, unreported\n", p, d);
                                t->cycle_since[p] = now; /* counted once a second */
                        }
                }
                pthread_mutex_unlock(&t->mutex);
        }
        atomic_store(&t->stop, 1);
        for (int p = 0; p < procs; p++)
                waitpid(pids[p], NULL, 0);
        qsort(t->lat, (size_t)t->nlat, sizeof t->lat[0], by_value);
        double p50 = t->nlat ? t->lat[t->nlat / 2] : 0, max = t->nlat ? t->lat[t->nlat - 1] : 0;
        printf("acquired=%ld deadlocks=%ld false=%ld timeouts=%ld unreported=%ld errors=%ld cycles=%ld "
               "latency_ms_p50=%.1f latency_ms_max=%.1f longest_cycle_s=%.2f\n",
               t->acquired, t->deadlocks, t->false_reports, t->timeouts, t->unreported, t->errors, t->cycles,
               p50, max, worst);
        return t->false_reports == 0 && t->unreported == 0 && t->errors == 0 && t->deadlocks > 0 ? 0 : 1;
}
