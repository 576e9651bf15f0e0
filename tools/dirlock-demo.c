/* dirlock-demo.c - replays the reader-writer scenarios (torn reads, read
 * attack, write attack) with each policy of the dirlock reader-writer lock,
 * with raw flock(2) as the kernel's answer and with no lock at all, and
 * prints what each waiter waited and how many reads were torn.
 *
 * Usage: dirlock-demo [-d SPACE] [-s SECONDS] [--trace FILE]   the whole table
 *        dirlock-demo [-d SPACE] [-s SECONDS] [--trace FILE] SCENARIO LOCK
 *   SCENARIO: torn | read-attack | write-attack
 *   LOCK:     fair | writer | reader | simple | flock | none
 * One scenario prints one line of key=value pairs (read by tests/rw-*.t).
 * SPACE is any lock space (a directory, redis://..., redis+unix://...);
 * the shared record and the flock(2) files live in SPACE when it is a
 * directory, else in a temporary directory.
 *
 * --trace FILE writes, as JSON, every lock request of the read and write
 * attacks: which process asked for which lock, when it got it and when it
 * let go, each time read by that process itself from CLOCK_MONOTONIC (ms
 * since the experiment's start).  Torn-read runs are not traced (thousands
 * of short holds).  The format is in docs/rw-trace.md; htdocs/rw-timeline.html
 * draws it.  The file is written beside FILE and renamed over it at the end. */
#include "dirlock.h"
#include "dirlock_flock.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
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

#define MAX_SAMPLES 20000
#define MAX_SPANS   4096 /* lock requests traced per experiment */
#define TRACE_PROCS 3    /* two attackers and a victim */
#define LINES       4
#define LINE_LEN    32

enum { LK_FLOCK = 10, LK_NONE = 11 };

typedef struct samples {
        unsigned n;
        double ms[MAX_SAMPLES];
} samples;

/* One lock request of a traced process, in ms since the experiment's
 * start: asked for it, got it (or gave up: got_lock 0), let it go. */
typedef struct span {
        int proc;
        int got_lock;
        double asked, got, released;
} span;

typedef struct shared {
        samples rwait, wwait;
        unsigned long reads, torn, writes, failures;
        unsigned nspans; /* may exceed MAX_SPANS: the rest were dropped */
        span spans[MAX_SPANS];
} shared;

typedef struct demo {
        const char *lockdir; /* the lock space */
        const char *workdir; /* a directory: the record, the flock files */
        const char *data;
        int lock; /* dirlock_policy, LK_FLOCK or LK_NONE */
        double seconds;
        double t0; /* CLOCK_MONOTONIC seconds at start */
        int proc;  /* in a traced child: its lane (0, 1 attackers, 2 victim) */
        shared *sh;
        FILE *trace;     /* --trace: the JSON being written, or NULL */
        int traced_runs; /* experiments written so far */
} demo;

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

static void sleep_until(const demo *d, double at_s)
{
        double left = d->t0 + at_s - now_s();
        if (left > 0)
                sleep_ms(left * 1000);
}

static void add_sample(samples *s, double ms)
{
        unsigned i = __atomic_fetch_add(&s->n, 1, __ATOMIC_RELAXED);
        if (i < MAX_SAMPLES)
                s->ms[i] = ms;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static void stats(samples *s, double *p50, double *max)
{
        unsigned n = s->n < MAX_SAMPLES ? s->n : MAX_SAMPLES;
        *p50 = *max = 0;
        if (n == 0)
                return;
        qsort(s->ms, n, sizeof s->ms[0], cmp_double);
        *p50 = s->ms[n / 2];
        *max = s->ms[n - 1];
}

static double since_start_ms(const demo *d)
{
        return (now_s() - d->t0) * 1000;
}

/* Record one lock request of this process (shared memory, any process). */
static void trace_span(demo *d, int got_lock, double asked, double got, double released)
{
        unsigned i = __atomic_fetch_add(&d->sh->nspans, 1, __ATOMIC_RELAXED);
        if (i < MAX_SPANS)
                d->sh->spans[i] = (span){d->proc, got_lock, asked, got, released};
}

/* Take the lock as a reader or writer; returns a handle (NULL for none) or
 * exits on error.  *waited_ms gets the wait. */
static dirlock *lock_take(const demo *d, int shared_mode, double timeout, double *waited_ms, int *ok)
{
        double start = now_s();
        dirlock *h = NULL;
        dirlock_error err;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = timeout;
        o.stale_age = 30;
        o.mode = shared_mode ? DIRLOCK_SHARED : DIRLOCK_EXCLUSIVE;
        int rc = DIRLOCK_OK;
        *ok = 1;
        if (d->lock == LK_FLOCK) {
                rc = dirlock_flock_acquire(d->workdir, "demo", &o, &h, &err);
        } else if (d->lock != LK_NONE) {
                o.policy = d->lock;
                rc = dirlock_acquire(d->lockdir, "demo", &o, &h, &err);
        }
        *waited_ms = (now_s() - start) * 1000;
        if (rc != DIRLOCK_OK) {
                *ok = 0;
                if (rc != DIRLOCK_ETIMEDOUT && rc != DIRLOCK_EBUSY) {
                        fprintf(stderr, "dirlock-demo: %s\n", err.message);
                        exit(2);
                }
        }
        return h;
}

static void lock_drop(dirlock *h)
{
        dirlock_error err;
        if (h != NULL && dirlock_release(h, &err) != DIRLOCK_OK) {
                fprintf(stderr, "dirlock-demo: release: %s\n", err.message);
                exit(2);
        }
}

/* ---- torn reads ----------------------------------------------------------- */

static void write_record(int fd, unsigned long seq, bool slow)
{
        char line[LINE_LEN + 16];
        for (int i = 0; i < LINES; i++) {
                snprintf(line, sizeof line, "%020lu line %d/%d\n", seq, i + 1, LINES);
                memset(line + strlen(line), ' ', LINE_LEN - strlen(line));
                line[LINE_LEN - 1] = '\n';
                if (pwrite(fd, line, LINE_LEN, (off_t)i * LINE_LEN) != LINE_LEN)
                        exit(3);
                if (slow)
                        sleep_ms(2); /* the record is half old, half new now */
        }
}

/* Checksum: every line carries the same sequence number. */
static bool record_whole(int fd)
{
        char buf[LINES * LINE_LEN];
        if (pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf)
                return false;
        for (int i = 1; i < LINES; i++)
                if (memcmp(buf, buf + i * LINE_LEN, 20) != 0)
                        return false;
        return true;
}

static void torn_writer(demo *d)
{
        int fd = open(d->data, O_RDWR | O_CLOEXEC);
        unsigned long seq = 1;
        while (now_s() < d->t0 + d->seconds) {
                double w;
                int ok;
                dirlock *h = lock_take(d, 0, 5, &w, &ok);
                if (ok) {
                        add_sample(&d->sh->wwait, w);
                        write_record(fd, ++seq, true);
                        __atomic_fetch_add(&d->sh->writes, 1, __ATOMIC_RELAXED);
                } else {
                        __atomic_fetch_add(&d->sh->failures, 1, __ATOMIC_RELAXED);
                }
                lock_drop(h);
                sleep_ms(5);
        }
        close(fd);
}

static void torn_reader(demo *d)
{
        int fd = open(d->data, O_RDONLY | O_CLOEXEC);
        while (now_s() < d->t0 + d->seconds) {
                double w;
                int ok;
                dirlock *h = lock_take(d, 1, 5, &w, &ok);
                if (ok) {
                        add_sample(&d->sh->rwait, w);
                        if (!record_whole(fd))
                                __atomic_fetch_add(&d->sh->torn, 1, __ATOMIC_RELAXED);
                        __atomic_fetch_add(&d->sh->reads, 1, __ATOMIC_RELAXED);
                        sleep_ms(1); /* a short read */
                } else {
                        __atomic_fetch_add(&d->sh->failures, 1, __ATOMIC_RELAXED);
                }
                lock_drop(h);
                sleep_ms(1);
        }
        close(fd);
}

/* ---- attacks -------------------------------------------------------------- */

/* Two readers (or writers) take turns: each holds `hold_ms`, the second
 * starts `offset_ms` later, and each asks again at once (+ gap). */
static void attacker(demo *d, int shared_mode, double start_s, double hold_ms, double gap_ms)
{
        sleep_until(d, start_s);
        while (now_s() < d->t0 + d->seconds) {
                double w;
                int ok;
                double asked = since_start_ms(d);
                dirlock *h = lock_take(d, shared_mode, d->seconds + 5, &w, &ok);
                double got = since_start_ms(d);
                sleep_ms(hold_ms);
                lock_drop(h);
                trace_span(d, ok, asked, got, ok ? since_start_ms(d) : got);
                if (gap_ms > 0)
                        sleep_ms(gap_ms);
        }
}

/* The victim arrives at 1 s, waits (until the attack ends at the latest),
 * holds briefly and records its wait. */
static void victim(demo *d, int shared_mode)
{
        sleep_until(d, 1.0);
        double w;
        int ok;
        double asked = since_start_ms(d);
        dirlock *h = lock_take(d, shared_mode, d->seconds + 5, &w, &ok);
        double got = since_start_ms(d);
        add_sample(shared_mode ? &d->sh->rwait : &d->sh->wwait, w);
        sleep_ms(10);
        lock_drop(h);
        trace_span(d, ok, asked, got, ok ? since_start_ms(d) : got);
}

/* ---- running a scenario ------------------------------------------------------ */

enum { SC_TORN, SC_READ_ATTACK, SC_WRITE_ATTACK };

static pid_t spawn(demo *d, int role, int k)
{
        pid_t pid = fork();
        if (pid < 0) {
                perror("dirlock-demo: fork");
                exit(2);
        }
        if (pid > 0)
                return pid;
        d->proc = role == 4 || role == 5 ? 2 : k;
        switch (role) {
        case 0:
                torn_writer(d);
                break;
        case 1:
                torn_reader(d);
                break;
        case 2:
                attacker(d, 1, k * 0.1, 200, 0);
                break;
        case 3:
                attacker(d, 0, k * 0.05, 100, 1);
                break;
        case 4:
                victim(d, 0);
                break;
        case 5:
                victim(d, 1);
                break;
        }
        _exit(0);
}

/* ---- the trace (--trace FILE) ----------------------------------------------- */

static const char *lock_name(int lock);

static int trace_open(demo *d, const char *path, char *tmp, size_t tmp_size)
{
        snprintf(tmp, tmp_size, "%s.tmp.%ld", path, (long)getpid());
        d->trace = fopen(tmp, "w");
        if (d->trace == NULL) {
                fprintf(stderr, "dirlock-demo: cannot write the trace '%s': %s\n", tmp, strerror(errno));
                return -1;
        }
        char when[32] = "";
        time_t t = time(NULL);
        struct tm tm;
        if (gmtime_r(&t, &tm) != NULL)
                strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        fprintf(d->trace,
                "{\"format\":\"dirlock-demo trace 1\",\"recorded\":\"%s\",\"cpus\":%ld,\"seconds\":%g,"
                "\"experiments\":[",
                when, sysconf(_SC_NPROCESSORS_ONLN), d->seconds);
        return 0;
}

/* One experiment: a lane per process, each lock request as
 * [asked, got, released] in ms (got is null when the wait timed out). */
static void trace_experiment(demo *d, int scenario)
{
        static const char *const read_attack[TRACE_PROCS][3] = {{"reader 1", "attacker", "read"},
                                                                {"reader 2", "attacker", "read"},
                                                                {"writer", "victim", "write"}};
        static const char *const write_attack[TRACE_PROCS][3] = {{"writer 1", "attacker", "write"},
                                                                 {"writer 2", "attacker", "write"},
                                                                 {"reader", "victim", "read"}};
        const char *const(*procs)[3] = scenario == SC_READ_ATTACK ? read_attack : write_attack;
        unsigned n = d->sh->nspans < MAX_SPANS ? d->sh->nspans : MAX_SPANS;
        fprintf(d->trace, "%s\n{\"scenario\":\"%s\",\"lock\":\"%s\",\"dropped\":%u,\"processes\":[",
                d->traced_runs++ ? "," : "", scenario == SC_READ_ATTACK ? "read-attack" : "write-attack",
                lock_name(d->lock), d->sh->nspans - n);
        for (int p = 0; p < TRACE_PROCS; p++) {
                fprintf(d->trace, "%s\n {\"name\":\"%s\",\"role\":\"%s\",\"mode\":\"%s\",\"spans\":[",
                        p ? "," : "", procs[p][0], procs[p][1], procs[p][2]);
                int first = 1;
                for (unsigned i = 0; i < n; i++) {
                        const span *sp = &d->sh->spans[i];
                        if (sp->proc != p)
                                continue;
                        if (sp->got_lock)
                                fprintf(d->trace, "%s[%.1f,%.1f,%.1f]", first ? "" : ",", sp->asked, sp->got,
                                        sp->released);
                        else
                                fprintf(d->trace, "%s[%.1f,null,%.1f]", first ? "" : ",", sp->asked,
                                        sp->released);
                        first = 0;
                }
                fputs("]}", d->trace);
        }
        fputs("]}", d->trace);
}

static int trace_close(demo *d, const char *path, const char *tmp)
{
        fputs("\n]}\n", d->trace);
        int bad = ferror(d->trace);
        if (fclose(d->trace) != 0)
                bad = 1;
        d->trace = NULL;
        if (bad || rename(tmp, path) != 0) {
                fprintf(stderr, "dirlock-demo: cannot write the trace '%s': %s\n", path, strerror(errno));
                unlink(tmp);
                return -1;
        }
        return 0;
}

static void run(demo *d, int scenario)
{
        memset(d->sh, 0, sizeof *d->sh);
        int fd = open(d->data, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
                perror("dirlock-demo: data file");
                exit(2);
        }
        write_record(fd, 1, false);
        close(fd);
        /* Nothing buffered may be inherited: a child that exits on an error
         * would write it a second time. */
        fflush(stdout);
        if (d->trace != NULL)
                fflush(d->trace);
        d->t0 = now_s() + 0.05;
        pid_t pids[8];
        int n = 0;
        if (scenario == SC_TORN) {
                pids[n++] = spawn(d, 0, 0);
                for (int i = 0; i < 4; i++)
                        pids[n++] = spawn(d, 1, i);
        } else if (scenario == SC_READ_ATTACK) {
                pids[n++] = spawn(d, 2, 0);
                pids[n++] = spawn(d, 2, 1);
                pids[n++] = spawn(d, 4, 0);
        } else {
                pids[n++] = spawn(d, 3, 0);
                pids[n++] = spawn(d, 3, 1);
                pids[n++] = spawn(d, 5, 0);
        }
        for (int i = 0; i < n; i++) {
                int st;
                waitpid(pids[i], &st, 0);
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                        fprintf(stderr, "dirlock-demo: a worker failed\n");
                        exit(2);
                }
        }
        if (d->trace != NULL && scenario != SC_TORN)
                trace_experiment(d, scenario);
}

static const char *const lock_names[] = {"fair", "writer", "reader", "simple"};

static int parse_lock(const char *s)
{
        for (int i = 0; i < 4; i++)
                if (strcmp(s, lock_names[i]) == 0)
                        return i;
        if (strcmp(s, "flock") == 0)
                return LK_FLOCK;
        if (strcmp(s, "none") == 0)
                return LK_NONE;
        return -1;
}

static const char *lock_name(int lock)
{
        return lock == LK_FLOCK ? "flock" : lock == LK_NONE ? "none" : lock_names[lock];
}

static void one_line(demo *d, int scenario)
{
        run(d, scenario);
        double rp50, rmax, wp50, wmax;
        stats(&d->sh->rwait, &rp50, &rmax);
        stats(&d->sh->wwait, &wp50, &wmax);
        printf("lock=%s reads=%lu torn=%lu writes=%lu reader_wait_p50_ms=%.1f reader_wait_max_ms=%.1f "
               "writer_wait_p50_ms=%.1f writer_wait_max_ms=%.1f failures=%lu\n",
               lock_name(d->lock), d->sh->reads, d->sh->torn, d->sh->writes, rp50, rmax, wp50, wmax,
               d->sh->failures);
}

static void table(demo *d)
{
        printf("dirlock-demo: %.1f s per run; waits in ms (p50 / max)\n\n", d->seconds);
        printf("| lock   | torn reads | reads  | torn: reader wait | torn: writer wait | read attack: writer "
               "wait | "
               "write attack: reader wait |\n");
        printf("|--------|-----------:|-------:|------------------:|------------------:|---------------------"
               "----:|"
               "--------------------------:|\n");
        int locks[] = {DIRLOCK_POLICY_FAIR,
                       DIRLOCK_POLICY_WRITER,
                       DIRLOCK_POLICY_READER,
                       DIRLOCK_POLICY_SIMPLE,
                       LK_FLOCK,
                       LK_NONE};
        for (size_t i = 0; i < sizeof locks / sizeof locks[0]; i++) {
                d->lock = locks[i];
                double rp50, rmax, wp50, wmax, aw, bw, x;
                run(d, SC_TORN);
                unsigned long torn = d->sh->torn, reads = d->sh->reads;
                stats(&d->sh->rwait, &rp50, &rmax);
                stats(&d->sh->wwait, &wp50, &wmax);
                char ra[32] = "-", wa[32] = "-";
                if (locks[i] != LK_NONE) {
                        run(d, SC_READ_ATTACK);
                        stats(&d->sh->wwait, &x, &aw);
                        run(d, SC_WRITE_ATTACK);
                        stats(&d->sh->rwait, &x, &bw);
                        snprintf(ra, sizeof ra, "%.0f", aw);
                        snprintf(wa, sizeof wa, "%.0f", bw);
                }
                printf("| %-6s | %10lu | %6lu | %8.1f / %6.1f | %8.1f / %6.1f | %24s | %25s |\n",
                       lock_name(locks[i]), torn, reads, rp50, rmax, wp50, wmax, ra, wa);
                fflush(stdout);
        }
        printf(
            "\nread attack: two readers each hold 200 ms, overlapping by 100 ms, for the whole run; a writer "
            "arrives at 1 s.\nwrite attack: two writers each hold 100 ms and ask again at once; a reader "
            "arrives at 1 s.\n");
}

int main(int argc, char **argv)
{
        demo d = {.lockdir = NULL, .seconds = 5};
        const char *trace_path = NULL;
        static const struct option longopts[] = {
            {"trace", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
        int opt;
        while ((opt = getopt_long(argc, argv, "d:s:h", longopts, NULL)) != -1) {
                if (opt == 'd')
                        d.lockdir = optarg;
                else if (opt == 's')
                        d.seconds = atof(optarg);
                else if (opt == 't')
                        trace_path = optarg;
                else {
                        fprintf(stderr,
                                "usage: dirlock-demo [-d SPACE] [-s SECONDS] [--trace FILE] "
                                "[torn|read-attack|write-attack fair|writer|reader|simple|flock|none]\n");
                        return opt == 'h' ? 0 : 2;
                }
        }
        int scenario = -1; /* -1: the whole table */
        if (optind + 2 == argc) {
                const char *sc = argv[optind];
                d.lock = parse_lock(argv[optind + 1]);
                scenario = strcmp(sc, "torn") == 0           ? SC_TORN
                           : strcmp(sc, "read-attack") == 0  ? SC_READ_ATTACK
                           : strcmp(sc, "write-attack") == 0 ? SC_WRITE_ATTACK
                                                             : -1;
                if (d.lock < 0 || scenario < 0) {
                        fprintf(stderr, "dirlock-demo: unknown scenario or lock\n");
                        return 2;
                }
                if (scenario == SC_TORN && trace_path != NULL) {
                        fprintf(stderr, "dirlock-demo: --trace records the read and write attacks, not torn "
                                        "reads\n");
                        return 2;
                }
        } else if (optind != argc) {
                fprintf(stderr, "dirlock-demo: give both a scenario and a lock\n");
                return 2;
        }
        char tmp[] = "/tmp/dirlock-demo.XXXXXX";
        if (d.lockdir == NULL || strstr(d.lockdir, "://") != NULL) {
                if (mkdtemp(tmp) == NULL) {
                        perror("dirlock-demo: mkdtemp");
                        return 2;
                }
                d.workdir = tmp;
                if (d.lockdir == NULL)
                        d.lockdir = tmp;
        } else {
                d.workdir = d.lockdir;
        }
        char data[4096];
        snprintf(data, sizeof data, "%s/record.txt", d.workdir);
        d.data = data;
        d.sh = mmap(NULL, sizeof *d.sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (d.sh == MAP_FAILED) {
                perror("dirlock-demo: mmap");
                return 2;
        }
        char trace_tmp[4096 + 32];
        if (trace_path != NULL && trace_open(&d, trace_path, trace_tmp, sizeof trace_tmp) < 0)
                return 2;
        if (scenario < 0)
                table(&d);
        else
                one_line(&d, scenario);
        int rc = 0;
        if (d.trace != NULL && trace_close(&d, trace_path, trace_tmp) < 0)
                rc = 2;
        unlink(data);
        if (d.workdir == tmp) {
                char cmd[256];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
                if (system(cmd) != 0)
                        fprintf(stderr, "dirlock-demo: could not remove %s\n", tmp);
        }
        return rc;
}
