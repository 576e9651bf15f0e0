/* rw_bench.c - benchmark of the reader-writer lock: uncontended read (and
 * write) lock cost against bare mkdir+rmdir, flock(2) LOCK_SH and fcntl(2)
 * F_RDLCK; read throughput with 1, 2, 4, 8 concurrent readers per policy
 * against no lock; waits (p50/p99/max) of a writer under a read attack and
 * of a reader under a write attack, per policy.  Prints markdown tables;
 * with -p FILE also writes the throughput data for gnuplot.  Measures,
 * never asserts.
 * -u: the uncontended table only.
 * Usage: rw_bench [-u] [-d LOCKDIR] [-s SECONDS_PER_POINT] [-p PLOTDATA] */
#include "dirlock.h"
#include "dirlock_flock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES 4096
enum { LK_FLOCK = 10, LK_NONE = 11 };
static const char *const policy_names[] = {"fair", "writer", "reader", "simple"};

typedef struct shared {
        unsigned long count[16];
        unsigned n;
        double ms[MAX_SAMPLES];
} shared;

static const char *lockdir;
static double secs = 1.0;
static shared *sh;

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(double ms)
{
        struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

static const char *lock_name(int lock)
{
        return lock == LK_FLOCK ? "flock" : lock == LK_NONE ? "no lock" : policy_names[lock];
}

static dirlock *take(int lock, int mode, double timeout)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = mode;
        o.timeout = timeout;
        dirlock *h = NULL;
        dirlock_error err;
        int rc = DIRLOCK_OK;
        if (lock == LK_FLOCK)
                rc = dirlock_flock_acquire(lockdir, "bench", &o, &h, &err);
        else if (lock != LK_NONE) {
                o.policy = lock;
                rc = dirlock_acquire(lockdir, "bench", &o, &h, &err);
        }
        if (rc != DIRLOCK_OK && rc != DIRLOCK_ETIMEDOUT) {
                fprintf(stderr, "rw_bench: %s\n", err.message);
                exit(2);
        }
        return h;
}

static void give(dirlock *h)
{
        if (h != NULL)
                dirlock_release(h, NULL);
}

/* ---- 1. uncontended ------------------------------------------------------ */

/* What a shared lock's uncontended acquire and release cost the kernel,
 * done by hand in the same directory: a reader entry (a symbolic link with
 * a record as long as the library's) made and removed, and the two looks
 * that find nothing (the exclusive lock NAME.lock and the ranges
 * NAME.ranges; rwlock.c, range.c).  The floor of any shared lock made of
 * directory entries; the library's own work is what it adds. */
struct syscall_probe {
        char readers[4000], entry[4096], w[4096], ranges[4096];
        char record[512];
};

static void probe_init(struct syscall_probe *p)
{
        snprintf(p->readers, sizeof p->readers, "%s/probe.readers", lockdir);
        snprintf(p->entry, sizeof p->entry, "%s/r.0123456789abcdef0123456789abcdef", p->readers);
        snprintf(p->w, sizeof p->w, "%s/probe.lock", lockdir);
        snprintf(p->ranges, sizeof p->ranges, "%s/probe.ranges", lockdir);
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        snprintf(p->record, sizeof p->record,
                 "dirlock1 pid=%ld start=1234567 token=0123456789abcdef0123456789abcdef "
                 "acquired=1795615306570327141 boot=f7b9e26d-9043-467b-a703-04b2ac88155d pidns=4026531836 "
                 "mode=1 stale=30000 host=%s",
                 (long)getpid(), host);
        mkdir(p->readers, 0777);
        unlink(p->entry); /* left by a run killed mid-way */
}

static int shared_lock_syscalls(const struct syscall_probe *p)
{
        struct stat st;
        if (symlink(p->record, p->entry) != 0)
                return -1;
        int fd = open(p->w, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0)
                close(fd);
        (void)stat(p->ranges, &st);
        return unlink(p->entry);
}

static dirlock *kept;
static struct syscall_probe probe;

static double rate(int kind)
{
        char path[4096];
        snprintf(path, sizeof path, "%s/bare", lockdir);
        char file[4096];
        snprintf(file, sizeof file, "%s/kernel.lockfile", lockdir);
        int fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        unsigned long n = 0;
        double t0 = now_s(), end = t0 + secs / 2;
        while (now_s() < end) {
                for (int k = 0; k < 100; k++) {
                        switch (kind) {
                        case 0:
                                if (mkdir(path, 0777) != 0 || rmdir(path) != 0)
                                        exit(2);
                                break;
                        case 1:
                                give(take(DIRLOCK_POLICY_FAIR, DIRLOCK_EXCLUSIVE, 0));
                                break;
                        case 2:
                                give(take(DIRLOCK_POLICY_FAIR, DIRLOCK_SHARED, 0));
                                break;
                        case 3:
                                give(take(DIRLOCK_POLICY_FAIR, DIRLOCK_INTENT, 0));
                                break;
                        case 4:
                                flock(fd, LOCK_SH);
                                flock(fd, LOCK_UN);
                                break;
                        case 5: {
                                struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
                                fcntl(fd, F_SETLKW, &fl);
                                fl.l_type = F_UNLCK;
                                fcntl(fd, F_SETLK, &fl);
                                break;
                        }
                        case 6: {
                                int f = open(file, O_RDWR | O_CLOEXEC);
                                flock(f, LOCK_SH);
                                close(f);
                                break;
                        }
                        case 7:
                                if (dirlock_reacquire(kept, NULL) != DIRLOCK_OK)
                                        exit(2);
                                dirlock_release(kept, NULL);
                                break;
                        case 8:
                                if (shared_lock_syscalls(&probe) != 0)
                                        exit(2);
                                break;
                        }
                        n++;
                }
        }
        close(fd);
        return (double)n / (now_s() - t0);
}

static void uncontended(void)
{
        static const char *const names[] = {"bare mkdir + rmdir",
                                            "dirlock exclusive",
                                            "dirlock shared",
                                            "dirlock intent",
                                            "flock LOCK_SH + LOCK_UN (open fd)",
                                            "fcntl F_RDLCK + F_UNLCK (open fd)",
                                            "open + flock LOCK_SH + close",
                                            "dirlock shared, kept handle (dirlock_reacquire)",
                                            "shared lock's directory operations alone"};
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = DIRLOCK_SHARED;
        o.flags |= DIRLOCK_REENTRANT;
        dirlock_error err;
        if (dirlock_acquire(lockdir, "bench", &o, &kept, &err) != DIRLOCK_OK) {
                fprintf(stderr, "rw_bench: %s\n", err.message);
                exit(2);
        }
        dirlock_release(kept, NULL);
        probe_init(&probe);
        printf("## Uncontended acquire + release\n\n| lock | ops/s | µs/op | vs mkdir+rmdir "
               "|\n|---|---:|---:|---:|\n");
        double base = 0;
        for (int k = 0; k < 9; k++) {
                double r = rate(k);
                if (k == 0)
                        base = r;
                printf("| %s | %.0f | %.2f | %.2f× |\n", names[k], r, 1e6 / r, base / r);
                fflush(stdout);
        }
        printf("\n");
        dirlock_free(kept, NULL);
        rmdir(probe.readers);
}

/* ---- 2. read throughput -------------------------------------------------- */

static void reader_loop(int lock, int slot, const char *data, double work_ms)
{
        int fd = open(data, O_RDONLY | O_CLOEXEC);
        char buf[4096];
        unsigned long n = 0;
        double end = now_s() + secs;
        while (now_s() < end) {
                dirlock *h = take(lock, DIRLOCK_SHARED, -1);
                if (pread(fd, buf, sizeof buf, 0) < 0)
                        exit(2);
                if (work_ms > 0)
                        sleep_ms(work_ms); /* a read that waits on I/O */
                give(h);
                n++;
        }
        sh->count[slot] = n;
        close(fd);
}

static void throughput(FILE *plot, double work_ms)
{
        char data[4096];
        snprintf(data, sizeof data, "%s/data", lockdir);
        int fd = open(data, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        char buf[4096];
        memset(buf, 'x', sizeof buf);
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
                exit(2);
        close(fd);
        int locks[] = {
            LK_NONE, DIRLOCK_POLICY_FAIR, DIRLOCK_POLICY_WRITER, DIRLOCK_POLICY_READER, DIRLOCK_POLICY_SIMPLE,
            LK_FLOCK};
        int ns[] = {1, 2, 4, 8};
        double res[6][4];
        for (int l = 0; l < 6; l++) {
                for (int k = 0; k < 4; k++) {
                        memset(sh->count, 0, sizeof sh->count);
                        pid_t pids[8];
                        for (int i = 0; i < ns[k]; i++) {
                                pids[i] = fork();
                                if (pids[i] == 0) {
                                        reader_loop(locks[l], i, data, work_ms);
                                        _exit(0);
                                }
                        }
                        for (int i = 0; i < ns[k]; i++)
                                waitpid(pids[i], NULL, 0);
                        unsigned long total = 0;
                        for (int i = 0; i < ns[k]; i++)
                                total += sh->count[i];
                        res[l][k] = (double)total / secs;
                }
        }
        if (work_ms > 0)
                printf(
                    "## Reads per second, N concurrent readers: 4 KiB pread + %.0f ms of I/O wait under the "
                    "lock\n\n",
                    work_ms);
        else
                printf(
                    "## Reads per second, N concurrent readers: bare 4 KiB pread (page cache) under the lock "
                    "(lock cost only)\n\n");
        printf("| lock | 1 | 2 | 4 | 8 | 8 readers vs no lock |\n|---|---:|---:|---:|---:|---:|\n");
        for (int l = 0; l < 6; l++)
                printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f %% |\n", lock_name(locks[l]), res[l][0],
                       res[l][1], res[l][2], res[l][3], 100 * res[l][3] / res[0][3]);
        printf("\n");
        if (plot != NULL) {
                fprintf(plot, "readers");
                for (int l = 0; l < 6; l++)
                        fprintf(plot, " \"%s\"", lock_name(locks[l]));
                fprintf(plot, "\n");
                for (int k = 0; k < 4; k++) {
                        fprintf(plot, "%d", ns[k]);
                        for (int l = 0; l < 6; l++)
                                fprintf(plot, " %.0f", res[l][k]);
                        fprintf(plot, "\n");
                }
        }
        unlink(data);
}

/* ---- 3. waits under attack ------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static void attack(int lock, bool read_attack, double *p50, double *p99, double *max, unsigned *n)
{
        sh->n = 0;
        double t0 = now_s() + 0.05, end = t0 + 3 * secs;
        pid_t pids[3];
        for (int a = 0; a < 2; a++) {
                pids[a] = fork();
                if (pids[a] == 0) {
                        sleep_ms((t0 - now_s()) * 1000 + a * (read_attack ? 100 : 25));
                        while (now_s() < end) {
                                dirlock *h = take(lock, read_attack ? DIRLOCK_SHARED : DIRLOCK_EXCLUSIVE, -1);
                                sleep_ms(read_attack ? 200 : 50);
                                give(h);
                                if (!read_attack)
                                        sleep_ms(1);
                        }
                        _exit(0);
                }
        }
        pids[2] = fork();
        if (pids[2] == 0) {
                sleep_ms((t0 - now_s()) * 1000 + 300);
                while (now_s() < end) {
                        double s = now_s();
                        dirlock *h =
                            take(lock, read_attack ? DIRLOCK_EXCLUSIVE : DIRLOCK_SHARED, end - s + 1);
                        double w = (now_s() - s) * 1000;
                        unsigned i = sh->n++;
                        if (i < MAX_SAMPLES)
                                sh->ms[i] = w;
                        sleep_ms(5);
                        give(h);
                        sleep_ms(50);
                }
                _exit(0);
        }
        for (int i = 0; i < 3; i++)
                waitpid(pids[i], NULL, 0);
        *n = sh->n < MAX_SAMPLES ? sh->n : MAX_SAMPLES;
        qsort(sh->ms, *n, sizeof sh->ms[0], cmp_double);
        *p50 = *n ? sh->ms[*n / 2] : 0;
        *p99 = *n ? sh->ms[(*n * 99) / 100 < *n ? (*n * 99) / 100 : *n - 1] : 0;
        *max = *n ? sh->ms[*n - 1] : 0;
}

static void attacks(void)
{
        printf("## Waits under attack (ms; %.0f s each; victim retries every ~55 ms)\n\n", 3 * secs);
        printf("Read attack: two readers each hold 200 ms, overlapping by 100 ms; the victim is a writer.  "
               "Write attack: two writers each hold 50 ms and ask again after 1 ms; the victim is a "
               "reader.\n\n");
        printf("| lock | writer wait p50 / p99 / max (n) | reader wait p50 / p99 / max (n) "
               "|\n|---|---:|---:|\n");
        int locks[] = {DIRLOCK_POLICY_FAIR, DIRLOCK_POLICY_WRITER, DIRLOCK_POLICY_READER,
                       DIRLOCK_POLICY_SIMPLE, LK_FLOCK};
        for (int l = 0; l < 5; l++) {
                double a50, a99, amax, b50, b99, bmax;
                unsigned an, bn;
                attack(locks[l], true, &a50, &a99, &amax, &an);
                attack(locks[l], false, &b50, &b99, &bmax, &bn);
                printf("| %s | %.0f / %.0f / %.0f (%u) | %.0f / %.0f / %.0f (%u) |\n", lock_name(locks[l]),
                       a50, a99, amax, an, b50, b99, bmax, bn);
                fflush(stdout);
        }
        printf("\n");
}

int main(int argc, char **argv)
{
        const char *plotfile = NULL;
        int opt;
        bool only_uncontended = false;
        while ((opt = getopt(argc, argv, "d:s:p:u")) != -1) {
                if (opt == 'u')
                        only_uncontended = true;
                else if (opt == 'd')
                        lockdir = optarg;
                else if (opt == 's')
                        secs = atof(optarg);
                else if (opt == 'p')
                        plotfile = optarg;
                else
                        return 2;
        }
        char tmp[] = "/tmp/rw_bench.XXXXXX";
        if (lockdir == NULL && (lockdir = mkdtemp(tmp)) == NULL)
                return 2;
        sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED)
                return 2;
        FILE *plot = plotfile && !only_uncontended ? fopen(plotfile, "w") : NULL;
        uncontended();
        if (!only_uncontended) {
                throughput(NULL, 0);
                throughput(plot, 1);
                attacks();
        }
        if (plot != NULL)
                fclose(plot);
        if (lockdir == tmp) {
                char cmd[128];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
                if (system(cmd) != 0)
                        return 2;
        }
        return 0;
}
