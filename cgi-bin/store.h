/* store.h - where a board keeps its messages, behind one interface: the
 * flat log (store_log.h) or SQLite (store_sqlite.h), picked by the
 * configuration's `store` (board.h picks it and opens it on first use).
 *
 * A store keeps per-process state for one board: made by open() on the
 * board's first operation in this process, passed to every operation,
 * freed by close() when the process lets the board go.  The flat log
 * keeps its paths and its page-view cache there; the SQLite store is
 * where a kept connection and prepared statements belong.
 *
 * Each operation does its own concurrency control: the flat log takes the
 * lock of the configured mode (locking.h) and runs group commit
 * (postqueue.h); SQLite uses its own transactions.  Each write happens
 * inside its store's read-modify-write window, with the configured
 * demonstration delay (delay_ms) between reading and writing, and checks
 * and records the post interval there (ratelimit.h).  Numbers are never
 * given twice (msglist.h). */
#ifndef BOARD_STORE_H
#define BOARD_STORE_H

#include "board_error.h"
#include "config.h"
#include "logrecord.h"
#include "msglist.h"

/* What a post or delete carries besides its message: who sent it and
 * when.  Writes will carry more here (a fencing number from the lock that
 * the store checks against the highest it accepted); a store reads only
 * the fields it knows. */
struct store_write {
        const char *addr; /* the sender's address, for the post interval */
        long long now;    /* seconds since the epoch */
};

struct store_ops {
        const char *name; /* the configuration's `store` value */

        /* Make this process's state for the board of `cfg` (which must
         * outlive it).  0 and *state, or -1 with a 500 error. */
        int (*open)(const struct board_config *cfg, void **state, struct board_error *err);
        void (*close)(void *state);

        /* All messages, oldest first, appended to *out (owned by the
         * caller). */
        int (*list)(void *state, struct msglist *out, struct board_error *err);

        /* The same for page views, borrowed: *out stays valid until the
         * next view() on this state and must not be freed.  *generation
         * (when not NULL) names what *out holds: a view that returns the
         * same number as an earlier one of this state returns the very
         * list it returned then, unchanged, so whatever was made from
         * that list (a rendered page) may be used again.  Any change of
         * the list gives a new number. */
        int (*view)(void *state, const struct msglist **out, unsigned long long *generation,
                    struct board_error *err);

        /* Message `no`, read without the write lock, into *out (owned by
         * the caller, free with logrecord_free): 0 found, 1 absent, -1
         * error. */
        int (*get)(void *state, long long no, struct logrecord *out, struct board_error *err);

        /* Store a new message: name, subject, body and pwhash of *msg are
         * copied; msg->no and msg->time are set (time = w->now).  Errors:
         * 429 (err->retry_after: the post interval), 503 (busy), 500. */
        int (*post)(void *state, struct logrecord *msg, const struct store_write *w, struct board_error *err);

        /* Delete message `no` if it still carries `verified_hash`, the hash
         * its password was checked against before (store_recheck_delete).
         * Errors: 404 gone, 403 its hash changed, 503, 500. */
        int (*delete)(void *state, long long no, const char *verified_hash, const struct store_write *w,
                      struct board_error *err);
};

/* The store of kind `kind`, or NULL when the board has no store of that
 * kind (never another store in its place). */
const struct store_ops *store_of(enum board_store_kind kind);
/* The store the configuration names: store_of(cfg->store). */
const struct store_ops *store_for(const struct board_config *cfg);
/* The kind of store named `name` (a struct store_ops' name) into *out: 0,
 * or -1 when no store has that name. */
int store_parse(const char *name, enum board_store_kind *out);

/* Inside a delete's write lock or transaction: message `m` (NULL when
 * absent) still carries `verified_hash` (a string comparison, no
 * hashing).  0, or -1 with 404 / 403. */
int store_recheck_delete(const struct logrecord *m, const char *verified_hash, struct board_error *err);

#endif
