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
 * ACQUIRE (dl_excl_try):
 *   1. mkdir D/.NAME.<T>.new and create owner.<T> in it (private: the
 *      leading dot keeps it out of every other process's way).
 *   2. rename(D/.NAME.<T>.new, D/NAME.lock).  rename(2) replaces an absent
 *      or *empty* target directory atomically and fails with ENOTEMPTY or
 *      EEXIST when the target holds an entry: by invariant A exactly the
 *      free case succeeds, and of many concurrent renames at most one can
 *      find the target empty.  (Works the same over NFS, where rename is
 *      atomic on the server.)
 *   3. On failure, judge the holder (below); if stale, break it and go to 2.
 *      The prepared directory is kept across retries and removed at the end.
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
 * mtime.  The lock is stale when its age exceeds the stale age, or at once
 * when the owner is on this host (same host name, boot and pid namespace)
 * and provably dead: no such pid, a zombie, or a different start time.
 *
 * BREAK (break_entry): unlink(D/NAME.lock/owner.<T>) for the judged token T,
 * then rmdir as in release.  Race-free by invariant B: when many processes
 * judge the same lock stale, exactly one unlink succeeds (the others get
 * ENOENT and simply retry the acquire); a breaker that judged lock T and was
 * paused until after T was broken and NAME re-taken with token U unlinks a
 * path that no longer exists: it can never remove U.
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

#define OWNER_PREFIX "owner."
#define OWNER_PREFIX_LEN 6
/* After this long waiting, the prepared owner record is rewritten so that
 * its acquire time and age start when the lock is actually taken. */
#define PREP_MAX_AGE_NS 500000000LL

int dl_entry_create(const char *path, const char *token, int mode)
{
        dl_record rec;
        char text[DL_RECORD_MAX];
        dl_record_self(&rec, token, mode);
        if (dl_record_format(&rec, text, sizeof text) < 0) {
                errno = ENAMETOOLONG;
                return -1;
        }
        return symlink(text, path);
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
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        *age_s = (double)(now.tv_sec - st.st_mtim.tv_sec) + (double)(now.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
        return 0;
}

bool dl_entry_stale(const dl_record *rec, double age_s, double stale_age)
{
        if (age_s > stale_age)
                return true;
        return rec->pid > 0 && dl_record_owner_alive(rec) == 0;
}

/* ---- preparing and taking -------------------------------------------- */

static int prep_write_record(dirlock *h, dirlock_error *err)
{
        char *entry = dl_join(h->prep_path, OWNER_PREFIX, h->token);
        if (entry == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        if (h->prep_made)
                unlink(entry); /* rewriting a record that aged while we waited */
        int rc = dl_entry_create(entry, h->token, h->mode);
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
                        return dl_fail(err, DIRLOCK_EIO, errno, "cannot create lock directory '%s'", h->lockdir);
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
        int dfd = open(h->lock_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                if (errno == ENOENT)
                        return DL_FREE;
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock '%s'", h->lock_path);
                return DL_ERROR;
        }
        DIR *dir = fdopendir(dfd);
        if (dir == NULL) {
                close(dfd);
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read lock '%s'", h->lock_path);
                return DL_ERROR;
        }
        char entry_name[OWNER_PREFIX_LEN + 33] = "";
        bool other = false;
        struct dirent *de;
        while ((de = readdir(dir)) != NULL) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (strncmp(de->d_name, OWNER_PREFIX, OWNER_PREFIX_LEN) == 0 && strlen(de->d_name) == 38)
                        memcpy(entry_name, de->d_name, sizeof entry_name); /* 38 + NUL */
                else
                        other = true;
        }
        struct stat dst;
        int have_dst = fstat(dirfd(dir), &dst) == 0;
        closedir(dir);

        if (entry_name[0] == '\0') {
                if (!other)
                        return DL_FREE; /* empty: free by invariant A */
                /* Not made by this library, or damaged: judge by the
                 * directory's age and break it only when that is stale. */
                struct timespec now;
                clock_gettime(CLOCK_REALTIME, &now);
                double age = have_dst ? (double)(now.tv_sec - dst.st_mtim.tv_sec) : 0;
                if (age <= h->opts.stale_age)
                        return DL_HELD;
                char leaf[DIRLOCK_NAME_MAX + 48];
                snprintf(leaf, sizeof leaf, ".%s.%s.broken", h->name, h->token);
                char *aside = dl_join(h->lockdir, leaf, NULL);
                if (aside != NULL && rename(h->lock_path, aside) == 0) {
                        DIR *d = opendir(aside);
                        if (d != NULL) {
                                while ((de = readdir(d)) != NULL) {
                                        char *p = dl_join(aside, de->d_name, NULL);
                                        if (p != NULL && de->d_name[0] != '.')
                                                unlink(p);
                                        free(p);
                                }
                                closedir(d);
                        }
                        rmdir(aside);
                }
                free(aside);
                return DL_FREE;
        }

        if (holder_token != NULL)
                memcpy(holder_token, entry_name + OWNER_PREFIX_LEN, 33);
        char *entry = dl_join(h->lock_path, entry_name, NULL);
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
        if (!dl_entry_stale(holder, age, h->opts.stale_age)) {
                free(entry);
                return DL_HELD;
        }
        /* Test hook: stop between judgement and removal, so tests can show
         * that a breaker resumed late cannot remove a newer lock. */
        if (getenv("DIRLOCK_TEST_STOP_BEFORE_BREAK") != NULL)
                raise(SIGSTOP);
        /* BREAK: unlink exactly the judged entry (invariant B), then tidy. */
        if (unlink(entry) == 0)
                rmdir(h->lock_path);
        free(entry);
        return DL_FREE;
}

/* ---- the public steps ------------------------------------------------ */

/* One rename attempt.  DIRLOCK_OK, DIRLOCK_EBUSY or an error. */
static int take_once(dirlock *h, dirlock_error *err)
{
        int rc = prep_make(h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (rename(h->prep_path, h->lock_path) == 0) {
                h->prep_made = false; /* it is the lock now */
                h->excl_held = true;
                return DIRLOCK_OK;
        }
        int e = errno;
        if (e == ENOTEMPTY || e == EEXIST)
                return DIRLOCK_EBUSY;
        if (e == ENOTDIR)
                return dl_fail(err, DIRLOCK_EIO, e, "'%s' is in the way of the lock", h->lock_path);
        return dl_fail(err, DIRLOCK_EIO, e, "cannot take lock '%s'", h->lock_path);
}

int dl_excl_try(dirlock *h, dl_record *holder, dirlock_error *err)
{
        dl_record scratch;
        if (holder == NULL)
                holder = &scratch;
        /* A few rounds: each DL_FREE means the lock just became free. */
        for (int round = 0; round < 8; round++) {
                int rc = take_once(h, err);
                if (rc != DIRLOCK_EBUSY)
                        return rc;
                enum dl_judgement j = dl_excl_judge(h, holder, NULL, err);
                if (j == DL_ERROR)
                        return err ? err->code : DIRLOCK_EIO;
                if (j == DL_HELD)
                        return DIRLOCK_EBUSY;
        }
        return DIRLOCK_EBUSY;
}

int dl_excl_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        dl_record holder;
        int rc = dl_excl_try(h, &holder, err);
        if (rc != DIRLOCK_EBUSY)
                goto out;
        if (dl_remaining(deadline) <= 0 && !dl_deadline_never(deadline)) {
                dl_excl_discard_prep(h);
                return dl_fail(err, h->opts.timeout == 0 ? DIRLOCK_EBUSY : DIRLOCK_ETIMEDOUT, 0,
                               "lock '%s' is held by pid %ld on %s", h->name, (long)holder.pid,
                               holder.host[0] ? holder.host : "an unknown host");
        }

        /* The watch is set up before the next attempt, so a release that
         * happens after that attempt fails always wakes us: no lost
         * wake-ups. */
        dl_waiter w;
        dl_waiter_init(&w, h->lockdir, h->opts.flags, h->token);
        dl_waiter_watch_owner(&w, &holder);
        dl_time last_judged = dl_now();
        for (;;) {
                /* Cheap attempt first: a release wakes every waiter and
                 * only one can win; judging (readdir, readlink, /proc) is
                 * done when the owner died or the re-check interval passed. */
                rc = take_once(h, err);
                if (rc != DIRLOCK_EBUSY)
                        break;
                dl_time now = dl_now();
                double since = (double)(now.tv_sec - last_judged.tv_sec) * 1e3 +
                               (double)(now.tv_nsec - last_judged.tv_nsec) / 1e6;
                if (dl_waiter_owner_died(&w) || since >= w.recheck_ms) {
                        rc = dl_excl_try(h, &holder, err);
                        if (rc != DIRLOCK_EBUSY)
                                break;
                        dl_waiter_watch_owner(&w, &holder);
                        last_judged = now;
                }
                if (dl_waiter_wait(&w, deadline) == DIRLOCK_ETIMEDOUT) {
                        rc = dl_excl_try(h, &holder, err); /* one last look */
                        if (rc == DIRLOCK_EBUSY)
                                rc = dl_fail(err, DIRLOCK_ETIMEDOUT, 0,
                                             "timed out after %.3g s: lock '%s' is held by pid %ld on %s",
                                             h->opts.timeout, h->name, (long)holder.pid,
                                             holder.host[0] ? holder.host : "an unknown host");
                        break;
                }
        }
        dl_waiter_close(&w);
out:
        if (rc != DIRLOCK_OK)
                dl_excl_discard_prep(h);
        else
                dl_ok(err);
        return rc;
}

int dl_excl_release(dirlock *h, dirlock_error *err)
{
        if (!h->excl_held)
                return DIRLOCK_OK;
        h->excl_held = false;
        if (unlink(h->entry_path) != 0) {
                int e = errno;
                if (e == ENOENT)
                        return dl_fail(err, DIRLOCK_ELOST, 0,
                                       "lock '%s' was broken as stale before release; the lock now there "
                                       "(if any) was left alone",
                                       h->name);
                return dl_fail(err, DIRLOCK_EIO, e, "cannot release lock '%s'", h->lock_path);
        }
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
