/* fence.c - the fence comparison and the flat log's fence gate (the
 * protocol and its invariant are in fence.h). */
#include "fence.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
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

/* Step 1: data_dir/fence.lock opened and flock'ed: the descriptor, or -1
 * with a 500. */
static int gate_lock(const char *data_dir, struct board_error *err)
{
        struct buf path = BUF_INIT;
        buf_printf(&path, "%s/fence.lock", data_dir);
        if (path.oom) {
                buf_free(&path);
                board_fail(err, 500, "out of memory");
                return -1;
        }
        int fd = open(path.data, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        int saved = errno;
        buf_free(&path);
        if (fd < 0) {
                board_fail_storage(err, saved, "cannot open data_dir/fence.lock");
                return -1;
        }
        while (flock(fd, LOCK_EX) < 0) {
                if (errno != EINTR) {
                        saved = errno;
                        close(fd);
                        board_fail_storage(err, saved, "cannot lock data_dir/fence.lock");
                        return -1;
                }
        }
        return fd;
}

/* The highest fence announced (the gate file's text; 0 when empty). */
static unsigned long long announced(int fd)
{
        char text[32];
        ssize_t n = pread(fd, text, sizeof text - 1, 0);
        text[n > 0 ? n : 0] = '\0';
        return strtoull(text, NULL, 10);
}

int fence_announce(const char *data_dir, unsigned long long mine, struct board_error *err)
{
        if (mine == 0)
                return 0; /* a write without a fence: nothing to compare */
        int fd = gate_lock(data_dir, err);
        if (fd < 0)
                return -1;
        int rc = fence_admit(announced(fd), mine, err);
        if (rc == 0) {
                char text[32];
                int n = snprintf(text, sizeof text, "%llu\n", mine);
                if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n)
                        rc = board_fail_storage(err, errno, "cannot write data_dir/fence.lock");
        }
        close(fd); /* releases the flock */
        return rc;
}

int fence_gate_enter(struct fence_gate *g, const char *data_dir, const char *log_path,
                     unsigned long long mine, struct board_error *err)
{
        g->fd = -1;
        if (mine == 0)
                return 0; /* a write without a fence: nothing to compare */
        int fd = gate_lock(data_dir, err);
        if (fd < 0)
                return -1;
        g->fd = fd;
        unsigned long long recorded = 0, ahead = announced(fd);
        if (logfile_read_fence(log_path, &recorded, err) < 0 ||
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
