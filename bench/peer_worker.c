/* peer_worker.c - one worker of the side-by-side benchmarks (bench/peers-run,
 * bench/netfs-run) for the lockers written in C: the dirlock library
 * (plain, DIRLOCK_FIFO, and intent upgraded to write), a bare mkdir/rmdir
 * spin, flock(2) and fcntl(2) record locks.  The lockers of other
 * languages have their own workers beside it (peer_filelock.py,
 * peer_lockfile.js, peer_cli.sh, peer_sqlite.py); all of them do the same
 * thing and write the same output.
 *
 *   peer_worker LOCKER DIR START SECONDS OUT
 *     LOCKER   dirlock | dirlock-fifo | dirlock-rw | mkdir | flock | fcntl
 *     DIR      the run's directory: the counter file DIR/counter, the lock
 *              (DIR/counter.lock, DIR/counter.flock, DIR/counter.fcntl)
 *              beside it
 *     START    CLOCK_REALTIME seconds at which to begin
 *     SECONDS  how long to run
 *     OUT      one line per acquisition: "WAIT_US IN_TIME", the time the
 *              lock call took and 1 when the unlock came before the end
 *   peer_worker LOCKER DIR hold
 *     take the lock, print "held", and keep it until killed
 *   peer_worker LOCKER DIR wait TIMEOUT
 *     take the lock (waiting at most TIMEOUT seconds), print the seconds
 *     it took ("timeout" when it could not), let go
 *   peer_worker LOCKER DIR handoff DIR2 SECONDS
 *     hand-off latency: two processes, one locking in DIR and one in DIR2
 *     (the same directory through two clients of a network filesystem),
 *     take the lock in turn for SECONDS, each holding it 1 ms; prints the
 *     microseconds from a release to the other's acquire returning, p50
 *     p99 max, and their count
 *
 * Each acquisition: lock, read the counter, add one, write it back, unlock.
 * dirlock-rw reads under an intent lock and upgrades it to write.
 * DIRLOCK_STALE (seconds) sets dirlock's stale age [its default].
 * Measures, never asserts. */
#include "dirlock.h"
#include "dirlock_rw.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
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

enum kind { DIRLOCK, MKDIR, FLOCK, FCNTL };

struct locker {
        enum kind kind;
        bool upgrade; /* dirlock-rw: intent, upgraded to write */
        const char *dir;
        char mkdir_path[4096];
        int fd; /* flock, fcntl: open on the lock file */
        dirlock_options o;
        dirlock *h;
};

/* Take the lock, waiting at most `timeout` seconds (dirlock; the others
 * wait as long as it takes).  0, or -1 with a message on stderr. */
static int take(struct locker *l, double timeout)
{
        dirlock_error err;
        switch (l->kind) {
        case DIRLOCK:
                l->o.timeout = timeout;
                if (dirlock_acquire(l->dir, "counter", &l->o, &l->h, &err) != DIRLOCK_OK ||
                    (l->upgrade && dirlock_upgrade(l->h, NULL, &err) != DIRLOCK_OK)) {
                        fprintf(stderr, "peer_worker: %s\n", err.message);
                        return -1;
                }
                return 0;
        case MKDIR:
                while (mkdir(l->mkdir_path, 0755) != 0) {
                        if (errno != EEXIST) {
                                perror(l->mkdir_path);
                                return -1;
                        }
                        sched_yield();
                }
                return 0;
        case FLOCK:
                if (flock(l->fd, LOCK_EX) != 0) {
                        perror("flock");
                        return -1;
                }
                return 0;
        case FCNTL: {
                struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
                if (fcntl(l->fd, F_SETLKW, &fl) != 0) {
                        perror("fcntl");
                        return -1;
                }
                return 0;
        }
        }
        return -1;
}

static void let_go(struct locker *l)
{
        switch (l->kind) {
        case DIRLOCK:
                dirlock_release(l->h, NULL);
                break;
        case MKDIR:
                rmdir(l->mkdir_path);
                break;
        case FLOCK:
                flock(l->fd, LOCK_UN);
                break;
        case FCNTL: {
                struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
                fcntl(l->fd, F_SETLK, &fl);
                break;
        }
        }
}

/* The hand-off measurement (see the head). */
#define HANDOFFS 100000
struct handoff {
        volatile int releaser;
        volatile double release_at;
        long n;
        double lat[HANDOFFS];
};

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static int handoff(struct locker *l, const char *dir2, double seconds)
{
        struct handoff *sh =
            mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED)
                return 1;
        sh->releaser = -1;
        double end = clock_s(CLOCK_MONOTONIC) + seconds;
        for (int me = 0; me < 2; me++) {
                if (fork() != 0)
                        continue;
                if (me == 1) {
                        l->dir = dir2;
                        if (l->fd >= 0) { /* its own open of the lock file, through DIR2 */
                                char path[4096];
                                snprintf(path, sizeof path, "%s/counter.%s", dir2,
                                         l->kind == FLOCK ? "flock" : "fcntl");
                                close(l->fd);
                                l->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
                        }
                        snprintf(l->mkdir_path, sizeof l->mkdir_path, "%s/counter.lock", dir2);
                }
                unsigned seed = (unsigned)getpid();
                while (clock_s(CLOCK_MONOTONIC) < end) {
                        double asked = clock_s(CLOCK_MONOTONIC);
                        if (take(l, 60) != 0)
                                _exit(1);
                        double t = clock_s(CLOCK_MONOTONIC);
                        if (sh->releaser >= 0 && sh->releaser != me && asked < sh->release_at) {
                                long i = __atomic_fetch_add(&sh->n, 1, __ATOMIC_SEQ_CST);
                                if (i < HANDOFFS)
                                        sh->lat[i] = t - sh->release_at;
                        }
                        struct timespec hold = {0, 1000000};
                        nanosleep(&hold, NULL);
                        sh->releaser = me;
                        sh->release_at = clock_s(CLOCK_MONOTONIC);
                        let_go(l);
                        struct timespec gap = {0, 200000 + (long)(rand_r(&seed) % 800) * 1000};
                        nanosleep(&gap, NULL);
                }
                _exit(0);
        }
        int status, failed = 0;
        while (wait(&status) > 0)
                failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        long n = sh->n < HANDOFFS ? sh->n : HANDOFFS;
        if (n == 0 || failed)
                return 1;
        qsort(sh->lat, (size_t)n, sizeof(double), cmp_double);
        printf("%.0f %.0f %.0f %ld\n", sh->lat[n / 2] * 1e6, sh->lat[n * 99 / 100] * 1e6,
               sh->lat[n - 1] * 1e6, n);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc < 4) {
                fprintf(stderr, "usage: peer_worker dirlock|dirlock-fifo|dirlock-rw|mkdir|flock|fcntl DIR "
                                "(START SECONDS OUT | hold | wait TIMEOUT)\n");
                return 2;
        }
        const char *locker = argv[1];
        struct locker l = {.dir = argv[2], .fd = -1};
        dirlock_options_init(&l.o);
        if (getenv("DIRLOCK_STALE") != NULL)
                l.o.stale_age = atof(getenv("DIRLOCK_STALE"));
        char counter[4096], lock_file[4096];
        snprintf(counter, sizeof counter, "%s/counter", l.dir);
        snprintf(l.mkdir_path, sizeof l.mkdir_path, "%s/counter.lock", l.dir);
        if (strcmp(locker, "dirlock") == 0) {
                l.kind = DIRLOCK;
        } else if (strcmp(locker, "dirlock-fifo") == 0) {
                l.kind = DIRLOCK;
                l.o.flags |= DIRLOCK_FIFO;
        } else if (strcmp(locker, "dirlock-rw") == 0) {
                l.kind = DIRLOCK;
                l.o.mode = DIRLOCK_INTENT;
                l.upgrade = true;
        } else if (strcmp(locker, "mkdir") == 0) {
                l.kind = MKDIR;
        } else if (strcmp(locker, "flock") == 0 || strcmp(locker, "fcntl") == 0) {
                l.kind = locker[0] == 'f' && locker[1] == 'l' ? FLOCK : FCNTL;
                snprintf(lock_file, sizeof lock_file, "%s/counter.%s", l.dir, locker);
                l.fd = open(lock_file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
                if (l.fd < 0) {
                        perror(lock_file);
                        return 2;
                }
        } else {
                fprintf(stderr, "peer_worker: unknown locker '%s'\n", locker);
                return 2;
        }
        if (strcmp(argv[3], "hold") == 0) {
                if (take(&l, -1) != 0)
                        return 1;
                printf("held\n");
                fflush(stdout);
                for (;;)
                        pause();
        }
        if (strcmp(argv[3], "handoff") == 0 && argc == 6)
                return handoff(&l, argv[4], atof(argv[5]));
        if (strcmp(argv[3], "wait") == 0 && argc == 5) {
                double asked = clock_s(CLOCK_MONOTONIC);
                if (take(&l, atof(argv[4])) != 0) {
                        printf("timeout\n");
                        return 1;
                }
                printf("%.3f\n", clock_s(CLOCK_MONOTONIC) - asked);
                let_go(&l);
                return 0;
        }
        if (argc != 6)
                return 2;
        double start = atof(argv[3]), end = start + atof(argv[4]);
        FILE *out = fopen(argv[5], "w");
        if (out == NULL) {
                perror(argv[5]);
                return 2;
        }
        sleep_until(start);
        while (clock_s(CLOCK_REALTIME) < end) {
                double asked = clock_s(CLOCK_MONOTONIC);
                if (take(&l, 60) != 0)
                        return 1;
                double got = clock_s(CLOCK_MONOTONIC);
                if (bump(counter) != 0) {
                        perror(counter);
                        return 1;
                }
                let_go(&l);
                fprintf(out, "%.0f %d\n", (got - asked) * 1e6, clock_s(CLOCK_REALTIME) <= end);
        }
        return fclose(out) == 0 ? 0 : 1;
}
