/* groupcommit.c - a post through the pending queue, for any store (see
 * groupcommit.h; the protocol is at the top of postqueue.c). */
#include "groupcommit.h"

#include "delay.h"
#include "postqueue.h"
#include "ratelimit.h"

#include <poll.h>

size_t group_batch_max(const struct board_config *cfg)
{
        return (size_t)cfg->max_messages < GROUP_BATCH_MAX ? (size_t)cfg->max_messages : GROUP_BATCH_MAX;
}

/* The post interval of a queued post is checked and recorded before it is
 * queued, under the board's "ratelimit" lock: the request that stores the
 * post is often another one. */
static int rate_charge(const struct group_commit *g, const struct store_write *w, struct board_error *err)
{
        const struct board_config *cfg = g->cfg;
        if (cfg->min_post_interval <= 0)
                return 0;
        struct board_lock lk;
        if (g->rate_lock(cfg, &lk, err) < 0)
                return -1;
        int rc = ratelimit_admit(g->rate, w->addr, w->now, cfg->min_post_interval, err);
        if (rc == 0) {
                struct board_error rerr = BOARD_ERROR_INIT; /* failing to note it only weakens the limit */
                (void)ratelimit_record(g->rate, w->addr, w->now, cfg->min_post_interval, &rerr);
        }
        return board_lock_finish(&lk, rc, err);
}

/* A charged post that was certainly not stored does not count. */
static void rate_refund(const struct group_commit *g, const struct store_write *w)
{
        const struct board_config *cfg = g->cfg;
        if (cfg->min_post_interval <= 0)
                return;
        struct board_lock lk;
        struct board_error ignored = BOARD_ERROR_INIT;
        if (g->rate_lock(cfg, &lk, &ignored) < 0)
                return;
        (void)ratelimit_forget(g->rate, w->addr, w->now, cfg->min_post_interval, &ignored);
        (void)board_lock_finish(&lk, 0, &ignored);
}

/* Holding the write lock with post t not yet stored: lead until it is
 * (step 5: again when it was beyond the batch).  1, nothing stored of
 * it, when another process's claim holds it (pq_claimer): *claimer. */
static int lead(const struct group_commit *g, struct board_lock *lk, const struct pq_ticket *t,
                bool *maybe_stored, struct process_id *claimer, struct board_error *err)
{
        size_t max = group_batch_max(g->cfg);
        bool own_claimed = false;
        while (!own_claimed) {
                size_t claimed = 0;
                if (g->commit_batch(g->store, lk, max, t->id, &own_claimed, &claimed, err) < 0) {
                        *maybe_stored = false; /* given back without it */
                        return -1;
                }
                if (!own_claimed && claimed < max) {
                        if (pq_claimer(g->pending, t, claimer))
                                return 1;
                        return board_fail(err, 500, "the message was lost from the queue '%s'", g->pending);
                }
        }
        return 0;
}

/* How long a poster whose entry another process's claim holds waits
 * before it looks again (seconds; doubled each time, up to the most). */
#define CLAIMER_SLICE_MIN 0.02
#define CLAIMER_SLICE_MAX 0.5

/* Step 6: the wait is over without the lock.  -1 either way: with
 * *maybe_stored cleared when the post was withdrawn (err says why the
 * wait ended), or a 503 saying it may appear when a holder's claim has
 * it. */
static int stop_waiting(const struct group_commit *g, const struct pq_ticket *t, bool *maybe_stored,
                        struct board_error *err)
{
        if (pq_withdraw(g->pending, t) == 0) {
                *maybe_stored = false;
                return -1;
        }
        board_fail(err, 503,
                   "busy: your message was already being saved by another request when this one stopped "
                   "waiting, so it may appear shortly; please look at the board before sending it again");
        err->retry_after = 1;
        err->maybe_done = 1;
        return -1;
}

/* Steps 1 to 3 and 6 of the protocol in postqueue.c. */
int group_commit_post(const struct group_commit *g, struct logrecord *msg, const struct store_write *w,
                      struct board_error *err)
{
        const struct board_config *cfg = g->cfg;
        bool maybe_stored = false;
        struct pq_ticket t;
        msg->no = 0;
        msg->time = w->now;
        int rc = rate_charge(g, w, err);
        if (rc < 0)
                return -1;
        rc = pq_enqueue(g->pending, msg, &t, err);
        if (rc < 0)
                goto refund;
        maybe_stored = true;
        double deadline = monotonic_seconds() + cfg->lock_timeout, claimer_slice = CLAIMER_SLICE_MIN;
        for (;;) {
                if (pq_stored(&t))
                        break; /* committed by a holder (I3) */
                double left = deadline - monotonic_seconds();
                struct board_lock lk;
                rc = g->lock(cfg, &lk, left > 0 ? left : 0, pq_notify_fd(&t), err);
                if (rc == 1) { /* the entry changed: look again */
                        pq_notify_drain();
                        rc = 0;
                        continue;
                }
                if (rc < 0) {
                        rc = stop_waiting(g, &t, &maybe_stored, err);
                        break;
                }
                struct process_id claimer;
                if (!pq_stored(&t))
                        rc = lead(g, &lk, &t, &maybe_stored, &claimer, err);
                if (rc != 1) {
                        rc = board_lock_finish(&lk, rc, err);
                        break;
                }
                /* Another process's claim holds the post: a holder that
                 * lost the lock while it still lived (I2).  The post's
                 * fate is that claim's -- stored or given back by its
                 * holder, or taken over by a leader once it is gone --
                 * so the lock goes back and the claimer's end is waited
                 * for with the time left, then the post led again. */
                rc = board_lock_finish(&lk, 0, err);
                if (rc < 0)
                        break;
                left = deadline - monotonic_seconds();
                if (left <= 0) {
                        board_fail(err, 503,
                                   "busy: a request that was saving your message stopped before it finished, "
                                   "and did not end within the %g s wait; your message was not saved, please "
                                   "send it again",
                                   cfg->lock_timeout);
                        err->retry_after = 1;
                        rc = stop_waiting(g, &t, &maybe_stored, err);
                        break;
                }
                /* Its end (a pidfd), or the entry's commit (IN_ATTRIB);
                 * its claim given back is a rename, which no watch of the
                 * entry hears: looked again for after each slice. */
                double slice = claimer_slice < left ? claimer_slice : left;
                claimer_slice = claimer_slice * 2 > CLAIMER_SLICE_MAX ? CLAIMER_SLICE_MAX : claimer_slice * 2;
                if (process_wait_gone(&claimer, slice, pq_notify_fd(&t)) < 0)
                        poll(NULL, 0, 10); /* no pidfd: look again soon */
                pq_notify_drain();
        }
        pq_ticket_close(&t);
refund:
        if (rc < 0 && !maybe_stored)
                rate_refund(g, w);
        return rc;
}
