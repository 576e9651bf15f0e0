/* handle.c - the life of a lock handle, whatever its backend: options,
 * creation, the public acquire/release/refresh/check entry points (each
 * dispatches to the handle's backend, backend.h), reentrant hold
 * counting, the fork guard, accessors, and dirlock_with().  The calls of
 * the modules (upgrade, ranges, permits, fences) are in their folders and
 * start from here (dl_handle_open_in, dl_handle_held). */
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the hooks a module sets on every handle ---------------------------- */

static const dl_handle_hooks *hooks;

void dl_handle_hooks_set(const dl_handle_hooks *h)
{
        hooks = h;
}

void dl_handle_note_held(const dirlock *h, bool held)
{
        if (hooks != NULL)
                hooks->held(h, held);
}

int dl_handle_thread_holds(const char *token)
{
        return hooks != NULL ? hooks->thread_holds(token) : -1;
}

/* Before a waiting acquire: DIRLOCK_EDEADLK when the thread would wait
 * for itself (the module that keeps the held table knows). */
static int before_wait(const dirlock *h, dirlock_error *err)
{
        return hooks != NULL ? hooks->before_wait(h, err) : DIRLOCK_OK;
}

/* ---- options and creation ------------------------------------------------- */

void dirlock_options_init(dirlock_options *opts)
{
        *opts = (dirlock_options)DIRLOCK_OPTIONS_INIT;
}

static int normalise_options(const dirlock_options *in, dirlock_options *out, dirlock_error *err)
{
        if (in == NULL)
                dirlock_options_init(out);
        else
                *out = *in;
        if (isnan(out->timeout))
                return dl_fail(err, DIRLOCK_EINVAL, 0, "timeout is not a number");
        if (isnan(out->stale_age))
                return dl_fail(err, DIRLOCK_EINVAL, 0, "stale age is not a number");
        if (out->stale_age <= 0)
                out->stale_age = DIRLOCK_DEFAULT_STALE_AGE;
        if (out->stale_age < DIRLOCK_MIN_STALE_AGE)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "stale age %.3g s is below the smallest accepted, %.1f s: a holder refreshes "
                               "every third of it, and shorter gaps lose live holders to scheduling delays",
                               out->stale_age, DIRLOCK_MIN_STALE_AGE);
        if (out->mode < DIRLOCK_EXCLUSIVE || out->mode > DIRLOCK_INTENT)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "unknown lock mode %d", out->mode);
        if (out->policy < DIRLOCK_POLICY_FAIR || out->policy > DIRLOCK_POLICY_SIMPLE)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "unknown reader-writer policy %d", out->policy);
        unsigned known = DIRLOCK_FIFO | DIRLOCK_REENTRANT | DIRLOCK_NO_MKDIR | DIRLOCK_NO_NOTIFY |
                         DIRLOCK_CANCEL_FD | DIRLOCK_ONE_CLIENT | DIRLOCK_NO_DEADLOCK |
                         DIRLOCK_SERVER_NOTICE | DIRLOCK_THREAD_FD;
        if (out->flags & ~known)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "unknown flags 0x%x", out->flags & ~known);
        if (out->flags & DIRLOCK_CANCEL_FD) {
                if (out->cancel_fd < 0 || fcntl(out->cancel_fd, F_GETFD) < 0)
                        return dl_fail(err, DIRLOCK_EINVAL, 0,
                                       "DIRLOCK_CANCEL_FD with cancel_fd %d, which is not an open descriptor",
                                       out->cancel_fd);
        } else {
                out->cancel_fd = -1;
        }
        if (!(out->flags & DIRLOCK_SERVER_NOTICE)) {
                out->server_notice = NULL;
                out->server_notice_arg = NULL;
        } else if (out->server_notice == NULL) {
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "DIRLOCK_SERVER_NOTICE without a server_notice function");
        }
        if (out->partner_pid < 0)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "partner_pid %ld is not a process id",
                               (long)out->partner_pid);
        return DIRLOCK_OK;
}

int dl_handle_open(const dl_backend *be, const char *spec, const char *name, const dirlock_options *opts,
                   dirlock **out, dirlock_error *err)
{
        *out = NULL;
        if (!dirlock_name_valid(name))
                return dl_fail(err, DIRLOCK_ENAME, 0,
                               "invalid lock name '%.80s%s': use 1-%d characters of A-Z a-z 0-9 . _ -, "
                               "not starting with a dot",
                               name ? name : "(null)", name && strlen(name) > 80 ? "..." : "",
                               DIRLOCK_NAME_MAX);
        dirlock *h = calloc(1, sizeof *h);
        if (h == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        int rc = normalise_options(opts, &h->opts, err);
        if (rc == DIRLOCK_OK)
                rc = dl_random_token(h->token, err);
        if (rc == DIRLOCK_OK && h->opts.partner_pid > 0) {
                h->partner_start = dl_process_start_time(h->opts.partner_pid);
                if (h->partner_start == 0 && errno == ENOENT)
                        rc = dl_fail(err, DIRLOCK_EINVAL, 0, "partner process %ld does not exist",
                                     (long)h->opts.partner_pid);
                else if (h->partner_start == 0)
                        rc = dl_fail(err, DIRLOCK_EIO, errno,
                                     "cannot read the start time of partner process %ld",
                                     (long)h->opts.partner_pid);
        }
        if (rc != DIRLOCK_OK) {
                free(h);
                return rc;
        }
        strcpy(h->name, name);
        h->mode = h->opts.mode;
        h->pid = dl_self_pid();
        rc = be->open(h, spec, err);
        if (rc != DIRLOCK_OK) {
                free(h);
                return rc;
        }
        h->be = be;
        *out = h;
        return DIRLOCK_OK;
}

void dl_handle_free(dirlock *h)
{
        if (h == NULL)
                return;
        dl_handle_note_held(h, false);
        h->be->close(h);
        free(h);
}

int dl_handle_owned(const dirlock *h, dirlock_error *err)
{
        pid_t self = dl_self_pid();
        if (h->pid != self)
                return dl_fail(
                    err, DIRLOCK_ENOTOWNER, 0,
                    "lock '%s' belongs to process %ld, not to this process %ld (a child after fork "
                    "does not own its parent's locks)",
                    h->name, (long)h->pid, (long)self);
        return DIRLOCK_OK;
}

int dl_handle_new_token(dirlock *h, dirlock_error *err)
{
        /* A hold a failed release left is found under the old token: let
         * it go first.  While it cannot be, the lock is not taken anew (it
         * would wait on its own hold until that went stale). */
        int rc = h->be->release_kept != NULL ? h->be->release_kept(h, err) : DIRLOCK_OK;
        if (rc == DIRLOCK_OK)
                rc = dl_random_token(h->token, err);
        return rc == DIRLOCK_OK ? h->be->retoken(h, err) : rc;
}

int dl_handle_usable(const dirlock *h, dirlock_error *err)
{
        if (h == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no lock handle");
        return dl_handle_owned(h, err);
}

void dl_handle_forget_cancel(dirlock *h)
{
        h->opts.flags &= ~DIRLOCK_CANCEL_FD;
        h->opts.cancel_fd = -1;
}

int dl_handle_acquire_new(dirlock *h, dirlock **out, dirlock_error *err)
{
        dl_time deadline = dl_deadline(h->opts.timeout);
        int rc = before_wait(h, err);
        if (rc == DIRLOCK_OK)
                rc = h->be->acquire(h, &deadline, err);
        if (rc != DIRLOCK_OK) {
                if (h->be->release_kept != NULL)
                        (void)h->be->release_kept(h, NULL); /* an entry a failed step left */
                dl_handle_free(h);
                return rc;
        }
        dl_handle_forget_cancel(h);
        h->holds = 1;
        dl_handle_note_held(h, true);
        *out = h;
        dl_ok(err);
        return DIRLOCK_OK;
}

int dl_handle_open_in(const char *space, const char *name, const dirlock_options *opts, dirlock **out,
                      dirlock_error *err)
{
        *out = NULL;
        const dl_backend *be;
        const char *spec;
        int rc = dl_space_resolve(space, &be, &spec, err);
        return rc != DIRLOCK_OK ? rc : dl_handle_open(be, spec, name, opts, out, err);
}

int dirlock_acquire(const char *space, const char *name, const dirlock_options *opts, dirlock **out,
                    dirlock_error *err)
{
        if (out == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the lock handle");
        dirlock *h;
        int rc = dl_handle_open_in(space, name, opts, &h, err);
        return rc != DIRLOCK_OK ? rc : dl_handle_acquire_new(h, out, err);
}

int dirlock_reacquire(dirlock *lock, dirlock_error *err)
{
        int rc = dl_handle_usable(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (!(lock->opts.flags & DIRLOCK_REENTRANT))
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "lock '%s' was not acquired with DIRLOCK_REENTRANT; a second hold would "
                               "deadlock",
                               lock->name);
        if (lock->holds > 0) {
                rc = lock->be->check(lock, err);
                if (rc == DIRLOCK_OK) {
                        lock->holds++;
                        dl_ok(err);
                }
                return rc;
        }
        /* Released to zero earlier: take the lock again, with a new token
         * (tokens are never reused: INVARIANT B in dir/exclusive.c). */
        if (lock->be->retoken == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "%s locks cannot be taken again through the same handle", lock->be->name);
        /* The timeout counts from here: a release retried first
         * (dl_handle_new_token) spends it too. */
        dl_time deadline = dl_deadline(lock->opts.timeout);
        rc = dl_handle_new_token(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        lock->mode = lock->opts.mode;
        lock->fence = 0;
        rc = before_wait(lock, err);
        if (rc == DIRLOCK_OK)
                rc = lock->be->acquire(lock, &deadline, err);
        if (rc == DIRLOCK_OK) {
                lock->holds = 1;
                dl_handle_note_held(lock, true);
                dl_ok(err);
        }
        return rc;
}

/* Let go of the lock itself (not the handle). */
static int release_lock(dirlock *lock, dirlock_error *err)
{
        int rc = lock->be->release(lock, err);
        lock->holds = 0;
        dl_handle_note_held(lock, false);
        if (rc == DIRLOCK_OK)
                dl_ok(err);
        return rc;
}

int dirlock_release(dirlock *lock, dirlock_error *err)
{
        if (lock == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no lock handle");
        int rc = dl_handle_owned(lock, err);
        if (rc != DIRLOCK_OK) {
                /* A forked child: free its copy, leave the parent's lock. */
                if (!(lock->opts.flags & DIRLOCK_REENTRANT))
                        dl_handle_free(lock);
                return rc;
        }
        if (lock->opts.flags & DIRLOCK_REENTRANT) {
                /* A reentrant handle is a lock object: it outlives its holds
                 * and is freed by dirlock_free(). */
                if (lock->holds == 0)
                        return dl_fail(err, DIRLOCK_EBALANCE, 0,
                                       "lock '%s' released more often than acquired", lock->name);
                if (--lock->holds > 0)
                        return DIRLOCK_OK;
                return release_lock(lock, err);
        }
        rc = release_lock(lock, err);
        dl_handle_free(lock);
        return rc;
}

int dirlock_free(dirlock *lock, dirlock_error *err)
{
        if (lock == NULL)
                return DIRLOCK_OK;
        int rc = DIRLOCK_OK;
        if (dl_handle_owned(lock, NULL) == DIRLOCK_OK) {
                if (lock->holds > 0)
                        rc = release_lock(lock, err);
                else if (lock->be->release_kept != NULL)
                        rc = lock->be->release_kept(lock, err); /* what a failed release left */
        }
        dl_handle_free(lock);
        return rc;
}

/* A handle of ours that holds its lock: a reentrant handle released to
 * zero holds does not, whatever its backend still has in place (an entry
 * a failed release could not remove is no hold of the caller's). */
int dl_handle_held(const dirlock *lock, dirlock_error *err)
{
        int rc = dl_handle_usable(lock, err);
        if (rc == DIRLOCK_OK && lock->holds == 0)
                return dl_fail(err, DIRLOCK_ELOST, 0, "lock '%s' is not held", lock->name);
        return rc;
}

int dirlock_refresh(dirlock *lock, dirlock_error *err)
{
        int rc = dl_handle_held(lock, err);
        return rc != DIRLOCK_OK ? rc : lock->be->refresh(lock, err);
}

int dirlock_check(const dirlock *lock, dirlock_error *err)
{
        int rc = dl_handle_held(lock, err);
        return rc != DIRLOCK_OK ? rc : lock->be->check(lock, err);
}

/* A copy forked off with the hold becomes its process's too: nothing of a
 * backend's state in the handle belongs to a process (tokens, paths,
 * lease ids, a flock descriptor shared with the parent); what does --
 * connections, the inotify hub -- is per thread and made again in a
 * forked child (see dirlock.h). */
int dirlock_adopt(dirlock *lock, dirlock_error *err)
{
        if (lock == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no lock handle");
        pid_t self = dl_self_pid();
        if (lock->pid == self)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "lock '%s' is this process's already: nothing to adopt", lock->name);
        if (lock->holds == 0)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "lock '%s' holds nothing to adopt", lock->name);
        lock->pid = self;
        dl_ok(err);
        return DIRLOCK_OK;
}

const char *dirlock_name(const dirlock *lock)
{
        return lock->name;
}

const char *dirlock_token(const dirlock *lock)
{
        return lock->token;
}

int dirlock_mode_of(const dirlock *lock)
{
        return lock->mode;
}

int dirlock_with(const char *space, const char *name, const dirlock_options *opts, int (*fn)(void *arg),
                 void *arg, int *fn_result, dirlock_error *err)
{
        if (fn == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no function to run");
        dirlock *h;
        int rc = dirlock_acquire(space, name, opts, &h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        int result = fn(arg);
        if (fn_result != NULL)
                *fn_result = result;
        return dirlock_free(h, err); /* frees reentrant handles too */
}
