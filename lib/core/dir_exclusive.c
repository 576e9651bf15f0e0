/* exclusive.c - the exclusive lock protocol: how a lock directory is taken,
 * released, refreshed, judged stale and broken.
 *
 * LAYOUT.  Lock NAME in lock directory D is the directory D/NAME.lock.  A
 * held lock contains exactly one entry, owner.<T>: a symbolic link whose
 * target text is the owner record (owner.c) of the holder, where T is a
 * 128-bit random token drawn for this one acquisition.
 *
 * INVARIANT A: a directory at D/NAME.lock is either empty (the lock is free)
 * or holds an owner entry (the lock is held by that entry's token).  A held
 * lock is never visible without its owner record, and only the removal of
 * the owner entry makes it free.
 *
 * INVARIANT B: the path D/NAME.lock/owner.<T> exists exactly while the
 * acquisition with token T holds the lock.  Tokens are never reused, so an
 * operation on that path can only ever affect that one acquisition.
 *
 * INVARIANT C (age): a lock's age is the time since the latest of its
 * acquisition and its last refresh, never more.  The age is measured as
 * now minus the latest of the owner entry's mtime and ctime and the lock
 * directory's ctime.  rename(2) sets the renamed directory's ctime (every
 * Linux filesystem does, and so do NFS servers on them), so the rename
 * that makes a lock also makes its age zero, in the same atomic step,
 * however long ago its owner record was written; refresh sets the entry's
 * mtime and ctime.  A judge reads its clock before it reads those times, so
 * the age it computes is never more than the true age at the moment it
 * looked.  Hence a holder that refreshes at least every stale age / 3
 * (dirlock.h) is never judged stale, and an acquire never returns a lock
 * that was already stale when it was taken.
 *
 * ACQUIRE (dl_excl_try, take_once):
 *   1. mkdir D/.NAME.<T>.new and create owner.<T> in it (private: the
 *      leading dot keeps it out of every other process's way).
 *   2. rename(D/.NAME.<T>.new, D/NAME.lock).  rename(2) replaces an absent
 *      or *empty* target directory atomically and fails with ENOTEMPTY or
 *      EEXIST when the target holds an entry: by invariant A exactly the
 *      free case succeeds, and of many concurrent renames at most one can
 *      find the target empty.  (Works the same over NFS, where rename is
 *      atomic on the server.)  Success makes the lock's age zero (C).
 *      On a network filesystem the taker then looks up the old name
 *      D/.NAME.<T>.new, expected absent: a GlusterFS brick may have kept
 *      it for the lock directory (STALE NAMES in lib/netfs/netfs_fsops.c).
 *      A judging attempt (dl_excl_try with judge) first looks up
 *      D/NAME.lock, and when it is there goes straight to 3 without the
 *      rename: a rename that fails still takes D's inode lock (and on
 *      ext4 a journal handle), in the way of the release and of the
 *      rename that wins.  The lookup only ever skips a rename: 3 then
 *      judges the directory, and if it is free (empty) the next round
 *      renames without looking.  (A waiting caller that does not judge
 *      may look first too, where releases wake it: rwlock.c dl_take_w.)
 *   3. On failure, judge the holder (below); if stale, break it and go to 2.
 *      The prepared directory is kept across retries and removed at the
 *      end.  Its record is rewritten once a second while we wait, so that
 *      its acquire time stays true and it stays young in the eyes of
 *      cleaners on other hosts (the age of the lock itself does not depend
 *      on it, by C).  If it vanished at any step (a cleaner took it for a
 *      crash's leftover), it is made again.
 *
 * RELEASE (dl_excl_release):
 *   1. unlink(D/NAME.lock/owner.<T>).  By invariant B this succeeds only if
 *      our acquisition still holds the lock; ENOENT means it was broken as
 *      stale (DIRLOCK_ELOST) and whatever lock is there now is left alone
 *      (on a network filesystem only once the unlink, and refresh and
 *      check likewise, failed again after a lookup of the old prepared
 *      name: STALE NAMES in lib/netfs/netfs_fsops.c; when that second try meets ESTALE
 *      instead, the answer is DIRLOCK_EIO and the handle still holds, so
 *      a later release tries again -- never a loss not proven).
 *      After the unlink the lock is free (invariant A): the directory is
 *      empty.
 *      On a network filesystem an ENOENT there is not always a loss:
 *      RELEASE ON A NETWORK FILESYSTEM in lib/netfs/netfs_release.c, which
 *      the bookkeeping of `changed` and `kept_young` below serves.
 *   2. rmdir(D/NAME.lock).  Tidies up and wakes waiters (inotify IN_DELETE).
 *      If someone renamed a new lock over the empty directory in between,
 *      rmdir fails with ENOTEMPTY and the new lock stays: rmdir can only
 *      ever remove an empty, i.e. free, lock.  A crash between 1 and 2
 *      leaves an empty directory, which is a free lock.
 *
 * STALE JUDGEMENT (dl_excl_judge, dl_lock_look): read the owner entry's
 * name, record and age (C).  The lock is stale when its age exceeds the
 * stale age (the larger of the judge's and the one the holder recorded),
 * or at once when the owner is on this host (same host name, boot and pid
 * namespace) and provably dead: no such pid, a zombie, or a different
 * start time.  A record naming a partner process (dirlock_options) is
 * dead only when both are, and while only the partner lives it is held
 * whatever its age (nobody is left to refresh it; as with flock(1), the
 * command keeps the lock).  Ages compare file times with this host's wall
 * clock; on a local filesystem a wall-clock step larger than the stale age
 * ages every lock at once.  On a network filesystem the file times are
 * another host's clock, read through a cache: there age alone never
 * breaks a lock, the judge must also have seen it unchanged for a while
 * by its own monotonic clock (CLOCKS in lib/netfs/netfs.c), so no clock skew breaks
 * a holder that refreshes.  Every look that reads a name or a time may
 * meet ESTALE there, which means "changed under us": it looks again
 * (dir/fsops.c), and only ENOENT ever says an entry of ours is gone.
 *
 * BREAK (dl_excl_break_entry): unlink(D/NAME.lock/owner.<T>) for the judged
 * token T, then rmdir as in release.  Race-free by invariant B: when many
 * processes judge the same lock stale, exactly one unlink succeeds (the
 * others get ENOENT and simply retry the acquire); a breaker that judged
 * lock T and was paused until after T was broken and NAME re-taken with
 * token U unlinks a path that no longer exists: it can never remove U.
 * An unlink refused for lack of permission (another user's lock in a
 * sticky or read-only directory) leaves the lock held: the judge reports
 * DIRLOCK_EPERM naming the owner, and never takes the lock for free.
 *
 * FOREIGN CONTENT (dl_lock_clear_foreign): a lock directory holding names
 * that are not owner entries was not made by this library (or was damaged).
 * Once older than the stale age, exactly those names are unlinked and the
 * directory rmdir'ed.  No lock can be renamed in while one of them remains
 * (the directory is not empty), an owner entry is never touched, and the
 * directory is never renamed away: nothing taken after the judgement can
 * be removed.
 *
 * LEFTOVER PREPARED DIRECTORIES (dl_sweep_preps): a process killed while
 * it waited leaves D/.NAME.<T>.new.  One whose owner is provably dead on
 * this host is removed at once by whoever notices: a judge that breaks a
 * lock of NAME sweeps NAME's, and dirlock_cleanup() all of them.  Others
 * (other hosts, unreadable records) only once much older than any waiter
 * keeps its own (dirlock_cleanup: the default stale age or the recorded
 * one, whichever is longer).  A prepared directory is removed by renaming
 * it aside first; its owner, should it be alive after all, either renamed
 * it onto the lock first (the cleaner's rename then fails) or finds it
 * gone and makes it again.
 *
 * What no protocol can prevent: a holder that stops refreshing for longer
 * than the stale age (paused, swapped out, on a partitioned host) is
 * treated as gone.  It learns so from refresh, check or release
 * (DIRLOCK_ELOST); it must check before committing work (as the board does
 * right before it renames its new log into place), or use a fence.
 */
#include "dir.h"
#include "dir_fsops.h"
#include "test_hooks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* While we wait, the prepared owner record is rewritten this often. */
#define PREP_REWRITE_NS 1000000000LL
/* An unreadable prepared directory (a crash between its mkdir and its
 * record) is garbage once this old. */
#define PREP_UNREADABLE_AGE DIRLOCK_DEFAULT_STALE_AGE

/* ---- entries and their age (INVARIANT C) ----------------------------- */

int dl_entry_create(const char *path, const dirlock *h, int mode)
{
        dl_record rec;
        char text[DL_RECORD_MAX];
        dl_record_self(&rec, h->token, mode, h->opts.stale_age, h->opts.partner_pid, h->partner_start);
        if (h->opts.flags & DIRLOCK_NO_DEADLOCK)
                rec.tid = 0; /* held by no thread that deadlock detection may follow */
        if (dl_record_format(&rec, text, sizeof text) < 0) {
                errno = ENAMETOOLONG;
                return -1;
        }
        return dl_fs_symlink(text, path);
}

static double age_s(long long now_ns, long long then_ns)
{
        return (double)(now_ns - then_ns) / 1e9;
}

/* When `leaf` of dirfd (dirfd itself for "") last changed, the later of
 * its mtime and ctime, asked of the server on a network filesystem
 * (AT_STATX_FORCE_SYNC: a client's cache of attributes may be late,
 * CLOCKS in lib/netfs/netfs.c).  0, or -1 with errno. */
static int changed_at(int dirfd, const char *leaf, long long *changed)
{
        struct statx sx;
        int flags = AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC | (leaf[0] == '\0' ? AT_EMPTY_PATH : 0);
        if (statx(dirfd, leaf, flags, STATX_MTIME | STATX_CTIME, &sx) != 0)
                return -1;
        long long m = (long long)sx.stx_mtime.tv_sec * 1000000000LL + sx.stx_mtime.tv_nsec;
        long long c = (long long)sx.stx_ctime.tv_sec * 1000000000LL + sx.stx_ctime.tv_nsec;
        *changed = m > c ? m : c;
        return 0;
}

/* Read entry `leaf` relative to dirfd: record (zeroed when unreadable) and
 * the time it last changed (also in rec->changed_ns).  0, or -1 with
 * errno. */
static int entry_readat(int dirfd, const char *leaf, dl_record *rec, long long *changed)
{
        char text[DL_RECORD_MAX];
        ssize_t n = readlinkat(dirfd, leaf, text, sizeof text);
        if (n < 0)
                return -1;
        if (changed_at(dirfd, leaf, changed) != 0)
                return -1;
        if ((size_t)n >= sizeof text || dl_record_parse(text, (size_t)n, rec) != 0)
                memset(rec, 0, sizeof *rec); /* unreadable record: judge by age alone */
        rec->changed_ns = *changed;
        return 0;
}

int dl_entry_readat(int dirfd, const char *leaf, dl_record *rec, double *age)
{
        long long now = dl_wall_ns(), changed; /* the clock first: see C */
        if (entry_readat(dirfd, leaf, rec, &changed) != 0)
                return -1;
        *age = age_s(now, changed);
        return 0;
}

int dl_entry_read(const char *path, dl_record *rec, double *age)
{
        for (int try = 0;; try++) {
                int rc = dl_entry_readat(AT_FDCWD, path, rec, age);
                if (rc == 0 || errno != ESTALE || try == DL_ESTALE_TRIES)
                        return rc;
                dl_fs_refresh(path); /* ESTALE in lib/netfs/netfs_fsops.c */
        }
}

double dl_record_stale_limit(const dl_record *rec, double stale_age)
{
        double asked = (double)rec->stale_ms / 1e3;
        return asked > stale_age ? asked : stale_age; /* the holder may have asked for longer */
}

bool dl_entry_stale(const dl_record *rec, double age, double stale_age, const dl_fs *fs)
{
        double limit = dl_record_stale_limit(rec, stale_age);
        bool aged_out = dl_fs_aged_out(fs, rec->token, rec->changed_ns, age, limit);
        if (rec->pid <= 0)
                return aged_out; /* unreadable record */
        if (aged_out)
                return !dl_record_partner_only(rec);
        return dl_record_owner_alive(rec) == 0;
}

int dl_fail_unbreakable(dirlock_error *err, const char *what, const dl_record *rec, int e)
{
        return dl_fail(err, DIRLOCK_EPERM, e,
                       "%s is stale (pid %ld on %s) but this user may not break it; its owner's user or "
                       "root can (dirlock break), see docs/sharing.md",
                       what, (long)rec->pid, rec->host[0] ? rec->host : "an unknown host");
}

/* ---- looking into a lock directory ----------------------------------- */

/* One look (dl_lock_look); -1 with ESTALE when the directory was removed
 * or replaced while we read it: once it is open, a network filesystem
 * says so with ESTALE or ENOENT (the server no longer has what the client
 * opened), both "changed under us". */
static int lock_look_once(const char *lock_path, const dl_fs *fs, dl_lock_view *v)
{
        memset(v, 0, sizeof *v);
        long long now = dl_wall_ns();                          /* before any time is read: see C */
        int dfd = dl_fs_open_dir_sure(lock_path, fs->network); /* a cached "absent" is no answer */
        if (dfd < 0) {
                if (errno != ENOENT)
                        return -1;
                v->state = DL_LOCK_ABSENT;
                return 0;
        }
        DIR *dir = fdopendir(dfd);
        if (dir == NULL) {
                int e = errno;
                close(dfd);
                errno = e == ENOENT ? ESTALE : e;
                return -1;
        }
        long long changed; /* the rename that took it, at least */
        if (changed_at(dfd, "", &changed) != 0) {
                int e = errno;
                closedir(dir);
                errno = e == ENOENT ? ESTALE : e;
                return -1;
        }
        bool foreign = false;
        struct dirent *de;
        int more;
        while ((more = dl_fs_next(dir, &de)) > 0) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (dl_layout_owner_token(de->d_name) != NULL)
                        memcpy(v->leaf, de->d_name, DL_OWNER_LEAF_SIZE);
                else
                        foreign = true;
        }
        if (more < 0) {
                int e = errno;
                closedir(dir);
                errno = e == ENOENT ? ESTALE : e;
                return -1;
        }
        v->state = v->leaf[0] ? DL_LOCK_OWNED : foreign ? DL_LOCK_FOREIGN : DL_LOCK_EMPTY;
        if (v->state == DL_LOCK_OWNED) {
                /* Relative to the directory we listed: the entry is that
                 * lock's (tokens are unique, lock directories never move). */
                long long entry_changed;
                if (entry_readat(dfd, v->leaf, &v->rec, &entry_changed) != 0) {
                        int e = errno;
                        closedir(dir);
                        if (e != ENOENT) {
                                errno = e;
                                return -1;
                        }
                        memset(v, 0, sizeof *v);
                        v->state = DL_LOCK_EMPTY; /* released while we looked */
                        return 0;
                }
                if (entry_changed > changed)
                        changed = entry_changed; /* refreshed since */
                v->token = dl_layout_owner_token(v->leaf);
                if (v->rec.token[0] == '\0') /* unreadable record: the entry's name still says whose */
                        snprintf(v->rec.token, sizeof v->rec.token, "%.*s", DIRLOCK_TOKEN_LEN, v->token);
        }
        v->rec.changed_ns = changed;
        v->age = age_s(now, changed);
        closedir(dir);
        return 0;
}

int dl_lock_look(const char *lock_path, const dl_fs *fs, dl_lock_view *v)
{
        for (int try = 0;; try++) {
                int rc = lock_look_once(lock_path, fs, v);
                if (rc == 0 || errno != ESTALE || try == DL_ESTALE_TRIES)
                        return rc;
                dl_fs_refresh(lock_path); /* replaced while we looked: look again */
        }
}

void dl_lock_describe(const dl_lock_view *v, double stale_age, const dl_fs *fs, dirlock_owner *owner)
{
        const dl_record *rec = &v->rec;
        dl_record_to_owner(rec, owner);
        snprintf(owner->token, sizeof owner->token, "%s", v->token);
        owner->age = v->age;
        owner->stale = dl_entry_stale(rec, v->age, stale_age, fs);
        owner->mode = rec->mode;
}

void dl_lock_clear_foreign(const char *lock_path)
{
        DIR *dir = dl_fs_opendir(lock_path);
        if (dir == NULL)
                return;
        struct dirent *de;
        while (dl_fs_next(dir, &de) > 0) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    dl_layout_owner_token(de->d_name) != NULL)
                        continue;
                if (unlinkat(dirfd(dir), de->d_name, 0) != 0 && errno == EISDIR)
                        unlinkat(dirfd(dir), de->d_name, AT_REMOVEDIR);
        }
        closedir(dir);
        dl_fs_rmdir(lock_path); /* only if it is empty now, i.e. free */
}

int dl_excl_break_entry(const char *lock_path, const char *leaf)
{
        if (dl_test_hook(STOP_BEFORE_BREAK) != NULL)
                raise(SIGSTOP);
        char *entry = dl_join(lock_path, leaf, NULL);
        if (entry == NULL) {
                errno = ENOMEM;
                return -1;
        }
        int rc = dl_fs_unlink(entry); /* ENOENT: someone else broke or released it */
        int e = errno;
        free(entry);
        if (rc != 0) {
                errno = e;
                return -1;
        }
        dl_fs_rmdir(lock_path);
        return 0;
}

/* ---- prepared directories ---------------------------------------------- */

/* Remove a flat directory (entries, then itself). */
static void remove_flat_dir(const char *path)
{
        DIR *d = dl_fs_opendir(path);
        if (d != NULL) {
                struct dirent *de;
                while (dl_fs_next(d, &de) > 0)
                        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                                unlinkat(dirfd(d), de->d_name, 0);
                closedir(d);
        }
        dl_fs_rmdir(path);
}

/* Whether prepared directory `path` (token `token`) is garbage. */
static bool prep_is_garbage(const char *path, const char *token, double remote_age)
{
        char leaf[DL_OWNER_LEAF_SIZE];
        snprintf(leaf, sizeof leaf, DL_OWNER_PREFIX "%.*s", DIRLOCK_TOKEN_LEN, token);
        int dfd = dl_fs_open_dir(path);
        if (dfd < 0)
                return false;
        long long now = dl_wall_ns(), changed;
        dl_record rec;
        bool garbage = false;
        if (entry_readat(dfd, leaf, &rec, &changed) == 0 && rec.pid > 0) {
                if (dl_record_same_host(&rec))
                        garbage = dl_record_owner_alive(&rec) == 0;
                else if (remote_age > 0) {
                        garbage = age_s(now, changed) > dl_record_stale_limit(&rec, remote_age);
                }
        } else if (remote_age > 0) {
                garbage = changed_at(dfd, "", &changed) == 0 && age_s(now, changed) > PREP_UNREADABLE_AGE;
        }
        close(dfd);
        return garbage;
}

void dl_sweep_preps(const char *lockdir, const char *name, double remote_age)
{
        DIR *d = dl_fs_opendir(lockdir);
        if (d == NULL)
                return;
        bool network = dl_fs_of(lockdir, NULL)->network;
        struct dirent *de;
        while (dl_fs_next(d, &de) > 0) {
                const char *leaf = de->d_name;
                if (leaf[0] != '.')
                        continue;
                char *path = dl_join(lockdir, leaf, NULL);
                if (path == NULL)
                        break;
                const char *token = dl_layout_prep_token(leaf, name);
                if (token != NULL && prep_is_garbage(path, token, remote_age)) {
                        /* Aside first: if its owner is alive after all and
                         * renames it onto the lock at this moment, exactly
                         * one of the two renames wins. */
                        char aside_token[DIRLOCK_TOKEN_LEN + 1];
                        char *aside = NULL;
                        if (dl_random_token(aside_token, NULL) == DIRLOCK_OK)
                                aside = dl_layout_aside(lockdir, aside_token);
                        if (aside != NULL && dl_fs_rename(path, aside) == 0) {
                                if (network)
                                        dl_fs_forget(path); /* STALE NAMES (fsops.c) */
                                remove_flat_dir(aside);
                        }
                        free(aside);
                } else if (name == NULL &&
                           ((strncmp(leaf, DL_ASIDE_PREFIX, sizeof DL_ASIDE_PREFIX - 1) == 0 &&
                             dl_layout_is_token(leaf + sizeof DL_ASIDE_PREFIX - 1, true)) ||
                            dl_layout_has_suffix(leaf, ".broken"))) {
                        remove_flat_dir(path); /* left by an interrupted sweep */
                }
                free(path);
        }
        closedir(d);
}

static char *prep_entry_path(const dirlock *h)
{
        return dl_layout_owner_entry(dl_dir_of(h)->prep_path, h->token);
}

/* Write (or rewrite) the owner record in the prepared directory.  ENOENT
 * in *gone when the directory itself has vanished. */
static int prep_write_record(dirlock *h, bool *gone, dirlock_error *err)
{
        *gone = false;
        char *entry = prep_entry_path(h);
        if (entry == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        if (dl_dir_of(h)->prep_made)
                dl_fs_unlink(entry); /* rewriting: the acquire time starts now */
        int rc = dl_entry_create(entry, h, h->mode);
        int saved = errno;
        free(entry);
        if (rc != 0) {
                /* Gone, or replaced under us (ESTALE): made again. */
                if (saved == ENOENT || saved == ESTALE) {
                        *gone = true;
                        return DIRLOCK_OK;
                }
                return dl_fail(err, DIRLOCK_EIO, saved, "cannot write owner record in '%s'",
                               dl_dir_of(h)->prep_path);
        }
        dl_dir_of(h)->prep_ns = dl_wall_ns();
        return DIRLOCK_OK;
}

static int prep_mkdir(dirlock *h, dirlock_error *err)
{
        int made = dl_fs_mkdir_in(dl_dir_of(h)->prep_path, dl_dir_of(h)->lockdir_mode);
        if (made != 0 && errno == EEXIST)
                return DIRLOCK_OK; /* ours (the path carries our token), left by an earlier round */
        if (made != 0 && errno == ENOENT && !(h->opts.flags & DIRLOCK_NO_MKDIR)) {
                /* The lock directory was removed since we last saw it. */
                if (dl_make_dirs(dl_dir_of(h)->lockdir) != 0)
                        return dl_fail(err, DIRLOCK_EIO, errno, "cannot create lock directory '%s'",
                                       dl_dir_of(h)->lockdir);
                made = dl_fs_mkdir_in(dl_dir_of(h)->prep_path, dl_dir_of(h)->lockdir_mode);
        }
        if (made == 0)
                return DIRLOCK_OK;
        int e = errno;
        if (e == ENOENT)
                return dl_fail(err, DIRLOCK_EIO, e, "lock directory '%s' is missing", dl_dir_of(h)->lockdir);
        /* Named by the lock and its directory: the prepared directory's
         * name is ours alone, and means nothing to the caller. */
        if (e == EACCES || e == EPERM)
                return dl_fail(err, DIRLOCK_EPERM, e,
                               "cannot take lock '%s': no right to create entries in lock directory '%s' "
                               "(see docs/sharing.md)",
                               h->name, dl_dir_of(h)->lockdir);
        return dl_fail(err, DIRLOCK_EIO, e,
                       "cannot take lock '%s': cannot create an entry in lock directory '%s'", h->name,
                       dl_dir_of(h)->lockdir);
}

/* Make sure the prepared directory exists with a young record: made when
 * missing (first attempt, or it vanished), rewritten once a second. */
static int prep_make(dirlock *h, dirlock_error *err)
{
        if (dl_dir_of(h)->prep_path == NULL) {
                dl_dir_of(h)->prep_path = dl_layout_prep(dl_dir_of(h)->lockdir, h->name, h->token);
                if (dl_dir_of(h)->prep_path == NULL)
                        return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        bool gone;
        int rc;
        if (dl_dir_of(h)->prep_made) {
                if (dl_wall_ns() - dl_dir_of(h)->prep_ns <= PREP_REWRITE_NS)
                        return DIRLOCK_OK;
                rc = prep_write_record(h, &gone, err);
                if (rc != DIRLOCK_OK || !gone)
                        return rc;
                dl_dir_of(h)->prep_made = false; /* taken away: make it again */
        }
        for (int round = 0; round < 8; round++) {
                rc = prep_mkdir(h, err);
                if (rc != DIRLOCK_OK)
                        return rc;
                rc = prep_write_record(h, &gone, err);
                if (rc != DIRLOCK_OK) {
                        dl_fs_rmdir(dl_dir_of(h)->prep_path);
                        return rc;
                }
                if (!gone) {
                        dl_dir_of(h)->prep_made = true;
                        return DIRLOCK_OK;
                }
        }
        return dl_fail(err, DIRLOCK_EIO, ENOENT, "prepared directory '%s' keeps vanishing",
                       dl_dir_of(h)->prep_path);
}

void dl_excl_discard_prep(dirlock *h)
{
        if (!dl_dir_of(h)->prep_made)
                return;
        char *entry = prep_entry_path(h);
        if (entry != NULL) {
                dl_fs_unlink(entry);
                free(entry);
        }
        dl_fs_rmdir(dl_dir_of(h)->prep_path);
        dl_dir_of(h)->prep_made = false;
}

void dl_excl_retoken(dirlock *h)
{
        struct dl_dir *d = dl_dir_of(h);
        dl_layout_retoken(d->entry_path, h->token);
        free(d->prep_path);
        d->prep_path = NULL;
}

/* ---- judging and breaking -------------------------------------------- */

enum dl_judgement dl_excl_judge(dirlock *h, dl_record *holder, char holder_token[DIRLOCK_TOKEN_LEN + 1],
                                dirlock_error *err)
{
        memset(holder, 0, sizeof *holder);
        if (holder_token != NULL)
                holder_token[0] = '\0';
        dl_lock_view v;
        if (dl_lock_look(dl_dir_of(h)->lock_path, dl_dir_of(h)->fs, &v) != 0) {
                /* Changing hands as we looked (fsops.c; a client that
                 * caches "no such name" says ENOENT for it): held, look
                 * later. */
                if (errno == ESTALE || (errno == ENOENT && dl_dir_of(h)->fs->network))
                        return DL_HELD;
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock '%s'", dl_dir_of(h)->lock_path);
                return DL_ERROR;
        }
        switch (v.state) {
        case DL_LOCK_ABSENT:
        case DL_LOCK_EMPTY:
                return DL_FREE; /* free by invariant A */
        case DL_LOCK_FOREIGN:
                if (v.age <= h->opts.stale_age)
                        return DL_HELD;
                dl_lock_clear_foreign(dl_dir_of(h)->lock_path);
                return DL_FREE;
        case DL_LOCK_OWNED:
                break;
        }
        *holder = v.rec;
        if (holder_token != NULL)
                memcpy(holder_token, v.token, DIRLOCK_TOKEN_LEN + 1);
        if (!dl_entry_stale(&v.rec, v.age, h->opts.stale_age, dl_dir_of(h)->fs))
                return DL_HELD;
        if (dl_excl_break_entry(dl_dir_of(h)->lock_path, v.leaf) != 0) {
                int e = errno;
                if (e == ENOENT || e == ESTALE)
                        return DL_FREE; /* someone else broke or released it: look again */
                char what[DIRLOCK_NAME_MAX + 16];
                snprintf(what, sizeof what, "lock '%s'", h->name);
                if (e == EPERM || e == EACCES)
                        dl_fail_unbreakable(err, what, &v.rec, e);
                else
                        dl_fail(err, DIRLOCK_EIO, e, "cannot break stale lock '%s'", dl_dir_of(h)->lock_path);
                return DL_ERROR;
        }
        /* Its holder may have left prepared directories behind too. */
        if (v.rec.pid > 0 && dl_record_owner_alive(&v.rec) == 0)
                dl_sweep_preps(dl_dir_of(h)->lockdir, h->name, 0);
        return DL_FREE;
}

/* ---- the public steps ------------------------------------------------ */

/* Whether the lock holds our own entry after a rename that failed: a
 * network filesystem may have made the rename and lost its answer (the
 * connection broke meanwhile).  Then the lock is ours, by invariant B. */
static bool ours_after_all(const dirlock *h)
{
        dl_lock_view v;
        return dl_lock_look(dl_dir_of(h)->lock_path, dl_dir_of(h)->fs, &v) == 0 && v.state == DL_LOCK_OWNED &&
               strcmp(v.token, h->token) == 0;
}

/* One rename attempt.  DIRLOCK_OK, DIRLOCK_EBUSY or an error.  With
 * `peek`, a lock directory that a lookup finds in place counts as busy
 * without the rename (see ACQUIRE 2). */
static int take_once(dirlock *h, bool peek, dirlock_error *err)
{
        DL_ASSERT(!dl_dir_of(h)->excl_held); /* one acquisition takes W once */
        dl_time began;
        for (int again = 0;; again++) {
                int rc = prep_make(h, err);
                if (rc != DIRLOCK_OK)
                        return rc;
                /* ACQUIRE 1 before 2: the directory renamed into place
                 * holds our owner entry, never nothing (INVARIANT A). */
                DL_ASSERT(dl_dir_of(h)->prep_made);
                struct stat st;
                if (peek && dl_fs_lstat(dl_dir_of(h)->lock_path, &st) == 0)
                        return DIRLOCK_EBUSY;
                began = dl_now();
                if (dl_fs_rename(dl_dir_of(h)->prep_path, dl_dir_of(h)->lock_path) == 0)
                        break;
                int e = errno;
                if (e == ENOTEMPTY || e == EEXIST)
                        return DIRLOCK_EBUSY;
                if (e == ESTALE)
                        return DIRLOCK_EBUSY; /* changing hands as we renamed (fsops.c): look again */
                if (ours_after_all(h))
                        break;
                if (e == ENOENT && again < 8) {
                        /* Our prepared directory still there: what is
                         * missing is the directory the lock goes in (a
                         * counting lock's group, permits.c), the caller's
                         * to make. */
                        if (dl_fs_lstat(dl_dir_of(h)->prep_path, &st) == 0)
                                return dl_fail(err, DIRLOCK_EIO, e, "the directory of lock '%s' is missing",
                                               dl_dir_of(h)->lock_path);
                        /* Our prepared directory was moved away as a crash's
                         * leftover (dl_sweep_preps), or the lock directory
                         * itself was removed: make them again (prep_mkdir
                         * says when it cannot). */
                        dl_dir_of(h)->prep_made = false;
                        continue;
                }
                if (e == ENOTDIR)
                        return dl_fail(err, DIRLOCK_EIO, e, "'%s' is in the way of the lock",
                                       dl_dir_of(h)->lock_path);
                if (e == EPERM || e == EACCES)
                        return dl_fail(err, DIRLOCK_EPERM, e,
                                       "cannot take lock '%s': '%s' belongs to another user (see "
                                       "docs/sharing.md)",
                                       h->name, dl_dir_of(h)->lock_path);
                return dl_fail(err, DIRLOCK_EIO, e, "cannot take lock '%s'", dl_dir_of(h)->lock_path);
        }
        dl_dir_of(h)->prep_made = false; /* it is the lock now, and its age is zero (C) */
        dl_dir_of(h)->excl_held = true;
        dl_dir_of(h)->changed = began; /* RELEASE 1 */
        dl_dir_of(h)->kept_young = true;
        if (dl_dir_of(h)->fs->network)
                dl_fs_forget(dl_dir_of(h)->prep_path); /* STALE NAMES (fsops.c) */
        return DIRLOCK_OK;
}

/* Our entry could not be found (ENOENT) or reached (ESTALE) on a network
 * filesystem: the server may have kept the lock directory under the name
 * it had before our rename (STALE NAMES in lib/netfs/netfs_fsops.c).  Look that name up
 * so that it is dropped; true when the caller should try once more. */
static bool forget_prep_name(const dirlock *h)
{
        const struct dl_dir *d = dl_dir_of(h);
        if (!d->fs->network || d->prep_path == NULL || (errno != ENOENT && errno != ESTALE))
                return false;
        dl_fs_forget(d->prep_path);
        return true;
}

int dl_excl_try(dirlock *h, dl_record *holder, bool judge, dirlock_error *err)
{
        dl_record scratch;
        dirlock_error local;
        if (holder == NULL)
                holder = &scratch;
        if (err == NULL)
                err = &local;
        /* A few rounds: each DL_FREE means the lock just became free.  A
         * judging attempt looks before its first rename: the judgement
         * that follows tells a held lock from a free (empty) one. */
        for (int round = 0; round < 8; round++) {
                int rc = take_once(h, judge && round == 0, err);
                if (rc != DIRLOCK_EBUSY || !judge)
                        return rc;
                enum dl_judgement j = dl_excl_judge(h, holder, NULL, err);
                if (j == DL_ERROR)
                        return err->code;
                if (j == DL_HELD)
                        return DIRLOCK_EBUSY;
        }
        return DIRLOCK_EBUSY;
}

static double seconds_since(const dl_time *t)
{
        dl_time now = dl_now();
        return (double)(dl_ts_ns(&now) - dl_ts_ns(t)) / 1e9;
}

/* A refresh that began at `began` changed our entry (RELEASE 1). */
static void note_change(dirlock *h, const dl_time *began)
{
        struct dl_dir *d = dl_dir_of(h);
        if (seconds_since(&d->changed) >= h->opts.stale_age / 3)
                d->kept_young = false;
        d->changed = *began;
}

int dl_excl_release(dirlock *h, dirlock_error *err)
{
        if (!dl_dir_of(h)->excl_held)
                return DIRLOCK_OK;
        int rc = dl_fs_unlink(dl_dir_of(h)->entry_path);
        bool gone = rc != 0 && errno == ENOENT;
        if (rc != 0 && forget_prep_name(h)) {
                rc = dl_fs_unlink(dl_dir_of(h)->entry_path);
                gone = rc != 0 && (gone || errno == ENOENT);
        }
        if (gone) {
                dl_time done = dl_now();
                int ours = dl_fs_released(h, &done);
                if (ours == 1)
                        rc = 0; /* our unlink removed it */
                else if (ours == 0)
                        errno = ENOENT;
        }
        if (rc != 0) {
                int e = errno;
                /* Only ENOENT says the entry is gone; ESTALE that outlived
                 * its tries (fsops.c) is not a loss: the handle keeps it,
                 * as for any other failure, and a retry may work. */
                if (e != ENOENT)
                        return dl_fail(err, DIRLOCK_EIO, e, "cannot release lock '%s'",
                                       dl_dir_of(h)->lock_path);
                dl_dir_of(h)->excl_held = false;
                return dl_fail(err, DIRLOCK_ELOST, 0,
                               "lock '%s' was broken as stale before release; the lock now there "
                               "(if any) was left alone",
                               h->name);
        }
        dl_dir_of(h)->excl_held = false;
        dl_fs_rmdir(dl_dir_of(h)->lock_path); /* ENOTEMPTY: a new holder already took it */
        return DIRLOCK_OK;
}

int dl_excl_release_kept(dirlock *h, dirlock_error *err)
{
        int rc = dl_excl_release(h, err);
        if (rc == DIRLOCK_ELOST) {
                dl_ok(err);
                return DIRLOCK_OK;
        }
        return rc;
}

int dl_excl_refresh(dirlock *h, dirlock_error *err)
{
        dl_time began = dl_now();
        if (dl_fs_touch(dl_dir_of(h)->entry_path) == 0 ||
            (forget_prep_name(h) && dl_fs_touch(dl_dir_of(h)->entry_path) == 0)) {
                note_change(h, &began);
                return DIRLOCK_OK;
        }
        int e = errno;
        /* ENOENT is a loss only when the entry is gone: a filesystem that
         * sets a symbolic link's times through the link (sshfs: refused
         * by lib/netfs/netfs.c) answers ENOENT for the owner record it points to. */
        int present = e == ENOENT ? dl_fs_present(dl_dir_of(h)->entry_path, dl_dir_of(h)->fs->network) : -1;
        if (present == 0)
                return dl_fail(err, DIRLOCK_ELOST, 0, "lock '%s' was broken as stale", h->name);
        return dl_fail(err, DIRLOCK_EIO, e, "cannot refresh lock '%s'%s", dl_dir_of(h)->lock_path,
                       present == 1 ? ": its owner entry is there, but its times cannot be set" : "");
}

int dl_excl_check(const dirlock *h, dirlock_error *err)
{
        int present = dl_fs_present(dl_dir_of(h)->entry_path, dl_dir_of(h)->fs->network);
        if (present == 0)
                errno = ENOENT;
        if (present != 1 && forget_prep_name(h))
                present = dl_fs_present(dl_dir_of(h)->entry_path, dl_dir_of(h)->fs->network);
        if (present == 1)
                return DIRLOCK_OK;
        if (present == 0)
                return dl_fail(err, DIRLOCK_ELOST, 0, "lock '%s' was broken as stale", h->name);
        return dl_fail(err, DIRLOCK_EIO, errno, "cannot check lock '%s'", dl_dir_of(h)->lock_path);
}
