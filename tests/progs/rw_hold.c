/* rw_hold.c - test helper: takes a reader-writer lock in a given mode and
 * policy, reports what happened on stdout, holds it, releases it; repeats.
 *
 * Usage: rw_hold [-p POLICY] [-t TIMEOUT] [-H HOLD_MS] [-c CYCLES] [-F]
 *                [-u] [-P PAUSE_MS] [-U UPGRADE_TIMEOUT] [-D] [-l LABEL]
 *                [-w WAIT_FILE]
 *                LOCKDIR NAME MODE
 *   MODE: r (shared), w (exclusive), i (intent)
 *   -u: after taking intent, upgrade (-P: PAUSE_MS after taking it, first);
 *   -D: after writing, downgrade
 *   -F: DIRLOCK_FIFO; -w: before each acquire, wait until WAIT_FILE exists
 * Output lines: "LABEL acquired MS", "LABEL upgraded MS", "LABEL released MS"
 * (MS: CLOCK_REALTIME milliseconds), "LABEL error CODE MESSAGE"; with more
 * than one cycle only "LABEL done CYCLES MAX_ACQUIRE_MS MAX_UPGRADE_MS", the
 * longest acquire and upgrade.
 * Exit status: 0, 1 on a timeout, 2 on any other error. */
#include "dirlock.h"
#include "dirlock_rw.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double wall_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms)
{
        struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

static int fail(const char *label, const dirlock_error *err)
{
        printf("%s error %d %s\n", label, err->code, err->message);
        fflush(stdout);
        return err->code == DIRLOCK_ETIMEDOUT || err->code == DIRLOCK_EBUSY ? 1 : 2;
}

int main(int argc, char **argv)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 10;
        double hold = 0, pause = 0, up_timeout = -2;
        long cycles = 1;
        int upgrade = 0, downgrade = 0;
        const char *label = "p", *wait_file = NULL;
        int opt;
        while ((opt = getopt(argc, argv, "p:t:H:c:FuP:U:Dl:w:")) != -1) {
                switch (opt) {
                case 'p':
                        o.policy = strcmp(optarg, "writer") == 0   ? DIRLOCK_POLICY_WRITER
                                   : strcmp(optarg, "reader") == 0 ? DIRLOCK_POLICY_READER
                                   : strcmp(optarg, "simple") == 0 ? DIRLOCK_POLICY_SIMPLE
                                                                   : DIRLOCK_POLICY_FAIR;
                        break;
                case 't':
                        o.timeout = atof(optarg);
                        break;
                case 'H':
                        hold = atof(optarg);
                        break;
                case 'c':
                        cycles = atol(optarg);
                        break;
                case 'F':
                        o.flags |= DIRLOCK_FIFO;
                        break;
                case 'u':
                        upgrade = 1;
                        break;
                case 'P':
                        pause = atof(optarg);
                        break;
                case 'U':
                        up_timeout = atof(optarg);
                        break;
                case 'D':
                        downgrade = 1;
                        break;
                case 'l':
                        label = optarg;
                        break;
                case 'w':
                        wait_file = optarg;
                        break;
                default:
                        return 2;
                }
        }
        if (argc - optind != 3) {
                fprintf(stderr, "usage: rw_hold [options] LOCKDIR NAME r|w|i\n");
                return 2;
        }
        const char *dir = argv[optind], *name = argv[optind + 1], *mode = argv[optind + 2];
        o.mode = mode[0] == 'r' ? DIRLOCK_SHARED : mode[0] == 'i' ? DIRLOCK_INTENT : DIRLOCK_EXCLUSIVE;
        double max_acquire = 0, max_upgrade = 0;
        for (long c = 0; c < cycles; c++) {
                struct stat st;
                while (wait_file != NULL && stat(wait_file, &st) != 0)
                        sleep_ms(2);
                dirlock *h;
                dirlock_error err;
                double began = wall_ms();
                if (dirlock_acquire(dir, name, &o, &h, &err) != DIRLOCK_OK)
                        return fail(label, &err);
                double took = wall_ms() - began;
                if (took > max_acquire)
                        max_acquire = took;
                if (cycles == 1) {
                        printf("%s acquired %.1f\n", label, wall_ms());
                        fflush(stdout);
                }
                if (upgrade) {
                        dirlock_options uo = o;
                        if (up_timeout > -2)
                                uo.timeout = up_timeout;
                        if (pause > 0)
                                sleep_ms(pause);
                        began = wall_ms();
                        if (dirlock_upgrade(h, &uo, &err) != DIRLOCK_OK) {
                                int rc = fail(label, &err);
                                dirlock_release(h, NULL);
                                return rc;
                        }
                        took = wall_ms() - began;
                        if (took > max_upgrade)
                                max_upgrade = took;
                        if (cycles == 1) {
                                printf("%s upgraded %.1f\n", label, wall_ms());
                                fflush(stdout);
                        }
                }
                if (downgrade && dirlock_downgrade(h, &err) != DIRLOCK_OK) {
                        int rc = fail(label, &err);
                        dirlock_release(h, NULL);
                        return rc;
                }
                if (hold > 0)
                        sleep_ms(hold);
                /* The time the release began: a waiter may acquire before
                 * dirlock_release() returns here. */
                double releasing = wall_ms();
                if (dirlock_release(h, &err) != DIRLOCK_OK)
                        return fail(label, &err);
                if (cycles == 1) {
                        printf("%s released %.1f\n", label, releasing);
                        fflush(stdout);
                }
        }
        if (cycles > 1)
                printf("%s done %ld %.1f %.1f\n", label, cycles, max_acquire, max_upgrade);
        return 0;
}
