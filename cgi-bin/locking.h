/* locking.h - the board's lock modes carried out with the dirlock library:
 * the lock (exclusive, shared, intent, flock) that each step of a read or
 * a read-modify-write of the flat log takes, as the mode's row says
 * (lockmode.h: one row per mode, the table of what each takes), and the
 * board's small named locks.  The library does the locking; the
 * protocols built on these calls are the board's own and are documented
 * where they run:
 * the read-modify-write of a post or delete in store_log.c (with the step
 * that upgrades an "rw" writer right before its rename), group commit and
 * the rate limit of queued posts in postqueue.c and groupcommit.c, the
 * failed-delete count (board.c, for every store).
 * The SQLite store takes the library's exclusive "messages" lock (and
 * "ratelimit", and "schema" to make its tables) whatever the mode
 * (board_lock_exclusive) around its write transactions: SQLite locks its
 * database too, but its busy handler sleeps and retries, which lets late
 * writers overtake early ones.
 *
 * With group commit (config group_commit, the default) the posts of the
 * modes whose row allows it go through the pending queue first
 * (postqueue.h); the lock is the same.  Lock name "messages" in the lock space (config lock_space, by
 * default data_dir/locks); "ratelimit" guards the rate-limit file of
 * queued posts, "deletelimit" the failed-delete counts (in every mode,
 * board_lock_always), "schema" the
 * making or upgrading of a SQLite database's schema (store_sqlite.c). */
#ifndef BOARD_LOCKING_H
#define BOARD_LOCKING_H

#include "board_error.h"
#include "config.h"

struct dirlock;

struct board_lock {
        const struct board_config *cfg;
        struct dirlock *handle; /* NULL when nothing is held */
        /* The fence of this acquisition of the "messages" lock for writing
         * (fence.h), drawn as soon as it is taken; 0 when the lock has no
         * fences (flock, none, wrong). */
        unsigned long long fence;
};

#define BOARD_LOCK_NAME        "messages"
#define BOARD_RATE_LOCK_NAME   "ratelimit"
#define BOARD_DELETE_LOCK_NAME "deletelimit"
#define BOARD_SCHEMA_LOCK_NAME "schema"
#define BOARD_GATE_LOCK_NAME   "posters"

/* Lock for reading the flat log (may hold nothing, per mode). */
int board_lock_read(const struct board_config *cfg, struct board_lock *lk, struct board_error *err);
/* Lock taken before reading in a read-modify-write (with its fence, in
 * lk->fence).  A lock server that cannot be reached is a 503. */
int board_lock_write_begin(const struct board_config *cfg, struct board_lock *lk, struct board_error *err);
/* board_lock_write_begin() with a timeout of its own, that also gives up
 * early, returning 1 (nothing held, no error), when `cancel_fd` (>= 0)
 * polls readable. */
int board_lock_write_wait(const struct board_config *cfg, struct board_lock *lk, double timeout,
                          int cancel_fd, struct board_error *err);
/* An exclusive lock `name` of the mode's kind (flock for flock, the
 * library's exclusive lock for mkdir and rw, nothing for none and wrong),
 * for small side files. */
int board_lock_named(const struct board_config *cfg, const char *name, struct board_lock *lk,
                     struct board_error *err);
/* board_lock_named() in every lock mode: none and wrong take the
 * library's exclusive lock.  For state that must stay right whatever the
 * demonstration mode: the failed-delete counts, a security limit. */
int board_lock_always(const struct board_config *cfg, const char *name, struct board_lock *lk,
                      struct board_error *err);
/* board_lock_named() for the "ratelimit" lock (the post interval of
 * queued posts). */
int board_lock_rate(const struct board_config *cfg, struct board_lock *lk, struct board_error *err);
/* The library's exclusive lock `name` in the lock space whatever the lock
 * mode, waited for at most `timeout` seconds, or until `cancel_fd` (>= 0)
 * polls readable (1, nothing held): the SQLite store serialises its
 * writers with it. */
int board_lock_exclusive(const struct board_config *cfg, const char *name, struct board_lock *lk,
                         double timeout, int cancel_fd, struct board_error *err);
/* Step between reading and writing: "wrong" takes its lock here, "rw"
 * upgrades intent to exclusive. */
int board_lock_write_commit(struct board_lock *lk, struct board_error *err);
/* Right before a write becomes visible to readers (the rename, or the
 * first byte of an in-place write): make the lock exclusive and prove it
 * is still ours.  An intent lock ("rw") is upgraded, which does both; an
 * exclusive one is checked.  0, also when nothing is held; 503 when the
 * lock was lost. */
int board_lock_make_exclusive(struct board_lock *lk, struct board_error *err);
/* Right after a write became visible to readers: an upgraded intent lock
 * ("rw") goes back to intent, so readers come in again while the writer
 * finishes (syncing, bookkeeping) and other writers still wait.  Nothing
 * for the other modes.  A failure leaves the lock as it was: a lost lock
 * shows at its release. */
void board_lock_write_visible(struct board_lock *lk);
/* The posts' gate (config max_waiting_posts, seed 001's safeguard against
 * requests piling up behind a lock): one of max_waiting_posts permits of
 * the counting lock "posters" (in the gate space, config.h), tried once
 * and held by a post while it waits for the board's lock and stores.
 * None left: 503 at once, Retry-After: 1 -- the post is refused before
 * anything is queued or charged, so nothing is lost, and the board's
 * workers stay free for page views instead of all waiting for one lock.
 * No cap: nothing held.  0, or -1 with the error. */
int board_post_gate(const struct board_config *cfg, struct board_lock *lk, struct board_error *err);
/* Release whatever is held; DIRLOCK_ELOST here is an error (500). */
int board_lock_release(struct board_lock *lk, struct board_error *err);
/* The end of a locked operation whose result is `rc`: release, and
 * return `rc`.  A release that fails after the operation succeeded is
 * reported on stderr, not to the client: the change was made under the
 * lock, and an error answer would have its author make it again. */
int board_lock_finish(struct board_lock *lk, int rc, struct board_error *err);

#endif
