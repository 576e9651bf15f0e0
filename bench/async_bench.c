/* async_bench.c - what acquiring through a pending acquire (an event
 * loop's way, dirlock_acquire_start) costs against the blocking call.
 *
 *   async_bench handoff SPACE WAITERS SECONDS blocking|async
 *       WAITERS+1 processes take lock "handoff" in turn, each holding it
 *       0.2 ms; prints the release -> next acquire latency in us
 *       (p50 p99 max count), the waiters acquiring with dirlock_acquire()
 *       or with a pending acquire stepped from an epoll loop.
 *   async_bench pending SPACE N
 *       N pending acquires in one thread's epoll loop, each waiting for a
 *       lock of its own held by this process; prints the descriptors and
 *       the resident memory they take (fds kib), the time to start them
 *       all (ms) and, once their holders let go, the time until all N
 *       hold their locks (ms).
 * Figures for bench/async-run; nothing is asserted. */
#include "dirlock.h"
#include "dirlock_async.h"

#include <dirent.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HANDOFF_MAX 200000

static double now_s(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
        struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
        nanosleep(&t, NULL);
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

/* Take `name` the blocking way, or through a pending acquire stepped
 * whenever its descriptor polls readable in the epoll loop `ep` (the loop
 * of an event-driven program with nothing else to do). */
static int take(const char *space, const char *name, int ep, dirlock **out)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        if (ep < 0)
                return dirlock_acquire(space, name, &o, out, NULL);
        dirlock_pending *p;
        int rc = dirlock_acquire_start(space, name, &o, &p, NULL);
        if (rc != DIRLOCK_OK)
                return rc;
        struct epoll_event ev = {.events = EPOLLIN};
        epoll_ctl(ep, EPOLL_CTL_ADD, dirlock_pending_fd(p), &ev);
        while ((rc = dirlock_pending_step(p, NULL)) == DIRLOCK_EAGAIN)
                epoll_wait(ep, &ev, 1, -1);
        epoll_ctl(ep, EPOLL_CTL_DEL, dirlock_pending_fd(p), NULL);
        *out = dirlock_pending_lock(p);
        dirlock_pending_free(p);
        return rc;
}

struct handoff_shared {
        volatile int releaser;
        volatile double release_at;
        volatile long n;
        double lat[HANDOFF_MAX];
};

static int cmd_handoff(const char *space, int waiters, double seconds, bool async)
{
        struct handoff_shared *sh =
            mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED || waiters < 1)
                return 1;
        sh->releaser = -1;
        double start = now_s() + 0.05, end = start + seconds;
        for (int me = 0; me <= waiters; me++) {
                if (fork() != 0)
                        continue;
                unsigned seed = (unsigned)getpid();
                int ep = async ? epoll_create1(EPOLL_CLOEXEC) : -1;
                while (now_s() < start)
                        sleep_s(0.001);
                while (now_s() < end) {
                        dirlock *h;
                        double asked = now_s();
                        if (take(space, "handoff", ep, &h) != DIRLOCK_OK)
                                _exit(1);
                        double t = now_s();
                        if (sh->releaser >= 0 && sh->releaser != me && asked < sh->release_at) {
                                long i = __atomic_fetch_add(&sh->n, 1, __ATOMIC_SEQ_CST);
                                if (i < HANDOFF_MAX)
                                        sh->lat[i] = t - sh->release_at;
                        }
                        sleep_s(0.0002);
                        sh->releaser = me;
                        sh->release_at = now_s();
                        dirlock_release(h, NULL);
                        sleep_s(0.001 + (double)(rand_r(&seed) % 1000) / 1e6);
                }
                _exit(0);
        }
        int failed = 0, st;
        while (wait(&st) > 0)
                failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
        long n = sh->n < HANDOFF_MAX ? sh->n : HANDOFF_MAX;
        if (n == 0 || failed)
                return 1;
        qsort(sh->lat, (size_t)n, sizeof(double), cmp_double);
        printf("%.1f %.1f %.1f %ld\n", sh->lat[n / 2] * 1e6, sh->lat[n * 99 / 100] * 1e6,
               sh->lat[n - 1] * 1e6, n);
        return 0;
}

static long open_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        long n = 0;
        if (d == NULL)
                return -1;
        while (readdir(d) != NULL)
                n++;
        closedir(d);
        return n - 3; /* ., .. and the one opendir holds */
}

static long resident_kib(void)
{
        long pages = 0, resident = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (f == NULL || fscanf(f, "%ld %ld", &pages, &resident) != 2)
                resident = -1;
        if (f != NULL)
                fclose(f);
        return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int cmd_pending(const char *space, int n)
{
        struct rlimit nofile;
        getrlimit(RLIMIT_NOFILE, &nofile);
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
        dirlock **holders = calloc((size_t)n, sizeof *holders);
        dirlock_pending **ps = calloc((size_t)n, sizeof *ps);
        int ep = epoll_create1(EPOLL_CLOEXEC);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        for (int i = 0; i < n; i++) {
                char name[24];
                snprintf(name, sizeof name, "p%d", i);
                if (dirlock_acquire(space, name, &o, &holders[i], NULL) != DIRLOCK_OK)
                        return 1;
        }
        /* Warm the thread's inotify instance and connections first. */
        dirlock_pending *warm;
        if (dirlock_acquire_start(space, "warm", NULL, &warm, NULL) != DIRLOCK_OK)
                return 1;
        dirlock_pending_free(warm);
        long fds0 = open_fds(), kib0 = resident_kib();
        double t0 = now_s();
        dirlock_options w = DIRLOCK_OPTIONS_INIT;
        w.timeout = 120;
        for (int i = 0; i < n; i++) {
                char name[24];
                snprintf(name, sizeof name, "p%d", i);
                if (dirlock_acquire_start(space, name, &w, &ps[i], NULL) != DIRLOCK_OK)
                        return 1;
                struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
                epoll_ctl(ep, EPOLL_CTL_ADD, dirlock_pending_fd(ps[i]), &ev);
        }
        double t1 = now_s();
        long fds1 = open_fds(), kib1 = resident_kib();
        for (int i = 0; i < n; i++)
                dirlock_release(holders[i], NULL);
        double t2 = now_s();
        int done = 0;
        while (done < n && now_s() < t2 + 120) {
                struct epoll_event evs[256];
                int k = epoll_wait(ep, evs, 256, 1000);
                for (int j = 0; j < k; j++) {
                        int i = (int)evs[j].data.u32;
                        if (ps[i] == NULL)
                                continue;
                        int rc = dirlock_pending_step(ps[i], NULL);
                        if (rc == DIRLOCK_EAGAIN)
                                continue;
                        if (rc != DIRLOCK_OK)
                                return 1;
                        holders[i] = dirlock_pending_lock(ps[i]);
                        epoll_ctl(ep, EPOLL_CTL_DEL, dirlock_pending_fd(ps[i]), NULL);
                        dirlock_pending_free(ps[i]);
                        ps[i] = NULL;
                        done++;
                }
        }
        double t3 = now_s();
        for (int i = 0; i < n; i++)
                dirlock_release(holders[i], NULL);
        if (done < n)
                return 1;
        printf("%ld %ld %.1f %.1f\n", fds1 - fds0, kib1 - kib0, (t1 - t0) * 1e3, (t3 - t2) * 1e3);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc >= 6 && strcmp(argv[1], "handoff") == 0)
                return cmd_handoff(argv[2], atoi(argv[3]), atof(argv[4]), strcmp(argv[5], "async") == 0);
        if (argc >= 4 && strcmp(argv[1], "pending") == 0)
                return cmd_pending(argv[2], atoi(argv[3]));
        fprintf(stderr, "usage: async_bench handoff SPACE WAITERS SECONDS blocking|async\n"
                        "       async_bench pending SPACE N\n");
        return 2;
}
