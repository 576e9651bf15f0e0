/* redis_bench.c - the Redis lock space's benchmark (bench/redis-run):
 * uncontended acquire+release against a bare SET NX PX + DEL pair on the
 * same server; contended read-modify-write for 1..16 processes against
 * the serial limit; release -> next-acquire hand-off latency; and beside
 * each, the seed article's Redis lock (seed 002) as it describes it:
 * INCRBY counters and polling with random sleeps, and what a kill -9 of
 * its holder does.  Every figure is measured in the same run as its
 * baseline; bench/redis-run turns them into ratios.
 *
 *   redis_bench uncontended SPACE SECONDS
 *   redis_bench contended SPACE SECONDS CS_MS PROCS dirlock|nodetect|seed   (PROCS <= 64)
 *   redis_bench handoff SPACE WAITERS SECONDS dirlock|seed|list
 *   redis_bench kill SPACE dirlock|seed
 * Each prints one line of numbers.
 *
 * THE SEED'S LOCK, as seed 002 writes it (its writerlock, the exclusive
 * one): INCRBY lock 100000 -> r.  r >= 150000 (another writer holds it or
 * has reserved it): DECRBY 100000, and retry INCRBY after a random wait
 * until r < 150000.  Then r > 100000 (readers in): poll GET after random
 * waits until it is 100000.  Unlock: DECRBY 100000.  The random wait
 * starts at waitmin = 4 ms, is multiplied by rand()+rand()+rand() at each
 * step and goes back to waitmin once it passes waitmax = 200 ms.  Nothing
 * ever decrements the counter of a holder that died.
 *
 * THE ONE-TOKEN LIST (hand-off only): the least a blocking Redis lock can
 * do -- BLPOP the list's one element to take, RPUSH it back to release;
 * the server hands the element to the longest-waiting BLPOP.  No owner,
 * expiry or fence, and a crashed holder takes the token with it: the
 * floor of a hand-off through Redis on this machine, measured beside ours. */
#include "dirlock.h"
#include "redis_url.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdbool.h>
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

static void sleep_s(double s)
{
        struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

/* A plain hiredis connection to the server of SPACE, and its key prefix. */
static redisContext *connect_to(const char *space, char *prefix, size_t size)
{
        dl_redis_url u;
        char why[200];
        if (dl_redis_url_parse(space, strlen(space), &u, why, sizeof why) != 0) {
                fprintf(stderr, "redis_bench: %s: %s\n", space, why);
                exit(2);
        }
        snprintf(prefix, size, "{%s}", u.prefix);
        redisContext *c = u.unix_socket ? redisConnectUnix(u.path) : redisConnect(u.host, u.port);
        if (c == NULL || c->err) {
                fprintf(stderr, "redis_bench: cannot connect to %s\n", space);
                exit(2);
        }
        if (u.db != 0)
                freeReplyObject(redisCommand(c, "SELECT %d", u.db));
        return c;
}

static long long command_int(redisContext *c, const char *fmt, const char *key, long long arg)
{
        redisReply *r = redisCommand(c, fmt, key, arg);
        if (r == NULL) {
                fprintf(stderr, "redis_bench: %s\n", c->errstr);
                exit(2);
        }
        long long v = r->type == REDIS_REPLY_INTEGER  ? r->integer
                      : r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10)
                                                      : 0;
        freeReplyObject(r);
        return v;
}

/* ---- the seed's lock ------------------------------------------------------ */

struct seed_wait {
        double ms;
        unsigned rng;
};

static double unit(unsigned *rng)
{
        return (double)rand_r(rng) / ((double)RAND_MAX + 1);
}

static void seed_randomwait(struct seed_wait *w)
{
        if (w->ms >= 200)
                w->ms = 4;
        else
                w->ms *= unit(&w->rng) + unit(&w->rng) + unit(&w->rng);
        sleep_s(w->ms / 1e3);
}

/* The seed's writerlock; 0, or -1 when `timeout` passed (counter restored). */
static int seed_lock(redisContext *c, const char *key, double timeout)
{
        struct seed_wait w = {4, (unsigned)getpid() ^ (unsigned)(now_s() * 1e6)};
        double end = now_s() + timeout;
        long long r = command_int(c, "INCRBY %s %lld", key, 100000);
        while (r >= 150000) {
                command_int(c, "DECRBY %s %lld", key, 100000);
                if (now_s() > end)
                        return -1;
                seed_randomwait(&w);
                r = command_int(c, "INCRBY %s %lld", key, 100000);
        }
        w.ms = 4;
        while (r > 100000) {
                if (now_s() > end) {
                        command_int(c, "DECRBY %s %lld", key, 100000);
                        return -1;
                }
                seed_randomwait(&w);
                redisReply *g = redisCommand(c, "GET %s", key);
                r = g && g->type == REDIS_REPLY_STRING ? strtoll(g->str, NULL, 10) : 0;
                freeReplyObject(g);
        }
        return 0;
}

static void seed_unlock(redisContext *c, const char *key)
{
        command_int(c, "DECRBY %s %lld", key, 100000);
}

static int list_lock(redisContext *c, const char *key, double timeout)
{
        redisReply *r = redisCommand(c, "BLPOP %s %.3f", key, timeout);
        int rc = r && r->type == REDIS_REPLY_ARRAY ? 0 : -1;
        freeReplyObject(r);
        return rc;
}

static void list_unlock(redisContext *c, const char *key)
{
        command_int(c, "RPUSH %s %lld", key, 1);
}

/* ---- uncontended ------------------------------------------------------- */

static int cmd_uncontended(const char *space, double seconds)
{
        char prefix[80], key[128];
        redisContext *c = connect_to(space, prefix, sizeof prefix);
        snprintf(key, sizeof key, "%s:bare", prefix);
        double r[2] = {0, 0};
        /* Interleaved, so that machine noise hits both alike. */
        for (int round = 0; round < 6; round++) {
                long n = 0;
                double t0 = now_s(), t;
                do {
                        for (int i = 0; i < 64; i++) {
                                dirlock *h;
                                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                                o.timeout = 0;
                                dirlock_error e;
                                if (dirlock_acquire(space, "bench", &o, &h, &e) != DIRLOCK_OK) {
                                        fprintf(stderr, "redis_bench: %s\n", e.message);
                                        return 1;
                                }
                                dirlock_release(h, NULL);
                        }
                        n += 64;
                        t = now_s();
                } while (t - t0 < seconds / 6);
                r[0] += (double)n / (t - t0);
                n = 0;
                t0 = now_s();
                do {
                        for (int i = 0; i < 64; i++) {
                                redisReply *a = redisCommand(c, "SET %s x NX PX 10000", key);
                                redisReply *b = redisCommand(c, "DEL %s", key);
                                if (a == NULL || b == NULL || a->type != REDIS_REPLY_STATUS) {
                                        fprintf(stderr, "redis_bench: SET NX failed\n");
                                        return 1;
                                }
                                freeReplyObject(a);
                                freeReplyObject(b);
                        }
                        n += 64;
                        t = now_s();
                } while (t - t0 < seconds / 6);
                r[1] += (double)n / (t - t0);
        }
        printf("%.0f %.0f\n", r[0] / 6, r[1] / 6);
        return 0;
}

/* ---- contended read-modify-write ------------------------------------------ */

struct shared {
        volatile long ops, busy, counter;
        volatile long per_proc[64]; /* operations of each process: fairness */
};

static void contender(const char *space, const char *locking, double cs_s, struct shared *sh, double end,
                      int me)
{
        char prefix[80], key[128];
        redisContext *c = strcmp(locking, "seed") == 0 ? connect_to(space, prefix, sizeof prefix) : NULL;
        if (c != NULL)
                snprintf(key, sizeof key, "%s:seedlock", prefix);
        while (now_s() < end) {
                dirlock *h = NULL;
                if (c == NULL) {
                        dirlock_options o = DIRLOCK_OPTIONS_INIT;
                        o.timeout = 10;
                        if (strcmp(locking, "nodetect") == 0)
                                o.flags |= DIRLOCK_NO_DEADLOCK; /* what detection costs */
                        if (dirlock_acquire(space, "bench", &o, &h, NULL) != DIRLOCK_OK) {
                                __sync_fetch_and_add(&sh->busy, 1);
                                continue;
                        }
                } else if (seed_lock(c, key, 10) != 0) {
                        __sync_fetch_and_add(&sh->busy, 1);
                        continue;
                }
                long v = sh->counter; /* read, work, write: lost if two are inside */
                sleep_s(cs_s);
                sh->counter = v + 1;
                if (h != NULL)
                        dirlock_release(h, NULL);
                else
                        seed_unlock(c, key);
                __sync_fetch_and_add(&sh->ops, 1);
                if (me < 64)
                        sh->per_proc[me]++;
        }
        if (c != NULL)
                redisFree(c);
}

static int cmd_contended(const char *space, double seconds, double cs_ms, int procs, const char *locking)
{
        struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED)
                return 1;
        double start = now_s() + 0.1, end = start + seconds;
        for (int i = 0; i < procs; i++) {
                if (fork() == 0) {
                        while (now_s() < start)
                                sleep_s(0.001);
                        contender(space, locking, cs_ms / 1e3, sh, end, i);
                        _exit(0);
                }
        }
        while (wait(NULL) > 0)
                ;
        /* ops/s, busy failures, increments lost, fewest and most operations
         * of one process (how evenly the lock was shared) */
        long least = sh->per_proc[0], most = sh->per_proc[0];
        for (int i = 1; i < procs && i < 64; i++) {
                least = sh->per_proc[i] < least ? sh->per_proc[i] : least;
                most = sh->per_proc[i] > most ? sh->per_proc[i] : most;
        }
        printf("%.2f %ld %ld %ld %ld\n", (double)sh->ops / seconds, sh->busy, sh->ops - sh->counter, least,
               most);
        return 0;
}

/* ---- hand-off latency --------------------------------------------------------- */

/* WAITERS + 1 processes take the lock in turn: each holds it HOLD_S, notes
 * the time and its number just before it releases, then stays away for
 * 1-2 ms.  A hand-off is the time from a release call to the next holder's
 * acquire returning, counted when that holder is another process that was
 * already waiting when the release began: it asked at least WAITING_S
 * before, so that its request has reached the server and it is blocked
 * (an acquire that asks a few microseconds before the release measures
 * its own round trips, not the hand-off; the holder holds long enough for
 * most waiters to be blocked when it lets go). */
#define HOLD_S      0.001
#define WAITING_S   0.0003
#define HANDOFF_MAX 200000
struct handoff_shared {
        _Atomic double release_at;
        _Atomic int releaser;
        _Atomic long n;
        double lat[HANDOFF_MAX];
};

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static int cmd_handoff(const char *space, int waiters, double seconds, const char *locking)
{
        struct handoff_shared *sh =
            mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED || waiters < 1)
                return 1;
        sh->releaser = -1;
        bool seed = strcmp(locking, "seed") == 0, list = strcmp(locking, "list") == 0;
        if (list) {
                char prefix[80], key[128];
                redisContext *c = connect_to(space, prefix, sizeof prefix);
                snprintf(key, sizeof key, "%s:listhandoff", prefix);
                freeReplyObject(redisCommand(c, "DEL %s", key));
                list_unlock(c, key);
                redisFree(c);
        }
        double start = now_s() + 0.1, end = start + seconds;
        for (int me = 0; me <= waiters; me++) {
                if (fork() != 0)
                        continue;
                unsigned rng = (unsigned)getpid();
                char prefix[80], key[128];
                redisContext *c = seed || list ? connect_to(space, prefix, sizeof prefix) : NULL;
                snprintf(key, sizeof key, list ? "%s:listhandoff" : "%s:seedhandoff", prefix);
                while (now_s() < start)
                        sleep_s(0.001);
                while (now_s() < end) {
                        dirlock *h = NULL;
                        dirlock_options o = DIRLOCK_OPTIONS_INIT;
                        o.timeout = 10;
                        double asked = now_s();
                        if (seed   ? seed_lock(c, key, 10) != 0
                            : list ? list_lock(c, key, 10) != 0
                                   : dirlock_acquire(space, "handoff", &o, &h, NULL) != DIRLOCK_OK)
                                _exit(1);
                        double t = now_s();
                        if (sh->releaser >= 0 && sh->releaser != me && asked < sh->release_at - WAITING_S) {
                                long i = sh->n++;
                                if (i < HANDOFF_MAX)
                                        sh->lat[i] = t - sh->release_at;
                        }
                        sleep_s(HOLD_S);
                        sh->releaser = me;
                        sh->release_at = now_s();
                        if (seed)
                                seed_unlock(c, key);
                        else if (list)
                                list_unlock(c, key);
                        else
                                dirlock_release(h, NULL);
                        sleep_s(0.001 + (double)(rand_r(&rng) % 1000) / 1e6);
                }
                _exit(0);
        }
        while (wait(NULL) > 0)
                ;
        long n = sh->n < HANDOFF_MAX ? sh->n : HANDOFF_MAX;
        if (n == 0) {
                printf("0 0 0\n");
                return 0;
        }
        qsort(sh->lat, (size_t)n, sizeof sh->lat[0], cmp_double);
        printf("%.1f %.1f %ld\n", sh->lat[n / 2] * 1e6, sh->lat[(long)((double)n * 0.99)] * 1e6, n);
        return 0;
}

/* ---- a holder killed with SIGKILL ------------------------------------------------ */

/* A child takes the lock and is killed -9 while it holds it; then a taker
 * with a 5 s timeout tries.  Prints "<ms the taker waited> <got it 0/1>
 * <the seed's counter afterwards, or 0>". */
static int cmd_kill(const char *space, const char *locking)
{
        bool seed = strcmp(locking, "seed") == 0;
        char prefix[80], key[128];
        redisContext *c = connect_to(space, prefix, sizeof prefix);
        snprintf(key, sizeof key, "%s:seedkill", prefix);
        freeReplyObject(redisCommand(c, "DEL %s", key));
        int p[2];
        if (pipe(p) != 0)
                return 1;
        pid_t child = fork();
        if (child == 0) {
                dirlock *h;
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                int ok =
                    seed ? seed_lock(c, key, 5) == 0 : dirlock_acquire(space, "killed", &o, &h, NULL) == 0;
                if (!ok || write(p[1], "x", 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        close(p[1]);
        char x;
        if (read(p[0], &x, 1) != 1)
                return 1;
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        double t0 = now_s();
        int got;
        if (seed) {
                got = seed_lock(c, key, 5) == 0;
                if (got)
                        seed_unlock(c, key);
        } else {
                dirlock *h;
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 5;
                got = dirlock_acquire(space, "killed", &o, &h, NULL) == DIRLOCK_OK;
                if (got)
                        dirlock_release(h, NULL);
        }
        double waited = (now_s() - t0) * 1e3;
        long long counter = 0;
        if (seed) {
                redisReply *g = redisCommand(c, "GET %s", key);
                counter = g && g->type == REDIS_REPLY_STRING ? strtoll(g->str, NULL, 10) : 0;
                freeReplyObject(g);
        }
        printf("%.1f %d %lld\n", waited, got, counter);
        redisFree(c);
        return 0;
}

int main(int argc, char **argv)
{
        signal(SIGPIPE, SIG_IGN);
        if (argc >= 4 && strcmp(argv[1], "uncontended") == 0)
                return cmd_uncontended(argv[2], atof(argv[3]));
        if (argc >= 7 && strcmp(argv[1], "contended") == 0)
                return cmd_contended(argv[2], atof(argv[3]), atof(argv[4]), atoi(argv[5]), argv[6]);
        if (argc >= 6 && strcmp(argv[1], "handoff") == 0)
                return cmd_handoff(argv[2], atoi(argv[3]), atof(argv[4]), argv[5]);
        if (argc >= 4 && strcmp(argv[1], "kill") == 0)
                return cmd_kill(argv[2], argv[3]);
        fprintf(stderr, "usage: redis_bench uncontended|contended|handoff|kill SPACE ...\n");
        return 2;
}
