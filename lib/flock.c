/* flock.c - kernel flock(2) locks behind the dirlock handle, for the
 * board's "flock" mode and for comparison in tests and benchmarks.  Kernel
 * semantics: released by the kernel when the holder dies, no owner record,
 * no stale breaking, and readers can lock a writer out.  Waiting forever
 * blocks in flock(); a timeout polls LOCK_NB with a short jittered backoff. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

int dirlock_flock_acquire(const char *lockdir, const char *name, const dirlock_options *opts, dirlock **out,
                          dirlock_error *err)
{
        if (out == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the lock handle");
        dirlock *h;
        int rc = dl_handle_new(lockdir, name, opts, &h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        h->kind = DL_KIND_FLOCK;
        char *path = dl_join(h->lockdir, name, ".flock");
        if (path == NULL) {
                dl_handle_free(h);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        h->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (h->fd < 0) {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot open '%s'", path);
                free(path);
                dl_handle_free(h);
                return rc;
        }
        int op = h->opts.mode == DIRLOCK_EXCLUSIVE ? LOCK_EX : LOCK_SH;
        dl_time deadline = dl_deadline(h->opts.timeout);
        dl_waiter w;
        dl_waiter_init(&w, h->lockdir, DIRLOCK_NO_NOTIFY, h->token, 0);
        dl_waiter_cancel_on(&w, h->opts.cancel_fd);
        bool block = dl_deadline_never(&deadline) && h->opts.cancel_fd < 0;
        for (;;) {
                int r = flock(h->fd, block ? op : op | LOCK_NB);
                if (r == 0) {
                        rc = DIRLOCK_OK;
                        break;
                }
                if (errno == EINTR)
                        continue;
                if (errno != EWOULDBLOCK) {
                        rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot flock '%s'", path);
                        break;
                }
                if (h->opts.timeout == 0) {
                        rc = dl_fail(err, DIRLOCK_EBUSY, 0, "'%s' is locked", path);
                        break;
                }
                if (w.backoff_ms > 8)
                        w.backoff_ms = 8; /* keep polling flock reasonably fair */
                int waited = dl_waiter_wait(&w, &deadline);
                if (waited != 0) {
                        if (flock(h->fd, op | LOCK_NB) == 0)
                                rc = DIRLOCK_OK;
                        else if (waited == DIRLOCK_ECANCELED)
                                rc = dl_fail(err, waited, 0, "canceled waiting for '%s'", path);
                        else
                                rc = dl_fail(err, waited, 0, "timed out waiting for '%s'", path);
                        break;
                }
        }
        dl_waiter_close(&w);
        free(path);
        if (rc != DIRLOCK_OK) {
                dl_handle_free(h);
                return rc;
        }
        dl_handle_forget_cancel(h);
        h->holds = 1;
        *out = h;
        return DIRLOCK_OK;
}
