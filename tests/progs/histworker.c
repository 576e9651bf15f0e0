/* histworker.c - a client of the Jepsen-style tests (tests/etcd-jepsen.t):
 * takes one lock again and again for a while and writes down, with a
 * CLOCK_MONOTONIC time (one kernel: every namespace's processes share the
 * clock), every operation it invokes and what came of it -- the history
 * tests/progs/histcheck.c checks against a mutex.
 *
 *   histworker SPACE NAME SECONDS HOLD_MS STALE WORKLOAD STORE STATE_DIR
 *
 * WORKLOAD is what it does while it holds the lock:
 *   mutex   nothing but hold it HOLD_MS
 *   set     a read-modify-write of a set kept in file STORE: read the
 *           set, hold HOLD_MS, write the set read plus an element of its
 *           own (a store without fences: a holder paused between its read
 *           and its write puts back an old set)
 *   fenced  the same on a store that checks fences: the read and the
 *           write carry the holder's fence, the store keeps the highest
 *           one it has seen, and a write is refused when that is higher
 *           than its own (a read-modify-write needs the read fenced too:
 *           a holder paused after its read, whose write came before the
 *           next holder's, would otherwise be accepted and then written
 *           over by a set read before it); every accepted write appends
 *           "FENCE ELEMENT" to STORE.commits, in commit order
 * The store is one file, read and written under its own flock(2), as a
 * database serialises its own operations.  While it holds the lock the
 * worker keeps a file STATE_DIR/PID, so that a test can pick a holder to
 * pause.  History lines, one per event, on stdout (flushed at once):
 *   T acquire            invoked
 *   T acquired FENCE     the lock is ours (the fence drawn at the take)
 *   T failed CODE        not
 *   T add ELEMENT ok|refused   a write answered by the store
 *   T release            invoked
 *   T released CODE      it returned: 0 released, 5 lost (DIRLOCK_ELOST)...
 * T is in ms with microseconds.  Exit status 0; 2 on a usage error. */
#include "dirlock.h"
#include "dirlock_fence.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#define SET_MAX 100000

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms)
{
        struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

static void event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void event(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        printf("%.3f ", now_ms());
        vprintf(fmt, ap);
        printf("\n");
        fflush(stdout);
        va_end(ap);
}

/* The store: "fence F" then one element a line. */
struct set {
        unsigned long long fence;
        size_t n;
        long long *e;
};

static int store_lock(const char *file, int how)
{
        int fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0 || flock(fd, how) != 0) {
                perror(file);
                exit(2);
        }
        return fd;
}

static void store_read(int fd, struct set *s)
{
        lseek(fd, 0, SEEK_SET);
        FILE *f = fdopen(dup(fd), "r");
        s->fence = 0;
        s->n = 0;
        if (f == NULL)
                return;
        long long v;
        if (fscanf(f, "fence %llu", &s->fence) != 1)
                s->fence = 0;
        while (s->n < SET_MAX && fscanf(f, "%lld", &v) == 1)
                s->e[s->n++] = v;
        fclose(f);
}

static void store_write(int fd, const struct set *s)
{
        lseek(fd, 0, SEEK_SET);
        FILE *f = fdopen(dup(fd), "w");
        if (f == NULL || ftruncate(fd, 0) != 0) {
                perror("store");
                exit(2);
        }
        fprintf(f, "fence %llu\n", s->fence);
        for (size_t i = 0; i < s->n; i++)
                fprintf(f, "%lld\n", s->e[i]);
        if (fclose(f) != 0) {
                perror("store");
                exit(2);
        }
}

int main(int argc, char **argv)
{
        if (argc != 9) {
                fprintf(stderr, "usage: histworker SPACE NAME SECONDS HOLD_MS STALE mutex|set|fenced STORE "
                                "STATE_DIR\n");
                return 2;
        }
        const char *space = argv[1], *name = argv[2], *workload = argv[6], *store = argv[7];
        double end = now_ms() + atof(argv[3]) * 1e3, hold = atof(argv[4]);
        bool rmw = strcmp(workload, "mutex") != 0, fenced = strcmp(workload, "fenced") == 0;
        char state[4096], commits[4096];
        snprintf(state, sizeof state, "%s/%ld", argv[8], (long)getpid());
        snprintf(commits, sizeof commits, "%s.commits", store);
        struct set s = {0, 0, malloc(SET_MAX * sizeof(long long))};
        if (s.e == NULL)
                return 2;
        for (long i = 1; now_ms() < end; i++) {
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 5;
                o.stale_age = atof(argv[5]);
                dirlock *h;
                dirlock_error e;
                event("acquire");
                int rc = dirlock_acquire(space, name, &o, &h, &e);
                unsigned long long fence = 0;
                if (rc == DIRLOCK_OK && dirlock_fence(h, &fence, &e) != DIRLOCK_OK)
                        fence = 0; /* lost already: the history shows it at the release */
                if (rc != DIRLOCK_OK) {
                        event("failed %d", rc);
                        sleep_ms(20);
                        continue;
                }
                event("acquired %llu", fence);
                int sfd = open(state, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (sfd >= 0)
                        close(sfd);
                bool newer_seen = false; /* the store saw a higher fence than ours */
                if (rmw) {
                        int fd = store_lock(store, fenced ? LOCK_EX : LOCK_SH);
                        store_read(fd, &s);
                        if (fenced && fence > 0 && fence >= s.fence) {
                                s.fence = fence;
                                store_write(fd, &s);
                        } else if (fenced) {
                                newer_seen = true;
                        }
                        close(fd);
                }
                sleep_ms(hold); /* a pause here is the window the store must close */
                if (rmw) {
                        long long mine = (long long)getpid() * 1000000 + i;
                        int fd = store_lock(store, LOCK_EX);
                        struct set cur = {0, 0, NULL};
                        bool ok = true;
                        if (fenced) {
                                char head[64] = "";
                                ssize_t n = pread(fd, head, sizeof head - 1, 0);
                                head[n > 0 ? n : 0] = '\0';
                                if (sscanf(head, "fence %llu", &cur.fence) != 1)
                                        cur.fence = 0;
                                ok = !newer_seen && fence >= cur.fence && fence > 0;
                        }
                        if (ok && s.n < SET_MAX) {
                                s.e[s.n++] = mine;
                                s.fence = fenced ? fence : s.fence;
                                store_write(fd, &s);
                                if (fenced) {
                                        FILE *c = fopen(commits, "a");
                                        if (c != NULL) {
                                                fprintf(c, "%llu %lld\n", fence, mine);
                                                fclose(c);
                                        }
                                }
                        }
                        close(fd);
                        event("add %lld %s", mine, ok ? "ok" : "refused");
                }
                unlink(state);
                event("release");
                rc = dirlock_release(h, &e);
                event("released %d", rc);
        }
        free(s.e);
        return 0;
}
