/* backend.h - the seam between the public calls and the lock backends:
 * the table each backend fills and the one registry of backends.  A lock
 * space is a directory (the core's directory backend, dir_backend.c) or
 * a string a registered backend's prefix claims; space.c picks the
 * backend, and handle.c, multi.c and admin.c call it only through its
 * table.  A backend registers itself (DL_BACKEND, in its own folder); one
 * with client libraries of its own is a shared object lib/loader loads on
 * the first use of its scheme.  THE CONTRACT every backend keeps
 * (required entries, errors, waiting, a try's judgement, dead owners) is
 * docs/backends.md's; test seams: test_hooks.h. */
#ifndef DIRLOCK_BACKEND_H
#define DIRLOCK_BACKEND_H

#include "core.h"

/* What the modules' entries list (dirlock_range.h, dirlock_deadlock.h). */
struct dirlock_range_info;
struct dirlock_waiter;

typedef struct dl_backend {
        const char *name; /* "directory", "flock", "Redis": for messages */
        /* The prefixes that name its spaces, NULL-terminated (none: directories). */
        const char *const *prefixes;
        /* Its space strings' forms, for usage texts, NULL-terminated. */
        const char *const *forms;
        /* Its entries get the whole space string (a URL), else what follows the prefix. */
        bool spec_has_scheme;
        /* The space is a directory of this host, not a server. */
        bool local;

        /* ---- one lock, through its handle ------------------------------ */

        /* Required.  Set up h->impl for h->name in `spec`; takes nothing. */
        int (*open)(dirlock *h, const char *spec, dirlock_error *err);
        /* Required.  Free h->impl; never releases. */
        void (*close)(dirlock *h);
        /* h drew a new token: rebuild what carries it (NULL: no reacquire). */
        int (*retoken)(dirlock *h, dirlock_error *err);
        /* Required.  Take the lock by the deadline. */
        int (*acquire)(dirlock *h, const dl_time *deadline, dirlock_error *err);
        /* Take hs[0..n-1] (distinct names in strcmp order) all or none in
         * one step.  NULL: multi.c takes them one by one in name order. */
        int (*acquire_many)(dirlock **hs, size_t n, const dl_time *deadline, dirlock_error *err);
        /* Required.  Let go of what h holds; DIRLOCK_ELOST when broken. */
        int (*release)(dirlock *h, dirlock_error *err);
        /* Try again a release that failed and left h's hold in place. */
        int (*release_kept)(dirlock *h, dirlock_error *err);
        /* Required.  Renew the hold's age; DIRLOCK_ELOST when broken. */
        int (*refresh)(dirlock *h, dirlock_error *err);
        /* Required.  DIRLOCK_OK while h holds its lock, else DIRLOCK_ELOST. */
        int (*check)(const dirlock *h, dirlock_error *err);
        /* A string naming h's space, one per space (lib/deadlock/held.c). */
        const char *(*space_key)(const dirlock *h);
        /* Draw this acquisition's fence (lib/fence). */
        int (*fence)(dirlock *h, unsigned long long *fence, dirlock_error *err);
        /* Make an open handle a range lock of [h->lo, h->hi); narrow one held. */
        int (*range)(dirlock *h, dirlock_error *err);
        int (*shrink)(dirlock *h, double lo, double hi, dirlock_error *err);
        /* Make an open handle a permit of counting lock h->name (h->permits). */
        int (*permit)(dirlock *h, dirlock_error *err);
        /* Intent -> exclusive, exclusive -> shared, upgraded -> intent. */
        int (*upgrade)(dirlock *h, const dirlock_options *opts, dirlock_error *err);
        int (*downgrade)(dirlock *h, dirlock_error *err);
        int (*downgrade_intent)(dirlock *h, dirlock_error *err);

        /* ---- the space, from outside its holders ------------------------ */

        int (*inspect)(const char *spec, const char *name, double stale_age, dirlock_owner *owner,
                       dirlock_error *err);
        int (*break_lock)(const char *spec, const char *name, double stale_age, int force,
                          dirlock_error *err);
        /* NULL: nothing is ever left behind. */
        int (*cleanup)(const char *spec, dirlock_error *err);

        int (*ranges)(const char *spec, const char *name, struct dirlock_range_info **out, size_t *count,
                      dirlock_error *err);

        int (*holders)(const char *spec, const char *name, double stale_age, dirlock_owner **out,
                       size_t *count, dirlock_error *err);

        int (*waiters)(const char *spec, const char *name, struct dirlock_waiter **out, size_t *count,
                       dirlock_error *err);
        /* The public calls of the same names, in any order; list: malloc'd names. */
        int (*list)(const char *spec, char ***names, size_t *count, dirlock_error *err);
} dl_backend;

/* The directory backend; modules switch its optional entries on (dir.h). */
extern dl_backend dl_dir_backend;

/* ---- the registry (space.c) ------------------------------------------- */

typedef struct dl_backend_node {
        const dl_backend *be;
        struct dl_backend_node *next;
} dl_backend_node;
/* Add a backend (DL_BACKEND, at load); safe while others resolve spaces. */
void dl_backend_register(dl_backend_node *node);
#define DL_BACKEND(table)                                                                                    \
        static dl_backend_node table##_node = {&table, NULL};                                                \
        DL_ON_LOAD(table##_register)                                                                         \
        {                                                                                                    \
                dl_backend_register(&table##_node);                                                          \
        }

/* What loads the backend of a scheme no registered one claims (lib/loader):
 * `load` 1 done, 0 none (err says where one was looked for), -1 cannot
 * (err says what to install); `load_all` every one; `absent(i, &why)`
 * the i-th kind known but not made, or NULL. */
typedef struct dl_backend_loader {
        int (*load)(const char *scheme, dirlock_error *err);
        void (*load_all)(void);
        const char *(*absent)(size_t i, const char **why);
} dl_backend_loader;
void dl_backend_loader_set(const dl_backend_loader *loader);

/* The backend of `space` and its spec (a pointer into space). */
int dl_space_resolve(const char *space, const dl_backend **be, const char **spec, dirlock_error *err);

/* A new handle of `be` for `name` in `spec`: checked, with a token, open. */
int dl_handle_open(const dl_backend *be, const char *spec, const char *name, const dirlock_options *opts,
                   dirlock **out, dirlock_error *err);
/* Take the lock of a handle just opened; on failure it is freed. */
int dl_handle_acquire_new(dirlock *h, dirlock **out, dirlock_error *err);

#endif
