/* dir_backend.c - the directory backend (backend.h): a lock space that is
 * a directory, and each lock a directory in it (exclusive.c, rwlock.c).
 * Here: a handle's directory state, the table of entry points, and the
 * calls that look at locks from outside their holders (inspect, break,
 * cleanup, list). */
#include "backend.h"
#include "dir.h"
#include "fsops.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
        d->lock_path = dl_layout_path(d->lockdir, h->name, DL_SUFFIX_LOCK);
        d->entry_path = d->lock_path ? dl_layout_owner_entry(d->lock_path, h->token) : NULL;
        if (d->entry_path == NULL) {
                dir_free_state(d);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        h->impl = d;
        return DIRLOCK_OK;
}

static void dir_close(dirlock *h)
{
        if (h->impl == NULL)
                return;
        dl_wait_free(h);
        dl_permit_free(h);
        dl_range_free(h);
        dl_rw_free(h);
        dir_free_state(dl_dir_of(h));
        h->impl = NULL;
}

/* A release that failed (an entry it could not remove) left a hold whose
 * paths carry its token, the only way to it: release it now.  An entry
 * broken meanwhile is no error here: there is nothing left to release. */
static int dir_release_kept(dirlock *h, dirlock_error *err)
{
        return h->ranged ? DIRLOCK_OK : dl_rw_release_kept(h, err);
}

/* A new token: the owner entry's path and the reader-writer paths carry
 * it (what a failed release left was released before: handle.c). */
static int dir_retoken(dirlock *h, dirlock_error *err)
{
        (void)err;
        dl_excl_retoken(h);
        dl_rw_retoken(h);
        return DIRLOCK_OK;
}

static int dir_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        int rc = dl_fs_allows(dl_dir_of(h)->fs, dl_dir_of(h)->lockdir, h->opts.mode, h->opts.policy,
                              h->ranged, h->opts.flags, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (h->ranged)
                return dl_range_acquire(h, deadline, err);
        rc = h->permits > 0 ? dl_permit_acquire(h, deadline, err) : dl_rw_acquire(h, deadline, err);
        dl_excl_discard_prep(h);
        return rc;
}

/* A range handle goes to range.c, a whole one to rwlock.c. */
static int dir_release(dirlock *h, dirlock_error *err)
{
        return h->ranged ? dl_range_release(h, err) : dl_rw_release(h, err);
}

static int dir_refresh(dirlock *h, dirlock_error *err)
{
        return h->ranged ? dl_range_refresh(h, err) : dl_rw_refresh(h, err);
}

static int dir_check(const dirlock *h, dirlock_error *err)
{
        return h->ranged ? dl_range_check(h, err) : dl_rw_check(h, err);
}

static int dir_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err)
{
        return h->ranged ? dl_range_upgrade(h, opts, err) : dl_rw_upgrade(h, opts, err);
}

static int dir_downgrade(dirlock *h, dirlock_error *err)
{
        /* A read lock from here: refused where read locks are (netfs.c). */
        int rc = dl_fs_allows(dl_dir_of(h)->fs, dl_dir_of(h)->lockdir, DIRLOCK_SHARED, h->opts.policy,
                              h->ranged, h->opts.flags, err);
        if (rc != DIRLOCK_OK)
                return rc;
        return h->ranged ? dl_range_downgrade(h, err) : dl_rw_downgrade(h, err);
}

static int dir_downgrade_intent(dirlock *h, dirlock_error *err)
{
        return h->ranged ? dl_range_downgrade_intent(h, err) : dl_rw_downgrade_intent(h, err);
}

static int dir_fence(dirlock *h, unsigned long long *fence, dirlock_error *err)
{
        return dl_dir_fence(h, dir_check, fence, err);
}

/* A handle of lock `name` in lock directory `lockdir` for looking at and
 * repairing it from outside (inspect, break): never creates the directory. */
static int dir_handle_for(const char *lockdir, const char *name, double stale_age, dirlock **out,
                          dirlock_error *err)
{
        dirlock_options o;
        dirlock_options_init(&o);
        o.stale_age = stale_age > 0 && stale_age < DIRLOCK_MIN_STALE_AGE ? DIRLOCK_MIN_STALE_AGE : stale_age;
        o.flags = DIRLOCK_NO_MKDIR;
        return dl_handle_open(&dl_dir_backend, lockdir, name, &o, out, err);
}

/* ---- from outside the holders ---------------------------------------- */

static int dir_inspect(const char *lockdir, const char *name, double stale_age, dirlock_owner *owner,
                       dirlock_error *err)
{
        dirlock *h;
        int rc = dir_handle_for(lockdir, name, stale_age, &h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        struct dl_dir *d = dl_dir_of(h);
        owner->readers = dl_rw_count_readers(d->lockdir, name);
        owner->ranges = dl_range_count_held(d->lockdir, name);
        owner->waiters = dl_waits_count(d->lockdir, name);
        owner->fence = dl_dir_fence_last(d->lockdir, name);
        dirlock_owner *permit_holders = NULL;
        size_t holders = 0, cap = 0;
        if (dl_permit_holders(d->lockdir, name, h->opts.stale_age, &permit_holders, &holders, &cap, NULL) ==
                DIRLOCK_OK &&
            holders > 0) {
                owner->permits = permit_holders[0].permits;
                owner->permit_holders = (unsigned)holders;
        }
        free(permit_holders);
        dl_lock_view v;
        if (dl_lock_look(d->lock_path, d->fs, &v) != 0) {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock '%s'", d->lock_path);
        } else if (v.state == DL_LOCK_FOREIGN) {
                /* Held by something that is not an owner record. */
                owner->mode = DIRLOCK_EXCLUSIVE;
                owner->owner_alive = -1;
                owner->age = v.age;
                snprintf(owner->host, sizeof owner->host, "%s", "(no owner record)");
        } else if (v.state != DL_LOCK_OWNED) {
                if (owner->readers || owner->ranges)
                        owner->mode = DIRLOCK_SHARED;
                else if (owner->permit_holders == 0 && owner->waiters == 0)
                        rc = dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
        } else {
                dl_lock_describe(&v, h->opts.stale_age, d->fs, owner);
        }
        dl_handle_free(h);
        return rc;
}

/* Whether lock view *v (owned) is stale, for a breaker from outside.  On
 * a network filesystem the judge must have seen it unchanged for a while
 * (CLOCKS in netfs.c): when the clocks say it is stale, it looks again
 * every 100 ms until it has, or the lock changed (*v is then the last
 * look). */
static bool stale_for_break(dirlock *h, dl_lock_view *v)
{
        const dl_fs *fs = dl_dir_of(h)->fs;
        if (dl_entry_stale(&v->rec, v->age, h->opts.stale_age, fs))
                return true;
        double limit = h->opts.stale_age > (double)v->rec.stale_ms / 1e3 ? h->opts.stale_age
                                                                         : (double)v->rec.stale_ms / 1e3;
        if (!fs->network || v->age <= limit)
                return false;
        dl_lock_view first = *v;
        char token[DIRLOCK_TOKEN_LEN + 1];
        snprintf(token, sizeof token, "%s", v->token);
        long long changed = v->rec.changed_ns;
        dl_time deadline = dl_deadline(dl_fs_watch(fs, limit) + 0.5);
        while (!dl_deadline_passed(&deadline)) {
                struct timespec nap = {0, 100000000L};
                nanosleep(&nap, NULL);
                if (dl_lock_look(dl_dir_of(h)->lock_path, fs, v) != 0 || v->state != DL_LOCK_OWNED ||
                    strcmp(v->token, token) != 0 || v->rec.changed_ns != changed) {
                        *v = first; /* released, taken again or refreshed: not stale */
                        return false;
                }
                if (dl_entry_stale(&v->rec, v->age, h->opts.stale_age, fs))
                        return true;
        }
        return false;
}

static int dir_break(const char *lockdir, const char *name, double stale_age, int force, dirlock_error *err)
{
        dirlock *h;
        int rc = dir_handle_for(lockdir, name, stale_age, &h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        const char *lock_path = dl_dir_of(h)->lock_path;
        const dl_fs *fs = dl_dir_of(h)->fs;
        dl_lock_view v;
        if (!force && !fs->usable) {
                /* No holder there can refresh, nor a judge see it do so
                 * (netfs.c): every lock would look stale. */
                rc = dl_fail(err, DIRLOCK_ENETFS, 0,
                             "'%s' is on %s, where no lock's age can be judged: %s; not broken (force "
                             "breaks it whatever its age), see docs/netfs.md",
                             dl_dir_of(h)->lockdir, fs->name, fs->why);
        } else if (dl_lock_look(lock_path, fs, &v) != 0) {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock '%s'", lock_path);
        } else if (v.state == DL_LOCK_ABSENT || v.state == DL_LOCK_EMPTY) {
                dl_fs_rmdir(lock_path); /* an empty directory is a free lock: tidy it */
                rc = dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
        } else if (v.state == DL_LOCK_FOREIGN) {
                if (!force) {
                        rc = dl_fail(err, DIRLOCK_ELIVE, 0,
                                     "lock '%s' holds files that are not an owner record; use force to "
                                     "remove them",
                                     name);
                } else {
                        dl_lock_clear_foreign(lock_path); /* never touches an owner entry */
                        rc = DIRLOCK_OK;
                }
        } else if (!force && !stale_for_break(h, &v)) {
                rc = dl_fail(err, DIRLOCK_ELIVE, 0,
                             "lock '%s' is held by live pid %ld on %s (age %.1f s, stale after %.0f s); not "
                             "broken",
                             name, (long)v.rec.pid, v.rec.host[0] ? v.rec.host : "an unknown host", v.age,
                             h->opts.stale_age);
        } else if (dl_excl_break_entry(lock_path, v.leaf) == 0) {
                rc = DIRLOCK_OK;
        } else if (errno == ENOENT) {
                rc = dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
        } else if (errno == EPERM || errno == EACCES) {
                rc = dl_fail(err, DIRLOCK_EPERM, errno,
                             "lock '%s' (pid %ld on %s) may not be broken by this user", name,
                             (long)v.rec.pid, v.rec.host[0] ? v.rec.host : "an unknown host");
        } else {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot break '%s/%s'", lock_path, v.leaf);
        }
        dl_handle_free(h);
        return rc;
}

/* Room for one more owner at the end of *out, zeroed; NULL when out of
 * memory. */
static dirlock_owner *one_more(dirlock_owner **out, size_t *count, size_t *cap)
{
        if (*count == *cap) {
                size_t grown_cap = *cap ? *cap * 2 : 8;
                dirlock_owner *grown = realloc(*out, grown_cap * sizeof *grown);
                if (grown == NULL)
                        return NULL;
                *out = grown;
                *cap = grown_cap;
        }
        dirlock_owner *o = &(*out)[(*count)++];
        memset(o, 0, sizeof *o);
        return o;
}

/* The readers' entries (r. and a.) of `name`, appended. */
static int list_readers(const char *lockdir, const char *name, double stale_age, const dl_fs *fs,
                        dirlock_owner **out, size_t *count, size_t *cap, dirlock_error *err)
{
        char *dir = dl_layout_path(lockdir, name, DL_SUFFIX_READERS);
        char **names = NULL;
        size_t n = 0;
        if (dir == NULL || dl_dir_names(dir, fs, &names, &n, NULL) != DIRLOCK_OK) {
                free(dir);
                return DIRLOCK_OK; /* none (or unreadable: as inspect counts them) */
        }
        int rc = DIRLOCK_OK;
        for (size_t i = 0; i < n && rc == DIRLOCK_OK; i++) {
                int kind = dl_layout_entry_kind(names[i]);
                if (kind != DL_ENTRY_READER && kind != DL_ENTRY_ADMITTED)
                        continue;
                dl_lock_view v;
                memset(&v, 0, sizeof v);
                char *entry = dl_join(dir, names[i], NULL);
                if (entry == NULL || dl_entry_read(entry, &v.rec, &v.age) != 0) {
                        free(entry);
                        continue; /* gone meanwhile */
                }
                free(entry);
                v.state = DL_LOCK_OWNED;
                v.token = names[i] + 2;
                dirlock_owner *o = one_more(out, count, cap);
                if (o == NULL)
                        rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                else
                        dl_lock_describe(&v, stale_age, fs, o);
        }
        dl_dir_names_free(names, n);
        free(dir);
        return rc;
}

static int dir_holders(const char *lockdir, const char *name, double stale_age, dirlock_owner **out,
                       size_t *count, dirlock_error *err)
{
        char *abs;
        int rc = dl_lockdir_prepare(lockdir, false, &abs, NULL, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (stale_age <= 0)
                stale_age = DIRLOCK_DEFAULT_STALE_AGE;
        size_t cap = 0;
        const dl_fs *fs = dl_fs_of(abs, NULL);
        char *lock = dl_layout_path(abs, name, DL_SUFFIX_LOCK);
        dl_lock_view v;
        if (lock == NULL) {
                rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        } else if (dl_lock_look(lock, fs, &v) == 0 && v.state == DL_LOCK_OWNED) {
                dirlock_owner *o = one_more(out, count, &cap);
                if (o == NULL)
                        rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                else
                        dl_lock_describe(&v, stale_age, fs, o);
        }
        free(lock);
        if (rc == DIRLOCK_OK)
                rc = list_readers(abs, name, stale_age, fs, out, count, &cap, err);
        if (rc == DIRLOCK_OK)
                rc = dl_permit_holders(abs, name, stale_age, out, count, &cap, err);
        free(abs);
        if (rc != DIRLOCK_OK) {
                free(*out);
                *out = NULL;
                *count = 0;
        }
        return rc;
}

static int dir_waiters(const char *lockdir, const char *name, dirlock_waiter **out, size_t *count,
                       dirlock_error *err)
{
        char *abs;
        int rc = dl_lockdir_prepare(lockdir, false, &abs, NULL, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = dl_waits_list(abs, name, out, count, err);
        free(abs);
        return rc;
}

static int dir_ranges(const char *lockdir, const char *name, dirlock_range_info **out, size_t *count,
                      dirlock_error *err)
{
        return dl_range_list(lockdir, name, 0, out, count, err);
}

static int dir_cleanup(const char *lockdir, dirlock_error *err)
{
        char *abs;
        int rc = dl_lockdir_prepare(lockdir, false, &abs, NULL, err);
        if (rc != DIRLOCK_OK)
                return rc;
        /* Same host, dead owner: at once.  Others: only once older than
         * any waiter leaves its own (exclusive.c, LEFTOVER PREPARED
         * DIRECTORIES). */
        dl_sweep_preps(abs, NULL, DIRLOCK_DEFAULT_STALE_AGE);
        dl_waits_cleanup(abs);
        rc = dl_rw_cleanup(abs, err);
        free(abs);
        return rc;
}

/* Add `name` to names[0..*n) unless it is there; DIRLOCK_OK or ENOMEM. */
static int add_name(char ***names, size_t *n, size_t *cap, const char *name, dirlock_error *err)
{
        for (size_t i = 0; i < *n; i++)
                if (strcmp((*names)[i], name) == 0)
                        return DIRLOCK_OK;
        if (*n == *cap) {
                size_t grown_cap = *cap ? *cap * 2 : 16;
                char **grown = realloc(*names, grown_cap * sizeof *grown);
                if (grown == NULL)
                        return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                *names = grown;
                *cap = grown_cap;
        }
        if (((*names)[*n] = strdup(name)) == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        (*n)++;
        return DIRLOCK_OK;
}

/* Every NAME that has a NAME.lock, NAME.readers, NAME.wq, NAME.fifo,
 * NAME.ranges or NAME.permits, or a waiter in the wait register. */
static int dir_list(const char *lockdir, char ***names_out, size_t *count, dirlock_error *err)
{
        char *abs;
        int rc = dl_lockdir_prepare(lockdir, false, &abs, NULL, err);
        if (rc != DIRLOCK_OK)
                return rc;
        DIR *dp = dl_fs_opendir(abs);
        if (dp == NULL) {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock directory '%s'", abs);
                free(abs);
                return rc;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        int more;
        while (rc == DIRLOCK_OK && (more = dl_fs_next(dp, &de)) > 0) {
                char name[DIRLOCK_NAME_MAX + 1];
                if (dl_layout_lock_name(de->d_name, name))
                        rc = add_name(&names, &n, &cap, name, err);
        }
        if (rc == DIRLOCK_OK && more < 0) /* a listing cut short is no list */
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock directory '%s'", abs);
        closedir(dp);
        char **waited = NULL;
        size_t nwaited = 0;
        if (rc == DIRLOCK_OK && dl_waits_names(abs, &waited, &nwaited) == DIRLOCK_OK) {
                for (size_t i = 0; i < nwaited; i++) {
                        if (rc == DIRLOCK_OK)
                                rc = add_name(&names, &n, &cap, waited[i], err);
                        free(waited[i]);
                }
                free(waited);
        }
        free(abs);
        if (rc != DIRLOCK_OK) {
                while (n > 0)
                        free(names[--n]);
                free(names);
                return rc;
        }
        *names_out = names;
        *count = n;
        return DIRLOCK_OK;
}

static const char *dir_space_key(const dirlock *h)
{
        return dl_dir_of(h)->lockdir;
}

static const char *const dir_forms[] = {"DIR (a lock directory)", NULL};

const dl_backend dl_dir_backend = {
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
    .fence = dir_fence,
    .space_key = dir_space_key,
    .range = dl_range_prepare,
    .shrink = dl_range_shrink,
    .permit = dl_permit_prepare,
    .upgrade = dir_upgrade,
    .downgrade = dir_downgrade,
    .downgrade_intent = dir_downgrade_intent,
    .inspect = dir_inspect,
    .break_lock = dir_break,
    .cleanup = dir_cleanup,
    .ranges = dir_ranges,
    .holders = dir_holders,
    .waiters = dir_waiters,
    .list = dir_list,
};
