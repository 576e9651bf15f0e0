/* range_bench.c - range locks against no lock, one whole lock and the
 * kernel's byte-range locks (make bench-range, bench/range-run).
 *
 *   range_bench DIR SECONDS PROCS CS_US LOCKING
 *     LOCKING: none | range | whole | ofd
 * PROCS processes each own the range [10 p, 10 p + 10) of one lock (so
 * ranges never overlap) and loop: lock it -> read-modify-write their record
 * in DIR/data (pread, CS_US microseconds of work, pwrite) -> unlock.
 * `whole` takes the whole lock instead (every process waits for every
 * other); `ofd` takes fcntl F_OFD_SETLKW on the same bytes of DIR/data.
 * Prints one line: the operations per second, all processes together. */
#include "dirlock.h"
#include "dirlock_range.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void work(long us)
{
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

static int ofd_lock(int fd, int type, off_t start, off_t len)
{
        struct flock fl = {.l_type = (short)type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
        while (fcntl(fd, F_OFD_SETLKW, &fl) != 0)
                if (errno != EINTR)
                        return -1;
        return 0;
}

int main(int argc, char **argv)
{
        if (argc < 6) {
                fprintf(stderr, "usage: range_bench DIR SECONDS PROCS CS_US none|range|whole|ofd\n");
                return 2;
        }
        const char *dir = argv[1], *locking = argv[5];
        double seconds = atof(argv[2]);
        int procs = atoi(argv[3]);
        long cs_us = atol(argv[4]);
        char data[4096];
        snprintf(data, sizeof data, "%s/data", dir);
        atomic_long *ops = mmap(NULL, sizeof *ops, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (ops == MAP_FAILED)
                return 2;
        *ops = 0;
        double start = now_s() + 0.1, end = start + seconds;
        for (int p = 0; p < procs; p++) {
                if (fork() != 0)
                        continue;
                int fd = open(data, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
                if (fd < 0)
                        _exit(1);
                off_t off = (off_t)p * 64;
                while (now_s() < start)
                        work(1000);
                long n = 0;
                while (now_s() < end) {
                        dirlock *h = NULL;
                        dirlock_options o = DIRLOCK_OPTIONS_INIT;
                        o.timeout = 10;
                        dirlock_error e;
                        int rc = 0;
                        if (strcmp(locking, "range") == 0)
                                rc = dirlock_acquire_range(dir, "records", p * 10.0, p * 10.0 + 10, &o, &h,
                                                           &e);
                        else if (strcmp(locking, "whole") == 0)
                                rc = dirlock_acquire(dir, "records", &o, &h, &e);
                        else if (strcmp(locking, "ofd") == 0)
                                rc = ofd_lock(fd, F_WRLCK, off, 64);
                        if (rc != 0) {
                                fprintf(stderr, "range_bench: lock failed\n");
                                _exit(1);
                        }
                        long v = 0;
                        if (pread(fd, &v, sizeof v, off) < 0)
                                _exit(1);
                        work(cs_us);
                        v++;
                        if (pwrite(fd, &v, sizeof v, off) != (ssize_t)sizeof v)
                                _exit(1);
                        if (h != NULL)
                                dirlock_release(h, NULL);
                        else if (strcmp(locking, "ofd") == 0)
                                ofd_lock(fd, F_UNLCK, off, 64);
                        n++;
                }
                atomic_fetch_add(ops, n);
                _exit(0);
        }
        int status, failed = 0;
        while (wait(&status) > 0)
                failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        if (failed)
                return 1;
        printf("%.1f\n", (double)*ops / seconds);
        return 0;
}
