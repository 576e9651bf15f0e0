/* waiters_bench.c - many waiters of one lock, served in turn: from one
 * event loop (pending acquires sharing the thread's descriptor,
 * DIRLOCK_THREAD_FD), and, beside it, from as many blocking threads.
 *
 *   waiters_bench loop SPACE N
 *       N pending acquires of lock "many" in one thread's epoll loop, the
 *       lock held by that thread while they start; then it lets go, and
 *       each, once it has the lock, lets go at the end of the loop's
 *       round.  The loop also runs a 2 ms timer and measures how late it
 *       fires (the loop's lag) while they are served.
 *   waiters_bench threads SPACE N
 *       N threads (64 KiB stacks) each taking "many" with dirlock_acquire()
 *       and letting go at once, the lock held by the main thread until
 *       every thread has begun its acquire.
 *
 * Prints "waiters SERVED FAILED START_MS SERVE_MS LAG_P50_MS LAG_P99_MS
 * LAG_MAX_MS FDS KIB" (for the loop after "idle LAG_P50_MS LAG_P99_MS
 * LAG_MAX_MS", the same timer in the same loop with nothing else to do
 * for 2 s, the baseline), where START_MS is the time to start them all (the
 * loop blocked meanwhile), SERVE_MS from the release to the last one
 * served, FDS and KIB the descriptors and resident memory they took while
 * waiting (over the process's before they started), and the lag columns
 * "-" for threads.  Timeouts are 600 s.  Figures for bench/waiters-run;
 * nothing is asserted. */
#include "dirlock.h"
#include "dirlock_async.h"

#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_S 600.0
#define TICK_MS   2.0

static double now_ms(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static long open_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        long n = 0;
        while (d != NULL && readdir(d) != NULL)
                n++;
        if (d != NULL)
                closedir(d);
        return n;
}

static long resident_kib(void)
{
        FILE *f = fopen("/proc/self/statm", "r");
        long pages = 0, rss = 0;
        if (f != NULL) {
                if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
                        rss = 0;
                fclose(f);
        }
        return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static void raise_fd_limit(void)
{
        struct rlimit r;
        if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
                r.rlim_cur = r.rlim_max;
                setrlimit(RLIMIT_NOFILE, &r);
        }
}

/* ---- one event loop ----------------------------------------------------- */

/* The lag of a 2 ms timer in a loop with nothing else to do, for `ms`:
 * the baseline.  Prints "idle P50 P99 MAX". */
static void idle_lag(double ms)
{
        size_t cap = 1 << 16, nlag = 0;
        double *lag = malloc(cap * sizeof *lag);
        double end = now_ms() + ms, due = now_ms() + TICK_MS;
        while (now_ms() < end && nlag < cap) {
                double wait = due - now_ms();
                poll(NULL, 0, wait > 0 ? (int)wait + 1 : 0);
                double now = now_ms();
                if (now >= due) {
                        lag[nlag++] = now - due;
                        due = now + TICK_MS;
                }
        }
        qsort(lag, nlag, sizeof *lag, cmp_double);
        printf("idle %.3f %.3f %.3f\n", lag[nlag / 2], lag[nlag * 99 / 100], lag[nlag - 1]);
        free(lag);
}

static int cmd_loop(const char *space, int n)
{
        idle_lag(2000);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_THREAD_FD;
        o.timeout = TIMEOUT_S;
        dirlock_error e;
        dirlock *holder;
        if (dirlock_acquire(space, "many", NULL, &holder, &e) != DIRLOCK_OK) {
                fprintf(stderr, "waiters_bench: %s\n", e.message);
                return 1;
        }
        long fds0 = open_fds(), kib0 = resident_kib();
        dirlock_pending **ps = calloc((size_t)n, sizeof *ps);
        double t0 = now_ms();
        for (int i = 0; i < n; i++)
                if (dirlock_acquire_start(space, "many", &o, &ps[i], &e) != DIRLOCK_OK) {
                        fprintf(stderr, "waiters_bench: start %d: %s\n", i, e.message);
                        return 1;
                }
        double start_ms = now_ms() - t0;
        int fd = dirlock_pending_fd(ps[0]);
        /* Each to its first wait: rounds until the descriptor is quiet. */
        struct pollfd w = {.fd = fd, .events = POLLIN};
        while (poll(&w, 1, 50) == 1)
                while (dirlock_pending_next() != NULL)
                        ;
        long fds = open_fds() - fds0, kib = resident_kib() - kib0;
        size_t cap = 1 << 20, nlag = 0;
        double *lag = malloc(cap * sizeof *lag);
        dirlock **round = calloc((size_t)n, sizeof *round);
        int served = 0, failed = 0;
        t0 = now_ms();
        dirlock_release(holder, NULL);
        double tick_due = now_ms() + TICK_MS;
        while (served + failed < n && now_ms() - t0 < TIMEOUT_S * 1e3 + 1e4) {
                double wait = tick_due - now_ms();
                int r = poll(&w, 1, wait > 0 ? (int)wait + 1 : 0);
                double now = now_ms();
                if (now >= tick_due) {
                        if (nlag < cap)
                                lag[nlag++] = now - tick_due;
                        tick_due = now + TICK_MS;
                }
                if (r != 1)
                        continue;
                int held = 0;
                dirlock_pending *p;
                while ((p = dirlock_pending_next()) != NULL) {
                        if (dirlock_pending_step(p, &e) == DIRLOCK_OK) {
                                round[held++] = dirlock_pending_lock(p);
                                served++;
                        } else {
                                failed++;
                        }
                        dirlock_pending_free(p);
                }
                while (held > 0)
                        dirlock_release(round[--held], NULL);
        }
        double serve_ms = now_ms() - t0;
        qsort(lag, nlag, sizeof *lag, cmp_double);
        printf("waiters %d %d %.1f %.1f %.3f %.3f %.3f %ld %ld\n", served, failed, start_ms, serve_ms,
               nlag ? lag[nlag / 2] : 0, nlag ? lag[nlag * 99 / 100] : 0, nlag ? lag[nlag - 1] : 0, fds, kib);
        return 0;
}

/* ---- blocking threads --------------------------------------------------- */

struct shared {
        const char *space;
        pthread_mutex_t mu;
        pthread_cond_t cv;
        int begun, served, failed;
};

static void *thread_main(void *arg)
{
        struct shared *sh = arg;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = TIMEOUT_S;
        pthread_mutex_lock(&sh->mu);
        sh->begun++;
        pthread_cond_signal(&sh->cv);
        pthread_mutex_unlock(&sh->mu);
        dirlock *h;
        int rc = dirlock_acquire(sh->space, "many", &o, &h, NULL);
        if (rc == DIRLOCK_OK)
                dirlock_release(h, NULL);
        pthread_mutex_lock(&sh->mu);
        if (rc == DIRLOCK_OK)
                sh->served++;
        else
                sh->failed++;
        pthread_mutex_unlock(&sh->mu);
        return NULL;
}

static int cmd_threads(const char *space, int n)
{
        dirlock_error e;
        dirlock *holder;
        if (dirlock_acquire(space, "many", NULL, &holder, &e) != DIRLOCK_OK) {
                fprintf(stderr, "waiters_bench: %s\n", e.message);
                return 1;
        }
        struct shared sh = {.space = space};
        pthread_mutex_init(&sh.mu, NULL);
        pthread_cond_init(&sh.cv, NULL);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        pthread_t *ts = calloc((size_t)n, sizeof *ts);
        long fds0 = open_fds(), kib0 = resident_kib();
        double t0 = now_ms();
        int made = 0;
        for (; made < n; made++)
                if (pthread_create(&ts[made], &attr, thread_main, &sh) != 0)
                        break;
        pthread_mutex_lock(&sh.mu);
        while (sh.begun < made)
                pthread_cond_wait(&sh.cv, &sh.mu);
        pthread_mutex_unlock(&sh.mu);
        double start_ms = now_ms() - t0;
        /* Every thread in its wait (in the queue, or polling), a moment to
         * settle. */
        struct timespec settle = {0, 300 * 1000000L};
        nanosleep(&settle, NULL);
        long fds = open_fds() - fds0, kib = resident_kib() - kib0;
        t0 = now_ms();
        dirlock_release(holder, NULL);
        for (int i = 0; i < made; i++)
                pthread_join(ts[i], NULL);
        double serve_ms = now_ms() - t0;
        printf("waiters %d %d %.1f %.1f - - - %ld %ld\n", sh.served, sh.failed + (n - made), start_ms,
               serve_ms, fds, kib);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc != 4 || (strcmp(argv[1], "loop") != 0 && strcmp(argv[1], "threads") != 0) ||
            atoi(argv[3]) < 1) {
                fprintf(stderr, "usage: waiters_bench loop|threads SPACE N\n");
                return 2;
        }
        raise_fd_limit();
        int n = atoi(argv[3]);
        return strcmp(argv[1], "loop") == 0 ? cmd_loop(argv[2], n) : cmd_threads(argv[2], n);
}
