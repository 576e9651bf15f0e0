/* dir_backend.c - the directory backend (backend.h): a lock space that is
 * a directory, and each lock a directory in it (dir_exclusive.c).  Here:
 * a handle's directory state, the table of entry points and the kinds of
 * lock they dispatch to, the core's own kind -- an exclusive lock -- and
 * what its holder checks of the lock's neighbours, and the registry of
 * the modules that add to the backend (dir.h).  What looks at locks from
 * outside their holders is dir_admin.c.
 *
 * NEIGHBOURS.  A whole lock of NAME excludes its readers (D/NAME.readers,
 * the reader-writer module's) and its ranges (D/NAME.ranges, the range
 * module's), whose holders announce themselves there and then look at W
 * (the handshakes of lib/rw/dir_rw.c and lib/range/dir_range.c): so W's
 * holder, once it holds W, looks at both, and holds NAME whole only when
 * neither is in use.  One in use is waited for by the module that guards
 * it (drain the readers, wait for the ranges to go).  A build without
 * that module cannot wait for it, and must not overrun it: it lets W go
 * and refuses with DIRLOCK_EINVAL, naming the module -- a build without
 * lib/rw still lets no writer in with readers, one without lib/range no
 * whole lock in with a range.  Readers in use are live r./a. entries
 * (stale ones are broken on the way, as a writer's scan breaks them);
 * ranges in use are any entry of D/NAME.ranges.  The look is the one a
 * writer has always made: on the uncontended path one stat() of each
 * (ENOENT), on a network filesystem one listing of D for both. */
#include "dir.h"
#include "dir_fsops.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- modules ----------------------------------------------------------------- */

static struct dl_dir_module *modules, **modules_end = &modules;
/* The kind every whole lock is: the first registered module's that
 * serves them, else the core's (the queue and the wait register: in
 * dir_queue.c, which calls them). */
static const struct dl_dir_kind *whole_kind = &dl_dir_exclusive;

static int dir_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err);
static int dir_downgrade(dirlock *h, dirlock_error *err);
static int dir_downgrade_intent(dirlock *h, dirlock_error *err);
static int dir_shrink(dirlock *h, double lo, double hi, dirlock_error *err);

/* Switch on the backend's entries that kind k serves. */
static void offer_kind(const struct dl_dir_kind *k)
{
        if (k->upgrade != NULL)
                dl_dir_backend.upgrade = dir_upgrade;
        if (k->downgrade != NULL)
                dl_dir_backend.downgrade = dir_downgrade;
        if (k->downgrade_intent != NULL)
                dl_dir_backend.downgrade_intent = dir_downgrade_intent;
        if (k->shrink != NULL)
                dl_dir_backend.shrink = dir_shrink;
}

/* Switch on the entries of `offers` that are set. */
static void offer_entries(const dl_backend *o)
{
        dl_backend *t = &dl_dir_backend;
#define OFFER(entry)                                                                                         \
        if (o->entry != NULL)                                                                                \
        t->entry = o->entry
        OFFER(fence);
        OFFER(range);
        OFFER(permit);
        OFFER(ranges);
        OFFER(waiters);
#undef OFFER
}

void dl_dir_module_add(struct dl_dir_module *m)
{
        m->next = NULL;
        *modules_end = m;
        modules_end = &m->next;
        if (m->offers != NULL)
                offer_entries(m->offers);
        if (m->whole != NULL && whole_kind == &dl_dir_exclusive) {
                whole_kind = m->whole;
                offer_kind(m->whole);
        }
        for (const struct dl_dir_kind *const *k = m->kinds; k != NULL && *k != NULL; k++)
                offer_kind(*k);
        dl_dir_follow_waits(m->queue, m->waits);
}

const struct dl_dir_module *dl_dir_modules(void)
{
        return modules;
}

/* The module that guards neighbour `near`, or NULL. */
static const struct dl_dir_module *guard_of(unsigned near)
{
        for (const struct dl_dir_module *m = modules; m != NULL; m = m->next)
                if (m->guards & near)
                        return m;
        return NULL;
}

/* ---- a handle's directory state -------------------------------------- */

static void dir_free_state(struct dl_dir *d)
{
        free(d->lockdir);
        free(d->lock_path);
        free(d->entry_path);
        free(d->prep_path);
        free(d);
}

static int dir_open(dirlock *h, const char *spec, dirlock_error *err)
{
        struct dl_dir *d = calloc(1, sizeof *d);
        if (d == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        int rc =
            dl_lockdir_prepare(spec, !(h->opts.flags & DIRLOCK_NO_MKDIR), &d->lockdir, &d->lockdir_mode, err);
        if (rc != DIRLOCK_OK) {
                free(d);
                return rc;
        }
        d->fs = dl_fs_of(d->lockdir, NULL);
        d->kind = whole_kind;
        d->lock_path = dl_layout_path(d->lockdir, h->name, DL_SUFFIX_LOCK);
        d->entry_path = d->lock_path ? dl_layout_owner_entry(d->lock_path, h->token) : NULL;
        if (d->entry_path == NULL) {
                dir_free_state(d);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        h->impl = d;
        return DIRLOCK_OK;
}

void dl_dir_make_kind(dirlock *h, const struct dl_dir_kind *kind, void *state)
{
        struct dl_dir *d = dl_dir_of(h);
        if (d->kind->close != NULL)
                d->kind->close(h);
        d->kind = kind;
        d->kind_state = state;
}

static void dir_close(dirlock *h)
{
        struct dl_dir *d = dl_dir_of(h);
        if (d == NULL)
                return;
        dl_dir_waits_close(h);
        if (d->kind->close != NULL)
                d->kind->close(h);
        dir_free_state(d);
        h->impl = NULL;
}

/* A release that failed (an entry it could not remove) left a hold whose
 * paths carry its token, the only way to it: release it now.  An entry
 * broken meanwhile is no error here: there is nothing left to release. */
static int dir_release_kept(dirlock *h, dirlock_error *err)
{
        const struct dl_dir_kind *k = dl_dir_of(h)->kind;
        return k->release_kept != NULL ? k->release_kept(h, err) : DIRLOCK_OK;
}

/* A new token: the owner entry's path and the kind's paths carry it (what
 * a failed release left was released before: handle.c). */
static int dir_retoken(dirlock *h, dirlock_error *err)
{
        (void)err;
        dl_excl_retoken(h);
        if (dl_dir_of(h)->kind->retoken != NULL)
                dl_dir_of(h)->kind->retoken(h);
        return DIRLOCK_OK;
}

int dl_dir_new_token(dirlock *h, dirlock_error *err)
{
        dl_excl_discard_prep(h); /* made under the old token */
        int rc = dir_release_kept(h, err);
        if (rc == DIRLOCK_OK)
                rc = dl_random_token(h->token, err);
        return rc != DIRLOCK_OK ? rc : dir_retoken(h, err);
}

static int dir_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        int rc = dl_fs_allows(dl_dir_of(h)->fs, dl_dir_of(h)->lockdir, h->opts.mode, h->opts.policy,
                              h->ranged, h->opts.flags, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if ((h->opts.flags & DIRLOCK_FIFO) && dl_dir_queue_of() == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "lock '%s': DIRLOCK_FIFO needs the queue module (lib/fifo), which this build "
                               "of dirlock does not have",
                               h->name);
        rc = dl_dir_of(h)->kind->acquire(h, deadline, err);
        dl_excl_discard_prep(h);
        return rc;
}

static int dir_release(dirlock *h, dirlock_error *err)
{
        return dl_dir_of(h)->kind->release(h, err);
}

static int dir_refresh(dirlock *h, dirlock_error *err)
{
        return dl_dir_of(h)->kind->refresh(h, err);
}

static int dir_check(const dirlock *h, dirlock_error *err)
{
        return dl_dir_of(h)->kind->check(h, err);
}

/* A kind without the operation `what` asked of it. */
static int not_of_kind(const dirlock *h, int code, const char *what, dirlock_error *err)
{
        return dl_fail(err, code, 0, "lock '%s' is %s, which cannot %s", h->name, dl_dir_of(h)->kind->what,
                       what);
}

static int dir_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err)
{
        const struct dl_dir_kind *k = dl_dir_of(h)->kind;
        return k->upgrade != NULL ? k->upgrade(h, opts, err)
                                  : not_of_kind(h, DIRLOCK_EUPGRADE, "be upgraded", err);
}

static int dir_downgrade(dirlock *h, dirlock_error *err)
{
        /* A read lock from here: refused where read locks are (lib/netfs/netfs.c). */
        int rc = dl_fs_allows(dl_dir_of(h)->fs, dl_dir_of(h)->lockdir, DIRLOCK_SHARED, h->opts.policy,
                              h->ranged, h->opts.flags, err);
        const struct dl_dir_kind *k = dl_dir_of(h)->kind;
        if (rc == DIRLOCK_OK)
                rc = k->downgrade != NULL ? k->downgrade(h, err)
                                          : not_of_kind(h, DIRLOCK_EINVAL, "be downgraded", err);
        return rc;
}

static int dir_downgrade_intent(dirlock *h, dirlock_error *err)
{
        const struct dl_dir_kind *k = dl_dir_of(h)->kind;
        return k->downgrade_intent != NULL ? k->downgrade_intent(h, err)
                                           : not_of_kind(h, DIRLOCK_EINVAL, "go back to intent", err);
}

static int dir_shrink(dirlock *h, double lo, double hi, dirlock_error *err)
{
        const struct dl_dir_kind *k = dl_dir_of(h)->kind;
        return k->shrink != NULL ? k->shrink(h, lo, hi, err) : not_of_kind(h, DIRLOCK_EINVAL, "shrink", err);
}

static const char *dir_space_key(const dirlock *h)
{
        return dl_dir_of(h)->lockdir;
}

/* ---- neighbours ------------------------------------------------------------- */

/* What a build without the guarding module finds of a neighbour that is
 * there: 1 in use, 0 not (tidied), -1 error. */
static int readers_in_use(dirlock *h, const char *dir, dirlock_error *err)
{
        dl_scan sc = {.active = "ra"};
        int rc = dl_scan_dir(dir, h->opts.stale_age, dl_dir_of(h)->fs, &sc, err);
        if (rc != 0)
                return -1;
        if (sc.live == 0 && !dl_dir_of(h)->fs->network)
                dl_fs_rmdir(dir); /* as a writer's drain leaves it: ENOTEMPTY keeps it */
        return sc.live > 0;
}

static int ranges_in_use(dirlock *h, const char *dir, dirlock_error *err)
{
        char **names;
        size_t n;
        if (dl_dir_names(dir, dl_dir_of(h)->fs, &names, &n, err) != DIRLOCK_OK)
                return -1;
        dl_dir_names_free(names, n);
        return n > 0;
}

static const struct neighbour {
        unsigned near;
        const char *suffix;
        const char *what;   /* for the refusal: "readers", ... */
        const char *module; /* ... and the module that guards it */
        int (*in_use)(dirlock *h, const char *dir, dirlock_error *err);
} neighbours[] = {
    {DL_NEAR_READERS, DL_SUFFIX_READERS, "readers", "the reader-writer module (lib/rw)", readers_in_use},
    {DL_NEAR_RANGES, DL_SUFFIX_RANGES, "ranges held or waited for", "the range module (lib/range)",
     ranges_in_use},
};
#define NEIGHBOURS (sizeof neighbours / sizeof neighbours[0])

/* Which of the neighbours asked are there (a bit each): one look. */
static int neighbours_there(dirlock *h, char *paths[NEIGHBOURS], unsigned which, unsigned *there)
{
        *there = 0;
        bool network = dl_dir_of(h)->fs->network;
        if (network && which == DL_NEAR_ALL) {
                /* On a network filesystem "absent" is asked of a listing
                 * of D (dir_fsops.c): one listing answers for both. */
                int other, r = dl_fs_present2(paths[0], paths[1], &other);
                if (r < 0)
                        return -1;
                *there = (r ? neighbours[0].near : 0) | (other ? neighbours[1].near : 0);
                return 0;
        }
        for (size_t i = 0; i < NEIGHBOURS; i++) {
                if (!(which & neighbours[i].near))
                        continue;
                int r = dl_fs_present(paths[i], network);
                if (r < 0)
                        return -1;
                *there |= r ? neighbours[i].near : 0;
        }
        return 0;
}

static int look_at_neighbours(dirlock *h, char *paths[NEIGHBOURS], unsigned which, const dl_time *deadline,
                              dirlock_error *err)
{
        unsigned there;
        if (neighbours_there(h, paths, which, &there) != 0)
                return dl_fail(err, DIRLOCK_EIO, errno, "cannot look at the neighbours of lock '%s'",
                               h->name);
        int rc = DIRLOCK_OK;
        for (size_t i = 0; i < NEIGHBOURS && rc == DIRLOCK_OK; i++) {
                if (!(there & neighbours[i].near))
                        continue;
                const struct dl_dir_module *m = guard_of(neighbours[i].near);
                if (m != NULL) {
                        rc = m->guard(h, deadline, true, err);
                        continue;
                }
                int in_use = neighbours[i].in_use(h, paths[i], err);
                if (in_use < 0)
                        rc = err->code;
                else if (in_use > 0)
                        rc =
                            dl_fail(err, DIRLOCK_EINVAL, 0,
                                    "lock '%s' has %s ('%s', made by a build with %s): this build of dirlock "
                                    "cannot wait for them, and does not take the lock past them",
                                    h->name, neighbours[i].what, paths[i], neighbours[i].module);
        }
        return rc;
}

int dl_dir_neighbours(dirlock *h, unsigned which, const dl_time *deadline, dirlock_error *err)
{
        dirlock_error local; /* the guards report through err->code */
        if (err == NULL)
                err = &local;
        char *paths[NEIGHBOURS];
        int rc = DIRLOCK_OK;
        for (size_t i = 0; i < NEIGHBOURS; i++)
                if ((paths[i] = dl_layout_path(dl_dir_of(h)->lockdir, h->name, neighbours[i].suffix)) == NULL)
                        rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        if (rc == DIRLOCK_OK)
                rc = look_at_neighbours(h, paths, which, deadline, err);
        for (size_t i = 0; i < NEIGHBOURS; i++)
                free(paths[i]);
        return rc;
}

/* ---- the core's kind: an exclusive lock --------------------------------------- */

int dl_dir_exclusive_acquire(dirlock *h, const struct dl_slots *w, const dl_time *deadline,
                             dirlock_error *err)
{
        for (;;) {
                int rc = dl_dir_take(h, w, deadline, err);
                if (rc != DIRLOCK_OK)
                        return rc;
                rc = dl_dir_neighbours(h, DL_NEAR_ALL, deadline, err);
                if (rc == DIRLOCK_OK)
                        return rc;
                dl_excl_release(h, NULL);
                /* else: broken while we waited for a neighbour, again */
                if (rc != DIRLOCK_ELOST || (rc = dl_dir_new_token(h, err)) != DIRLOCK_OK)
                        return rc;
        }
}

static int exclusive_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        bool plain = h->opts.policy == DIRLOCK_POLICY_FAIR || h->opts.policy == DIRLOCK_POLICY_SIMPLE;
        if (h->opts.mode != DIRLOCK_EXCLUSIVE || !plain)
                return dl_fail(
                    err, DIRLOCK_EINVAL, 0,
                    "lock '%s': %s locks need the reader-writer module (lib/rw), which this build of "
                    "dirlock does not have",
                    h->name, !plain ? "the policies writer and reader of" : "shared and intent");
        return dl_dir_exclusive_acquire(h, &dl_dir_w, deadline, err);
}

const struct dl_dir_kind dl_dir_exclusive = {
    .what = "an exclusive lock",
    .acquire = exclusive_acquire,
    .release = dl_excl_release,
    .release_kept = dl_excl_release_kept,
    .refresh = dl_excl_refresh,
    .check = dl_excl_check,
};

/* ---- the table ----------------------------------------------------------------- */

static const char *const dir_forms[] = {"DIR (a lock directory)", NULL};

dl_backend dl_dir_backend = {
    .name = "directory",
    .forms = dir_forms,
    .local = true,
    .open = dir_open,
    .close = dir_close,
    .retoken = dir_retoken,
    .acquire = dir_acquire,
    .release = dir_release,
    .release_kept = dir_release_kept,
    .refresh = dir_refresh,
    .check = dir_check,
    .space_key = dir_space_key,
    .inspect = dl_dir_inspect,
    .break_lock = dl_dir_break,
    .cleanup = dl_dir_cleanup,
    .holders = dl_dir_holders,
    .list = dl_dir_list,
};
