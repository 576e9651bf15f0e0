/* dir.h - what the files of the directory backend share (exclusive.c,
 * rwlock.c, rw_entries.c, fifo.c, dir_backend.c): the handle's directory
 * state, the exclusive primitive the reader-writer layer builds on, and
 * entries with their ages.  Names on disk are in layout.h; the protocols
 * at the top of exclusive.c and rwlock.c. */
#ifndef DIRLOCK_DIR_H
#define DIRLOCK_DIR_H

#include "internal.h"
#include "layout.h"
#include "netfs.h"

struct dl_rw;      /* reader-writer state, owned by rwlock.c */
struct dl_range;   /* range state, owned by range.c */
struct dl_permits; /* a counting lock's state, owned by permits.c */
struct dl_wreg;    /* a wait's entry in the wait register, owned by waits.c */

/* A handle's state in a directory space (h->impl). */
struct dl_dir {
        char *lockdir;         /* absolute path of the lock directory          */
        unsigned lockdir_mode; /* its st_mode: new directories in it follow it */
        const dl_fs *fs;       /* the filesystem it is on (netfs.c)            */
        char *lock_path;       /* <lockdir>/<name>.lock                        */
        char *entry_path;      /* <lock_path>/owner.<token>                    */
        char *prep_path;       /* <lockdir>/.<name>.<token>.new (acquire only) */
        long long prep_ns;     /* when the prepared owner record was written   */
        bool prep_made;        /* prep_path exists                             */
        bool excl_held;        /* we hold <name>.lock                          */
        /* When the last change of our owner entry began (the rename that
         * took the lock, or the last refresh), and whether each refresh
         * came within a third of the stale age of the change before it:
         * RELEASE 1 on a network filesystem (exclusive.c). */
        dl_time changed;
        bool kept_young;
        struct dl_rw *rw;       /* reader-writer state or NULL                  */
        struct dl_range *range; /* a range lock's state, or NULL               */
        /* A counting lock's state, or NULL; lock_path and entry_path are
         * then those of the permit tried or held (permits.c). */
        struct dl_permits *permits;
        /* Its entry in the wait register while it waits, or NULL. */
        struct dl_wreg *wreg;
};

static inline struct dl_dir *dl_dir_of(const dirlock *h)
{
        return (struct dl_dir *)h->impl;
}

/* ---- range locks (range.c) -------------------------------------------- */

/* Make h (h->lo, h->hi set) a range handle: its paths and meta-lock. */
int dl_range_prepare(dirlock *h, dirlock_error *err);
void dl_range_free(dirlock *h);
int dl_range_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err);
int dl_range_release(dirlock *h, dirlock_error *err);
int dl_range_refresh(dirlock *h, dirlock_error *err);
int dl_range_check(const dirlock *h, dirlock_error *err);
int dl_range_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err);
int dl_range_downgrade(dirlock *h, dirlock_error *err);
int dl_range_downgrade_intent(dirlock *h, dirlock_error *err);
int dl_range_shrink(dirlock *h, double lo, double hi, dirlock_error *err);
/* The range holders and waiters of lock `name` (dirlock_ranges), and the
 * number of held ranges (for inspect): range_entries.c. */
int dl_range_list(const char *lockdir, const char *name, double stale_age, dirlock_range_info **out,
                  size_t *count, dirlock_error *err);
unsigned dl_range_count_held(const char *lockdir, const char *name);

/* ---- counting locks (permits.c) ---------------------------------------- */

/* Make h (h->permits set) a permit handle: its paths and queue. */
int dl_permit_prepare(dirlock *h, dirlock_error *err);
void dl_permit_free(dirlock *h);
/* Take a permit by the deadline (dl_take_w, then INVARIANT Q). */
int dl_permit_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err);
/* One attempt at a permit, judging the permits present when `judge`:
 * DIRLOCK_OK (lock_path is the permit, excl_held set), DIRLOCK_EBUSY
 * (*holder: a holder to watch, when one was judged), or an error. */
int dl_permit_try(dirlock *h, dl_record *holder, bool judge, dirlock_error *err);
/* Whether a permit looks free (one readdir, nothing judged). */
bool dl_permit_looks_free(dirlock *h);
/* The directory whose removals are the releases of h's permits. */
const char *dl_permit_release_dir(const dirlock *h);
/* Append the holders of counting lock `name` to *out (*count of them,
 * room for *cap): dirlock_holders. */
int dl_permit_holders(const char *lockdir, const char *name, double stale_age, dirlock_owner **out,
                      size_t *count, size_t *cap, dirlock_error *err);
/* dirlock_cleanup of one D/NAME.permits on filesystem `fs`: stale permits
 * broken, empty permits removed, and empty groups, queue and the
 * directory itself (not on a network filesystem: KEPT DIRECTORIES). */
void dl_permits_cleanup(const char *permits_dir, const dl_fs *fs);
/* The names in directory `dir` on `fs` but "." and "..", as one whole
 * listing (looked at again when the directory is replaced as it is read,
 * ESTALE): DIRLOCK_OK with a malloc'd array (none when it does not
 * exist), or an error -- never a listing cut short.  permits.c. */
int dl_dir_names(const char *dir, const dl_fs *fs, char ***names, size_t *count, dirlock_error *err);
void dl_dir_names_free(char **names, size_t count);

/* ---- the wait register (waits.c) and deadlock detection (deadlock.c) ---- */

/* What blocks a wait: the letter its record gives (`for`), which tells
 * deadlock detection whose holds to follow (deadlock.c). */
enum dl_wait_target {
        DL_FOR_W = 'w',             /* W's holder (take_w: exclusive, intent, simple, ...)    */
        DL_FOR_W_TO_READ = 's',     /* W's holder when it holds readers off (shared)          */
        DL_FOR_READERS = 'r',       /* the name's readers (a writer's drain, an upgrade)      */
        DL_FOR_READERS_OR_W = 'a',  /* readers and W (a writer of policy reader)              */
        DL_FOR_RANGES = 'g',        /* the name's held ranges (a whole lock)                  */
        DL_FOR_RANGE = 'x',         /* overlapping conflicting ranges and whole holders       */
        DL_FOR_RANGE_UPGRADE = 'y', /* overlapping conflicting ranges (an intent range's upgrade) */
        DL_FOR_PERMIT = 'p'         /* the holders of the permits asked (any one of N)        */
};
/* h starts waiting (after a failed try, before its first sleep): its
 * entry in D/.waits -- a blocking thread's made DL_WAIT_LIST_MS later
 * (WHEN in waits.c) -- and a blocking thread's first deadlock check
 * (deadlock.c) falls due DL_DEADLOCK_FIRST_MS later; its waits wake for
 * both (dl_waiter_wake_by).  `kind` is a dirlock_wait_kind, `mode` the mode
 * asked.  DIRLOCK_OK (or an error).  The register is for seeing, never in
 * the way: an entry that cannot be made leaves the wait unlisted. */
int dl_wait_begin(dirlock *h, enum dl_wait_target target, int kind, int mode, dirlock_error *err);
/* After every wake-up of the wait: renew the entry (every quarter of the
 * stale age) and check for deadlock (DL_DEADLOCK_FIRST_MS and
 * DL_DEADLOCK_SECOND_MS after the wait began, then every
 * DL_DEADLOCK_RECHECK_MS).
 * DIRLOCK_OK or DIRLOCK_EDEADLK. */
int dl_wait_step(dirlock *h, dirlock_error *err);
/* Mark h's entry told, or no longer (deadlock.c, ONE VICTIM): rewritten
 * at once, by the same atomic rename.  0, or -1 (not marked: nothing was
 * written, or no entry is made yet). */
int dl_wait_told(dirlock *h, bool told);
/* The wait is over (whatever its outcome): the entry goes. */
void dl_wait_end(dirlock *h);
/* The handle goes: its entry, if any, and the register's state. */
void dl_wait_free(dirlock *h);
/* The waiters of lock `name` (every lock when NULL), longest first; dead
 * waiters' entries are removed on the way.  dirlock_waiters(). */
int dl_waits_list(const char *lockdir, const char *name, dirlock_waiter **out, size_t *count,
                  dirlock_error *err);
/* Their number (0 on error). */
unsigned dl_waits_count(const char *lockdir, const char *name);
/* dirlock_cleanup: dead waiters' entries, and the register when empty. */
void dl_waits_cleanup(const char *lockdir);
/* The names that have waiters, malloc'd array of malloc'd strings. */
int dl_waits_names(const char *lockdir, char ***names, size_t *count);

/* When a blocked waiter first checks for deadlock (a wait for a lock in
 * use usually ends sooner: a hand-off takes well under a millisecond on
 * tmpfs), when it checks a second time, and how often it checks again.
 * The first bounds how soon the wait that closes a cycle -- its victim,
 * the youngest -- reports it (100 ms is promised); the second catches a
 * cycle whose victim checked before another member's entry was made (a
 * process slow to run on a busy machine); the rechecks a cycle whose
 * check saw a lock change hands and proved nothing. */
#define DL_DEADLOCK_FIRST_MS   10.0
#define DL_DEADLOCK_SECOND_MS  50.0
#define DL_DEADLOCK_RECHECK_MS 200.0
/* When a blocked thread's wait gets its entry in the register: before
 * its first check (WHEN in waits.c). */
#define DL_WAIT_LIST_MS 5.0
/* Whether h's wait (its entry just made, h's record `self`) closes a
 * cycle of waits: DIRLOCK_EDEADLK with the cycle in err, or DIRLOCK_OK
 * (none proven).  deadlock.c. */
int dl_deadlock_check(dirlock *h, const dl_wait_record *self, dirlock_error *err);

/* Draw h's fence (dir_fence.c) while `held` says h holds its lock: asked
 * before drawing (not worth it for a lost lock) and after (step 4). */
typedef int (*dl_dir_held_fn)(const dirlock *h, dirlock_error *err);
int dl_dir_fence(dirlock *h, dl_dir_held_fn held, unsigned long long *fence, dirlock_error *err);
/* The last fence drawn for lock `name`, 0 when none (dirlock_inspect). */
unsigned long long dl_dir_fence_last(const char *lockdir, const char *name);

/* A COUNTER (dir_fence.c): directory `dir` holding one empty file named by
 * a number.  dl_counter_read: 1 and *n, the largest number named in it; 0
 * when the directory is missing or empty; -1 on error (errno); -2 when it
 * names a number past DIRLOCK_FENCE_MAX, or only things that are no
 * number (data dirlock did not write).  dl_counter_make: make it, holding
 * 0, through the prepared directory `prep` (a name nobody else uses),
 * unless someone else does first.  dl_counter_swap: move it from `from` to
 * `to` -- 0, or -1 with errno (ENOENT or ESTALE: it no longer held
 * `from`). */
int dl_counter_read(const char *dir, unsigned long long *n);
int dl_counter_make(const char *dir, const char *prep, unsigned lockdir_mode, dirlock_error *err);
int dl_counter_swap(const char *dir, unsigned long long from, unsigned long long to);
/* Remove prepared directory `prep` of a maker cut short, and its 0. */
void dl_counter_prep_remove(const char *prep);

/* ---- the exclusive primitive (exclusive.c) ----------------------------- */

/* One attempt to take h->lock_path; with `judge`, a failed attempt looks
 * at the holder and breaks it if stale, then tries again.  DIRLOCK_OK
 * (h->excl_held set), DIRLOCK_EBUSY (holder in *holder if not NULL;
 * holder->pid == 0 when unknown or not judged), or an error.  Waiting is
 * the caller's (rwlock.c dl_take_w): a cheap attempt on every wake-up, a
 * judging one when the watched owner died or the re-check interval passed. */
int dl_excl_try(dirlock *h, dl_record *holder, bool judge, dirlock_error *err);
/* Release h->lock_path if it is still ours: DIRLOCK_OK or DIRLOCK_ELOST. */
int dl_excl_release(dirlock *h, dirlock_error *err);
int dl_excl_refresh(dirlock *h, dirlock_error *err);
int dl_excl_check(const dirlock *h, dirlock_error *err);
/* Look at the holder of h->lock_path; break it if stale (see BREAK in
 * exclusive.c).  DL_FREE: absent, empty, or just broken (retry at once).
 * DL_HELD: *holder filled (pid 0 when the record is unreadable) and, if
 * holder_token is not NULL, the holder's token (from its entry name).
 * DL_ERROR: err filled; DIRLOCK_EPERM when the lock is stale but this
 * user may not break it. */
enum dl_judgement { DL_FREE, DL_HELD, DL_ERROR };
enum dl_judgement dl_excl_judge(dirlock *h, dl_record *holder, char holder_token[DIRLOCK_TOKEN_LEN + 1],
                                dirlock_error *err);
/* Remove the prepared directory of a failed or finished acquire. */
void dl_excl_discard_prep(dirlock *h);
/* h->token is new: put it in the owner entry's path; the prepared
 * directory (named by the old token) is made again on the next try. */
void dl_excl_retoken(dirlock *h);

/* What a lock directory D/NAME.lock holds, seen at one moment. */
enum dl_lock_state {
        DL_LOCK_ABSENT,  /* no directory: free                        */
        DL_LOCK_EMPTY,   /* empty directory: free (invariant A)       */
        DL_LOCK_FOREIGN, /* names that are not owner entries, no owner */
        DL_LOCK_OWNED    /* held by the owner entry `leaf`            */
};
typedef struct dl_lock_view {
        enum dl_lock_state state;
        char leaf[DL_OWNER_LEAF_SIZE]; /* DL_LOCK_OWNED: "owner.<token>"          */
        const char *token;             /* DL_LOCK_OWNED: inside leaf             */
        dl_record rec;                 /* DL_LOCK_OWNED: zeroed when unreadable  */
        double age;                    /* OWNED: seconds since taken or last refreshed (AGE in
                                          exclusive.c); FOREIGN: since the directory changed */
} dl_lock_view;
/* Look into lock directory `lock_path` (on filesystem `fs`: on a network
 * filesystem "absent" is asked of the parent's listing).  0, or -1 with
 * errno. */
int dl_lock_look(const char *lock_path, const dl_fs *fs, dl_lock_view *v);
/* Fill an owner record for dirlock_inspect from an owned view, judged
 * with `stale_age` on filesystem `fs`. */
void dl_lock_describe(const dl_lock_view *v, double stale_age, const dl_fs *fs, dirlock_owner *owner);
/* Remove the names in a lock directory that are not owner entries, then
 * rmdir it if that left it empty (see FOREIGN CONTENT in exclusive.c). */
void dl_lock_clear_foreign(const char *lock_path);
/* BREAK: unlink the judged owner entry `leaf` of `lock_path`, then rmdir.
 * 0, or -1 with errno (ENOENT: already broken or released; EPERM or
 * EACCES: not ours to break). */
int dl_excl_break_entry(const char *lock_path, const char *leaf);
/* Remove the prepared directories of lock `name` (all names when NULL)
 * whose owners are provably dead on this host; with `remote_age` > 0
 * also those of other hosts (and unreadable ones) older than that. */
void dl_sweep_preps(const char *lockdir, const char *name, double remote_age);

/* Generic entry judging, shared with the reader-writer layer: an entry is a
 * symlink whose target is an owner record; its age counts from its last
 * change (creation, rename, refresh: the later of its mtime and ctime).
 * Reads it; returns 0, or -1 with errno (ENOENT when gone). */
int dl_entry_read(const char *path, dl_record *rec, double *age_s);
/* The same for entry `leaf` of the directory open as dirfd. */
int dl_entry_readat(int dirfd, const char *leaf, dl_record *rec, double *age_s);
/* Stale: older than the larger of stale_age and the holder's recorded
 * stale age (unless only its partner lives: dl_record_partner_only) --
 * on a network filesystem `fs`, also seen unchanged long enough (CLOCKS
 * in netfs.c) -- or owner provably dead on this host.  rec->changed_ns is
 * the entry's change time (the entry readers fill it). */
bool dl_entry_stale(const dl_record *rec, double age_s, double stale_age, const dl_fs *fs);
/* Create entry `path` (a symlink holding h's record: h's token, stale age
 * and partner, the given mode).  0 or -1/errno. */
int dl_entry_create(const char *path, const dirlock *h, int mode);
/* A DIRLOCK_EPERM error for a stale entry `what` of `rec`'s owner that
 * this user may not remove (errno e); returns DIRLOCK_EPERM. */
int dl_fail_unbreakable(dirlock_error *err, const char *what, const dl_record *rec, int e);

/* ---- reader-writer layer (rwlock.c) ------------------------------------ */

/* Upgrade and downgrade (the backend's entries). */
int dl_rw_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err);
int dl_rw_downgrade(dirlock *h, dirlock_error *err);
int dl_rw_downgrade_intent(dirlock *h, dirlock_error *err);

/* Take the lock in h->opts.mode (exclusive, shared or intent) by the
 * deadline.  Exclusive means: <name>.lock and no readers. */
int dl_rw_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err);
/* Release whatever h holds (exclusive, shared or intent).  An entry that
 * cannot be removed (DIRLOCK_EIO) stays h's: dl_rw_holds() says so, and a
 * later call tries again. */
int dl_rw_release(dirlock *h, dirlock_error *err);
/* True while h still has an entry of its own in place: held, or left by a
 * release that failed. */
bool dl_rw_holds(const dirlock *h);
int dl_rw_refresh(dirlock *h, dirlock_error *err);
int dl_rw_check(const dirlock *h, dirlock_error *err);
void dl_rw_free(dirlock *h);
/* h->token is new (dirlock_reacquire): put it in h's reader-writer paths,
 * or free them when they still hold something of the old token. */
void dl_rw_retoken(dirlock *h);
/* Release what a failed release of whole-lock handle h left in place (an
 * entry it could not remove; its paths carry the old token).  An entry
 * broken meanwhile is no error: nothing is left. */
int dl_rw_release_kept(dirlock *h, dirlock_error *err);
/* Break leftovers of dead readers of every name in lockdir. */
int dl_rw_cleanup(const char *lockdir, dirlock_error *err);
/* Number of shared/intent holders of `name` (for inspect). */
unsigned dl_rw_count_readers(const char *lockdir, const char *name);

#endif
