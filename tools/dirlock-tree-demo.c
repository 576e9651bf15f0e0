/* dirlock-tree-demo.c - seed 002's use of range locks, shown: a tree kept
 * as nested intervals in one file, edited by many processes at once.
 *
 *   dirlock-tree-demo [-d LOCKDIR] [-s SPACE] [-p PROCS] [-n EDITS] [-l LEVELS]
 *                     [-w MS] [MODE...]  MODE: none, range, whole (default all)
 *
 * The tree's file is LOCKDIR/tree.data; the locks are in LOCKDIR too, or
 * in lock space SPACE (redis://HOST:PORT, redis+unix:///PATH, ...).
 *
 * The tree is a complete binary tree of LEVELS levels (default 5: 31
 * nodes); node k's interval is nested in its parent's (the root is
 * [0, 1), each child half of its parent).  The file holds one record per
 * node in pre-order, so a subtree is one contiguous run of records: the
 * interval [lo, hi) of its root covers exactly its records.
 *
 * An edit picks a random node and adds 1 to the counter of every node of
 * its subtree (a subtree-wide change: renumbering, moving, recounting):
 * read the subtree's records, wait MS milliseconds (the work; default 2),
 * write them back.  Each mode guards the edit differently:
 *   none   no lock: edits of overlapping subtrees (a node and one of its
 *          ancestors) read the same records and the later write loses the
 *          earlier edit;
 *   range  dirlock_acquire_range() on the edited node's interval: edits of
 *          disjoint subtrees run at once, overlapping ones one after the
 *          other -- nothing lost;
 *   whole  one whole lock for the file: nothing lost, but every edit waits
 *          for every other.
 * Afterwards every counter must equal the number of edits that covered its
 * node (each process counts its own); the table shows edits, expected and
 * stored increments, lost ones and edits per second. */
#include "dirlock.h"
#include "dirlock_range.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct node {
        double lo, hi;
        long count;
        long size; /* nodes in its subtree */
};

static int levels = 5, procs = 8, edits = 40;
static long work_ms = 2;
static const char *lockdir = "locks";
static const char *space; /* -s: the lock space, else lockdir */

static double now_s(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Pre-order: node i, then its left subtree, then its right subtree. */
static int build(struct node *t, int i, int level, double lo, double hi)
{
        t[i].lo = lo;
        t[i].hi = hi;
        t[i].count = 0;
        int next = i + 1;
        if (level + 1 < levels) {
                double mid = (lo + hi) / 2;
                next = build(t, next, level + 1, lo, mid);
                next = build(t, next, level + 1, mid, hi);
        }
        t[i].size = next - i;
        return next;
}

/* One process's edits: increments it made per node in *mine. */
static int editor(const char *file, const char *mode, const struct node *shape, int nodes, long *mine,
                  unsigned seed)
{
        int fd = open(file, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return 1;
        struct node buf[1 << 12];
        for (int e = 0; e < edits; e++) {
                int k = (int)(rand_r(&seed) % (unsigned)nodes);
                const struct node *root = &shape[k];
                dirlock *h = NULL;
                dirlock_error err;
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 60;
                int rc = DIRLOCK_OK;
                if (strcmp(mode, "range") == 0)
                        rc = dirlock_acquire_range(space, "tree", root->lo, root->hi, &o, &h, &err);
                else if (strcmp(mode, "whole") == 0)
                        rc = dirlock_acquire(space, "tree", &o, &h, &err);
                if (rc != DIRLOCK_OK) {
                        fprintf(stderr, "dirlock-tree-demo: %s\n", err.message);
                        return 1;
                }
                size_t bytes = (size_t)root->size * sizeof(struct node);
                off_t off = (off_t)k * (off_t)sizeof(struct node);
                if (pread(fd, buf, bytes, off) != (ssize_t)bytes)
                        return 1;
                struct timespec ts = {work_ms / 1000, (work_ms % 1000) * 1000000L};
                while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                        ;
                for (long j = 0; j < root->size; j++) {
                        buf[j].count++;
                        mine[k + j]++;
                }
                if (pwrite(fd, buf, bytes, off) != (ssize_t)bytes)
                        return 1;
                if (h != NULL && dirlock_release(h, &err) != DIRLOCK_OK) {
                        fprintf(stderr, "dirlock-tree-demo: %s\n", err.message);
                        return 1;
                }
        }
        close(fd);
        return 0;
}

static int run(const char *mode, const char *file, struct node *shape, int nodes)
{
        int fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, shape, (size_t)nodes * sizeof *shape) != (ssize_t)(nodes * sizeof *shape)) {
                perror(file);
                return 1;
        }
        close(fd);
        long *tally = mmap(NULL, sizeof(long) * (size_t)nodes * (size_t)procs, PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (tally == MAP_FAILED)
                return 1;
        memset(tally, 0, sizeof(long) * (size_t)nodes * (size_t)procs);
        double t0 = now_s();
        for (int p = 0; p < procs; p++)
                if (fork() == 0)
                        _exit(editor(file, mode, shape, nodes, tally + (size_t)p * (size_t)nodes,
                                     (unsigned)(getpid() * 2654435761u)));
        int status, failed = 0;
        while (wait(&status) > 0)
                failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        double secs = now_s() - t0;
        struct node stored[1 << 12];
        fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read(fd, stored, (size_t)nodes * sizeof *stored) != (ssize_t)(nodes * sizeof *stored))
                return 1;
        close(fd);
        long expected = 0, got = 0, wrong_nodes = 0;
        for (int k = 0; k < nodes; k++) {
                long e = 0;
                for (int p = 0; p < procs; p++)
                        e += tally[(size_t)p * (size_t)nodes + (size_t)k];
                expected += e;
                got += stored[k].count;
                wrong_nodes += stored[k].count != e;
        }
        printf("| %-5s | %5d | %8ld | %6ld | **%5ld** | %11ld | %7.1f |%s\n", mode, procs * edits, expected,
               got, expected - got, wrong_nodes, procs * edits / secs, failed ? " (a process failed)" : "");
        munmap(tally, sizeof(long) * (size_t)nodes * (size_t)procs);
        return failed || (strcmp(mode, "none") != 0 && expected != got) ? 1 : 0;
}

int main(int argc, char **argv)
{
        int c;
        while ((c = getopt(argc, argv, "d:s:p:n:l:w:h")) != -1) {
                switch (c) {
                case 'd':
                        lockdir = optarg;
                        break;
                case 's':
                        space = optarg;
                        break;
                case 'p':
                        procs = atoi(optarg);
                        break;
                case 'n':
                        edits = atoi(optarg);
                        break;
                case 'l':
                        levels = atoi(optarg);
                        break;
                case 'w':
                        work_ms = atol(optarg);
                        break;
                default:
                        fprintf(stderr,
                                "usage: dirlock-tree-demo [-d LOCKDIR] [-s SPACE] [-p PROCS] [-n EDITS] "
                                "[-l LEVELS] [-w MS] [none|range|whole...]\n");
                        return c == 'h' ? 0 : 2;
                }
        }
        if (procs < 1 || procs > 64 || edits < 1 || levels < 1 || levels > 11 || work_ms < 0) {
                fprintf(stderr, "dirlock-tree-demo: out-of-range option\n");
                return 2;
        }
        if (space == NULL)
                space = lockdir;
        int nodes = (1 << levels) - 1;
        struct node shape[1 << 12];
        build(shape, 0, 0, 0.0, 1.0);
        char file[4096];
        snprintf(file, sizeof file, "%s/tree.data", lockdir);
        dirlock_error e;
        if (dirlock_cleanup(space, &e) != DIRLOCK_OK && e.code != DIRLOCK_EIO) {
                fprintf(stderr, "dirlock-tree-demo: %s\n", e.message);
                return 2;
        }
        char mk[4200];
        snprintf(mk, sizeof mk, "mkdir -p '%s'", lockdir);
        if (system(mk) != 0)
                return 2;
        printf("%d processes x %d edits of random subtrees of a %d-node tree (nested intervals), %ld ms "
               "each\n\n",
               procs, edits, nodes, work_ms);
        if (space != lockdir)
                printf("locks in %s\n\n", strchr(space, '@') ? "a lock space given with a password" : space);
        printf("| mode  | edits | expected | stored |  **lost** | wrong nodes | edits/s |\n");
        printf("|-------|------:|---------:|-------:|----------:|------------:|--------:|\n");
        static const char *const all[] = {"none", "range", "whole"};
        int rc = 0, n = argc - optind;
        for (int i = 0; i < (n ? n : 3); i++) {
                const char *mode = n ? argv[optind + i] : all[i];
                if (strcmp(mode, "none") != 0 && strcmp(mode, "range") != 0 && strcmp(mode, "whole") != 0) {
                        fprintf(stderr, "dirlock-tree-demo: unknown mode '%s'\n", mode);
                        return 2;
                }
                rc |= run(mode, file, shape, nodes);
        }
        return rc;
}
