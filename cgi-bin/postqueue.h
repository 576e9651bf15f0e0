/* postqueue.h - the pending-post queue of a flat-log board (group commit).
 *
 * Posting one message at a time under the board's lock makes every post
 * pay a whole read-modify-write of the log, two fsyncs included, strictly
 * one after another.  With the queue a post first drops its message into
 * DATA/pending/ and then takes the lock; the lock holder commits every
 * message waiting there in one rewrite of the log, and a poster that finds
 * its message already committed only releases the lock again.  The log is
 * still written exactly as for a single post (temp file, fsync, rename,
 * directory fsync, all under the lock); only the number of messages per
 * rewrite changes.
 *
 * Entries, all in DATA/pending/, ID being the post id (LOGRECORD_ID_LEN
 * hex digits, random), PID-START a process named by its pid and start
 * time (process.h):
 *
 *   ID.msg                       queued: the message as one log line
 *   ID.claim.PID-START           claimed by that lock holder, which is
 *                                committing it
 *   ID.msg.tmp.PID-START.ID      being written; removed once that process
 *                                is gone
 *
 * Claims and temp files named by earlier versions, ID.claim.PID and
 * ID.msg.tmp.PID.ID, are still read (see postqueue.c).
 *
 * The protocol is in postqueue.c with the invariant each step keeps. */
#ifndef BOARD_POSTQUEUE_H
#define BOARD_POSTQUEUE_H

#include <stddef.h>

#include "board_error.h"
#include "logrecord.h"
#include "process.h"

struct pq_batch {
        struct logrecord *items; /* oldest first; each with its id */
        size_t count;
};

#define PQ_BATCH_INIT                                                                                        \
        {                                                                                                    \
                NULL, 0                                                                                      \
        }

/* A queued post as its poster sees it. */
struct pq_ticket {
        char id[LOGRECORD_ID_LEN + 1];
        int fd; /* open on the entry: its link count says when it is stored */
        int wd; /* inotify watch on the entry, or -1 */
};

/* Queue a copy of *msg (its time included, its number ignored) under a
 * new post id.  0 and *t (release with pq_ticket_close), or -1 with a 500
 * error. */
int pq_enqueue(const char *dir, const struct logrecord *msg, struct pq_ticket *t, struct board_error *err);

/* 1 when the post is stored: its entry has no name left (I3 in
 * postqueue.c; true with or without the lock). */
int pq_stored(const struct pq_ticket *t);

/* A descriptor that polls readable when the entry's link count may have
 * changed (for DIRLOCK_CANCEL_FD), or -1 when inotify is not available.
 * pq_notify_drain() empties it before the next look. */
int pq_notify_fd(const struct pq_ticket *t);
void pq_notify_drain(void);

void pq_ticket_close(struct pq_ticket *t);

/* Under the lock: claim up to `max` waiting entries, oldest first (what a
 * dead holder had claimed included), into *b.  Unreadable entries are
 * removed and reported on stderr.  0 or -1 (500). */
int pq_claim(const char *dir, size_t max, struct pq_batch *b, struct board_error *err);

/* Under the lock, once the log holding every message of *b (by id) is
 * durable: remove the claims. */
void pq_settle(const char *dir, const struct pq_batch *b);

/* Under the lock, when the commit failed: put the claims back in the queue
 * for their own posters, except `own`, which is removed (its poster is
 * the caller and reports the failure). */
void pq_give_back(const char *dir, const struct pq_batch *b, const char *own);

/* Under the lock, when post t was neither claimed by us nor left in the
 * queue: 1 and *who when another process's claim holds it (a holder that
 * lost the lock while alive: a flock dropped as its holder exits, before
 * the process is gone; a lock broken as stale while its holder was
 * stopped), whose fate it shares; 0 when it is nowhere. */
int pq_claimer(const char *dir, const struct pq_ticket *t, struct process_id *who);

/* Without the lock (its wait failed): take post `id` out of the queue.
 * 0 when it was still queued and now never will be committed; 1 when a
 * lock holder had already claimed it (it may be committed). */
int pq_withdraw(const char *dir, const struct pq_ticket *t);

void pq_batch_free(struct pq_batch *b);

#endif
