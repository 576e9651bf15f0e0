/* admin.c - looking at and repairing locks by name, from outside their
 * holders: inspect (owner record and age), break (stale, or forced), and
 * cleanup of what crashed processes leave behind. */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The owner entry of `lock_path`: its full path in *entry (malloc'd).
 * 0 found, 1 none (free, or foreign content: *foreign), -1 error/errno. */
static int find_owner_entry(const char *lock_path, char **entry, bool *foreign)
{
        *entry = NULL;
        char leaf[OWNER_LEAF_SIZE];
        double dir_age;
        if (dl_lock_list(lock_path, leaf, foreign, &dir_age) != 0)
                return errno == ENOENT ? 1 : -1;
        if (leaf[0] == '\0')
                return 1;
        *entry = dl_join(lock_path, leaf, NULL);
        if (*entry == NULL) {
                errno = ENOMEM;
                return -1;
        }
        return 0;
}

static int open_named(const char *lockdir, const char *name, double stale_age, dirlock **h,
                      dirlock_error *err)
{
        dirlock_options o;
        dirlock_options_init(&o);
        o.stale_age = stale_age;
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
        char *entry;
        bool foreign;
        int found = find_owner_entry(h->lock_path, &entry, &foreign);
        if (found == 1 && foreign) {
                /* Held by something that is not an owner record. */
                owner->mode = DIRLOCK_EXCLUSIVE;
                owner->owner_alive = -1;
                snprintf(owner->host, sizeof owner->host, "%s", "(no owner record)");
                dl_handle_free(h);
                return DIRLOCK_OK;
        }
        if (found != 0) {
                rc = found < 0 ? dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock '%s'", h->lock_path)
                     : owner->readers ? DIRLOCK_OK
                                      : dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
                if (rc == DIRLOCK_OK)
                        owner->mode = DIRLOCK_SHARED;
                dl_handle_free(h);
                return rc;
        }
        dl_record rec;
        double age;
        if (dl_entry_read(entry, &rec, &age) != 0) {
                rc = errno == ENOENT ? dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name)
                                     : dl_fail(err, DIRLOCK_EIO, errno, "cannot read '%s'", entry);
        } else {
                owner->pid = rec.pid;
                owner->start_time = rec.start_time;
                snprintf(owner->host, sizeof owner->host, "%s", rec.host);
                snprintf(owner->token, sizeof owner->token, "%s", rec.token);
                owner->acquired = (double)rec.acquired_ns / 1e9;
                owner->age = age;
                owner->same_host = dl_record_same_host(&rec);
                owner->owner_alive = rec.pid > 0 ? dl_record_owner_alive(&rec) : -1;
                owner->stale = dl_entry_stale(&rec, age, h->opts.stale_age);
                owner->mode = rec.mode;
                rc = DIRLOCK_OK;
        }
        free(entry);
        dl_handle_free(h);
        return rc;
}

/* Remove a directory and the plain entries in it (no recursion deeper). */
static void remove_flat_dir(const char *path)
{
        DIR *d = opendir(path);
        if (d != NULL) {
                struct dirent *de;
                while ((de = readdir(d)) != NULL) {
                        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                                continue;
                        char *p = dl_join(path, de->d_name, NULL);
                        if (p != NULL)
                                unlink(p);
                        free(p);
                }
                closedir(d);
        }
        rmdir(path);
}

int dirlock_break(const char *lockdir, const char *name, double stale_age, int force, dirlock_error *err)
{
        dirlock *h;
        int rc = open_named(lockdir, name, stale_age, &h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        char *entry;
        bool foreign;
        int found = find_owner_entry(h->lock_path, &entry, &foreign);
        if (found < 0) {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock '%s'", h->lock_path);
        } else if (found == 1 && !foreign) {
                rmdir(h->lock_path); /* an empty directory is a free lock: tidy it */
                rc = dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
        } else if (found == 1) {
                if (!force) {
                        rc =
                            dl_fail(err, DIRLOCK_ELIVE, 0,
                                    "lock '%s' holds files that are not an owner record; use force to remove "
                                    "them",
                                    name);
                } else {
                        dl_lock_clear_foreign(h->lock_path); /* never touches an owner entry */
                        rc = DIRLOCK_OK;
                }
        } else {
                dl_record rec;
                double age;
                if (dl_entry_read(entry, &rec, &age) != 0) {
                        rc = errno == ENOENT ? dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name)
                                             : dl_fail(err, DIRLOCK_EIO, errno, "cannot read '%s'", entry);
                } else if (!force && !dl_entry_stale(&rec, age, h->opts.stale_age)) {
                        rc = dl_fail(
                            err, DIRLOCK_ELIVE, 0,
                            "lock '%s' is held by live pid %ld on %s (age %.1f s, stale after %.0f s); "
                            "not broken",
                            name, (long)rec.pid, rec.host[0] ? rec.host : "an unknown host", age,
                            h->opts.stale_age);
                } else if (dl_excl_break_entry(h->lock_path, entry) == 0) {
                        rc = DIRLOCK_OK;
                } else {
                        rc = errno == ENOENT ? dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name)
                                             : dl_fail(err, DIRLOCK_EIO, errno, "cannot break '%s'", entry);
                }
                free(entry);
        }
        dl_handle_free(h);
        return rc;
}

/* A prepared directory ".NAME.TOKEN.new" is garbage when its owner record
 * is stale by the record's own stale age (its process died, or it is older
 * than the stale age its owner asked for); ".NAME.TOKEN.broken" are left
 * from interrupted cleanups. */
static bool prep_is_garbage(const char *path, const char *leaf)
{
        const char *dot = strrchr(leaf, '.');
        if (dot == NULL || strcmp(dot, ".new") != 0 || dot - leaf < 34)
                return dot != NULL && strcmp(dot, ".broken") == 0;
        char entry_leaf[OWNER_LEAF_SIZE];
        snprintf(entry_leaf, sizeof entry_leaf, "owner.%.32s", dot - 32);
        char *entry = dl_join(path, entry_leaf, NULL);
        if (entry == NULL)
                return false;
        dl_record rec;
        double age;
        bool garbage;
        if (dl_entry_read(entry, &rec, &age) != 0) {
                struct stat st;
                garbage =
                    lstat(path, &st) == 0 && (double)(time(NULL) - st.st_mtime) > DIRLOCK_DEFAULT_STALE_AGE;
        } else {
                garbage = dl_entry_stale(&rec, age, rec.stale_ms ? 0 : DIRLOCK_DEFAULT_STALE_AGE);
        }
        free(entry);
        return garbage;
}

/* Remove a prepared directory judged garbage.  It is first renamed to a
 * name of our own: if its owner is alive after all and renames it onto
 * the lock at the same moment, exactly one of the two renames wins, and
 * an owner that lost finds it gone and makes a new one (exclusive.c). */
static void remove_prep(const char *lockdir, const char *path, const char *leaf)
{
        char token[33];
        if (dl_random_token(token, NULL) != DIRLOCK_OK)
                return;
        char aside_leaf[300];
        snprintf(aside_leaf, sizeof aside_leaf, "%.200s.%s.broken", leaf, token);
        char *aside = dl_join(lockdir, aside_leaf, NULL);
        if (aside != NULL && rename(path, aside) == 0)
                remove_flat_dir(aside);
        free(aside);
}

int dirlock_cleanup(const char *lockdir, dirlock_error *err)
{
        char *abs;
        int rc = dl_lockdir_prepare(lockdir, false, &abs, err);
        if (rc != DIRLOCK_OK)
                return rc;
        DIR *d = opendir(abs);
        if (d == NULL) {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock directory '%s'", abs);
                free(abs);
                return rc;
        }
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                if (de->d_name[0] != '.' || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                char *path = dl_join(abs, de->d_name, NULL);
                if (path != NULL && prep_is_garbage(path, de->d_name)) {
                        if (strstr(de->d_name, ".broken") != NULL)
                                remove_flat_dir(path);
                        else
                                remove_prep(abs, path, de->d_name);
                }
                free(path);
        }
        closedir(d);
        rc = dl_rw_cleanup(abs, err);
        free(abs);
        if (rc == DIRLOCK_OK)
                dl_ok(err);
        return rc;
}
