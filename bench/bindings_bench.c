/* bindings_bench.c - the C side of make bench-bindings: uncontended
 * acquire+release of one lock with the default options, for SECONDS,
 * the same loop bench/bindings-run runs in Perl (Dirlock) and Python
 * (dirlock.Lock); prints acquire+release pairs per second of wall time
 * and microseconds of this process's CPU time (user + system) per pair.
 *
 *   bindings_bench DIR SECONDS */
#include "dirlock.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clock_s(clockid_t clock)
{
        struct timespec t;
        clock_gettime(clock, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
        if (argc != 3) {
                fprintf(stderr, "usage: bindings_bench DIR SECONDS\n");
                return 2;
        }
        double seconds = atof(argv[2]), t0 = clock_s(CLOCK_MONOTONIC),
               cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t;
        long n = 0;
        do {
                for (int i = 0; i < 64; i++) {
                        dirlock *h;
                        dirlock_error err;
                        if (dirlock_acquire(argv[1], "bench", NULL, &h, &err) != DIRLOCK_OK ||
                            dirlock_release(h, &err) != DIRLOCK_OK) {
                                fprintf(stderr, "bindings_bench: %s\n", err.message);
                                return 1;
                        }
                }
                n += 64;
                t = clock_s(CLOCK_MONOTONIC);
        } while (t - t0 < seconds);
        printf("%.0f %.2f\n", (double)n / (t - t0),
               (clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0) * 1e6 / (double)n);
        return 0;
}
