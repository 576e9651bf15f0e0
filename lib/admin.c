/* admin.c - looking at and repairing locks by name, from outside their
 * holders: inspect (owner record and age), break (stale, or forced), and
 * cleanup of what crashed processes leave behind. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int open_named(const char *lockdir, const char *name, double stale_age, dirlock **h,
                      dirlock_error *err)
{
        dirlock_options o;
        dirlock_options_init(&o);
        o.stale_age = stale_age > 0 && stale_age < DIRLOCK_MIN_STALE_AGE ? DIRLOCK_MIN_STALE_AGE : stale_age;
        o.flags = DIRLOCK_NO_MKDIR;
        return dl_handle_new(lockdir, name, &o, h, err);
}

int dirlock_inspect(const char *lockdir, const char *name, double stale_age, dirlock_owner *owner,
                    dirlock_error *err)
{
        if (owner == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the owner");
        memset(owner, 0, sizeof *owner);
        dirlock *h;
        int rc = open_named(lockdir, name, stale_age, &h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        owner->readers = dl_rw_count_readers(h->lockdir, name);
        dl_lock_view v;
        if (dl_lock_look(h->lock_path, &v) != 0) {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock '%s'", h->lock_path);
        } else if (v.state == DL_LOCK_FOREIGN) {
                /* Held by something that is not an owner record. */
                owner->mode = DIRLOCK_EXCLUSIVE;
                owner->owner_alive = -1;
                owner->age = v.age;
                snprintf(owner->host, sizeof owner->host, "%s", "(no owner record)");
        } else if (v.state != DL_LOCK_OWNED) {
                if (owner->readers)
                        owner->mode = DIRLOCK_SHARED;
                else
                        rc = dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
        } else {
                const dl_record *rec = &v.rec;
                owner->pid = rec->pid;
                owner->start_time = rec->start_time;
                snprintf(owner->host, sizeof owner->host, "%s", rec->host);
                snprintf(owner->token, sizeof owner->token, "%s", v.token);
                owner->acquired = (double)rec->acquired_ns / 1e9;
                owner->age = v.age;
                owner->same_host = dl_record_same_host(rec);
                owner->owner_alive = rec->pid > 0 ? dl_record_owner_alive(rec) : -1;
                owner->stale = dl_entry_stale(rec, v.age, h->opts.stale_age);
                owner->mode = rec->mode;
                owner->partner = rec->partner;
        }
        dl_handle_free(h);
        return rc;
}

int dirlock_break(const char *lockdir, const char *name, double stale_age, int force, dirlock_error *err)
{
        dirlock *h;
        int rc = open_named(lockdir, name, stale_age, &h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        dl_lock_view v;
        if (dl_lock_look(h->lock_path, &v) != 0) {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock '%s'", h->lock_path);
        } else if (v.state == DL_LOCK_ABSENT || v.state == DL_LOCK_EMPTY) {
                rmdir(h->lock_path); /* an empty directory is a free lock: tidy it */
                rc = dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
        } else if (v.state == DL_LOCK_FOREIGN) {
                if (!force) {
                        rc = dl_fail(err, DIRLOCK_ELIVE, 0,
                                     "lock '%s' holds files that are not an owner record; use force to "
                                     "remove them",
                                     name);
                } else {
                        dl_lock_clear_foreign(h->lock_path); /* never touches an owner entry */
                        rc = DIRLOCK_OK;
                }
        } else if (!force && !dl_entry_stale(&v.rec, v.age, h->opts.stale_age)) {
                rc = dl_fail(err, DIRLOCK_ELIVE, 0,
                             "lock '%s' is held by live pid %ld on %s (age %.1f s, stale after %.0f s); not "
                             "broken",
                             name, (long)v.rec.pid, v.rec.host[0] ? v.rec.host : "an unknown host", v.age,
                             h->opts.stale_age);
        } else if (dl_excl_break_entry(h->lock_path, v.leaf) == 0) {
                rc = DIRLOCK_OK;
        } else if (errno == ENOENT) {
                rc = dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
        } else if (errno == EPERM || errno == EACCES) {
                rc = dl_fail(err, DIRLOCK_EPERM, errno,
                             "lock '%s' (pid %ld on %s) may not be broken by this user", name,
                             (long)v.rec.pid, v.rec.host[0] ? v.rec.host : "an unknown host");
        } else {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot break '%s/%s'", h->lock_path, v.leaf);
        }
        dl_handle_free(h);
        return rc;
}

int dirlock_cleanup(const char *lockdir, dirlock_error *err)
{
        char *abs;
        int rc = dl_lockdir_prepare(lockdir, false, &abs, NULL, err);
        if (rc != DIRLOCK_OK)
                return rc;
        /* Same host, dead owner: at once.  Others: only once older than
         * any waiter leaves its own (exclusive.c, LEFTOVER PREPARED
         * DIRECTORIES). */
        dl_sweep_preps(abs, NULL, DIRLOCK_DEFAULT_STALE_AGE);
        rc = dl_rw_cleanup(abs, err);
        free(abs);
        if (rc == DIRLOCK_OK)
                dl_ok(err);
        return rc;
}
