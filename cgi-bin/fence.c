/* fence.c - the fence comparison and the flat log's fence gate (the
 * protocol and its invariant are in fence.h). */
#include "fence.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "delay.h"
#include "logfile.h"

int fence_admit(unsigned long long recorded, unsigned long long mine, struct board_error *err)
{
        if (mine == 0 || mine >= recorded)
                return 0;
        board_fail(
            err, 503,
            "The board's lock was taken over by another writer (fence %llu is below the store's %llu); "
            "nothing was written, please try again",
            mine, recorded);
        err->retry_after = 1;
        return -1;
}

/* How long a writer waits for the gate at least, whatever the board's
 * lock_timeout (0 included): its holders keep it for a moment only. */
#define GATE_MIN_WAIT_S 1.0
/* The pauses between looks at a held gate: from 1 ms, doubling, to 50. */
#define GATE_FIRST_PAUSE_MS   1
#define GATE_LONGEST_PAUSE_MS 50

/* Step 1: data_dir/fence.lock opened and flock'ed: the descriptor, or -1
 * with a 500, or with a 503 when it stayed held for the whole wait, the
 * longer of `wait_s` and GATE_MIN_WAIT_S.  A holder keeps it for a
 * moment, but one stopped inside that moment (SIGSTOP, a debugger) keeps
 * it until it runs again, and no writer may pass meanwhile (the gate
 * cannot be broken: fence.h); so a writer does not block in flock() for
 * ever, which would hang its request and, one by one, every worker of
 * the board with it, but looks again (LOCK_NB) with growing pauses and
 * gives up with a 503 that says why. */
static int gate_lock(const char *data_dir, double wait_s, struct board_error *err)
{
        struct buf path = BUF_INIT;
        buf_printf(&path, "%s/fence.lock", data_dir);
        if (path.oom) {
                buf_free(&path);
                return board_fail(err, 500, "out of memory");
        }
        int fd = open(path.data, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        int saved = errno;
        buf_free(&path);
        if (fd < 0)
                return board_fail_storage(err, saved, "cannot open data_dir/fence.lock");
        double until = wait_s > GATE_MIN_WAIT_S ? wait_s : GATE_MIN_WAIT_S;
        double start = monotonic_seconds();
        long pause_ms = GATE_FIRST_PAUSE_MS;
        while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                saved = errno;
                if (saved != EWOULDBLOCK && saved != EINTR) {
                        close(fd);
                        return board_fail_storage(err, saved, "cannot lock data_dir/fence.lock");
                }
                double waited = monotonic_seconds() - start;
                if (saved == EWOULDBLOCK && waited >= until) {
                        close(fd);
                        board_fail(err, 503,
                                   "Another writer has held the board's write gate (data_dir/fence.lock) for "
                                   "%.1f s, longer than a writer waits for it (lock_timeout, 1 s at least); "
                                   "nothing was written, please try again",
                                   waited);
                        err->retry_after = 1;
                        return -1;
                }
                sleep_ms(pause_ms);
                pause_ms = pause_ms * 2 < GATE_LONGEST_PAUSE_MS ? pause_ms * 2 : GATE_LONGEST_PAUSE_MS;
        }
        return fd;
}

/* The gate file's text, the highest fence announced: 20 digits and a
 * newline, always written whole, at offset 0 and without truncating, so
 * that no failed or interrupted write leaves a file that reads as "none
 * announced".  An empty file (never announced) is 0. */
#define ANNOUNCED_WIDTH 21

/* The highest fence announced, in *out: 0, or -1 with a 500 when the file
 * holds anything else than what fence_announce() writes. */
static int announced(int fd, unsigned long long *out, struct board_error *err)
{
        char text[ANNOUNCED_WIDTH + 2];
        ssize_t n = pread(fd, text, ANNOUNCED_WIDTH + 1, 0);
        if (n < 0)
                return board_fail_storage(err, errno, "cannot read data_dir/fence.lock");
        *out = 0;
        if (n == 0)
                return 0;
        bool digits = n == ANNOUNCED_WIDTH && text[ANNOUNCED_WIDTH - 1] == '\n';
        for (ssize_t i = 0; digits && i < ANNOUNCED_WIDTH - 1; i++)
                digits = text[i] >= '0' && text[i] <= '9';
        if (!digits)
                return board_fail(
                    err, 500,
                    "data_dir/fence.lock holds no fence (%zd bytes where 20 digits and a newline "
                    "were written); nothing was written: remove the file to start its count again",
                    n);
        text[ANNOUNCED_WIDTH - 1] = '\0';
        *out = strtoull(text, NULL, 10);
        return 0;
}

int fence_announce(const char *data_dir, unsigned long long mine, double wait_s, struct board_error *err)
{
        if (mine == 0)
                return 0; /* a write without a fence: nothing to compare */
        int fd = gate_lock(data_dir, wait_s, err);
        if (fd < 0)
                return -1;
        unsigned long long ahead = 0;
        int rc = announced(fd, &ahead, err);
        if (rc == 0)
                rc = fence_admit(ahead, mine, err);
        if (rc == 0) {
                char text[ANNOUNCED_WIDTH + 1];
                snprintf(text, sizeof text, "%020llu\n", mine);
                if (pwrite(fd, text, ANNOUNCED_WIDTH, 0) != ANNOUNCED_WIDTH)
                        rc = board_fail_storage(err, errno, "cannot write data_dir/fence.lock");
        }
        /* On NFS the write reaches the server at close: its error is one. */
        if (close(fd) != 0 && rc == 0) /* releases the flock */
                rc = board_fail_storage(err, errno, "cannot write data_dir/fence.lock");
        return rc;
}

int fence_gate_enter(struct fence_gate *g, const char *data_dir, const char *log_path,
                     unsigned long long mine, double wait_s, struct board_error *err)
{
        g->fd = -1;
        if (mine == 0)
                return 0; /* a write without a fence: nothing to compare */
        int fd = gate_lock(data_dir, wait_s, err);
        if (fd < 0)
                return -1;
        g->fd = fd;
        unsigned long long recorded = 0, ahead = 0;
        if (announced(fd, &ahead, err) < 0 || logfile_read_fence(log_path, &recorded, err) < 0 ||
            fence_admit(recorded > ahead ? recorded : ahead, mine, err) < 0) {
                fence_gate_leave(g);
                return -1;
        }
        return 0;
}

void fence_gate_leave(struct fence_gate *g)
{
        if (g->fd >= 0)
                close(g->fd); /* releases the flock */
        g->fd = -1;
}
