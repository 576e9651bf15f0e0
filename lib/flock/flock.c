/* flock.c - the flock backend: kernel flock(2) locks on files of a
 * directory behind the dirlock handle, for the board's "flock" mode and
 * for comparison in tests and benchmarks (space "flock:DIR", or
 * dirlock_flock_acquire()).  Lock NAME is flock() on DIR/NAME.flock
 * (FLOCK_SUFFIX).  Kernel semantics: released by the kernel when the holder
 * dies, no owner record, no stale breaking, no intent lock, FIFO or
 * writer policy (refused: flock_refuses), and readers can lock a writer
 * out.  Waiting forever blocks in flock(); a timeout polls
 * LOCK_NB with a short jittered backoff.
 *
 * A DIRLOCK_REENTRANT handle (a lock object taken again and again with
 * dirlock_reacquire) keeps its file open between holds: the last release
 * is flock(LOCK_UN), and the file is closed by dirlock_free() (or by a
 * failed LOCK_UN, or to open the file that replaced it: below).  That saves
 * an open() and a close() per hold, which is most of what a shared flock
 * costs.
 *
 * A lock file removed or renamed and made again (nothing in dirlock does
 * that, but a person cleaning up might, or a deployment that moves the
 * lock directory aside) would split lockers into two groups that do not
 * exclude each other.  So every grant is checked (confirm_grant): the name
 * must still lead to the file we locked (same device and inode; an inode
 * cannot be reused while we hold it open).  If it does not, the file is
 * opened by name again (made again, with its directory unless
 * DIRLOCK_NO_MKDIR) and locked again, at most DL_FLOCK_REOPENS times in
 * one acquire (a name that never stays put is DIRLOCK_EIO, not a spin).
 * A file removed or moved while it is
 * held is beyond that check, as with flock(1): the holder keeps a lock
 * nobody else sees; change a lock directory only while no one uses it.
 *
 * fork(): a child shares the parent's open file description, and with it
 * every lock the parent takes on it later.  A child that goes on living
 * should dirlock_free() the reentrant handles it inherited (that closes
 * its copy); otherwise a lock its parent holds outlives the parent's
 * death.  The board never forks. */
#include "backend.h"
#include "dirlock_flock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct dl_flock {
        char *dir;      /* DIR, absolute: the space's key (backend.h) */
        char *path;     /* DIR/NAME.flock */
        size_t dir_len; /* path[0, dir_len) is DIR */
        bool make_dir;  /* create DIR again if it disappears */
        int fd;         /* open on path; locked while held */
        dev_t dev;      /* the file fd is open on */
        ino_t ino;
};

/* Open (creating) the lock file by name and remember which file it is.
 * A missing directory is made again when allowed. */
static int file_open(struct dl_flock *f, dirlock_error *err)
{
        f->fd = open(f->path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (f->fd < 0 && errno == ENOENT && f->make_dir) {
                f->path[f->dir_len] = '\0';
                int made = dl_make_dirs(f->path);
                f->path[f->dir_len] = '/';
                if (made != 0)
                        return dl_fail(err, DIRLOCK_EIO, errno, "cannot create the directory of '%s'",
                                       f->path);
                f->fd = open(f->path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        }
        if (f->fd < 0)
                return dl_fail(err, DIRLOCK_EIO, errno, "cannot open '%s'", f->path);
        struct stat st;
        if (fstat(f->fd, &st) != 0) {
                int saved = errno;
                close(f->fd);
                f->fd = -1;
                return dl_fail(err, DIRLOCK_EIO, saved, "cannot stat '%s'", f->path);
        }
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        return DIRLOCK_OK;
}

/* Lock NAME is the file DIR/NAME.flock: a name of its own in a directory
 * that directory locks may share (lib/dir/layout.h keeps it free). */
#define FLOCK_SUFFIX     ".flock"
#define DL_FLOCK_REOPENS 100
#define DL_FLOCK_AGAIN   (-1) /* confirm_grant: lock the file opened again */

/* After a lock is granted: does the name still lead to the file we
 * locked?  DIRLOCK_OK: yes, the grant stands.  DL_FLOCK_AGAIN: the file
 * was removed or replaced; our descriptor of it is closed (which drops
 * the lock unless a forked child shares the file) and the file the name
 * leads to now is open: lock that one.  Any other code: why not (nothing
 * is open), also after DL_FLOCK_REOPENS replacements in one acquire. */
static int confirm_grant(struct dl_flock *f, int *reopens, dirlock_error *err)
{
        struct stat st;
        int rc = DIRLOCK_OK;
        if (stat(f->path, &st) == 0) {
                if (st.st_dev == f->dev && st.st_ino == f->ino)
                        return DIRLOCK_OK;
        } else if (errno != ENOENT) {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot stat '%s'", f->path);
        }
        close(f->fd);
        f->fd = -1;
        if (rc == DIRLOCK_OK && ++*reopens > DL_FLOCK_REOPENS)
                rc = dl_fail(err, DIRLOCK_EIO, 0, "'%s' was replaced %d times while being locked", f->path,
                             DL_FLOCK_REOPENS);
        if (rc == DIRLOCK_OK)
                rc = file_open(f, err);
        return rc == DIRLOCK_OK ? DL_FLOCK_AGAIN : rc;
}

/* What flock(2) cannot keep is refused, not taken as something weaker:
 * it has a shared and an exclusive lock and nothing else -- no intent
 * lock (two "intent" holders would both get LOCK_SH, and both write), no
 * order among waiters, no hold on new readers for a waiting writer.  A
 * shared lock under policy simple ("one holder at a time") is LOCK_EX;
 * under fair and reader it is LOCK_SH, where readers may keep a writer
 * out, as flock(2) lets them. */
static int flock_refuses(const dirlock *h, dirlock_error *err)
{
        const char *what = h->opts.mode == DIRLOCK_INTENT             ? "intent lock"
                           : (h->opts.flags & DIRLOCK_FIFO)           ? "arrival order (FIFO)"
                           : h->opts.policy == DIRLOCK_POLICY_WRITER ? "writer policy"
                                                                      : NULL;
        if (what == NULL)
                return DIRLOCK_OK;
        return dl_fail(err, DIRLOCK_EINVAL, 0,
                       "lock '%s': flock: spaces have no %s (flock(2) has shared and exclusive locks "
                       "only); a directory, Redis or etcd space has",
                       h->name, what);
}

static int flock_open(dirlock *h, const char *spec, dirlock_error *err)
{
        int refused = flock_refuses(h, err);
        if (refused != DIRLOCK_OK)
                return refused;
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
        f->dir = dir;
        f->path = dl_join(dir, h->name, FLOCK_SUFFIX);
        f->dir_len = strlen(dir);
        f->make_dir = !(h->opts.flags & DIRLOCK_NO_MKDIR);
        if (f->path == NULL) {
                free(f->dir);
                free(f);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        rc = file_open(f, err);
        if (rc != DIRLOCK_OK) {
                free(f->path);
                free(f->dir);
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
        free(f->dir);
        free(f);
        h->impl = NULL;
}

static int flock_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        struct dl_flock *f = h->impl;
        int op = h->opts.mode == DIRLOCK_EXCLUSIVE || h->opts.policy == DIRLOCK_POLICY_SIMPLE ? LOCK_EX : LOCK_SH;
        dl_waiter w;
        dl_waiter_init(&w, f->path, DIRLOCK_NO_NOTIFY, h->token, 0);
        dl_waiter_cancel_on(&w, h->opts.cancel_fd);
        bool block = dl_deadline_never(deadline) && h->opts.cancel_fd < 0;
        int rc, reopens = 0;
        for (;;) {
                if (flock(f->fd, block ? op : op | LOCK_NB) == 0) {
                        rc = confirm_grant(f, &reopens, err);
                        if (rc == DL_FLOCK_AGAIN)
                                continue;
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
                if (w.backoff.base_ms > 8)
                        w.backoff.base_ms = 8; /* keep polling flock reasonably fair */
                int waited = dl_waiter_wait(&w, deadline);
                if (waited != 0) {
                        if (flock(f->fd, op | LOCK_NB) == 0) {
                                rc = confirm_grant(f, &reopens, err);
                                if (rc == DL_FLOCK_AGAIN)
                                        continue;
                        } else if (waited == DIRLOCK_ECANCELED)
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
        if (f->fd < 0)
                return DIRLOCK_OK;
        if (h->opts.flags & DIRLOCK_REENTRANT) {
                /* Kept open for the next hold.  LOCK_UN drops the lock of
                 * the open file description, wherever it was inherited. */
                if (flock(f->fd, LOCK_UN) == 0)
                        return DIRLOCK_OK;
                int rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot unlock '%s'", f->path);
                close(f->fd); /* drops the lock too, unless a forked child shares it */
                f->fd = -1;
                return rc;
        }
        close(f->fd); /* drops the lock */
        f->fd = -1;
        return DIRLOCK_OK;
}

/* Taken again through the same handle (dirlock_reacquire): the file is
 * still open unless a failed unlock closed it.  flock locks have no token
 * to carry. */
static int flock_retoken(dirlock *h, dirlock_error *err)
{
        struct dl_flock *f = h->impl;
        return f->fd >= 0 ? DIRLOCK_OK : file_open(f, err);
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

static const char *const flock_forms[] = {"flock:DIR (flock(2) on files in DIR)", NULL};

static const char *flock_space_key(const dirlock *h)
{
        return ((const struct dl_flock *)h->impl)->dir;
}

static const char *const flock_prefixes[] = {"flock:", NULL};

static const dl_backend dl_flock_backend = {
    .name = "flock",
    .prefixes = flock_prefixes,
    .forms = flock_forms,
    .local = true,
    .open = flock_open,
    .close = flock_close,
    .retoken = flock_retoken,
    .acquire = flock_acquire,
    .release = flock_release,
    .refresh = flock_refresh,
    .check = flock_check,
    .space_key = flock_space_key,
};
DL_BACKEND(dl_flock_backend)

/* The backend's own public entry: a flock lock in directory `dir`
 * (dirlock_flock.h), as "flock:" spaces take them. */
int dirlock_flock_acquire(const char *dir, const char *name, const dirlock_options *opts, dirlock **out,
                          dirlock_error *err)
{
        if (out == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the lock handle");
        *out = NULL;
        if (dir == NULL || dir[0] == '\0')
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no lock directory given");
        dirlock *h;
        int rc = dl_handle_open(&dl_flock_backend, dir, name, opts, &h, err);
        return rc != DIRLOCK_OK ? rc : dl_handle_acquire_new(h, out, err);
}
