/* lockworker.c - the worker the multi-process tests of the exclusive lock
 * drive: each subcommand is one role (counter incrementer, holder, waiter,
 * breaker-race contender, multi-lock looper).
 *
 *   lockworker counter LOCKDIR NAME FILE N LOCKING [SLEEP_US]
 *       N read-modify-write increments of the decimal counter in FILE;
 *       LOCKING is dirlock, none, flock or seed (the 5 tries x 1 s policy),
 *       or tally: dirlock, where a failed acquire or release is said on
 *       stderr and counted instead of ending the run (an acquire that
 *       failed bumps nothing); prints "busy B failed F slow S", S the
 *       acquires that took over 2 s.
 *   lockworker hold LOCKDIR NAME SECONDS [STALE] [REFRESH_EVERY]
 *       take the lock, print "held <token>", hold it, release; print the
 *       release result ("released", "lost").
 *   lockworker wait LOCKDIR NAME TIMEOUT [STALE]
 *       take the lock; print "<code> <elapsed ms>" and release.
 *   lockworker alone LOCKDIR NAME MARKER STALE [none]
 *       read one byte from stdin (the starting gun), take the lock, prove
 *       we are alone with an O_EXCL marker file, release.  Exit 3 if not.
 *   lockworker multi LOCKDIR SECONDS NAME...
 *       take all the names together again and again; print the count.
 *   lockworker naive LOCKDIR SECONDS NAME...
 *       the same by hand, one lock after the other in the order given,
 *       each with a 0.3 s timeout; print "<rounds> <deadlocks>" where a
 *       deadlock is a round that timed out holding the earlier locks.
 *   lockworker paused SPACE NAME STALE SLEEP early|late
 *       take the lock (stale age STALE); "early": draw the fence now;
 *       print "held [FENCE]", sleep SLEEP seconds (the test stops us with
 *       SIGSTOP meanwhile), then "late": draw the fence now; print
 *       "fence <code> <fence>", "check <code>", "release <code>".
 *   lockworker abandon SPACE NAME TIMEOUT LINGER [LO HI]
 *       take and release NAME.warm, the same kind of lock (the connection
 *       is open, the server has the script), print
 *       "ready", read one byte from stdin (the test stops the server
 *       meanwhile), try NAME (range [LO, HI) if given) with TIMEOUT,
 *       print "<code> <elapsed ms>", then stay alive LINGER seconds
 *       without touching the lock (so no dead-owner check frees what a
 *       late request might have taken for us).
 *   lockworker fenced SPACE NAME TIMEOUT [STALE]
 *       take the lock, print "fence <fence>", release.
 *   lockworker fcounter SPACE NAME FILE N SLEEP_US fence|nofence
 *       N increments of the counter in FILE ("value fence") under the lock
 *       (timeout 5 s, stale 1 s), the store guarded by flock(2) of its own:
 *       read, sleep SLEEP_US, write value + 1.  With "fence" the store is
 *       a fenced one: a read records the reader's fence and is refused
 *       when a higher one was recorded; the write is refused unless the
 *       recorded fence is still ours.  Lock errors are retried (up to 20 N
 *       attempts).  Prints "accepted A refused R errors E late L lost X":
 *       L counts acquires that returned more than 0.5 s after their
 *       timeout, X releases that said DIRLOCK_ELOST. */
#include "dirlock.h"
#include "dirlock_fence.h"
#include "dirlock_range.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void sleep_us(long us)
{
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

static long read_counter(const char *file)
{
        FILE *f = fopen(file, "r");
        long v = 0;
        if (f != NULL) {
                if (fscanf(f, "%ld", &v) != 1)
                        v = 0;
                fclose(f);
        }
        return v;
}

static void write_counter(const char *file, long v)
{
        FILE *f = fopen(file, "w");
        if (f == NULL) {
                perror(file);
                exit(2);
        }
        fprintf(f, "%ld\n", v);
        fclose(f);
}

/* The seed article's lock: mkdir, 5 tries 1 s apart, stale after 180 s by
 * mtime, broken with a plain rmdir (racy, which is the point). */
static int seed_lock(const char *dir)
{
        for (int i = 0; i < 5; i++) {
                if (mkdir(dir, 0755) == 0)
                        return 0;
                sleep(1);
        }
        return -1;
}

static int cmd_counter(int argc, char **argv)
{
        if (argc < 6)
                return 2;
        const char *lockdir = argv[1], *name = argv[2], *file = argv[3], *locking = argv[5];
        long n = atol(argv[4]);
        long sleep_in = argc > 6 ? atol(argv[6]) : 0;
        char seed_dir[4096];
        snprintf(seed_dir, sizeof seed_dir, "%s/%s.seed", lockdir, name);
        char flock_path[4096];
        snprintf(flock_path, sizeof flock_path, "%s/%s.flock", lockdir, name);
        int busy = 0, failed = 0, slow = 0;
        bool tally = strcmp(locking, "tally") == 0;
        for (long i = 0; i < n; i++) {
                dirlock *h = NULL;
                int ffd = -1;
                if (strcmp(locking, "dirlock") == 0 || tally) {
                        dirlock_options o = DIRLOCK_OPTIONS_INIT;
                        o.timeout = 30;
                        dirlock_error e;
                        double t0 = now_ms();
                        if (dirlock_acquire(lockdir, name, &o, &h, &e) != DIRLOCK_OK) {
                                fprintf(stderr, "lockworker: %s\n", e.message);
                                if (!tally)
                                        return 1;
                                failed++;
                                continue;
                        }
                        slow += now_ms() - t0 > 2000;
                } else if (strcmp(locking, "flock") == 0) {
                        ffd = open(flock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
                        if (ffd < 0 || flock(ffd, LOCK_EX) != 0)
                                return 1;
                } else if (strcmp(locking, "seed") == 0) {
                        if (seed_lock(seed_dir) != 0) {
                                busy++;
                                continue;
                        }
                } else if (strcmp(locking, "none") != 0) {
                        return 2;
                }
                long v = read_counter(file);
                if (sleep_in)
                        sleep_us(sleep_in);
                write_counter(file, v + 1);
                if (h != NULL) {
                        dirlock_error e;
                        if (dirlock_release(h, &e) != DIRLOCK_OK) {
                                fprintf(stderr, "lockworker: %s\n", e.message);
                                if (!tally)
                                        return 1;
                                failed++; /* the handle is freed all the same */
                        }
                }
                if (ffd >= 0)
                        close(ffd);
                if (strcmp(locking, "seed") == 0)
                        rmdir(seed_dir);
        }
        if (tally)
                printf("busy %d failed %d slow %d\n", busy, failed, slow);
        else
                printf("busy %d\n", busy);
        return 0;
}

static int cmd_hold(int argc, char **argv)
{
        if (argc < 4)
                return 2;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 30;
        if (argc > 4)
                o.stale_age = atof(argv[4]);
        double refresh = argc > 5 ? atof(argv[5]) : 0;
        dirlock *h;
        dirlock_error e;
        if (dirlock_acquire(argv[1], argv[2], &o, &h, &e) != DIRLOCK_OK) {
                fprintf(stderr, "lockworker: %s\n", e.message);
                return 1;
        }
        printf("held %s\n", dirlock_token(h));
        fflush(stdout);
        double end = now_ms() + atof(argv[3]) * 1e3;
        while (now_ms() < end) {
                if (refresh > 0) {
                        sleep_us((long)(refresh * 1e6));
                        if (dirlock_refresh(h, &e) != DIRLOCK_OK) {
                                printf("refresh-failed %s\n", dirlock_strerror(e.code));
                                fflush(stdout);
                        }
                } else {
                        sleep_us(10000);
                }
        }
        int rc = dirlock_release(h, &e);
        printf("%s\n", rc == DIRLOCK_OK ? "released" : rc == DIRLOCK_ELOST ? "lost" : e.message);
        return rc == DIRLOCK_OK ? 0 : 4;
}

static int cmd_wait(int argc, char **argv)
{
        if (argc < 4)
                return 2;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = atof(argv[3]);
        if (argc > 4)
                o.stale_age = atof(argv[4]);
        dirlock *h;
        dirlock_error e;
        double t0 = now_ms();
        int rc = dirlock_acquire(argv[1], argv[2], &o, &h, &e);
        printf("%d %.1f\n", rc, now_ms() - t0);
        if (rc == DIRLOCK_OK)
                dirlock_release(h, NULL);
        return 0;
}

/* abandon's lock: NAME, or range [argv[5], argv[6]) of it when given. */
static int take_maybe_range(int argc, char **argv, const char *name, const dirlock_options *o, dirlock **h,
                            dirlock_error *e)
{
        return argc > 6 ? dirlock_acquire_range(argv[1], name, atof(argv[5]), atof(argv[6]), o, h, e)
                        : dirlock_acquire(argv[1], name, o, h, e);
}

static int cmd_abandon(int argc, char **argv)
{
        if (argc < 5)
                return 2;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        dirlock *h;
        dirlock_error e;
        char warm[256];
        snprintf(warm, sizeof warm, "%s.warm", argv[2]);
        /* the same kind of lock: its script is loaded on the server now */
        int rc = take_maybe_range(argc, argv, warm, &o, &h, &e);
        if (rc != DIRLOCK_OK) {
                fprintf(stderr, "lockworker: %s\n", e.message);
                return 1;
        }
        dirlock_release(h, NULL);
        printf("ready\n");
        fflush(stdout);
        char go;
        if (read(0, &go, 1) < 0)
                return 2;
        o.timeout = atof(argv[3]);
        double t0 = now_ms();
        rc = take_maybe_range(argc, argv, argv[2], &o, &h, &e);
        printf("%d %.1f\n", rc, now_ms() - t0);
        fflush(stdout);
        if (rc == DIRLOCK_OK)
                dirlock_release(h, NULL);
        sleep_us((long)(atof(argv[4]) * 1e6));
        return 0;
}

static int cmd_alone(int argc, char **argv)
{
        if (argc < 5)
                return 2;
        char go;
        if (read(0, &go, 1) < 0)
                return 2;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 20;
        o.stale_age = atof(argv[4]);
        bool locking = argc < 6 || strcmp(argv[5], "none") != 0;
        dirlock *h = NULL;
        dirlock_error e;
        if (locking && dirlock_acquire(argv[1], argv[2], &o, &h, &e) != DIRLOCK_OK) {
                fprintf(stderr, "lockworker: %s\n", e.message);
                return 1;
        }
        int fd = open(argv[3], O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0) {
                fprintf(stderr, "lockworker: two holders at once (marker exists)\n");
                return 3;
        }
        close(fd);
        sleep_us(200);
        unlink(argv[3]);
        if (!locking)
                return 0;
        return dirlock_release(h, NULL) == DIRLOCK_OK ? 0 : 4;
}

static int cmd_multi(int argc, char **argv)
{
        if (argc < 4)
                return 2;
        double end = now_ms() + atof(argv[2]) * 1e3;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 5;
        long count = 0;
        while (now_ms() < end) {
                dirlock_set *s;
                dirlock_error e;
                if (dirlock_acquire_many(argv[1], (const char *const *)argv + 3, (size_t)(argc - 3), &o, &s,
                                         &e) != DIRLOCK_OK) {
                        fprintf(stderr, "lockworker: %s\n", e.message);
                        return 1;
                }
                sleep_us(100);
                dirlock_release_many(s, NULL);
                count++;
        }
        printf("%ld\n", count);
        return 0;
}

static int cmd_naive(int argc, char **argv)
{
        if (argc < 4)
                return 2;
        double end = now_ms() + atof(argv[2]) * 1e3;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0.3;
        long rounds = 0, deadlocks = 0;
        int n = argc - 3;
        dirlock *held[16];
        if (n > 16)
                return 2;
        while (now_ms() < end) {
                int got = 0;
                for (; got < n; got++) {
                        if (dirlock_acquire(argv[1], argv[3 + got], &o, &held[got], NULL) != DIRLOCK_OK)
                                break;
                        sleep_us(1000); /* work between the two acquisitions */
                }
                if (got < n)
                        deadlocks++;
                while (got-- > 0)
                        dirlock_release(held[got], NULL);
                rounds++;
        }
        printf("%ld %ld\n", rounds, deadlocks);
        return 0;
}

static int cmd_paused(int argc, char **argv)
{
        if (argc < 6)
                return 2;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 10;
        o.stale_age = atof(argv[3]);
        bool late = strcmp(argv[5], "late") == 0;
        dirlock *h;
        dirlock_error e;
        if (dirlock_acquire(argv[1], argv[2], &o, &h, &e) != DIRLOCK_OK) {
                fprintf(stderr, "lockworker: %s\n", e.message);
                return 1;
        }
        unsigned long long f = 0;
        int frc = DIRLOCK_OK;
        if (!late)
                frc = dirlock_fence(h, &f, &e);
        printf("held %llu\n", f);
        fflush(stdout);
        sleep_us((long)(atof(argv[4]) * 1e6));
        if (late)
                frc = dirlock_fence(h, &f, &e);
        printf("fence %d %llu\n", frc, frc == DIRLOCK_OK ? f : 0);
        printf("check %d\n", dirlock_check(h, NULL));
        printf("release %d\n", dirlock_release(h, NULL));
        return 0;
}

static int cmd_fenced(int argc, char **argv)
{
        if (argc < 4)
                return 2;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = atof(argv[3]);
        if (argc > 4)
                o.stale_age = atof(argv[4]);
        dirlock *h;
        dirlock_error e;
        unsigned long long f = 0;
        if (dirlock_acquire(argv[1], argv[2], &o, &h, &e) != DIRLOCK_OK ||
            dirlock_fence(h, &f, &e) != DIRLOCK_OK) {
                fprintf(stderr, "lockworker: %s\n", e.message);
                return 1;
        }
        printf("fence %llu\n", f);
        return dirlock_release(h, NULL) == DIRLOCK_OK ? 0 : 4;
}

/* The fenced store of fcounter: "value fence" in FILE, under flock(2). */
static int store_open(const char *file, long *value, unsigned long long *fence)
{
        int fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0 || flock(fd, LOCK_EX) != 0) {
                perror(file);
                exit(2);
        }
        char buf[64] = "";
        ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        *value = 0;
        *fence = 0;
        if (sscanf(buf, "%ld %llu", value, fence) < 1)
                *value = 0;
        return fd;
}

static void store_close(int fd, bool write, long value, unsigned long long fence)
{
        if (write) {
                char buf[64];
                int n = snprintf(buf, sizeof buf, "%ld %llu\n", value, fence);
                if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
                        perror("store");
                        exit(2);
                }
        }
        close(fd); /* drops the flock */
}

static int cmd_fcounter(int argc, char **argv)
{
        if (argc < 7)
                return 2;
        const char *space = argv[1], *name = argv[2], *file = argv[3];
        long n = atol(argv[4]), sleep_in = atol(argv[5]);
        bool fenced = strcmp(argv[6], "fence") == 0;
        long accepted = 0, refused = 0, errors = 0, late = 0, lost = 0;
        for (long tries = 0; accepted + refused < n && tries < 20 * n; tries++) {
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 5;
                o.stale_age = 1;
                dirlock *h;
                dirlock_error e;
                double t0 = now_ms();
                int rc = dirlock_acquire(space, name, &o, &h, &e);
                if (now_ms() - t0 > (o.timeout + 0.5) * 1e3)
                        late++;
                unsigned long long mine = 0;
                if (rc == DIRLOCK_OK && (rc = dirlock_fence(h, &mine, &e)) != DIRLOCK_OK)
                        dirlock_release(h, NULL);
                if (rc != DIRLOCK_OK) {
                        fprintf(stderr, "lockworker: %s\n", e.message);
                        errors++;
                        sleep_us(20000);
                        continue;
                }
                long v;
                unsigned long long f;
                int fd = store_open(file, &v, &f);
                bool ok = !fenced || mine >= f;
                store_close(fd, fenced && ok, v, mine); /* a fenced read records our fence */
                sleep_us(sleep_in);
                if (ok) {
                        long v2;
                        fd = store_open(file, &v2, &f);
                        ok = !fenced || f == mine;
                        store_close(fd, ok, v + 1, fenced ? mine : f);
                }
                if (ok)
                        accepted++;
                else
                        refused++;
                rc = dirlock_release(h, &e);
                if (rc == DIRLOCK_ELOST)
                        lost++;
                if (rc != DIRLOCK_OK && rc != DIRLOCK_ELOST) {
                        fprintf(stderr, "lockworker: %s\n", e.message);
                        errors++;
                }
        }
        printf("accepted %ld refused %ld errors %ld late %ld lost %ld\n", accepted, refused, errors, late,
               lost);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                fprintf(stderr, "usage: lockworker "
                                "counter|hold|wait|abandon|alone|multi|naive|paused|fenced|fcounter ...\n");
                return 2;
        }
        const char *cmd = argv[1];
        argc--;
        argv++;
        if (strcmp(cmd, "counter") == 0)
                return cmd_counter(argc, argv);
        if (strcmp(cmd, "hold") == 0)
                return cmd_hold(argc, argv);
        if (strcmp(cmd, "wait") == 0)
                return cmd_wait(argc, argv);
        if (strcmp(cmd, "alone") == 0)
                return cmd_alone(argc, argv);
        if (strcmp(cmd, "abandon") == 0)
                return cmd_abandon(argc, argv);
        if (strcmp(cmd, "multi") == 0)
                return cmd_multi(argc, argv);
        if (strcmp(cmd, "naive") == 0)
                return cmd_naive(argc, argv);
        if (strcmp(cmd, "paused") == 0)
                return cmd_paused(argc, argv);
        if (strcmp(cmd, "fenced") == 0)
                return cmd_fenced(argc, argv);
        if (strcmp(cmd, "fcounter") == 0)
                return cmd_fcounter(argc, argv);
        fprintf(stderr, "lockworker: unknown role '%s'\n", cmd);
        return 2;
}
