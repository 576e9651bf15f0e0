/* core_bench.c - the exclusive lock's benchmark: uncontended
 * acquire+release rate against bare mkdir+rmdir, flock(2) and fcntl(2);
 * contended read-modify-write throughput for 1..16 processes against the
 * serial limit, next to flock(2) and the seed article's 5 tries x 1 s mkdir
 * lock; and release -> next-acquire hand-off latency.  Every figure is
 * measured in the same run as its baseline; results are ratios.
 *
 *   core_bench uncontended DIR SECONDS
 *   core_bench contended DIR SECONDS CS_MS LOCKING PROCS   (dirlock|flock|seed)
 *   core_bench handoff DIR WAITERS SECONDS [nodetect]     (also CPU us an acquisition)
 *   core_bench permits DIR SECONDS CS_MS PROCS N KIND      (permits|independent)
 *   core_bench detect DIR SECONDS                          (deadlock detection's cost)
 * Each prints one line of numbers for bench/core-run to tabulate. */
#include "dirlock.h"
#include "dirlock_permit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
        struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

/* ---- uncontended ------------------------------------------------------ */

static double rate(double seconds, int (*op)(const char *dir), const char *dir)
{
        long n = 0;
        double t0 = now_s(), t;
        do {
                for (int i = 0; i < 64; i++)
                        if (op(dir) != 0) {
                                perror("bench op");
                                exit(1);
                        }
                n += 64;
                t = now_s();
        } while (t - t0 < seconds);
        return (double)n / (t - t0);
}

static char path_buf[4096];

static int op_mkdir(const char *dir)
{
        snprintf(path_buf, sizeof path_buf, "%s/bare.lock", dir);
        if (mkdir(path_buf, 0777) != 0)
                return -1;
        return rmdir(path_buf);
}

static int op_dirlock(const char *dir)
{
        dirlock *h;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        if (dirlock_acquire(dir, "bench", &o, &h, NULL) != DIRLOCK_OK)
                return -1;
        return dirlock_release(h, NULL) == DIRLOCK_OK ? 0 : -1;
}

/* A lock that may be waited for (no timeout) but is free: the path every
 * acquire that can wait takes when there is no contention, with deadlock
 * detection's bookkeeping (op_dirlock_wait), and without it: the same
 * with DIRLOCK_NO_DEADLOCK. */
static int dirlock_free_lock(const char *dir, unsigned flags)
{
        dirlock *h;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = flags;
        if (dirlock_acquire(dir, "bench", &o, &h, NULL) != DIRLOCK_OK)
                return -1;
        return dirlock_release(h, NULL) == DIRLOCK_OK ? 0 : -1;
}

static int op_dirlock_wait(const char *dir)
{
        return dirlock_free_lock(dir, 0);
}

static int op_dirlock_nodetect(const char *dir)
{
        return dirlock_free_lock(dir, DIRLOCK_NO_DEADLOCK);
}

static int flock_fd = -1;
static int op_flock(const char *dir)
{
        (void)dir;
        if (flock(flock_fd, LOCK_EX) != 0)
                return -1;
        return flock(flock_fd, LOCK_UN);
}

static int op_flock_open(const char *dir)
{
        snprintf(path_buf, sizeof path_buf, "%s/bench.flock", dir);
        int fd = open(path_buf, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0 || flock(fd, LOCK_EX) != 0)
                return -1;
        return close(fd);
}

static int op_fcntl(const char *dir)
{
        (void)dir;
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (fcntl(flock_fd, F_SETLKW, &fl) != 0)
                return -1;
        fl.l_type = F_UNLCK;
        return fcntl(flock_fd, F_SETLK, &fl);
}

static int cmd_uncontended(const char *dir, double seconds)
{
        snprintf(path_buf, sizeof path_buf, "%s/bench.flock", dir);
        flock_fd = open(path_buf, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (flock_fd < 0)
                return 1;
        /* Interleave the runs so machine noise hits all alike. */
        double r[5] = {0};
        for (int round = 0; round < 3; round++) {
                r[0] += rate(seconds / 3, op_mkdir, dir);
                r[1] += rate(seconds / 3, op_dirlock, dir);
                r[2] += rate(seconds / 3, op_flock, dir);
                r[3] += rate(seconds / 3, op_flock_open, dir);
                r[4] += rate(seconds / 3, op_fcntl, dir);
        }
        printf("%.0f %.0f %.0f %.0f %.0f\n", r[0] / 3, r[1] / 3, r[2] / 3, r[3] / 3, r[4] / 3);
        return 0;
}

/* ---- contended -------------------------------------------------------- */

struct shared {
        volatile long ops;
        volatile long busy;
        volatile int go;
        volatile double release_at;
        volatile int turn;
};

static void rmw(const char *file, double cs_s)
{
        long v = 0;
        FILE *f = fopen(file, "r");
        if (f) {
                if (fscanf(f, "%ld", &v) != 1)
                        v = 0;
                fclose(f);
        }
        sleep_s(cs_s);
        f = fopen(file, "w");
        if (f) {
                fprintf(f, "%ld\n", v + 1);
                fclose(f);
        }
}

static void contender(const char *dir, const char *locking, double cs_s, struct shared *sh, double end)
{
        char file[4096], seed_dir[4096], flock_path[4096];
        snprintf(file, sizeof file, "%s/counter", dir);
        snprintf(seed_dir, sizeof seed_dir, "%s/seed.lock", dir);
        snprintf(flock_path, sizeof flock_path, "%s/bench.flock", dir);
        int ffd = open(flock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        while (now_s() < end) {
                if (strcmp(locking, "dirlock") == 0) {
                        dirlock *h;
                        dirlock_options o = DIRLOCK_OPTIONS_INIT;
                        o.timeout = 10;
                        if (dirlock_acquire(dir, "bench", &o, &h, NULL) != DIRLOCK_OK) {
                                __sync_fetch_and_add(&sh->busy, 1);
                                continue;
                        }
                        rmw(file, cs_s);
                        dirlock_release(h, NULL);
                } else if (strcmp(locking, "flock") == 0) {
                        flock(ffd, LOCK_EX);
                        rmw(file, cs_s);
                        flock(ffd, LOCK_UN);
                } else { /* seed: mkdir, 5 tries 1 s apart, else "busy" */
                        int got = 0;
                        for (int i = 0; i < 5 && !got; i++) {
                                if (mkdir(seed_dir, 0755) == 0)
                                        got = 1;
                                else
                                        sleep(1);
                        }
                        if (!got) {
                                __sync_fetch_and_add(&sh->busy, 1);
                                continue;
                        }
                        rmw(file, cs_s);
                        rmdir(seed_dir);
                }
                __sync_fetch_and_add(&sh->ops, 1);
        }
        close(ffd);
}

static int cmd_contended(const char *dir, double seconds, double cs_ms, const char *locking, int procs)
{
        struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED)
                return 1;
        double start = now_s() + 0.05, end = start + seconds;
        for (int i = 0; i < procs; i++) {
                pid_t p = fork();
                if (p == 0) {
                        while (now_s() < start)
                                ;
                        contender(dir, locking, cs_ms / 1e3, sh, end);
                        _exit(0);
                }
        }
        while (wait(NULL) > 0)
                ;
        printf("%.2f %ld\n", (double)sh->ops / seconds, sh->busy);
        return 0;
}

/* ---- hand-off latency ------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

/* WAITERS + 1 processes take the lock in turn: each holds it 0.2 ms,
 * notes the time and its number just before it releases, then stays away
 * for 1-2 ms.  A hand-off is the time from a release call to the next
 * holder's acquire returning, counted when that holder is another process
 * that was already waiting when the release began. */
#define HANDOFF_MAX 200000
struct handoff_shared {
        _Atomic double release_at;
        _Atomic int releaser;
        _Atomic long n;
        _Atomic long acquisitions;
        double lat[HANDOFF_MAX];
};

static int cmd_handoff(const char *dir, int waiters, double seconds, unsigned flags)
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
                while (now_s() < start)
                        sleep_s(0.001);
                while (now_s() < end) {
                        dirlock *h;
                        dirlock_options o = DIRLOCK_OPTIONS_INIT;
                        o.flags = flags;
                        double asked = now_s();
                        if (dirlock_acquire(dir, "handoff", &o, &h, NULL) != DIRLOCK_OK)
                                _exit(1);
                        double t = now_s();
                        sh->acquisitions++;
                        if (sh->releaser >= 0 && sh->releaser != me && asked < sh->release_at) {
                                long i = sh->n++;
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
        while (wait(NULL) > 0)
                ;
        long n = sh->n < HANDOFF_MAX ? sh->n : HANDOFF_MAX;
        if (n == 0)
                return 1;
        qsort(sh->lat, (size_t)n, sizeof(double), cmp_double);
        struct rusage ru;
        getrusage(RUSAGE_CHILDREN, &ru);
        double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
        printf("%.1f %.1f %.1f %ld %.2f\n", sh->lat[n / 2] * 1e6, sh->lat[n * 99 / 100] * 1e6,
               sh->lat[n - 1] * 1e6, n, cpu * 1e6 / (double)sh->acquisitions);
        return 0;
}

/* ---- counting locks ---------------------------------------------------- */

/* PROCS processes run a critical section of CS_MS over and over: each
 * under one of N permits of one counting lock (permits), or under lock
 * l<i % N> of N independent locks, the i-th process always the same one
 * (independent: the best N locks can do).  Prints ops/s. */
static int cmd_permits(const char *dir, double seconds, double cs_ms, int procs, unsigned n, const char *kind)
{
        struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED || n < 1)
                return 1;
        bool permits = strcmp(kind, "permits") == 0;
        double start = now_s() + 0.05, end = start + seconds;
        for (int i = 0; i < procs; i++) {
                if (fork() != 0)
                        continue;
                char name[32];
                snprintf(name, sizeof name, "l%u", (unsigned)i % n);
                while (now_s() < start)
                        ;
                while (now_s() < end) {
                        dirlock *h;
                        dirlock_options o = DIRLOCK_OPTIONS_INIT;
                        o.timeout = 10;
                        int rc = permits ? dirlock_acquire_permit(dir, "sem", n, &o, &h, NULL)
                                         : dirlock_acquire(dir, name, &o, &h, NULL);
                        if (rc != DIRLOCK_OK) {
                                __sync_fetch_and_add(&sh->busy, 1);
                                continue;
                        }
                        sleep_s(cs_ms / 1e3);
                        dirlock_release(h, NULL);
                        __sync_fetch_and_add(&sh->ops, 1);
                }
                _exit(0);
        }
        while (wait(NULL) > 0)
                ;
        printf("%.2f %ld\n", (double)sh->ops / seconds, sh->busy);
        return 0;
}

/* ---- deadlock detection's cost on the uncontended path ----------------- */

static double cpu_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Like rate(), also setting *cpu_us to the process's CPU time per op. */
static double rate_cpu(double seconds, int (*op)(const char *dir), const char *dir, double *cpu_us)
{
        double c0 = cpu_s(), t0 = now_s();
        double r = rate(seconds, op, dir);
        *cpu_us = (cpu_s() - c0) * 1e6 / (r * (now_s() - t0));
        return r;
}

static double median(double *v, int n)
{
        qsort(v, (size_t)n, sizeof v[0], cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Acquire+release of a free lock that could be waited for, with and
 * without deadlock detection (DIRLOCK_NO_DEADLOCK), in 20 short rounds
 * (at least 0.1 s each way) that alternate, so that machine noise hits
 * both alike; a round's ratios compare the two runs next to each other.
 * Detection adds no system call to this path, only work in the process,
 * so its cost shows best in CPU time per lock: a disk's stalls move the
 * wall clock by more than the whole difference.  Prints
 *   with/s without/s wall_ratio with_cpu_us without_cpu_us cpu_ratio
 * (rates: means; ratios: medians of the rounds', with / without). */
static int cmd_detect(const char *dir, double seconds)
{
        enum { ROUNDS = 20 };
        double with = 0, without = 0, cw = 0, cwo = 0, wall[ROUNDS], cpu[ROUNDS];
        double half = seconds / ROUNDS / 2 < 0.1 ? 0.1 : seconds / ROUNDS / 2;
        for (int round = 0; round < ROUNDS; round++) {
                bool first_with = round % 2 == 0;
                double ca, cb;
                double a = rate_cpu(half, first_with ? op_dirlock_wait : op_dirlock_nodetect, dir, &ca);
                double b = rate_cpu(half, first_with ? op_dirlock_nodetect : op_dirlock_wait, dir, &cb);
                double w = first_with ? a : b, wo = first_with ? b : a;
                double c = first_with ? ca : cb, co = first_with ? cb : ca;
                with += w;
                without += wo;
                cw += c;
                cwo += co;
                wall[round] = wo / w;
                cpu[round] = c / co;
        }
        printf("%.0f %.0f %.3f %.2f %.2f %.3f\n", with / ROUNDS, without / ROUNDS, median(wall, ROUNDS),
               cw / ROUNDS, cwo / ROUNDS, median(cpu, ROUNDS));
        return 0;
}

int main(int argc, char **argv)
{
        signal(SIGPIPE, SIG_IGN);
        if (argc >= 4 && strcmp(argv[1], "uncontended") == 0)
                return cmd_uncontended(argv[2], atof(argv[3]));
        if (argc >= 7 && strcmp(argv[1], "contended") == 0)
                return cmd_contended(argv[2], atof(argv[3]), atof(argv[4]), argv[5], atoi(argv[6]));
        if (argc >= 5 && strcmp(argv[1], "handoff") == 0)
                return cmd_handoff(argv[2], atoi(argv[3]), atof(argv[4]),
                                   argc >= 6 && strcmp(argv[5], "nodetect") == 0 ? DIRLOCK_NO_DEADLOCK : 0);
        if (argc >= 8 && strcmp(argv[1], "permits") == 0)
                return cmd_permits(argv[2], atof(argv[3]), atof(argv[4]), atoi(argv[5]),
                                   (unsigned)atoi(argv[6]), argv[7]);
        if (argc >= 4 && strcmp(argv[1], "detect") == 0)
                return cmd_detect(argv[2], atof(argv[3]));
        fprintf(stderr, "usage: core_bench uncontended|contended|handoff|permits|detect ...\n");
        return 2;
}
