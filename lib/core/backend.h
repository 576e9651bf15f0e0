/* backend.h - the seam between the public calls and the lock backends, the
 * contract every backend keeps (docs/backends.md is the checklist for
 * adding one), and the one registry of backends.
 *
 * A lock space is named by a string: a directory path (the directory
 * backend, dir_backend.c, the core's own), or a string that starts with a
 * registered backend's prefix: "flock:PATH" (lib/flock/), "redis://...",
 * "etcd://..." (lib/redis/, lib/etcd/), or whatever backend is added next.
 * space.c picks the backend from the string; handle.c, multi.c and
 * admin.c call a backend only through its table below, and no backend
 * knows of another.
 *
 * THE REGISTRY.  A backend adds itself: DL_BACKEND(its table), in its own
 * folder, registers it when the program or library it is linked into is
 * loaded (DL_ON_LOAD, core.h).  Nothing names every backend.  A backend
 * that needs client libraries of its own is built as a shared object of
 * its own (lib/NAME/NAME.mk): the library loads it on the first use of
 * its scheme (lib/loader/), and its table registers as it loads.
 *
 * THE CONTRACT.
 *   - Required entries: open, close, acquire, release, refresh, check.
 *     The neutral layer calls them without a NULL check.  Every other
 *     entry may be NULL: the operation is not offered in that kind of
 *     space, and the public call says so (DIRLOCK_EINVAL, or
 *     DIRLOCK_EUPGRADE for upgrade), naming the backend.  retoken is
 *     needed for DIRLOCK_REENTRANT handles to be taken again.
 *   - Every entry returns DIRLOCK_OK or a dirlock_code and fills err (which
 *     may be NULL) with a message naming the lock and, where there is one,
 *     the path or server.
 *   - The neutral layer has validated the name and the options (handle.c)
 *     and checked that the calling process owns the handle before an entry
 *     on a handle is called; a handle is used by one thread at a time.
 *   - Waiting: acquire and upgrade wait by the deadline they are given,
 *     never past it, learning of releases as the backend can (inotify and
 *     pidfds for directories, notifications for a server), never with a
 *     fixed sleep alone, and every wait through dl_poll (core.h), so that
 *     a pending acquire (lib/async) waits without blocking; they give up
 *     with DIRLOCK_ECANCELED when h->opts.cancel_fd polls readable; a try
 *     (timeout 0) judges the holder in its way exactly as a waiting
 *     acquire does (a holder that is provably dead on this host does not
 *     make a try fail).
 *   - A hold never outlives its owner for good: an owner that dies on
 *     this host lets its locks go at once, one on another host after the
 *     stale age (h->opts.stale_age, renewed by refresh).
 * Test hooks (DIRLOCK_TEST_*) are listed in test_hooks.h. */
#ifndef DIRLOCK_BACKEND_H
#define DIRLOCK_BACKEND_H

#include "core.h"

/* The types of what the modules' entries list (dirlock_range.h,
 * dirlock_deadlock.h): the seam passes them on. */
struct dirlock_range_info;
struct dirlock_waiter;

typedef struct dl_backend {
        const char *name; /* "directory", "flock", "Redis": for messages */
        /* The prefixes that name its spaces ("flock:", "redis://", ...),
         * NULL-terminated; the directory backend has none (every string
         * no prefix claims is a directory). */
        const char *const *prefixes;
        /* The forms of its lock space strings, for usage texts and
         * messages (dirlock_space_form), NULL-terminated; the grammar
         * itself lives with the backend's parser. */
        const char *const *forms;
        /* The spec given to its entries is the whole space string, scheme
         * included (a URL); false: what follows the scheme's prefix. */
        bool spec_has_scheme;
        /* The space is a directory of this host's filesystem (its spec is
         * the directory's path), not a server shared by hosts. */
        bool local;

        /* ---- one lock, through its handle ------------------------------ */

        /* Required.  Set up h->impl for lock h->name in space `spec` with
         * h->opts; no lock is taken.  May create the space (a directory)
         * unless DIRLOCK_NO_MKDIR.  On failure h->impl is left NULL or
         * freed. */
        int (*open)(dirlock *h, const char *spec, dirlock_error *err);
        /* Required.  Free h->impl (the lock is released or was never
         * taken; close never releases). */
        void (*close)(dirlock *h);
        /* The handle drew a new token (dirlock_reacquire, after
         * release_kept): rebuild what depends on it.  NULL: a lock of this
         * kind cannot be taken again through the same handle. */
        int (*retoken)(dirlock *h, dirlock_error *err);
        /* Required.  Take the lock in h->opts.mode (and h->lo, h->hi for a
         * range handle) by the deadline, as the contract above says. */
        int (*acquire)(dirlock *h, const dl_time *deadline, dirlock_error *err);
        /* Take all of hs[0..n-1] -- open handles of this backend in one
         * space, distinct names in strcmp order, the same options -- in one
         * atomic step by the deadline: all or none.  NULL: multi.c takes
         * them one by one in name order (deadlock-free by that order). */
        int (*acquire_many)(dirlock **hs, size_t n, const dl_time *deadline, dirlock_error *err);
        /* Required.  Let go of whatever h holds; DIRLOCK_ELOST when it had
         * been broken (another holder's lock is left alone).  A release
         * that fails leaves what it could not remove to release_kept. */
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
        /* Required.  Renew the hold's age so that no judge finds it stale
         * (a holder calls it at least every stale_age / 3);
         * DIRLOCK_ELOST when it had been broken. */
        int (*refresh)(dirlock *h, dirlock_error *err);
        /* Required.  DIRLOCK_OK while h still holds its lock, DIRLOCK_ELOST
         * when it does not; changes nothing. */
        int (*check)(const dirlock *h, dirlock_error *err);
        /* A string that names h's lock space, the same for every handle of
         * one space in this process (a directory's absolute path): lets
         * deadlock detection tell which locks a thread holds in a space
         * (held.c).  NULL: not told, and no such checks. */
        const char *(*space_key)(const dirlock *h);
        /* Draw this acquisition's fence (dirlock_fence) while the lock is
         * held; DIRLOCK_ELOST when it is not.  NULL: no fences here. */
        int (*fence)(dirlock *h, unsigned long long *fence, dirlock_error *err);
        /* Range locks (NULL: not offered).  `range` makes a handle that is
         * open but not yet acquired a lock of [h->lo, h->hi), which
         * acquire then takes; `shrink` narrows a held range at once. */
        int (*range)(dirlock *h, dirlock_error *err);
        int (*shrink)(dirlock *h, double lo, double hi, dirlock_error *err);
        /* Counting locks (NULL: not offered).  `permit` makes a handle
         * that is open but not yet acquired a permit of counting lock
         * h->name with h->permits permits, which acquire then takes (and
         * release, refresh, check, fence, retoken treat as a lock). */
        int (*permit)(dirlock *h, dirlock_error *err);
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
        /* NULL: nothing is ever left behind (dirlock_cleanup succeeds). */
        int (*cleanup)(const char *spec, dirlock_error *err);
        /* The range holders and waiters of `name` (NULL: no ranges). */
        int (*ranges)(const char *spec, const char *name, struct dirlock_range_info **out, size_t *count,
                      dirlock_error *err);
        /* Every holder of `name` (dirlock_holders: its exclusive lock's
         * holder, each reader, each permit), in any order (NULL: not
         * offered). */
        int (*holders)(const char *spec, const char *name, double stale_age, dirlock_owner **out,
                       size_t *count, dirlock_error *err);
        /* Every waiter of `name` (every name when NULL), in any order; a
         * dead one's entry removed (NULL: not offered). */
        int (*waiters)(const char *spec, const char *name, struct dirlock_waiter **out, size_t *count,
                       dirlock_error *err);
        /* The names of the locks that exist (held, or with readers or
         * waiters), each once, in any order: malloc'd array of malloc'd
         * strings in *names, their number in *count. */
        int (*list)(const char *spec, char ***names, size_t *count, dirlock_error *err);
} dl_backend;

/* The directory backend: the space of every string no prefix claims.
 * Its optional entries are switched on by the modules of the directory
 * backend as they register (dir.h), at load; it is read only after. */
extern dl_backend dl_dir_backend;

/* ---- the registry (space.c) ------------------------------------------- */

typedef struct dl_backend_node {
        const dl_backend *be;
        struct dl_backend_node *next;
} dl_backend_node;
/* Add a backend (through DL_BACKEND, at load): its prefixes name its
 * spaces from now on.  Safe while other threads resolve spaces. */
void dl_backend_register(dl_backend_node *node);
#define DL_BACKEND(table)                                                                                    \
        static dl_backend_node table##_node = {&table, NULL};                                                \
        DL_ON_LOAD(table##_register)                                                                         \
        {                                                                                                    \
                dl_backend_register(&table##_node);                                                          \
        }

/* What finds a backend for a scheme no registered backend claims, set
 * once by the module that loads backends (lib/loader: shared objects, in
 * the shared library only).  `load` makes the backend of `scheme` (the
 * letters before "://") register itself: 1 done, 0 no such backend
 * anywhere, -1 one that cannot be had (err says why, and what to
 * install); `load_all` loads every backend it can find (for usage texts
 * and the list of known kinds); `absent(i, &why)` is the form of the
 * i-th kind this build knows of but could not make (its reason in *why),
 * NULL past the last. */
typedef struct dl_backend_loader {
        int (*load)(const char *scheme, dirlock_error *err);
        void (*load_all)(void);
        const char *(*absent)(size_t i, const char **why);
} dl_backend_loader;
void dl_backend_loader_set(const dl_backend_loader *loader);

/* The backend of lock space `space` and its spec (a pointer into space).
 * DIRLOCK_EINVAL for an empty or unknown one, or one of a backend this
 * program cannot load. */
int dl_space_resolve(const char *space, const dl_backend **be, const char **spec, dirlock_error *err);

/* A handle of backend `be` for lock `name` in `spec`: validates the name
 * and the options, draws a token, opens it (be->open). */
int dl_handle_open(const dl_backend *be, const char *spec, const char *name, const dirlock_options *opts,
                   dirlock **out, dirlock_error *err);
/* Take the lock of a handle just opened (be->acquire by its timeout):
 * *out is the handle, or on failure the handle is freed. */
int dl_handle_acquire_new(dirlock *h, dirlock **out, dirlock_error *err);

#endif
