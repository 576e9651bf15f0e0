/* pair_time.c - times two commands in turn, A B A B ..., and prints the
 * median wall time of each and the median of the per-pair ratios A/B
 * (bench/startup-run).  Pairing keeps the ratio meaningful when the
 * machine's speed drifts during the run: each A is compared with the B
 * run right after it.
 *
 *   pair_time RUNS A0 [A1 ...] --vs B0 [B1 ...]
 *
 * Each command is started directly (no shell) with posix_spawnp, its
 * output thrown away; one warm-up run of each is not counted.  Prints one
 * line: "A_ms B_ms RATIO RATIO_MIN RATIO_MAX FAILED", times in ms (median),
 * FAILED the number of runs that exited non-zero (their times count all
 * the same; the caller says what that means). */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Run argv to its end; its wall time in ms, *failed incremented when it
 * did not exit 0.  Exits the program when it cannot be started. */
static double run_once(char *const argv[], int *failed)
{
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        double t0 = now_ms();
        pid_t pid;
        int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) {
                fprintf(stderr, "pair_time: cannot start %s: %s\n", argv[0], strerror(rc));
                exit(2);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                ;
        double t = now_ms() - t0;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                (*failed)++;
        return t;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
        qsort(v, (size_t)n, sizeof *v, cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
        int vs = 0;
        for (int i = 2; i < argc; i++)
                if (strcmp(argv[i], "--vs") == 0)
                        vs = i;
        int runs = argc > 1 ? atoi(argv[1]) : 0;
        if (runs < 1 || vs < 3 || vs == argc - 1) {
                fprintf(stderr, "usage: pair_time RUNS A0 [A1 ...] --vs B0 [B1 ...]\n");
                return 2;
        }
        argv[vs] = NULL;
        char *const *a = argv + 2, *const *b = argv + vs + 1;
        double *ta = calloc((size_t)runs, sizeof *ta), *tb = calloc((size_t)runs, sizeof *tb),
               *ratio = calloc((size_t)runs, sizeof *ratio);
        if (ta == NULL || tb == NULL || ratio == NULL)
                return 1;
        int failed = 0, warm = 0;
        run_once(a, &warm);
        run_once(b, &warm);
        for (int i = 0; i < runs; i++) {
                ta[i] = run_once(a, &failed);
                tb[i] = run_once(b, &failed);
                ratio[i] = ta[i] / tb[i];
        }
        double ma = median(ta, runs), mb = median(tb, runs), mr = median(ratio, runs);
        printf("%.3f %.3f %.3f %.3f %.3f %d\n", ma, mb, mr, ratio[0], ratio[runs - 1], failed);
        free(ta);
        free(tb);
        free(ratio);
        return 0;
}
