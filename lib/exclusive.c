/* exclusive.c - the exclusive lock protocol: how a lock directory is taken,
 * released, refreshed, judged stale and broken.
 *
 * LAYOUT.  Lock NAME in lock directory D is the directory D/NAME.lock.  A
 * held lock contains exactly one entry, owner.<T>: a symbolic link whose
 * target text is the owner record (owner.c) of the holder, where T is a
 * 128-bit random token drawn for this one acquisition.  The symlink's mtime
 * is the lock's age; refresh renews it.
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
 * ACQUIRE (dl_excl_try, take_once):
 *   1. mkdir D/.NAME.<T>.new and create owner.<T> in it (private: the
 *      leading dot keeps it out of every other process's way).
 *   2. rename(D/.NAME.<T>.new, D/NAME.lock).  rename(2) replaces an absent
 *      or *empty* target directory atomically and fails with ENOTEMPTY or
 *      EEXIST when the target holds an entry: by invariant A exactly the
 *      free case succeeds, and of many concurrent renames at most one can
 *      find the target empty.  (Works the same over NFS, where rename is
 *      atomic on the server.)
 *   3. On failure, judge the holder (below); if stale, break it and go to 2.
 *      The prepared directory is kept across retries and removed at the end;
 *      if its record grew old while we waited it is rewritten first, and if
 *      it was taken for a crash's leftover and moved away (dirlock_cleanup)
 *      it is made again.
 *
 * RELEASE (dl_excl_release):
 *   1. unlink(D/NAME.lock/owner.<T>).  By invariant B this succeeds only if
 *      our acquisition still holds the lock; ENOENT means it was broken as
 *      stale (DIRLOCK_ELOST) and whatever lock is there now is left alone.
 *      After the unlink the lock is free (invariant A): the directory is
 *      empty.
 *   2. rmdir(D/NAME.lock).  Tidies up and wakes waiters (inotify IN_DELETE).
 *      If someone renamed a new lock over the empty directory in between,
 *      rmdir fails with ENOTEMPTY and the new lock stays: rmdir can only
 *      ever remove an empty, i.e. free, lock.  A crash between 1 and 2
 *      leaves an empty directory, which is a free lock.
 *
 * STALE JUDGEMENT (dl_excl_judge): read the owner entry's name, record and
 * mtime.  The lock is stale when its age exceeds the stale age (the larger
 * of the judge's and the one the holder recorded), or at once when the
 * owner is on this host (same host name, boot and pid namespace) and
 * provably dead: no such pid, a zombie, or a different start time.  Ages
 * compare the file's mtime with this host's wall clock: hosts sharing a
 * lock directory over NFS need synchronised clocks (NTP), and a wall-clock
 * step larger than the stale age ages every lock at once.
 *
 * BREAK (dl_excl_break_entry): unlink(D/NAME.lock/owner.<T>) for the judged
 * token T,
 * then rmdir as in release.  Race-free by invariant B: when many processes
 * judge the same lock stale, exactly one unlink succeeds (the others get
 * ENOENT and simply retry the acquire); a breaker that judged lock T and was
 * paused until after T was broken and NAME re-taken with token U unlinks a
 * path that no longer exists: it can never remove U.
 *
 * FOREIGN CONTENT (dl_lock_clear_foreign): a lock directory holding names
 * that are not owner entries was not made by this library (or was damaged).
 * Once older than the stale age, exactly those names are unlinked and the
 * directory rmdir'ed.  No lock can be renamed in while one of them remains
 * (the directory is not empty), an owner entry is never touched, and the
 * directory is never renamed away: nothing taken after the judgement can
 * be removed.
 *
 * What no protocol can prevent: a holder that stops refreshing for longer
 * than the stale age (paused, swapped out, on a partitioned host) is
 * treated as gone.  It learns so from refresh, check or release
 * (DIRLOCK_ELOST); it must check before committing work (as the board does
 * right before it renames its new log into place).
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OWNER_PREFIX     "owner."
#define OWNER_PREFIX_LEN 6
/* After this long waiting, the prepared owner record is rewritten so that
 * its acquire time and age start when the lock is actually taken. */
#define PREP_MAX_AGE_NS 500000000LL
/* A lock whose record is older than this when taken gets its age renewed. */
#define PREP_RENEW_NS 100000000LL

int dl_entry_create(const char *path, const dirlock *h, int mode)
{
        dl_record rec;
        char text[DL_RECORD_MAX];
        dl_record_self(&rec, h->token, mode, h->opts.stale_age);
        if (dl_record_format(&rec, text, sizeof text) < 0) {
                errno = ENAMETOOLONG;
                return -1;
        }
        return symlink(text, path);
}

static double age_of(const struct timespec *mtime)
{
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        return (double)(now.tv_sec - mtime->tv_sec) + (double)(now.tv_nsec - mtime->tv_nsec) / 1e9;
}

int dl_entry_read(const char *path, dl_record *rec, double *age_s)
{
        char text[DL_RECORD_MAX];
        ssize_t n = readlink(path, text, sizeof text);
        if (n < 0)
                return -1;
        struct stat st;
        if (lstat(path, &st) != 0)
                return -1;
        if ((size_t)n >= sizeof text || dl_record_parse(text, (size_t)n, rec) != 0) {
                /* Unreadable record: judge by age alone. */
                memset(rec, 0, sizeof *rec);
        }
        *age_s = age_of(&st.st_mtim);
        return 0;
}

bool dl_entry_stale(const dl_record *rec, double age_s, double stale_age)
{
        double limit = stale_age;
        if ((double)rec->stale_ms / 1e3 > limit)
                limit = (double)rec->stale_ms / 1e3; /* the holder asked for longer */
        if (age_s > limit)
                return true;
        return rec->pid > 0 && dl_record_owner_alive(rec) == 0;
}

/* ---- looking into a lock directory ----------------------------------- */

static bool is_owner_leaf(const char *leaf)
{
        return strncmp(leaf, OWNER_PREFIX, OWNER_PREFIX_LEN) == 0 && strlen(leaf) == OWNER_PREFIX_LEN + 32;
}

int dl_lock_list(const char *lock_path, char owner_leaf[OWNER_LEAF_SIZE], bool *foreign, double *dir_age)
{
        owner_leaf[0] = '\0';
        *foreign = false;
        *dir_age = 0;
        int dfd = open(lock_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -1;
        DIR *dir = fdopendir(dfd);
        if (dir == NULL) {
                int e = errno;
                close(dfd);
                errno = e;
                return -1;
        }
        struct dirent *de;
        while ((de = readdir(dir)) != NULL) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (is_owner_leaf(de->d_name))
                        memcpy(owner_leaf, de->d_name, OWNER_LEAF_SIZE);
                else
                        *foreign = true;
        }
        struct stat st;
        if (fstat(dirfd(dir), &st) == 0)
                *dir_age = age_of(&st.st_mtim);
        closedir(dir);
        return 0;
}

void dl_lock_clear_foreign(const char *lock_path)
{
        int dfd = open(lock_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return;
        DIR *dir = fdopendir(dfd);
        if (dir == NULL) {
                close(dfd);
                return;
        }
        struct dirent *de;
        while ((de = readdir(dir)) != NULL) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    is_owner_leaf(de->d_name))
                        continue;
                if (unlinkat(dirfd(dir), de->d_name, 0) != 0 && errno == EISDIR)
                        unlinkat(dirfd(dir), de->d_name, AT_REMOVEDIR);
        }
        closedir(dir);
        rmdir(lock_path); /* only if it is empty now, i.e. free */
}

int dl_excl_break_entry(const char *lock_path, const char *entry_path)
{
        /* Test hook: stop between judgement and removal, so tests can show
         * that a breaker resumed late cannot remove a newer lock. */
        if (getenv("DIRLOCK_TEST_STOP_BEFORE_BREAK") != NULL)
                raise(SIGSTOP);
        if (unlink(entry_path) != 0)
                return -1; /* ENOENT: someone else broke or released it */
        rmdir(lock_path);
        return 0;
}

/* ---- preparing and taking -------------------------------------------- */

static int prep_write_record(dirlock *h, dirlock_error *err)
{
        char *entry = dl_join(h->prep_path, OWNER_PREFIX, h->token);
        if (entry == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        if (h->prep_made)
                unlink(entry); /* rewriting a record that aged while we waited */
        int rc = dl_entry_create(entry, h, h->mode);
        int saved = errno;
        free(entry);
        if (rc != 0)
                return dl_fail(err, DIRLOCK_EIO, saved, "cannot write owner record in '%s'", h->prep_path);
        h->prep_ns = dl_wall_ns();
        return DIRLOCK_OK;
}

static int prep_make(dirlock *h, dirlock_error *err)
{
        if (h->prep_made) {
                if (dl_wall_ns() - h->prep_ns > PREP_MAX_AGE_NS)
                        return prep_write_record(h, err);
                return DIRLOCK_OK;
        }
        if (h->prep_path == NULL) {
                char leaf[DIRLOCK_NAME_MAX + 48];
                snprintf(leaf, sizeof leaf, ".%s.%s.new", h->name, h->token);
                h->prep_path = dl_join(h->lockdir, leaf, NULL);
                if (h->prep_path == NULL)
                        return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        int made = mkdir(h->prep_path, 0777);
        if (made != 0 && errno == ENOENT && !(h->opts.flags & DIRLOCK_NO_MKDIR)) {
                /* The lock directory was removed since we last saw it. */
                if (dl_make_dirs(h->lockdir) != 0)
                        return dl_fail(err, DIRLOCK_EIO, errno, "cannot create lock directory '%s'",
                                       h->lockdir);
                made = mkdir(h->prep_path, 0777);
        }
        if (made != 0) {
                int e = errno;
                if (e == ENOENT)
                        return dl_fail(err, DIRLOCK_EIO, e, "lock directory '%s' is missing", h->lockdir);
                return dl_fail(err, DIRLOCK_EIO, e, "cannot create '%s'", h->prep_path);
        }
        int rc = prep_write_record(h, err);
        if (rc != DIRLOCK_OK) {
                rmdir(h->prep_path);
                return rc;
        }
        h->prep_made = true;
        return DIRLOCK_OK;
}

void dl_excl_discard_prep(dirlock *h)
{
        if (!h->prep_made)
                return;
        char *entry = dl_join(h->prep_path, OWNER_PREFIX, h->token);
        if (entry != NULL) {
                unlink(entry);
                free(entry);
        }
        rmdir(h->prep_path);
        h->prep_made = false;
}

/* ---- judging and breaking -------------------------------------------- */

enum dl_judgement dl_excl_judge(dirlock *h, dl_record *holder, char holder_token[33], dirlock_error *err)
{
        memset(holder, 0, sizeof *holder);
        if (holder_token != NULL)
                holder_token[0] = '\0';
        char leaf[OWNER_LEAF_SIZE];
        bool foreign;
        double dir_age;
        if (dl_lock_list(h->lock_path, leaf, &foreign, &dir_age) != 0) {
                if (errno == ENOENT)
                        return DL_FREE;
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock '%s'", h->lock_path);
                return DL_ERROR;
        }
        if (leaf[0] == '\0') {
                if (!foreign)
                        return DL_FREE; /* empty: free by invariant A */
                if (dir_age <= h->opts.stale_age)
                        return DL_HELD;
                dl_lock_clear_foreign(h->lock_path);
                return DL_FREE;
        }
        if (holder_token != NULL)
                memcpy(holder_token, leaf + OWNER_PREFIX_LEN, 33);
        char *entry = dl_join(h->lock_path, leaf, NULL);
        if (entry == NULL) {
                dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                return DL_ERROR;
        }
        double age;
        if (dl_entry_read(entry, holder, &age) != 0) {
                int e = errno;
                free(entry);
                if (e == ENOENT)
                        return DL_FREE; /* released while we looked */
                dl_fail(err, DIRLOCK_EIO, e, "cannot read owner record of '%s'", h->lock_path);
                return DL_ERROR;
        }
        if (dl_entry_stale(holder, age, h->opts.stale_age))
                dl_excl_break_entry(h->lock_path, entry); /* ENOENT: someone else did */
        else {
                free(entry);
                return DL_HELD;
        }
        free(entry);
        return DL_FREE;
}

/* ---- the public steps ------------------------------------------------ */

/* One rename attempt.  DIRLOCK_OK, DIRLOCK_EBUSY or an error. */
static int take_once(dirlock *h, dirlock_error *err)
{
        for (int again = 0;; again++) {
                int rc = prep_make(h, err);
                if (rc != DIRLOCK_OK)
                        return rc;
                if (rename(h->prep_path, h->lock_path) == 0)
                        break;
                int e = errno;
                if (e == ENOTEMPTY || e == EEXIST)
                        return DIRLOCK_EBUSY;
                if (e == ENOENT && again == 0) {
                        /* Our prepared directory was moved away as a crash's
                         * leftover (dirlock_cleanup): make it again. */
                        h->prep_made = false;
                        continue;
                }
                if (e == ENOTDIR)
                        return dl_fail(err, DIRLOCK_EIO, e, "'%s' is in the way of the lock", h->lock_path);
                return dl_fail(err, DIRLOCK_EIO, e, "cannot take lock '%s'", h->lock_path);
        }
        h->prep_made = false; /* it is the lock now */
        h->excl_held = true;
        /* A record prepared a while ago (we were descheduled, or stopped,
         * between writing it and the rename) would make the new lock look
         * old: renew its age. */
        if (dl_wall_ns() - h->prep_ns > PREP_RENEW_NS)
                utimensat(AT_FDCWD, h->entry_path, NULL, AT_SYMLINK_NOFOLLOW);
        return DIRLOCK_OK;
}

int dl_excl_try(dirlock *h, dl_record *holder, bool judge, dirlock_error *err)
{
        dl_record scratch;
        dirlock_error local;
        if (holder == NULL)
                holder = &scratch;
        if (err == NULL)
                err = &local;
        /* A few rounds: each DL_FREE means the lock just became free. */
        for (int round = 0; round < 8; round++) {
                int rc = take_once(h, err);
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

int dl_excl_release(dirlock *h, dirlock_error *err)
{
        if (!h->excl_held)
                return DIRLOCK_OK;
        if (unlink(h->entry_path) != 0) {
                int e = errno;
                if (e != ENOENT) /* still ours: the handle keeps it, a retry may work */
                        return dl_fail(err, DIRLOCK_EIO, e, "cannot release lock '%s'", h->lock_path);
                h->excl_held = false;
                return dl_fail(err, DIRLOCK_ELOST, 0,
                               "lock '%s' was broken as stale before release; the lock now there "
                               "(if any) was left alone",
                               h->name);
        }
        h->excl_held = false;
        rmdir(h->lock_path); /* ENOTEMPTY: a new holder already took it */
        return DIRLOCK_OK;
}

int dl_excl_refresh(dirlock *h, dirlock_error *err)
{
        if (utimensat(AT_FDCWD, h->entry_path, NULL, AT_SYMLINK_NOFOLLOW) == 0)
                return DIRLOCK_OK;
        if (errno == ENOENT)
                return dl_fail(err, DIRLOCK_ELOST, 0, "lock '%s' was broken as stale", h->name);
        return dl_fail(err, DIRLOCK_EIO, errno, "cannot refresh lock '%s'", h->lock_path);
}

int dl_excl_check(const dirlock *h, dirlock_error *err)
{
        struct stat st;
        if (lstat(h->entry_path, &st) == 0)
                return DIRLOCK_OK;
        if (errno == ENOENT)
                return dl_fail(err, DIRLOCK_ELOST, 0, "lock '%s' was broken as stale", h->name);
        return dl_fail(err, DIRLOCK_EIO, errno, "cannot check lock '%s'", h->lock_path);
}
