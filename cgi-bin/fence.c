/* fence.c - the fence comparison and the flat log's fence gate (the
 * protocol and its invariant are in fence.h). */
#include "fence.h"

#include <errno.h>
#include <fcntl.h>
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

int fence_gate_enter(struct fence_gate *g, const char *data_dir, const char *log_path,
                     unsigned long long mine, struct board_error *err)
{
        g->fd = -1;
        if (mine == 0)
                return 0; /* a write without a fence: nothing to compare */
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
        while (flock(fd, LOCK_EX) < 0) {
                if (errno != EINTR) {
                        saved = errno;
                        close(fd);
                        return board_fail_storage(err, saved, "cannot lock data_dir/fence.lock");
                }
        }
        g->fd = fd;
        unsigned long long recorded = 0;
        if (logfile_read_fence(log_path, &recorded, err) < 0 || fence_admit(recorded, mine, err) < 0) {
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
