/* dir.h - what the files of the directory backend share: a handle's
 * directory state, the exclusive primitive and entries with their ages
 * (dir_exclusive.c), directories of entries (dir_entries.c), the wait for
 * a slot (dir_queue.c), and the seam through which a module adds to the
 * backend (dir_backend.c; what a module may add, and the invariant the
 * core keeps for each: docs/backends.md).  Names on disk are in
 * dir_layout.h; the protocol at the top of dir_exclusive.c. */
#ifndef DIRLOCK_DIR_H
#define DIRLOCK_DIR_H

#include "backend.h"
#include "dir_layout.h"
#include "fs.h"

struct dl_dir_kind;
struct dl_slots;

/* A handle's state in a directory space (h->impl). */
struct dl_dir {
        char *lockdir;         /* absolute path of the lock directory          */
        unsigned lockdir_mode; /* its st_mode: new directories in it follow it */
        const dl_fs *fs;       /* the filesystem it is on (lib/netfs/netfs.c)            */
        /* <lockdir>/<name>.lock, the exclusive lock W -- or a lock
         * directory of a kind's own that it takes as W is taken (a
         * counting lock's permit, lib/permit) -- and our owner entry in it. */
        char *lock_path;
        char *entry_path;  /* <lock_path>/owner.<token>                    */
        char *prep_path;   /* <lockdir>/.<name>.<token>.new (acquire only) */
        long long prep_ns; /* when the prepared owner record was written   */
        bool prep_made;    /* prep_path exists                             */
        bool excl_held;    /* we hold lock_path                            */
        /* When the last change of our owner entry began (the rename that
         * took the lock, or the last refresh), and whether each refresh
         * came within a third of the stale age of the change before it:
         * RELEASE 1 on a network filesystem (dir_exclusive.c). */
        dl_time changed;
        bool kept_young;
        const struct dl_dir_kind *kind; /* what kind of lock the handle is   */
        void *kind_state;               /* the kind's state, or NULL         */
        void *queue_state;              /* the queue's (lib/fifo), or NULL   */
        void *wait_state;               /* the wait register's (lib/deadlock), or NULL */
};

static inline struct dl_dir *dl_dir_of(const dirlock *h)
{
        return (struct dl_dir *)h->impl;
}

/* ---- kinds of lock ---------------------------------------------------------- */

/* What a handle of one kind does for each of the backend's entries on a
 * handle (backend.h): the same contract, for this kind.  acquire, release,
 * refresh and check are required; NULL elsewhere: no such operation
 * (upgrade and the like: refused, naming the kind). */
struct dl_dir_kind {
        const char *what; /* "a range lock", for messages */
        int (*acquire)(dirlock *h, const dl_time *deadline, dirlock_error *err);
        int (*release)(dirlock *h, dirlock_error *err);
        /* What a failed release left in place (backend.h); NULL: nothing. */
        int (*release_kept)(dirlock *h, dirlock_error *err);
        int (*refresh)(dirlock *h, dirlock_error *err);
        int (*check)(const dirlock *h, dirlock_error *err);
        /* h->token is new: rebuild what carries it (the owner entry's path
         * is the core's). */
        void (*retoken)(dirlock *h);
        /* Free kind_state (the handle goes, or becomes another kind). */
        void (*close)(dirlock *h);
        int (*upgrade)(dirlock *h, const dirlock_options *opts, dirlock_error *err);
        int (*downgrade)(dirlock *h, dirlock_error *err);
        int (*downgrade_intent)(dirlock *h, dirlock_error *err);
        int (*shrink)(dirlock *h, double lo, double hi, dirlock_error *err);
};

/* The core's: an exclusive lock, W, under policies fair and simple
 * (dir_backend.c); every other mode and policy it refuses, naming the
 * reader-writer module. */
extern const struct dl_dir_kind dl_dir_exclusive;
/* Make h (open, not acquired) a handle of `kind`, whose state is `state`
 * (the kind it was is closed first).  For a module's backend entry. */
void dl_dir_make_kind(dirlock *h, const struct dl_dir_kind *kind, void *state);

/* Take NAME whole and exclusive: W through the slots `w` (dl_dir_w, or a
 * kind's variant of them), then its neighbours (DL_NEAR_ALL); again under
 * a new token when W was broken while it waited for them. */
int dl_dir_exclusive_acquire(dirlock *h, const struct dl_slots *w, const dl_time *deadline,
                             dirlock_error *err);
/* Our hold was broken as stale while we waited (DIRLOCK_ELOST), and we
 * take the lock again: under a new token (INVARIANT B, dir_exclusive.c),
 * what a failed step left released first -- what dl_handle_new_token does
 * for dirlock_reacquire, for a kind's own retries. */
int dl_dir_new_token(dirlock *h, dirlock_error *err);

/* NEIGHBOURS (dir_backend.c).  What else of NAME W's holder must find
 * empty before it holds NAME whole: its readers (D/NAME.readers, lib/rw)
 * and its ranges (D/NAME.ranges, lib/range).  Looked at once W is held;
 * one in use is waited for by the module that guards it, or, without
 * one, refused with DIRLOCK_EINVAL naming that module (W let go first). */
#define DL_NEAR_READERS 1u
#define DL_NEAR_RANGES  2u
#define DL_NEAR_ALL     (DL_NEAR_READERS | DL_NEAR_RANGES)
int dl_dir_neighbours(dirlock *h, unsigned which, const dl_time *deadline, dirlock_error *err);

/* ---- waiting for a slot (dir_queue.c) ------------------------------------- */

/* What blocks a wait: the letter its record gives in the wait register
 * (lib/deadlock), which tells deadlock detection whose holds to follow. */
enum dl_wait_target {
        DL_FOR_W = 'w',             /* W's holder (exclusive, intent, simple, ...)            */
        DL_FOR_W_TO_READ = 's',     /* W's holder when it holds readers off (shared)          */
        DL_FOR_READERS = 'r',       /* the name's readers (a writer's drain, an upgrade)      */
        DL_FOR_READERS_OR_W = 'a',  /* readers and W (a writer of policy reader)              */
        DL_FOR_RANGES = 'g',        /* the name's held ranges (a whole lock)                  */
        DL_FOR_RANGE = 'x',         /* overlapping conflicting ranges and whole holders       */
        DL_FOR_RANGE_UPGRADE = 'y', /* overlapping conflicting ranges (an intent range's upgrade) */
        DL_FOR_PERMIT = 'p'         /* the holders of the permits asked (any one of N)        */
};

/* One of some exclusive slots a waiter waits for, each a lock directory
 * taken as W is: W itself (dl_dir_w), or one of a counting lock's permits
 * (lib/permit). */
struct dl_slots {
        enum dl_wait_target target; /* for the wait register                  */
        int kind;                   /* dirlock_wait_kind, for the register    */
        /* One attempt (dl_excl_try's contract): DIRLOCK_OK, DIRLOCK_EBUSY
         * with *holder one to watch, or an error. */
        int (*attempt)(dirlock *h, dl_record *holder, bool judge, dirlock_error *err);
        /* At a glance that judges nothing: every slot looks taken / one
         * looks free (an error looking is neither). */
        bool (*looks_taken)(dirlock *h);
        bool (*looks_free)(dirlock *h);
        /* The directory where its releases are removals. */
        const char *(*release_dir)(const dirlock *h);
        /* Where its waiters queue (lib/fifo): malloc'd, NULL when out of
         * memory. */
        char *(*queue_dir)(const dirlock *h);
        /* Who holds one now, for a message: false when nobody does (it is
         * between holders) or the record cannot be read. */
        bool (*holder_now)(dirlock *h, dl_record *holder);
        /* The message of a failure: "PREFIXlock 'NAME' is held by ...". */
        int (*busy)(dirlock *h, int code, const char *prefix, const dl_record *holder, dirlock_error *err);
        /* While it waits, besides (NULL: nothing): made before its first
         * wait, renewed after each wake-up, gone at its end (lib/rw: a
         * writer of policy writer, in NAME.wq). */
        int (*enter)(dirlock *h, dirlock_error *err);
        void (*renew)(dirlock *h);
        void (*leave)(dirlock *h);
};
extern const struct dl_slots dl_dir_w;

/* One wait for a slot: what the loop keeps between wake-ups. */
struct dl_slot_wait {
        const struct dl_slots *slots;
        dl_waiter w;
        dl_record holder;    /* the one to watch: the slot's holder, or the waiter ahead */
        dl_time last_judged; /* the last judging attempt                               */
        bool judge;          /* the next attempt judges the holder                     */
        double renew_ms;     /* how often waiting entries are renewed                  */
};

/* Take one of the slots by the deadline (dir_queue.c has the protocol). */
int dl_dir_take(dirlock *h, const struct dl_slots *s, const dl_time *deadline, dirlock_error *err);
/* Why a wait for a slot gave up or a try failed (`code`): who holds one,
 * or the waiter ahead that goes first (`ahead`, pid 0 when none). */
int dl_dir_refused(dirlock *h, const struct dl_slots *s, int code, const char *prefix, const dl_record *ahead,
                   dirlock_error *err);
/* A step's answer: the waiter ahead left after the look; look again. */
#define DL_LOOK_AGAIN (-1)

/* The queue waiters for a slot stand in (lib/fifo): who goes first, and
 * whom each waiter behind watches.  INVARIANT (dir_queue.c): a waiter
 * that waits has its watch on from before its look. */
struct dl_dir_queue {
        /* Whether h makes no try on arrival (DIRLOCK_FIFO behind a queue). */
        bool (*skip_try)(dirlock *h, const struct dl_slots *s);
        /* After the failed try, its waiter started: queue (or not). */
        int (*join)(dirlock *h, struct dl_slot_wait *q, dirlock_error *err);
        /* Where h stands: 1 first (it tries), 0 behind (q->holder the
         * waiter ahead), -1 error. */
        int (*place)(dirlock *h, struct dl_slot_wait *q, dirlock_error *err);
        /* The step of a waiter behind: DIRLOCK_EBUSY (wait), DL_LOOK_AGAIN,
         * or an attempt's result. */
        int (*behind)(dirlock *h, struct dl_slot_wait *q, dirlock_error *err);
        /* After each wake-up: renew h's place. */
        void (*renew)(dirlock *h, struct dl_slot_wait *q);
        /* The wait is over (idempotent); the handle goes. */
        void (*leave)(dirlock *h);
        void (*close)(dirlock *h);
};

/* ---- the wait register's hooks (lib/deadlock) ---------------------------- */

/* What a module that keeps a register of waits (lib/deadlock) is told of
 * every wait of the backend.  `begin` after a failed try, before the
 * first sleep (`kind` a dirlock_wait_kind, `mode` the mode asked);
 * `step` after every wake-up, which may end the wait with its error
 * (DIRLOCK_EDEADLK); `end` whatever the wait's outcome; `close` when the
 * handle goes.  The register is for seeing, never in the way: a wait it
 * cannot list goes on. */
struct dl_dir_waits {
        int (*begin)(dirlock *h, enum dl_wait_target target, int kind, int mode, dirlock_error *err);
        int (*step)(dirlock *h, dirlock_error *err);
        void (*end)(dirlock *h);
        void (*close)(dirlock *h);
};
/* The backend's waits call these (nothing happens without the module). */
int dl_dir_wait_begin(dirlock *h, enum dl_wait_target target, int kind, int mode, dirlock_error *err);
int dl_dir_wait_step(dirlock *h, dirlock_error *err);
void dl_dir_wait_end(dirlock *h);

/* The queue and the wait register a module brings (dir_queue.c keeps the
 * first of each, dl_dir_module_add tells it), and what they keep of
 * handle h, freed as it goes. */
void dl_dir_follow_waits(const struct dl_dir_queue *queue, const struct dl_dir_waits *waits);
const struct dl_dir_queue *dl_dir_queue_of(void);
void dl_dir_waits_close(dirlock *h);

/* ---- modules (dir_backend.c) ------------------------------------------------ */

struct dl_dir_module {
        const char *name; /* "the reader-writer module (lib/rw)", for messages */
        /* Entries of the backend's table it serves, switched on as it
         * registers (its other entries are NULL). */
        const dl_backend *offers;
        /* The kind every whole lock is instead of dl_dir_exclusive, and
         * the kinds its backend entries make (range, permit): their
         * operations switch on the backend's entries of the same name
         * (upgrade, downgrade, downgrade_intent, shrink). */
        const struct dl_dir_kind *whole;
        const struct dl_dir_kind *const *kinds; /* NULL-terminated, or NULL */
        /* The neighbour it guards (DL_NEAR_READERS, DL_NEAR_RANGES) and how
         * W's holder waits for it: DIRLOCK_OK once it is clear, W kept;
         * `seen`: the caller's look since W found it there. */
        unsigned guards;
        int (*guard)(dirlock *h, const dl_time *deadline, bool seen, dirlock_error *err);
        const struct dl_dir_queue *queue;
        const struct dl_dir_waits *waits;
        /* From outside the holders: its fields of an owner record; its
         * holders of `name`, appended (room for *cap); the names of locks
         * only it knows (malloc'd array of malloc'd strings); its part of
         * dirlock_cleanup, once per space and for each leaf of D. */
        void (*inspect)(const char *lockdir, const char *name, double stale_age, dirlock_owner *owner);
        int (*holders)(const char *lockdir, const char *name, double stale_age, dirlock_owner **out,
                       size_t *count, size_t *cap, dirlock_error *err);
        int (*names)(const char *lockdir, char ***names, size_t *count);
        void (*cleanup_space)(const char *lockdir);
        void (*cleanup)(const char *lockdir, const dl_fs *fs, const char *leaf, const char *path);
        struct dl_dir_module *next;
};
void dl_dir_module_add(struct dl_dir_module *m);
/* The registered modules, in the order they registered. */
const struct dl_dir_module *dl_dir_modules(void);
#define DL_DIR_MODULE(module)                                                                                \
        DL_ON_LOAD(module##_add)                                                                             \
        {                                                                                                    \
                dl_dir_module_add(&module);                                                                  \
        }

/* The backend's entries that look at locks from outside their holders,
 * each with its modules' parts (dir_admin.c). */
int dl_dir_inspect(const char *lockdir, const char *name, double stale_age, dirlock_owner *owner,
                   dirlock_error *err);
int dl_dir_break(const char *lockdir, const char *name, double stale_age, int force, dirlock_error *err);
int dl_dir_cleanup(const char *lockdir, dirlock_error *err);
int dl_dir_holders(const char *lockdir, const char *name, double stale_age, dirlock_owner **out,
                   size_t *count, dirlock_error *err);
int dl_dir_list(const char *lockdir, char ***names, size_t *count, dirlock_error *err);

/* Room for one more owner at the end of *out (*count of them, room for
 * *cap), zeroed; NULL when out of memory. */
dirlock_owner *dl_owner_append(dirlock_owner **out, size_t *count, size_t *cap);

/* ---- the exclusive primitive (dir_exclusive.c) ------------------------- */

/* One attempt to take h->lock_path; with `judge`, a failed attempt looks
 * at the holder and breaks it if stale, then tries again.  DIRLOCK_OK
 * (h->excl_held set), DIRLOCK_EBUSY (holder in *holder if not NULL;
 * holder->pid == 0 when unknown or not judged), or an error.  Waiting is
 * the caller's (dl_dir_take): a cheap attempt on every wake-up, a
 * judging one when the watched owner died or the re-check interval passed. */
int dl_excl_try(dirlock *h, dl_record *holder, bool judge, dirlock_error *err);
/* Release h->lock_path if it is still ours: DIRLOCK_OK or DIRLOCK_ELOST. */
int dl_excl_release(dirlock *h, dirlock_error *err);
/* The release_kept of a kind held as one lock directory (dl_dir_kind):
 * release what a failed release left of h->lock_path; one broken as stale
 * meanwhile is no error, nothing is left. */
int dl_excl_release_kept(dirlock *h, dirlock_error *err);
int dl_excl_refresh(dirlock *h, dirlock_error *err);
int dl_excl_check(const dirlock *h, dirlock_error *err);
/* Look at the holder of h->lock_path; break it if stale (see BREAK in
 * dir_exclusive.c).  DL_FREE: absent, empty, or just broken (retry at
 * once).  DL_HELD: *holder filled (pid 0 when the record is unreadable)
 * and, if holder_token is not NULL, the holder's token (from its entry
 * name).  DL_ERROR: err filled; DIRLOCK_EPERM when the lock is stale but
 * this user may not break it. */
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
                                          dir_exclusive.c); FOREIGN: since the directory changed */
} dl_lock_view;
/* Look into lock directory `lock_path` (on filesystem `fs`: on a network
 * filesystem "absent" is asked of the parent's listing).  0, or -1 with
 * errno. */
int dl_lock_look(const char *lock_path, const dl_fs *fs, dl_lock_view *v);
/* Fill an owner record for dirlock_inspect from an owned view, judged
 * with `stale_age` on filesystem `fs`. */
void dl_lock_describe(const dl_lock_view *v, double stale_age, const dl_fs *fs, dirlock_owner *owner);
/* Remove the names in a lock directory that are not owner entries, then
 * rmdir it if that left it empty (see FOREIGN CONTENT in dir_exclusive.c). */
void dl_lock_clear_foreign(const char *lock_path);
/* BREAK: unlink the judged owner entry `leaf` of `lock_path`, then rmdir.
 * 0, or -1 with errno (ENOENT: already broken or released; EPERM or
 * EACCES: not ours to break). */
int dl_excl_break_entry(const char *lock_path, const char *leaf);
/* Remove the prepared directories of lock `name` (all names when NULL)
 * whose owners are provably dead on this host; with `remote_age` > 0
 * also those of other hosts (and unreadable ones) older than that. */
void dl_sweep_preps(const char *lockdir, const char *name, double remote_age);

/* Entries: an entry is a symlink whose target is an owner record; its age
 * counts from its last change (creation, rename, refresh: the later of its
 * mtime and ctime).  Reads it; returns 0, or -1 with errno (ENOENT when
 * gone). */
int dl_entry_read(const char *path, dl_record *rec, double *age_s);
/* The same for entry `leaf` of the directory open as dirfd. */
int dl_entry_readat(int dirfd, const char *leaf, dl_record *rec, double *age_s);
/* Stale: older than the larger of stale_age and the holder's recorded
 * stale age (unless only its partner lives: dl_record_partner_only) --
 * on a network filesystem `fs`, also seen unchanged long enough (CLOCKS
 * in lib/netfs/netfs.c) -- or owner provably dead on this host.  rec->changed_ns is
 * the entry's change time (the entry readers fill it). */
bool dl_entry_stale(const dl_record *rec, double age_s, double stale_age, const dl_fs *fs);
/* The age past which rec's entry is stale by age alone: the larger of
 * `stale_age` (the judge's) and the holder's recorded one. */
double dl_record_stale_limit(const dl_record *rec, double stale_age);
/* Create entry `path` (a symlink holding h's record: h's token, stale age
 * and partner, the given mode).  0 or -1/errno. */
int dl_entry_create(const char *path, const dirlock *h, int mode);
/* A DIRLOCK_EPERM error for a stale entry `what` of `rec`'s owner that
 * this user may not remove (errno e); returns DIRLOCK_EPERM. */
int dl_fail_unbreakable(dirlock_error *err, const char *what, const dl_record *rec, int e);

/* ---- directories of entries (dir_entries.c) ---------------------------- */

/* Result of scanning a directory of entries: the readers of a name, its
 * waiting writers, a queue's tickets. */
typedef struct dl_scan {
        const char *active; /* kinds counted as live holders ("ra") */
        /* NULL, or told of each live entry first (lib/rw admits waiting
         * readers): DL_SCAN_DEFAULT (`active` decides), DL_SCAN_LIVE,
         * DL_SCAN_SKIP, or -1 with err. */
        int (*live_entry)(struct dl_scan *s, int dfd, const char *leaf, int kind, dirlock_error *err);
        void *arg;
        unsigned live; /* live entries counted               */
        bool have_one; /* `one` holds a live holder's record */
        dl_record one;
} dl_scan;
enum { DL_SCAN_DEFAULT, DL_SCAN_LIVE, DL_SCAN_SKIP };

/* Scan `dir` (absent = empty; on filesystem `fs`): break every stale
 * entry (unlink exactly the judged path) and count the live ones.  0 or
 * -1 with a dirlock_code in err. */
int dl_scan_dir(const char *dir, double stale_age, const dl_fs *fs, dl_scan *s, dirlock_error *err);
/* Create entry `path` (our record, `mode`) in directory `dir`, making the
 * directory when it is missing (an empty one may be removed at any time:
 * by the last one out, or for NAME.readers by a writer).  0 or -1 with
 * errno. */
int dl_entry_make_in(const char *dir, const char *path, const dirlock *h, int mode);
/* Remove our entry `path`, then `dir` if that left it empty (not on a
 * network filesystem: KEPT DIRECTORIES in lib/netfs/netfs.c).  0, or -1 with errno
 * (ENOENT: the entry had been broken). */
int dl_entry_drop(const dirlock *h, const char *dir, const char *path);
/* The names in directory `dir` on `fs` but "." and "..", as one whole
 * listing (looked at again when the directory is replaced as it is read,
 * ESTALE): DIRLOCK_OK with a malloc'd array (none when it does not
 * exist), or an error -- never a listing cut short. */
int dl_dir_names(const char *dir, const dl_fs *fs, char ***names, size_t *count, dirlock_error *err);
/* The names in `name`'s folder NAME<suffix> of lockdir on `fs`
 * (dl_layout_path, then dl_dir_names), for a look from outside at who
 * holds: true with its path in *dir and its names, both the caller's to
 * free; false, with nothing to free, when it is absent, unreadable or out
 * of memory: then no entry there is seen. */
bool dl_dir_names_of(const char *lockdir, const char *name, const char *suffix, const dl_fs *fs, char **dir,
                     char ***names, size_t *count);
void dl_dir_names_free(char **names, size_t count);

#endif
