/* etcd_bench.c - the etcd lock space's benchmark (bench/etcd-run):
 * uncontended acquire+release against a bare put + delete pair on the
 * same cluster (through the same HTTP client: libcurl, the library's own
 * connections); contended read-modify-write of a counter for 1..16
 * processes against the serial limit; and release -> next-acquire
 * hand-off latency.  Every figure is measured in the same run as its
 * baseline; bench/etcd-run turns them into ratios, and runs `etcdctl
 * lock` (etcd's own client and recipe) beside the dirlock command.
 *
 *   etcd_bench uncontended SPACE SECONDS
 *   etcd_bench contended SPACE SECONDS CS_MS PROCS     (PROCS <= 64)
 *   etcd_bench handoff SPACE WAITERS SECONDS
 * Each prints one line of numbers.
 *
 * THE BARE PAIR: a transaction that puts a key only if it does not exist
 * (the least a lock can be: mutual exclusion, no owner, no lease, no
 * queue, no fence), then a delete of it -- two writes the members sync,
 * as dirlock's acquire and release are three (lease, take, revoke). */
#include "dirlock.h"
#include "etcd.h"

#include <errno.h>
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

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

/* ---- uncontended -------------------------------------------------------------- */

static int bare_pair(const dl_etcd_url *u, const char *key)
{
        dl_time never = dl_deadline(-1), io = dl_etcd_io_deadline(&never);
        dl_etcd_txn t;
        dl_etcd_txn_init(&t);
        dl_etcd_cmp_rev(&t, key, NULL, "CREATE", "EQUAL", 0);
        dl_etcd_op_put(&t, true, key, "1", 0);
        dl_etcd_reply r;
        bool ok;
        long long rev;
        int rc = dl_etcd_txn_run(u, &t, &io, &ok, &rev, &r, NULL);
        dl_etcd_txn_free(&t);
        dl_etcd_reply_free(&r);
        if (rc != DIRLOCK_OK || !ok)
                return -1;
        json_object *req = json_object_new_object();
        json_object_object_add(req, "key", dl_etcd_b64(key, strlen(key)));
        rc = dl_etcd_call(u, "/v3/kv/deleterange", req, &io, NULL, &r, NULL);
        json_object_put(req);
        dl_etcd_reply_free(&r);
        return rc == DIRLOCK_OK ? 0 : -1;
}

static int cmd_uncontended(const char *space, double seconds)
{
        dl_etcd_url u;
        char why[200], key[200];
        if (dl_etcd_url_parse(space, strlen(space), &u, why, sizeof why) != 0) {
                fprintf(stderr, "etcd_bench: %s\n", why);
                return 1;
        }
        snprintf(key, sizeof key, "%s/bare", u.prefix);
        long n = 0, b = 0;
        double end = now_s() + seconds;
        while (now_s() < end) {
                dirlock *h;
                dirlock_error e;
                if (dirlock_acquire(space, "uncontended", NULL, &h, &e) != DIRLOCK_OK ||
                    dirlock_release(h, &e) != DIRLOCK_OK) {
                        fprintf(stderr, "etcd_bench: %s\n", e.message);
                        return 1;
                }
                n++;
        }
        end = now_s() + seconds;
        while (now_s() < end) {
                if (bare_pair(&u, key) != 0) {
                        fprintf(stderr, "etcd_bench: the bare put + delete failed\n");
                        return 1;
                }
                b++;
        }
        printf("%.1f %.1f\n", (double)n / seconds, (double)b / seconds);
        return 0;
}

/* ---- contended read-modify-write ---------------------------------------------- */

struct shared {
        _Atomic long ops, busy;
        long counter; /* read and written only under the lock */
        long per_proc[64];
};

static int cmd_contended(const char *space, double seconds, double cs_ms, int procs)
{
        struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED || procs < 1 || procs > 64)
                return 1;
        double start = now_s() + 0.2, end = start + seconds;
        for (int i = 0; i < procs; i++) {
                if (fork() != 0)
                        continue;
                while (now_s() < start)
                        sleep_s(0.001);
                while (now_s() < end) {
                        dirlock_options o = DIRLOCK_OPTIONS_INIT;
                        o.timeout = 10;
                        dirlock *h;
                        if (dirlock_acquire(space, "counter", &o, &h, NULL) != DIRLOCK_OK) {
                                sh->busy++;
                                continue;
                        }
                        long v = sh->counter;
                        sleep_s(cs_ms / 1e3);
                        sh->counter = v + 1;
                        dirlock_release(h, NULL);
                        sh->ops++;
                        sh->per_proc[i]++;
                }
                _exit(0);
        }
        while (wait(NULL) > 0)
                ;
        long least = sh->per_proc[0], most = sh->per_proc[0];
        for (int i = 1; i < procs; i++) {
                least = sh->per_proc[i] < least ? sh->per_proc[i] : least;
                most = sh->per_proc[i] > most ? sh->per_proc[i] : most;
        }
        /* ops/s, busy failures, increments lost, fewest and most of one process */
        printf("%.2f %ld %ld %ld %ld\n", (double)sh->ops / seconds, sh->busy, sh->ops - sh->counter, least,
               most);
        return 0;
}

/* ---- hand-off latency --------------------------------------------------------- */

/* WAITERS + 1 processes take the lock in turn: each holds it HOLD_S, notes
 * the time and its number just before it releases, then stays away for a
 * few ms.  A hand-off is the time from a release call to the next
 * holder's acquire returning, counted when that holder is another process
 * that asked at least WAITING_S before the release began (it was queued
 * and watching by then, not racing the release with its own requests). */
#define HOLD_S      0.010
#define WAITING_S   0.010
#define HANDOFF_MAX 100000
struct handoff_shared {
        _Atomic double release_at;
        _Atomic int releaser;
        _Atomic long n;
        double lat[HANDOFF_MAX];
};

static int cmd_handoff(const char *space, int waiters, double seconds)
{
        struct handoff_shared *sh =
            mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED || waiters < 1)
                return 1;
        sh->releaser = -1;
        double start = now_s() + 0.2, end = start + seconds;
        for (int me = 0; me <= waiters; me++) {
                if (fork() != 0)
                        continue;
                unsigned rng = (unsigned)getpid();
                while (now_s() < start)
                        sleep_s(0.001);
                while (now_s() < end) {
                        dirlock *h = NULL;
                        dirlock_options o = DIRLOCK_OPTIONS_INIT;
                        o.timeout = 10;
                        double asked = now_s();
                        if (dirlock_acquire(space, "handoff", &o, &h, NULL) != DIRLOCK_OK)
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
                        dirlock_release(h, NULL);
                        sleep_s(0.002 + (double)(rand_r(&rng) % 2000) / 1e6);
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
        printf("%.2f %.2f %ld\n", sh->lat[n / 2] * 1e3, sh->lat[(long)((double)n * 0.99)] * 1e3, n);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc >= 4 && strcmp(argv[1], "uncontended") == 0)
                return cmd_uncontended(argv[2], atof(argv[3]));
        if (argc >= 6 && strcmp(argv[1], "contended") == 0)
                return cmd_contended(argv[2], atof(argv[3]), atof(argv[4]), atoi(argv[5]));
        if (argc >= 5 && strcmp(argv[1], "handoff") == 0)
                return cmd_handoff(argv[2], atoi(argv[3]), atof(argv[4]));
        fprintf(stderr, "usage: etcd_bench uncontended SPACE SECONDS | contended SPACE SECONDS CS_MS PROCS | "
                        "handoff SPACE WAITERS SECONDS\n");
        return 2;
}
