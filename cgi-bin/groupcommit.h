/* groupcommit.h - a post through the pending queue (postqueue.h), for any
 * store: the poster's side of group commit (charge the post interval,
 * queue the message, wait for the board's write lock or for another
 * request to store it, lead when it is not) and the leader's loop.  What
 * storing a batch means is the store's: the flat log rewrites its file
 * (store_log.c), SQLite inserts the batch in one transaction
 * (store_sqlite.c).  The protocol and its invariants are at the top of
 * postqueue.c; the steps named here are its steps. */
#ifndef BOARD_GROUPCOMMIT_H
#define BOARD_GROUPCOMMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "board_error.h"
#include "config.h"
#include "locking.h"
#include "logrecord.h"
#include "store.h"

/* The most messages one batch takes from the queue. */
#define GROUP_BATCH_MAX 256

struct group_commit {
        const struct board_config *cfg;
        const char *pending; /* the queue directory, data_dir/pending */
        const char *rate;    /* the post-interval file, data_dir/ratelimit */
        /* The board's write lock, waited for at most `timeout` seconds or
         * until `cancel_fd` polls readable: 0 held, 1 canceled (nothing
         * held), -1 with an error (503 busy, 500). */
        int (*lock)(const struct board_config *cfg, struct board_lock *lk, double timeout, int cancel_fd,
                    struct board_error *err);
        /* The lock around the post-interval file (the board's "ratelimit"
         * lock); 0 or -1. */
        int (*rate_lock)(const struct board_config *cfg, struct board_lock *lk, struct board_error *err);
        /* Holding the write lock: claim up to `max` queued posts, store the
         * ones not stored yet, settle the claims (or give them back on
         * failure, removing `own`'s): steps 4 and 5.  *own_claimed is set
         * when post `own` was in the batch, *claimed is the batch's size.
         * 0, or -1 with the error (the batch was given back). */
        int (*commit_batch)(void *store, struct board_lock *lk, size_t max, const char *own,
                            bool *own_claimed, size_t *claimed, struct board_error *err);
        void *store;
};

/* Store *msg (name, subject, body, pwhash; msg->time = w->now, msg->no is
 * left 0: a leader numbers it) through the queue.  Errors: 429 (the post
 * interval, charged before queueing and taken back when the post certainly
 * was not stored), 503 (the lock wait timed out; when a leader had already
 * claimed the post, the page says it may appear), 500. */
int group_commit_post(const struct group_commit *g, struct logrecord *msg, const struct store_write *w,
                      struct board_error *err);

/* The batch size for a board: GROUP_BATCH_MAX, or max_messages when that
 * is smaller (a batch must fit in the board). */
size_t group_batch_max(const struct board_config *cfg);

#endif
