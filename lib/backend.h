/* backend.h - the seam between the public calls and the lock backends.
 *
 * A lock space is named by a string: a directory path (the directory
 * backend, dir.h), "flock:PATH" (the kernel's flock(2) on files in PATH,
 * flock.c), or "SCHEME://..." for backends that keep their locks
 * elsewhere (redis:// and redis+unix://, redis_backend.c).  space.c picks the backend from the string;
 * handle.c, multi.c and admin.c call it only through this table, and no backend knows of another.
 *
 * A backend implements what it can; a NULL entry means the operation is
 * not available in that kind of space, and the public call says so
 * (DIRLOCK_EINVAL or DIRLOCK_EUPGRADE, naming the backend).  Every entry
 * returns DIRLOCK_OK or a dirlock_code, filling err. */
#ifndef DIRLOCK_BACKEND_H
#define DIRLOCK_BACKEND_H

#include "internal.h"

typedef struct dl_backend {
        const char *name; /* "directory", "flock", ... for messages */

        /* ---- one lock, through its handle ------------------------------ */

        /* Set up h->impl for lock h->name in space `spec` (the space string
         * without its scheme) with h->opts; no lock is taken.  May create
         * the space (a directory) unless DIRLOCK_NO_MKDIR. */
        int (*open)(dirlock *h, const char *spec, dirlock_error *err);
        /* Free h->impl (the lock is released or was never taken). */
        void (*close)(dirlock *h);
        /* The handle drew a new token (dirlock_reacquire): rebuild what
         * depends on it.  NULL: a lock of this kind cannot be taken again
         * through the same handle. */
        int (*retoken)(dirlock *h, dirlock_error *err);
        /* Take the lock in h->opts.mode by the deadline, waiting as this
         * backend can wait (how to learn of a release is the backend's:
         * inotify and pidfds for directories, notifications for a
         * server).  Honours h->opts.cancel_fd. */
        int (*acquire)(dirlock *h, const dl_time *deadline, dirlock_error *err);
        /* Take all of hs[0..n-1] -- open handles of this backend in one
         * space, distinct names in strcmp order, the same options -- in one
         * atomic step by the deadline: all or none.  NULL: multi.c takes
         * them one by one in name order (deadlock-free by that order). */
        int (*acquire_many)(dirlock **hs, size_t n, const dl_time *deadline, dirlock_error *err);
        /* Let go of whatever h holds; DIRLOCK_ELOST when it had been
         * broken (another holder's lock is left alone). */
        int (*release)(dirlock *h, dirlock_error *err);
        /* Try again a release that failed and left h's hold in place (an
         * entry it could not remove); DIRLOCK_OK when nothing was left, or
         * it is gone now.  Called before a new token is drawn (h->token
         * still names the hold), by dirlock_free() of a handle that holds
         * nothing and after a failed acquire.  NULL: not retried (flock: a
         * failed unlock closes the file, which drops the lock).  Redis: a
         * release that got no answer is sent again (the hold also expires
         * after its stale age). */
        int (*release_kept)(dirlock *h, dirlock_error *err);
        int (*refresh)(dirlock *h, dirlock_error *err);
        int (*check)(const dirlock *h, dirlock_error *err);
        /* Draw this acquisition's fence (dirlock_fence) while the lock is
         * held; DIRLOCK_ELOST when it is not.  NULL: no fences here. */
        int (*fence)(dirlock *h, unsigned long long *fence, dirlock_error *err);
        /* Range locks (NULL: not offered).  `range` makes a handle that is
         * open but not yet acquired a lock of [h->lo, h->hi), which
         * acquire then takes; `shrink` narrows a held range at once. */
        int (*range)(dirlock *h, dirlock_error *err);
        int (*shrink)(dirlock *h, double lo, double hi, dirlock_error *err);
        /* Intent -> exclusive, exclusive -> shared, upgraded intent ->
         * intent (NULL: not offered; handle.c checks the modes). */
        int (*upgrade)(dirlock *h, const dirlock_options *opts, dirlock_error *err);
        int (*downgrade)(dirlock *h, dirlock_error *err);
        int (*downgrade_intent)(dirlock *h, dirlock_error *err);

        /* ---- the space, from outside its holders ------------------------ */

        int (*inspect)(const char *spec, const char *name, double stale_age, dirlock_owner *owner,
                       dirlock_error *err);
        int (*break_lock)(const char *spec, const char *name, double stale_age, int force,
                          dirlock_error *err);
        int (*cleanup)(const char *spec, dirlock_error *err);
        /* The range holders and waiters of `name` (NULL: no ranges). */
        int (*ranges)(const char *spec, const char *name, dirlock_range_info **out, size_t *count,
                      dirlock_error *err);
        /* The names of the locks that exist (held, or with readers or
         * waiters), each once, in any order: malloc'd array of malloc'd
         * strings in *names, their number in *count. */
        int (*list)(const char *spec, char ***names, size_t *count, dirlock_error *err);
} dl_backend;

extern const dl_backend dl_dir_backend;
extern const dl_backend dl_flock_backend;
extern const dl_backend dl_redis_backend; /* redis.h; only with DIRLOCK_WITH_REDIS */

/* The backend of lock space `space` and its spec (a pointer into space,
 * after the scheme).  DIRLOCK_EINVAL for an empty or unknown one. */
int dl_space_resolve(const char *space, const dl_backend **be, const char **spec, dirlock_error *err);

/* A handle of backend `be` for lock `name` in `spec`: validates the name
 * and the options, draws a token, opens it (be->open). */
int dl_handle_open(const dl_backend *be, const char *spec, const char *name, const dirlock_options *opts,
                   dirlock **out, dirlock_error *err);

#endif
