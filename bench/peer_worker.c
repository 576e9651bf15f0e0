/* peer_worker.c - one worker of the side-by-side benchmark (bench/peers-run)
 * for the lockers written in C: the dirlock library (plain and
 * DIRLOCK_FIFO), a bare mkdir/rmdir spin and flock(2).  The lockers of
 * other languages have their own workers beside it (peer_filelock.py,
 * peer_lockfile.js, peer_cli.sh); all of them do the same thing and write
 * the same output.
 *
 *   peer_worker LOCKER DIR START SECONDS OUT
 *     LOCKER   dirlock | dirlock-fifo | mkdir | flock
 *     DIR      the run's directory: the counter file DIR/counter, the lock
 *              (DIR/counter.lock, DIR/counter.flock) beside it
 *     START    CLOCK_REALTIME seconds at which to begin
 *     SECONDS  how long to run
 *     OUT      one line per acquisition: "WAIT_US IN_TIME", the time the
 *              lock call took and 1 when the unlock came before the end
 *
 * Each acquisition: lock, read the counter, add one, write it back, unlock.
 * Measures, never asserts. */
#include "dirlock.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id)
{
        struct timespec t;
        clock_gettime(id, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_until(double wall)
{
        for (double left; (left = wall - clock_s(CLOCK_REALTIME)) > 0;) {
                struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
                nanosleep(&ts, NULL);
        }
}

/* The critical section: read the counter, increment, write it back. */
static int bump(const char *file)
{
        char buf[32];
        long v = 0;
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                ssize_t n = read(fd, buf, sizeof buf - 1);
                close(fd);
                if (n > 0) {
                        buf[n] = '\0';
                        v = strtol(buf, NULL, 10);
                }
        }
        fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -1;
        int len = snprintf(buf, sizeof buf, "%ld\n", v + 1);
        ssize_t w = write(fd, buf, (size_t)len);
        close(fd);
        return w == len ? 0 : -1;
}

int main(int argc, char **argv)
{
        if (argc != 6) {
                fprintf(stderr, "usage: peer_worker dirlock|dirlock-fifo|mkdir|flock DIR START "
                                "SECONDS OUT\n");
                return 2;
        }
        const char *locker = argv[1], *dir = argv[2];
        double start = atof(argv[3]), end = start + atof(argv[4]);
        FILE *out = fopen(argv[5], "w");
        if (out == NULL) {
                perror(argv[5]);
                return 2;
        }
        char counter[4096], mkdir_path[4096], flock_path[4096];
        snprintf(counter, sizeof counter, "%s/counter", dir);
        snprintf(mkdir_path, sizeof mkdir_path, "%s/counter.lock", dir);
        snprintf(flock_path, sizeof flock_path, "%s/counter.flock", dir);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 60;
        int kind = 0;
        if (strcmp(locker, "dirlock-fifo") == 0)
                o.flags |= DIRLOCK_FIFO;
        else if (strcmp(locker, "mkdir") == 0)
                kind = 1;
        else if (strcmp(locker, "flock") == 0)
                kind = 2;
        else if (strcmp(locker, "dirlock") != 0) {
                fprintf(stderr, "peer_worker: unknown locker '%s'\n", locker);
                return 2;
        }
        int ffd = kind == 2 ? open(flock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644) : -1;
        if (kind == 2 && ffd < 0) {
                perror(flock_path);
                return 2;
        }
        sleep_until(start);
        while (clock_s(CLOCK_REALTIME) < end) {
                double asked = clock_s(CLOCK_MONOTONIC);
                dirlock *h = NULL;
                dirlock_error err;
                if (kind == 0) {
                        if (dirlock_acquire(dir, "counter", &o, &h, &err) != DIRLOCK_OK) {
                                fprintf(stderr, "peer_worker: %s\n", err.message);
                                return 1;
                        }
                } else if (kind == 1) {
                        while (mkdir(mkdir_path, 0755) != 0) {
                                if (errno != EEXIST) {
                                        perror(mkdir_path);
                                        return 1;
                                }
                                sched_yield();
                        }
                } else if (flock(ffd, LOCK_EX) != 0) {
                        perror("flock");
                        return 1;
                }
                double got = clock_s(CLOCK_MONOTONIC);
                if (bump(counter) != 0) {
                        perror(counter);
                        return 1;
                }
                if (kind == 0)
                        dirlock_release(h, NULL);
                else if (kind == 1)
                        rmdir(mkdir_path);
                else
                        flock(ffd, LOCK_UN);
                fprintf(out, "%.0f %d\n", (got - asked) * 1e6, clock_s(CLOCK_REALTIME) <= end);
        }
        return fclose(out) == 0 ? 0 : 1;
}
