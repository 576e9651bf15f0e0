/* flock.c - the flock backend: kernel flock(2) locks on files of a
 * directory behind the dirlock handle, for the board's "flock" mode and
 * for comparison in tests and benchmarks (space "flock:DIR", or
 * dirlock_flock_acquire()).  Lock NAME is flock() on DIR/NAME.flock
 * (layout.h).  Kernel semantics: released by the kernel when the holder
 * dies, no owner record, no stale breaking, no upgrade, and readers can
 * lock a writer out.  Waiting forever blocks in flock(); a timeout polls
 * LOCK_NB with a short jittered backoff. */
#include "backend.h"
#include "layout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

struct dl_flock {
        char *path; /* DIR/NAME.flock */
        int fd;     /* open on path; locked while held */
};

static int flock_open(dirlock *h, const char *spec, dirlock_error *err)
{
        struct dl_flock *f = calloc(1, sizeof *f);
        if (f == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        f->fd = -1;
        char *dir;
        int rc = dl_lockdir_prepare(spec, !(h->opts.flags & DIRLOCK_NO_MKDIR), &dir, NULL, err);
        if (rc != DIRLOCK_OK) {
                free(f);
                return rc;
        }
        f->path = dl_layout_path(dir, h->name, DL_SUFFIX_FLOCK);
        free(dir);
        if (f->path == NULL) {
                free(f);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        f->fd = open(f->path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (f->fd < 0) {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot open '%s'", f->path);
                free(f->path);
                free(f);
                return rc;
        }
        h->impl = f;
        return DIRLOCK_OK;
}

static void flock_close(dirlock *h)
{
        struct dl_flock *f = h->impl;
        if (f == NULL)
                return;
        if (f->fd >= 0)
                close(f->fd);
        free(f->path);
        free(f);
        h->impl = NULL;
}

static int flock_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        struct dl_flock *f = h->impl;
        int op = h->opts.mode == DIRLOCK_EXCLUSIVE ? LOCK_EX : LOCK_SH;
        dl_waiter w;
        dl_waiter_init(&w, f->path, DIRLOCK_NO_NOTIFY, h->token, 0);
        dl_waiter_cancel_on(&w, h->opts.cancel_fd);
        bool block = dl_deadline_never(deadline) && h->opts.cancel_fd < 0;
        int rc;
        for (;;) {
                if (flock(f->fd, block ? op : op | LOCK_NB) == 0) {
                        rc = DIRLOCK_OK;
                        break;
                }
                if (errno == EINTR)
                        continue;
                if (errno != EWOULDBLOCK) {
                        rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot flock '%s'", f->path);
                        break;
                }
                if (h->opts.timeout == 0) {
                        rc = dl_fail(err, DIRLOCK_EBUSY, 0, "'%s' is locked", f->path);
                        break;
                }
                if (w.backoff_ms > 8)
                        w.backoff_ms = 8; /* keep polling flock reasonably fair */
                int waited = dl_waiter_wait(&w, deadline);
                if (waited != 0) {
                        if (flock(f->fd, op | LOCK_NB) == 0)
                                rc = DIRLOCK_OK;
                        else if (waited == DIRLOCK_ECANCELED)
                                rc = dl_fail(err, waited, 0, "canceled waiting for '%s'", f->path);
                        else
                                rc = dl_fail(err, waited, 0, "timed out waiting for '%s'", f->path);
                        break;
                }
        }
        dl_waiter_close(&w);
        return rc;
}

static int flock_release(dirlock *h, dirlock_error *err)
{
        struct dl_flock *f = h->impl;
        (void)err;
        if (f->fd >= 0)
                close(f->fd); /* drops the lock */
        f->fd = -1;
        return DIRLOCK_OK;
}

/* The kernel keeps the lock as long as the descriptor: nothing to renew,
 * nothing that could have been broken. */
static int flock_refresh(dirlock *h, dirlock_error *err)
{
        (void)h;
        (void)err;
        return DIRLOCK_OK;
}

static int flock_check(const dirlock *h, dirlock_error *err)
{
        (void)h;
        (void)err;
        return DIRLOCK_OK;
}

const dl_backend dl_flock_backend = {
    .name = "flock",
    .open = flock_open,
    .close = flock_close,
    .acquire = flock_acquire,
    .release = flock_release,
    .refresh = flock_refresh,
    .check = flock_check,
};
