/* locking.c - a lock mode's row (lockmode.h) carried out with dirlock
 * library calls (see locking.h). */
#include "locking.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dirlock.h"
#include "dirlock_fence.h"
#include "dirlock_flock.h"
#include "dirlock_permit.h"
#include "dirlock_rw.h"

static int lock_error(const struct board_config *cfg, int code, const dirlock_error *de,
                      struct board_error *err)
{
        if (code == DIRLOCK_ETIMEDOUT || code == DIRLOCK_EBUSY) {
                /* Not only posts hold it: any program working on the
                 * board's data may (dirlock(1) from a shell, a backup). */
                board_fail(err, 503,
                           "busy, please try again (the board's lock was held for all of the %g s wait, by "
                           "another post or delete, or by a program working on the board's data)",
                           cfg->lock_timeout);
                err->retry_after = 1;
                return -1;
        }
        if (code == DIRLOCK_EDEADLK) { /* locks taken in an order another request took otherwise */
                board_fail(err, 503, "busy, please try again (%s)",
                           de->message[0] ? de->message : dirlock_strerror(code));
                err->retry_after = 1;
                return -1;
        }
        if (code == DIRLOCK_ESERVER) {
                board_fail(err, 503,
                           "the lock server cannot be reached; nothing was written, please try again (%s)",
                           de->message[0] ? de->message : dirlock_strerror(code));
                err->retry_after = 1;
                return -1;
        }
        if (code == DIRLOCK_ELOST) { /* the library says how: broken as stale, or gone from the server */
                board_fail(err, 503, "The board's lock was lost (%s); nothing was written, please try again",
                           de->message[0] ? de->message : dirlock_strerror(code));
                err->retry_after = 1;
                return -1;
        }
        /* A lock directory whose storage is out of reach (a network
         * filesystem's server or link down) is no fault of the request. */
        int status = code == DIRLOCK_EIO ? storage_status(de->sys_errno) : 500;
        board_fail(err, status, "lock error: %s%s", de->message[0] ? de->message : dirlock_strerror(code),
                   code == DIRLOCK_EIO ? storage_hint(de->sys_errno) : "");
        err->retry_after = status == 503 ? 1 : 0;
        return -1;
}

int board_post_gate(const struct board_config *cfg, struct board_lock *lk, struct board_error *err)
{
        lk->cfg = cfg;
        lk->handle = NULL;
        lk->fence = 0;
        if (cfg->max_waiting_posts <= 0)
                return 0;
        dirlock_options opts;
        dirlock_options_init(&opts);
        opts.timeout = 0; /* never waits: that is the point */
        opts.stale_age = cfg->stale_age;
        dirlock_error de = {0, 0, ""};
        int rc = dirlock_acquire_permit(cfg->gate_space, BOARD_GATE_LOCK_NAME,
                                        (unsigned)cfg->max_waiting_posts, &opts, &lk->handle, &de);
        if (rc == DIRLOCK_EBUSY) {
                board_fail(err, 503,
                           "busy, please try again: %ld posts are waiting for the board already (nothing was "
                           "stored)",
                           cfg->max_waiting_posts);
                err->retry_after = 1;
                return -1;
        }
        return rc == DIRLOCK_OK ? 0 : lock_error(cfg, rc, &de, err);
}

/* Take lock `name`; 1 when the wait was canceled through cancel_fd.
 * `flags` are extra dirlock flags (DIRLOCK_REENTRANT for a kept handle). */
static int take_flagged(const struct board_config *cfg, const char *name, struct board_lock *lk, int mode,
                        int use_flock, unsigned flags, double timeout, int cancel_fd, struct board_error *err)
{
        dirlock_options opts;
        dirlock_options_init(&opts);
        opts.flags |= flags;
        opts.timeout = timeout;
        if (cancel_fd >= 0) {
                opts.flags |= DIRLOCK_CANCEL_FD;
                opts.cancel_fd = cancel_fd;
        }
        opts.stale_age = cfg->stale_age;
        if (cfg->single_host)
                opts.flags |= DIRLOCK_ONE_CLIENT; /* config.h */
        opts.mode = mode;
        opts.policy = DIRLOCK_POLICY_FAIR;
        dirlock_error de = {0, 0, ""};
        dirlock *h = NULL;
        /* flock mode: flock(2) on files in the lock space's directory
         * (config.c allows only a space that has one). */
        int rc = use_flock ? dirlock_flock_acquire(cfg->lock_dir, name, &opts, &h, &de)
                           : dirlock_acquire(cfg->lock_space, name, &opts, &h, &de);
        if (rc == DIRLOCK_ECANCELED)
                return 1;
        if (rc != DIRLOCK_OK)
                return lock_error(cfg, rc, &de, err);
        lk->handle = h;
        return 0;
}

static int take_named(const struct board_config *cfg, const char *name, struct board_lock *lk, int mode,
                      int use_flock, double timeout, int cancel_fd, struct board_error *err)
{
        return take_flagged(cfg, name, lk, mode, use_flock, 0, timeout, cancel_fd, err);
}

/* Draw the fence of the write lock just taken (fence.h); a lock without
 * fences (flock) leaves it 0.  Losing the lock already is a 503. */
static int draw_fence(struct board_lock *lk, int rc, struct board_error *err)
{
        lk->fence = 0;
        if (rc != 0 || !lk->handle)
                return rc;
        dirlock_error de = {0, 0, ""};
        int code = dirlock_fence(lk->handle, &lk->fence, &de);
        if (code == DIRLOCK_OK)
                return 0;
        lk->fence = 0;
        if (code == DIRLOCK_EINVAL)
                return 0;
        (void)dirlock_release(lk->handle, NULL);
        lk->handle = NULL;
        return lock_error(lk->cfg, code, &de, err);
}

/* The write lock of the mode's row (lockmode.h) on the log, with its
 * fence when the row has fences. */
static int take_write(const struct board_config *cfg, const struct board_lock_mode_row *row,
                      struct board_lock *lk, double timeout, int cancel_fd, struct board_error *err)
{
        int rc = take_named(cfg, BOARD_LOCK_NAME, lk, row->write, row->flock, timeout, cancel_fd, err);
        return row->fenced ? draw_fence(lk, rc, err) : rc;
}

int board_lock_named(const struct board_config *cfg, const char *name, struct board_lock *lk,
                     struct board_error *err)
{
        const struct board_lock_mode_row *row = board_lock_mode_row(cfg->lock_mode);
        lk->cfg = cfg;
        lk->handle = NULL;
        lk->fence = 0;
        if (!row->side_locks)
                return 0;
        return take_named(cfg, name, lk, DIRLOCK_EXCLUSIVE, row->flock, cfg->lock_timeout, -1, err);
}

int board_lock_always(const struct board_config *cfg, const char *name, struct board_lock *lk,
                      struct board_error *err)
{
        if (!board_lock_mode_row(cfg->lock_mode)->side_locks) /* none, wrong: the library's lock */
                return board_lock_exclusive(cfg, name, lk, cfg->lock_timeout, -1, err);
        return board_lock_named(cfg, name, lk, err);
}

int board_lock_rate(const struct board_config *cfg, struct board_lock *lk, struct board_error *err)
{
        return board_lock_named(cfg, BOARD_RATE_LOCK_NAME, lk, err);
}

int board_lock_exclusive(const struct board_config *cfg, const char *name, struct board_lock *lk,
                         double timeout, int cancel_fd, struct board_error *err)
{
        lk->cfg = cfg;
        lk->handle = NULL;
        lk->fence = 0;
        int rc = take_named(cfg, name, lk, DIRLOCK_EXCLUSIVE, 0, timeout, cancel_fd, err);
        return strcmp(name, BOARD_LOCK_NAME) == 0 ? draw_fence(lk, rc, err) : rc;
}

/* The process's shared locks of the log for page views: one reentrant
 * handle (a lock object) per board it serves, taken again for each view
 * with dirlock_reacquire() and released to zero holds after it.  For
 * flock this keeps the lock file open between views (flock.c), which is
 * most of what a shared flock costs; for rw it saves the handle's set-up.
 * A process usually serves one board, but BOARD_CONF can name a board per
 * request, so a few handles are kept, matched by the settings they were
 * made with; the least recently used one that no view holds makes room.
 *
 * `holds` counts the views holding a kept handle now (one view in a plain
 * FastCGI loop; more only if views nest), so that a handle is never freed
 * under a view that holds it: a handle still held is not reused for other
 * settings, and when every slot is held a view takes a lock of its own.
 *
 * fork(): a child must not keep its parent's handles.  A flock handle's
 * open file is shared with the parent, so a lock the parent takes later
 * would outlive the parent's death while the child lives (flock.c).  A
 * pthread_atfork() child handler frees, in the child, every kept handle
 * no view holds (closing the child's copy, leaving the parent's locks);
 * one a view held at the fork is marked foreign, never matched again, and
 * freed when that view lets go. */
#define KEPT_READERS 4

struct kept_reader {
        struct dirlock *handle; /* NULL: a free slot */
        unsigned holds;
        bool foreign;       /* inherited over fork() while held */
        unsigned long used; /* kept_clock at its last view */
        char *space;        /* the settings it was made with */
        enum board_lock_mode lock_mode;
        double lock_timeout, stale_age;
};

static struct kept_reader kept[KEPT_READERS];
static unsigned long kept_clock;
static pthread_once_t kept_atfork_once = PTHREAD_ONCE_INIT;

static void reader_forget(struct kept_reader *r)
{
        (void)dirlock_free(r->handle, NULL); /* a forked child's copy: freed, the parent's lock left */
        free(r->space);
        memset(r, 0, sizeof *r);
}

static bool reader_fits(const struct kept_reader *r, const struct board_config *cfg)
{
        return r->handle != NULL && !r->foreign && r->space != NULL && r->lock_mode == cfg->lock_mode &&
               r->lock_timeout == cfg->lock_timeout && r->stale_age == cfg->stale_age &&
               strcmp(r->space, cfg->lock_space) == 0;
}

/* In a child after fork(): the parent's handles are not ours. */
static void readers_after_fork(void)
{
        for (int i = 0; i < KEPT_READERS; i++) {
                struct kept_reader *r = &kept[i];
                if (r->handle == NULL)
                        continue;
                if (r->holds == 0)
                        reader_forget(r);
                else
                        r->foreign = true;
        }
}

static void readers_watch_fork(void)
{
        (void)pthread_atfork(NULL, NULL, readers_after_fork);
}

/* The kept handle for these settings, or NULL. */
static struct kept_reader *reader_find(const struct board_config *cfg)
{
        for (int i = 0; i < KEPT_READERS; i++)
                if (reader_fits(&kept[i], cfg))
                        return &kept[i];
        return NULL;
}

/* A slot for a new handle: a free one, else the least recently used one
 * no view holds (its handle freed); NULL when every one is held. */
static struct kept_reader *reader_slot(void)
{
        struct kept_reader *best = NULL;
        for (int i = 0; i < KEPT_READERS; i++) {
                struct kept_reader *r = &kept[i];
                if (r->handle == NULL)
                        return r;
                if (r->holds == 0 && (best == NULL || r->used < best->used))
                        best = r;
        }
        if (best != NULL)
                reader_forget(best);
        return best;
}

static void reader_keep(struct kept_reader *r, const struct board_config *cfg, struct dirlock *handle)
{
        (void)pthread_once(&kept_atfork_once, readers_watch_fork);
        r->handle = handle;
        r->holds = 1;
        r->used = ++kept_clock;
        r->space = strdup(cfg->lock_space); /* NULL: fits nothing, its slot reused later */
        r->lock_mode = cfg->lock_mode;
        r->lock_timeout = cfg->lock_timeout;
        r->stale_age = cfg->stale_age;
}

/* After a view's release of `handle`: one hold less if it is kept (and a
 * foreign handle goes with its last hold). */
static void reader_released(const struct dirlock *handle)
{
        for (int i = 0; i < KEPT_READERS; i++) {
                struct kept_reader *r = &kept[i];
                if (r->handle == handle && r->holds > 0) {
                        if (--r->holds == 0 && r->foreign)
                                reader_forget(r);
                        return;
                }
        }
}

/* The read lock of the mode's row on the log, through a kept handle. */
static int take_shared(const struct board_config *cfg, const struct board_lock_mode_row *row,
                       struct board_lock *lk, struct board_error *err)
{
        struct kept_reader *r = reader_find(cfg);
        if (r != NULL) {
                dirlock_error de = {0, 0, ""};
                int rc = dirlock_reacquire(r->handle, &de);
                if (rc == DIRLOCK_OK) {
                        r->holds++;
                        r->used = ++kept_clock;
                        lk->handle = r->handle;
                        return 0;
                }
                /* A timeout leaves a handle that is fine, and so does any
                 * error while an outer view holds it.  So does a lock
                 * server out of reach: a new handle could not lock either,
                 * and this one releases first, when the server answers
                 * again, a hold its last release may have left there
                 * (freeing it now would leave that hold until it expired,
                 * holding writers off).  After any other error this view
                 * starts again from a new handle. */
                if (rc == DIRLOCK_ETIMEDOUT || rc == DIRLOCK_EBUSY || rc == DIRLOCK_ESERVER || r->holds > 0)
                        return lock_error(cfg, rc, &de, err);
                reader_forget(r);
        }
        r = reader_slot();
        int rc = take_flagged(cfg, BOARD_LOCK_NAME, lk, row->read, row->flock,
                              r != NULL ? DIRLOCK_REENTRANT : 0, cfg->lock_timeout, -1, err);
        if (rc == 0 && r != NULL)
                reader_keep(r, cfg, lk->handle);
        return rc;
}

int board_lock_read(const struct board_config *cfg, struct board_lock *lk, struct board_error *err)
{
        const struct board_lock_mode_row *row = board_lock_mode_row(cfg->lock_mode);
        lk->cfg = cfg;
        lk->handle = NULL;
        lk->fence = 0;
        if (row->read == BOARD_LOCK_NOTHING)
                return 0;
        return take_shared(cfg, row, lk, err);
}

int board_lock_write_begin(const struct board_config *cfg, struct board_lock *lk, struct board_error *err)
{
        return board_lock_write_wait(cfg, lk, cfg->lock_timeout, -1, err);
}

int board_lock_write_wait(const struct board_config *cfg, struct board_lock *lk, double timeout,
                          int cancel_fd, struct board_error *err)
{
        const struct board_lock_mode_row *row = board_lock_mode_row(cfg->lock_mode);
        lk->cfg = cfg;
        lk->handle = NULL;
        lk->fence = 0;
        if (row->write == BOARD_LOCK_NOTHING || row->write_after_read)
                return 0;
        return take_write(cfg, row, lk, timeout, cancel_fd, err);
}

static int upgrade(struct board_lock *lk, struct board_error *err)
{
        dirlock_error de = {0, 0, ""};
        int rc = dirlock_upgrade(lk->handle, NULL, &de);
        if (rc != DIRLOCK_OK)
                return lock_error(lk->cfg, rc, &de, err);
        return 0;
}

int board_lock_write_commit(struct board_lock *lk, struct board_error *err)
{
        const struct board_config *cfg = lk->cfg;
        const struct board_lock_mode_row *row = board_lock_mode_row(cfg->lock_mode);
        if (row->write != BOARD_LOCK_NOTHING && row->write_after_read)
                return take_write(cfg, row, lk, cfg->lock_timeout, -1, err);
        /* rw: an in-place write is seen by readers as it happens, so it
         * needs the exclusive lock before it starts.  A rename write does
         * not: its temp file is written and synced while readers go on
         * (that is what the intent lock is for), and the upgrade waits
         * until board_lock_make_exclusive(), right before the rename;
         * board_lock_write_visible() steps back to intent right after it. */
        if (row->upgrade_before_inplace && lk->handle && cfg->write_method == BOARD_WRITE_INPLACE)
                return upgrade(lk, err);
        return 0;
}

int board_lock_make_exclusive(struct board_lock *lk, struct board_error *err)
{
        if (!lk->handle)
                return 0;
        if (dirlock_mode_of(lk->handle) == DIRLOCK_INTENT)
                return upgrade(lk, err); /* also proves the lock is still ours */
        dirlock_error de = {0, 0, ""};
        int rc = dirlock_check(lk->handle, &de);
        if (rc != DIRLOCK_OK)
                return lock_error(lk->cfg, rc, &de, err);
        return 0;
}

void board_lock_write_visible(struct board_lock *lk)
{
        if (lk->handle && board_lock_mode_row(lk->cfg->lock_mode)->write == DIRLOCK_INTENT &&
            dirlock_mode_of(lk->handle) == DIRLOCK_EXCLUSIVE) {
                dirlock_error ignored = {0, 0, ""};
                (void)dirlock_downgrade_intent(lk->handle, &ignored);
        }
}

int board_lock_release(struct board_lock *lk, struct board_error *err)
{
        if (!lk->handle)
                return 0;
        dirlock_error de = {0, 0, ""};
        int rc = dirlock_release(lk->handle, &de);
        reader_released(lk->handle); /* may free it: last */
        lk->handle = NULL;
        if (rc == DIRLOCK_ELOST)
                return board_fail(err, 500,
                                  "the board's lock was lost before it was released (%s); the change was "
                                  "written while the lock was still ours, but another writer may have run "
                                  "since (if it was broken as stale, raise stale_age)",
                                  de.message[0] ? de.message : dirlock_strerror(rc));
        /* A lock server gone after the write: the write was made under the
         * lock and admitted by its fence; the server frees the lock by
         * itself after the stale age (or lost it in a restart), unless a
         * kept view handle releases it first (take_shared). */
        if (rc == DIRLOCK_ESERVER)
                return 0;
        if (rc != DIRLOCK_OK)
                return board_fail(err, 500, "cannot release the board's lock: %s",
                                  de.message[0] ? de.message : dirlock_strerror(rc));
        return 0;
}

int board_lock_finish(struct board_lock *lk, int rc, struct board_error *err)
{
        struct board_error rel = BOARD_ERROR_INIT;
        /* What the lock guarded is done by now, or failed on its own: a
         * release that fails cannot undo a change made under the lock
         * (checked and fenced right before it was made), and an error
         * answer for a stored post would have its author post it again.
         * So it is reported on stderr (the server's error log) only. */
        if (board_lock_release(lk, &rel) != 0 && rc == 0)
                fprintf(stderr, "board: %s (the request itself was done)\n", rel.msg);
        (void)err;
        return rc;
}
