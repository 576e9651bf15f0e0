/* histcheck.c - the checker of the Jepsen-style tests (tests/etcd-jepsen.t):
 * reads the histories of tests/progs/histworker (one file per worker) and
 * checks them against a mutex, and a set store's final content against
 * the writes it acknowledged.
 *
 *   histcheck [--store FILE] [--window T1 T2] HISTORY...
 *   histcheck --now     (the histories' clock, CLOCK_MONOTONIC in ms)
 *
 * THE MODEL.  For one mutex it is small: every acquisition a worker was
 * told it got ("acquired") is an interval of belief, from that answer to
 * the moment it let go -- it invoked the release ("release"): it does
 * nothing under the lock after that, and the next holder may be told
 * before the releaser hears its release was done.  A paused holder's
 * interval lasts through its pause: it still believes.  A correct lock
 * never lets two such intervals overlap.  (Real time is one clock here:
 * all the workers run on one kernel, in namespaces.)  Printed, one line:
 *   holds N overlaps K max_overlap_ms X stale_ms S
 * K pairs of intervals overlap, the longest by X ms; S is the longest
 * time a holder still believed it held the lock after another had been
 * told it had it -- the longest time two holders both believed they held
 * it (a holder paused past its lease overlaps each of its successors
 * briefly, but believes on through all of them).
 * With --window: the longest stretch of [T1, T2] in which nobody
 * believed it held the lock, "gap_ms G" (unavailability after a fault),
 * and how many acquisitions began in it, "holds_in H" (work went on).
 * With --store: the elements the workers were told were added ("add E
 * ok") that are not in FILE, and whether the fences in FILE.commits (in
 * commit order) strictly increase: "acked A lost L fences F increasing
 * yes|no".
 * Exit status: 0 when no interval overlaps and nothing acknowledged is
 * lost and the fences increase; 1 otherwise; 2 on a usage error. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hold {
        double from, to;
};

static struct hold *holds;
static size_t nholds, capholds;
static long long *acked;
static size_t nacked, capacked;

static void add_hold(double from, double to)
{
        if (nholds == capholds) {
                capholds = capholds ? 2 * capholds : 256;
                holds = realloc(holds, capholds * sizeof *holds);
                if (holds == NULL)
                        exit(2);
        }
        holds[nholds++] = (struct hold){from, to};
}

static void add_acked(long long e)
{
        if (nacked == capacked) {
                capacked = capacked ? 2 * capacked : 256;
                acked = realloc(acked, capacked * sizeof *acked);
                if (acked == NULL)
                        exit(2);
        }
        acked[nacked++] = e;
}

/* One worker's history: its intervals and acknowledged elements.  An
 * acquisition never answered by a release (the worker killed) lasts to
 * the end of its history. */
static void read_history(const char *path)
{
        FILE *f = fopen(path, "r");
        if (f == NULL) {
                perror(path);
                exit(2);
        }
        char line[256], what[32];
        double t, last = 0, held_from = -1;
        while (fgets(line, sizeof line, f) != NULL) {
                if (sscanf(line, "%lf %31s", &t, what) != 2)
                        continue;
                last = t;
                if (strcmp(what, "acquired") == 0) {
                        held_from = t;
                } else if (strcmp(what, "release") == 0 && held_from >= 0) {
                        add_hold(held_from, t);
                        held_from = -1;
                } else if (strcmp(what, "add") == 0) {
                        long long e;
                        char ok[16];
                        if (sscanf(line, "%*f add %lld %15s", &e, ok) == 2 && strcmp(ok, "ok") == 0)
                                add_acked(e);
                }
        }
        if (held_from >= 0)
                add_hold(held_from, last);
        fclose(f);
}

static int by_from(const void *a, const void *b)
{
        double x = ((const struct hold *)a)->from, y = ((const struct hold *)b)->from;
        return x < y ? -1 : x > y;
}

static int by_value(const void *a, const void *b)
{
        long long x = *(const long long *)a, y = *(const long long *)b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
        const char *store = NULL;
        double w1 = -1, w2 = -1;
        int i = 1;
        for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
                if (strcmp(argv[i], "--now") == 0) {
                        struct timespec ts;
                        clock_gettime(CLOCK_MONOTONIC, &ts);
                        printf("%.3f\n", (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6);
                        return 0;
                }
                if (strcmp(argv[i], "--store") == 0 && i + 1 < argc) {
                        store = argv[++i];
                } else if (strcmp(argv[i], "--window") == 0 && i + 2 < argc) {
                        w1 = atof(argv[++i]);
                        w2 = atof(argv[++i]);
                } else {
                        fprintf(stderr, "usage: histcheck [--store FILE] [--window T1 T2] HISTORY...\n");
                        return 2;
                }
        }
        for (; i < argc; i++)
                read_history(argv[i]);
        if (nholds > 1)
                qsort(holds, nholds, sizeof *holds, by_from);
        /* Every pair that overlaps: sorted by start, an interval meets the
         * later ones that start before it ends. */
        long overlaps = 0;
        double worst = 0, stale = 0;
        for (size_t a = 0; a < nholds; a++)
                for (size_t b = a + 1; b < nholds && holds[b].from < holds[a].to; b++) {
                        double end = holds[a].to < holds[b].to ? holds[a].to : holds[b].to;
                        overlaps++;
                        if (end - holds[b].from > worst)
                                worst = end - holds[b].from;
                        if (holds[a].to - holds[b].from > stale)
                                stale = holds[a].to - holds[b].from;
                }
        printf("holds %zu overlaps %ld max_overlap_ms %.1f stale_ms %.1f", nholds, overlaps, worst, stale);
        if (w1 >= 0) {
                /* Walk the window, jumping over every interval that covers
                 * the point reached. */
                double at = w1, gap = 0;
                size_t held_in = 0;
                for (size_t k = 0; k < nholds; k++)
                        held_in += holds[k].from >= w1 && holds[k].from <= w2;
                for (size_t k = 0; k < nholds && at < w2; k++) {
                        if (holds[k].to <= at)
                                continue;
                        double start = holds[k].from > w2 ? w2 : holds[k].from;
                        if (start > at && start - at > gap)
                                gap = start - at;
                        if (holds[k].to > at)
                                at = holds[k].to;
                }
                if (at < w2 && w2 - at > gap)
                        gap = w2 - at;
                printf(" gap_ms %.1f holds_in %zu", gap, held_in);
        }
        bool bad = overlaps > 0;
        if (store != NULL) {
                FILE *f = fopen(store, "r");
                size_t n = 0, cap = 1024;
                long long *have = malloc(cap * sizeof *have), v;
                unsigned long long fence;
                if (f != NULL && fscanf(f, "fence %llu", &fence) == 1)
                        while (fscanf(f, "%lld", &v) == 1) {
                                if (n == cap && (have = realloc(have, (cap *= 2) * sizeof *have)) == NULL)
                                        return 2;
                                have[n++] = v;
                        }
                if (f != NULL)
                        fclose(f);
                qsort(have, n, sizeof *have, by_value);
                long lost = 0;
                for (size_t k = 0; k < nacked; k++)
                        if (bsearch(&acked[k], have, n, sizeof *have, by_value) == NULL)
                                lost++;
                char commits[4096];
                snprintf(commits, sizeof commits, "%s.commits", store);
                FILE *c = fopen(commits, "r");
                unsigned long long prev = 0, fc;
                long nf = 0;
                bool increasing = true;
                while (c != NULL && fscanf(c, "%llu %lld", &fc, &v) == 2) {
                        if (nf++ > 0 && fc <= prev)
                                increasing = false;
                        prev = fc;
                }
                if (c != NULL)
                        fclose(c);
                printf(" acked %zu lost %ld fences %ld increasing %s", nacked, lost, nf,
                       increasing ? "yes" : "no");
                bad = bad || lost > 0 || !increasing;
                free(have);
        }
        printf("\n");
        free(holds);
        free(acked);
        return bad ? 1 : 0;
}
