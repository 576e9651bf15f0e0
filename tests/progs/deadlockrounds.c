/* deadlockrounds.c - one deadlock made again and again, each time by
 * processes that start their last waits at the same moment: the test of
 * deadlock resolution's one victim (tests/deadlock.t, tests/permits.t;
 * lib/dir/deadlock.c ONE VICTIM, lib/redis/redis_deadlock.c).
 *
 *   deadlockrounds SPACE SHAPE ROUNDS [--no-check]
 *
 * SHAPE is the deadlock of each round:
 *   cycle2  process i holds lock c<R>.i and asks for c<R>.(i+1 mod 2):
 *           P -> Q against Q -> P;
 *   cycle3  the same with three processes, a cycle of three;
 *   knot    issue 38's knot through a counting lock: permit k<R>.S (N=2)
 *           held by A and B, lock k<R>.L1 by C and k<R>.L2 by D; then A
 *           asks for L1, B for L2, C and D for S.  Nobody can go on, and
 *           no cycle of single holds shows it (C and D each wait for two
 *           holders, A and B, only one of whom waits for them).
 * (R: the round, so that no round sees another's locks.)  Each round the
 * processes take their first locks, meet at a barrier, and ask for the
 * second at once (timeout 20 s): the moment two checks are most likely to
 * run side by side.  A process told DIRLOCK_EDEADLK lets its lock go; one
 * that got its second lock holds both a millisecond and lets them go; then
 * the next round.  Exactly one process of a round must be told, and every
 * other must get its lock.
 *
 * Prints one line:
 *   rounds=N one=N several=N none=N errors=N told_ms_p50=X told_ms_max=X
 * (several: rounds where more than one process was told; none: rounds
 * where nobody was, every process waiting out its timeout or erring; the
 * times: from the barrier to the report) and the first errors on stderr;
 * exits 0 when every round told exactly one, else 1.  --no-check takes the
 * second locks with DIRLOCK_NO_DEADLOCK and a 1 s timeout: the twin
 * whose rounds tell nobody. */
#include "dirlock.h"
#include "dirlock_permit.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUNDS  1000
#define MAX_MEMBERS 4

struct shared {
        pthread_barrier_t start, done;
        int rc[MAX_ROUNDS][MAX_MEMBERS];
        double ms[MAX_ROUNDS][MAX_MEMBERS];
        char why[MAX_ROUNDS][720]; /* the first unexpected error of the round */
};

static struct shared *sh;
static const char *space;
static bool no_check;

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The first and the second lock of member `me`: a name, and N when it is
 * a permit of a counting lock (0: a plain lock). */
struct ask {
        char name[32];
        unsigned permits;
};

static void shape_of(const char *shape, int round, int me, struct ask *first, struct ask *second)
{
        memset(first, 0, sizeof *first);
        memset(second, 0, sizeof *second);
        if (strcmp(shape, "knot") == 0) {
                /* A=0, B=1 hold S; C=2 holds L1, D=3 L2; A->L1, B->L2, C->S, D->S */
                static const char *firsts[] = {"S", "S", "L1", "L2"};
                static const char *seconds[] = {"L1", "L2", "S", "S"};
                snprintf(first->name, sizeof first->name, "k%d.%s", round, firsts[me]);
                snprintf(second->name, sizeof second->name, "k%d.%s", round, seconds[me]);
                first->permits = me < 2 ? 2 : 0;
                second->permits = me >= 2 ? 2 : 0;
                return;
        }
        int n = strcmp(shape, "cycle3") == 0 ? 3 : 2;
        snprintf(first->name, sizeof first->name, "c%d.%d", round, me);
        snprintf(second->name, sizeof second->name, "c%d.%d", round, (me + 1) % n);
}

static int members_of(const char *shape)
{
        return strcmp(shape, "knot") == 0 ? 4 : strcmp(shape, "cycle3") == 0 ? 3 : 2;
}

static int take(const struct ask *a, const dirlock_options *o, dirlock **h, dirlock_error *e)
{
        if (a->permits > 0)
                return dirlock_acquire_permit(space, a->name, a->permits, o, h, e);
        return dirlock_acquire(space, a->name, o, h, e);
}

static void member(const char *shape, int rounds, int me)
{
        for (int r = 0; r < rounds; r++) {
                struct ask first, second;
                shape_of(shape, r, me, &first, &second);
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 10;
                dirlock *a = NULL, *b = NULL;
                dirlock_error e;
                int rc = take(&first, &o, &a, &e);
                if (rc != DIRLOCK_OK)
                        snprintf(sh->why[r], sizeof sh->why[r], "%s: %s", first.name, e.message);
                pthread_barrier_wait(&sh->start);
                double t0 = now_ms();
                if (rc == DIRLOCK_OK) {
                        dirlock_options o2 = DIRLOCK_OPTIONS_INIT;
                        o2.timeout = no_check ? 1 : 20;
                        if (no_check)
                                o2.flags |= DIRLOCK_NO_DEADLOCK;
                        rc = take(&second, &o2, &b, &e);
                        if (rc != DIRLOCK_OK && rc != DIRLOCK_EDEADLK && sh->why[r][0] == '\0')
                                snprintf(sh->why[r], sizeof sh->why[r], "%s: %s", second.name, e.message);
                }
                sh->rc[r][me] = rc;
                sh->ms[r][me] = now_ms() - t0;
                if (b != NULL) {
                        struct timespec ms = {0, 1000000};
                        nanosleep(&ms, NULL);
                        dirlock_release(b, NULL);
                }
                if (a != NULL)
                        dirlock_release(a, NULL);
                pthread_barrier_wait(&sh->done);
        }
}

static int by_value(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
        if (argc < 4) {
                fprintf(stderr, "usage: deadlockrounds SPACE cycle2|cycle3|knot ROUNDS [--no-check]\n");
                return 2;
        }
        space = argv[1];
        const char *shape = argv[2];
        int rounds = atoi(argv[3]);
        no_check = argc > 4 && strcmp(argv[4], "--no-check") == 0;
        if (rounds < 1 || rounds > MAX_ROUNDS ||
            (strcmp(shape, "cycle2") != 0 && strcmp(shape, "cycle3") != 0 && strcmp(shape, "knot") != 0)) {
                fprintf(stderr, "deadlockrounds: a shape of cycle2, cycle3, knot; 1..%d rounds\n",
                        MAX_ROUNDS);
                return 2;
        }
        int n = members_of(shape);
        sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED)
                return 2;
        memset(sh, 0, sizeof *sh);
        pthread_barrierattr_t ba;
        pthread_barrierattr_init(&ba);
        pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
        pthread_barrier_init(&sh->start, &ba, (unsigned)n);
        pthread_barrier_init(&sh->done, &ba, (unsigned)n);
        pid_t pids[MAX_MEMBERS];
        for (int i = 0; i < n; i++) {
                pids[i] = fork();
                if (pids[i] == 0) {
                        member(shape, rounds, i);
                        _exit(0);
                }
        }
        for (int i = 0; i < n; i++)
                waitpid(pids[i], NULL, 0);
        int one = 0, several = 0, none = 0, errors = 0, shown = 0, ntold = 0;
        static double told[MAX_ROUNDS * MAX_MEMBERS];
        for (int r = 0; r < rounds; r++) {
                int dead = 0, ok = 0;
                for (int i = 0; i < n; i++) {
                        dead += sh->rc[r][i] == DIRLOCK_EDEADLK;
                        ok += sh->rc[r][i] == DIRLOCK_OK;
                        if (sh->rc[r][i] == DIRLOCK_EDEADLK)
                                told[ntold++] = sh->ms[r][i];
                }
                one += dead == 1 && ok == n - 1;
                several += dead > 1;
                none += dead == 0;
                errors += dead + ok != n;
                if ((dead != 1 || ok != n - 1) && shown++ < 5) {
                        fprintf(stderr, "round %d:", r);
                        for (int i = 0; i < n; i++)
                                fprintf(stderr, " %s after %.0f ms;", dirlock_code_name(sh->rc[r][i]),
                                        sh->ms[r][i]);
                        fprintf(stderr, "%s%s\n", sh->why[r][0] ? " " : "", sh->why[r]);
                }
        }
        qsort(told, (size_t)ntold, sizeof *told, by_value);
        printf("rounds=%d one=%d several=%d none=%d errors=%d told_ms_p50=%.1f told_ms_max=%.1f\n", rounds,
               one, several, none, errors, ntold ? told[ntold / 2] : 0.0, ntold ? told[ntold - 1] : 0.0);
        return one == rounds ? 0 : 1;
}
