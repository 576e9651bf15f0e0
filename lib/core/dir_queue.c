/* dir_queue.c - waiting for one of some exclusive slots: W (D/NAME.lock),
 * or one of a counting lock's permits (lib/permit), each a lock directory
 * taken as W is (dir_exclusive.c).  The one wait loop of the directory
 * backend's exclusive acquires, over a table of the slots (struct
 * dl_slots, dir.h) that the kind of lock fills; and W's table.
 *
 * THE WAIT (dl_dir_take).  One attempt on arrival; then, until the
 * deadline: wait for a wake-up (a release in the slots' directory
 * -- an rmdir there --, the death of the watched holder, the re-check
 * interval, the cancel descriptor; waiter.c), and attempt again.  An attempt judges
 * the holder (readdir, readlink, /proc: a stale or dead one is broken,
 * BREAK in dir_exclusive.c) only when the watched holder died or the
 * re-check interval passed; other attempts are a rename, or a lookup
 * that saves the rename when the slot is visibly still taken.  The
 * waiter's watches are on from before its first look (dl_waiter_init
 * precedes the loop), so no release after that look is missed.  On
 * giving up (the deadline, the cancel descriptor): one last judging
 * attempt, then the error names who holds it.
 *
 * Without a queue every waiter is woken by every release and tries: the
 * lock is correct (the rename decides who holds) but a release wakes
 * them all.  THE QUEUE (lib/fifo, struct dl_dir_queue) orders them: only
 * the waiter it says is first is woken by releases and tries; every
 * other one waits behind the one ahead of it, as that module's protocol
 * says (and DIRLOCK_FIFO waiters make no try past a queue on arrival).
 * INVARIANT: a step that waits has its watch on from before its look --
 * the first waiter releases of the slots, the others what the queue
 * watches for them. */
#include "dir.h"
#include "dir_fsops.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* ---- the modules that follow waits --------------------------------------------- */

/* The queue (lib/fifo) and the wait register (lib/deadlock): the first
 * registered of each (dir_backend.c registers them), NULL without. */
static const struct dl_dir_queue *queue;
static const struct dl_dir_waits *waits;

void dl_dir_follow_waits(const struct dl_dir_queue *q, const struct dl_dir_waits *w)
{
        if (queue == NULL)
                queue = q;
        if (waits == NULL)
                waits = w;
}

const struct dl_dir_queue *dl_dir_queue_of(void)
{
        return queue;
}

int dl_dir_wait_begin(dirlock *h, enum dl_wait_target target, int kind, int mode, dirlock_error *err)
{
        return waits != NULL ? waits->begin(h, target, kind, mode, err) : DIRLOCK_OK;
}

int dl_dir_wait_step(dirlock *h, dirlock_error *err)
{
        return waits != NULL ? waits->step(h, err) : DIRLOCK_OK;
}

void dl_dir_wait_end(dirlock *h)
{
        if (waits != NULL)
                waits->end(h);
}

void dl_dir_waits_close(dirlock *h)
{
        if (waits != NULL)
                waits->close(h);
        if (queue != NULL)
                queue->close(h);
}

/* ---- W's table -------------------------------------------------------------- */

static bool w_looks_taken(dirlock *h)
{
        struct stat st;
        return dl_fs_lstat(dl_dir_of(h)->lock_path, &st) == 0;
}

static bool w_looks_free(dirlock *h)
{
        struct stat st;
        return dl_fs_lstat(dl_dir_of(h)->lock_path, &st) != 0 && errno == ENOENT;
}

static const char *w_release_dir(const dirlock *h)
{
        return dl_dir_of(h)->lockdir;
}

static char *w_queue_dir(const dirlock *h)
{
        return dl_layout_path(dl_dir_of(h)->lockdir, h->name, DL_SUFFIX_FIFO);
}

static bool w_holder_now(dirlock *h, dl_record *holder)
{
        dl_lock_view v;
        if (dl_lock_look(dl_dir_of(h)->lock_path, dl_dir_of(h)->fs, &v) != 0 || v.state != DL_LOCK_OWNED ||
            v.rec.pid <= 0)
                return false;
        *holder = v.rec;
        return true;
}

static int w_busy(dirlock *h, int code, const char *prefix, const dl_record *holder, dirlock_error *err)
{
        return dl_fail(err, code, 0, "%slock '%s' is held by pid %ld on %s", prefix, h->name,
                       (long)holder->pid, holder->host[0] ? holder->host : "an unknown host");
}

const struct dl_slots dl_dir_w = {
    .target = DL_FOR_W,
    .kind = DIRLOCK_WAIT_LOCK,
    .attempt = dl_excl_try,
    .looks_taken = w_looks_taken,
    .looks_free = w_looks_free,
    .release_dir = w_release_dir,
    .queue_dir = w_queue_dir,
    .holder_now = w_holder_now,
    .busy = w_busy,
};

/* ---- the wait ----------------------------------------------------------------- */

static int timeout_code(const dirlock *h)
{
        return h->opts.timeout == 0 ? DIRLOCK_EBUSY : DIRLOCK_ETIMEDOUT;
}

int dl_dir_refused(dirlock *h, const struct dl_slots *s, int code, const char *prefix, const dl_record *ahead,
                   dirlock_error *err)
{
        dl_record holder;
        if (s->holder_now(h, &holder))
                return s->busy(h, code, prefix, &holder, err);
        if (ahead->pid <= 0)
                return dl_fail(err, code, 0, "%slock '%s' is held", prefix, h->name);
        return dl_fail(err, code, 0, "%slock '%s' goes first to a waiter ahead, pid %ld on %s", prefix,
                       h->name, (long)ahead->pid, ahead->host[0] ? ahead->host : "an unknown host");
}

/* How often a waiter renews its waiting entries (a queue ticket, ...): so
 * that at least every third of the stale age passes between renewals
 * (INVARIANT C in dir_exclusive.c applies to waiting entries too) even
 * though a renewal can only happen when a wait ends, at the latest a
 * re-check interval later; at most every quarter of it, so that waiters
 * do not write on every wake-up. */
static double renew_every_ms(const dirlock *h, const dl_waiter *w)
{
        double third = h->opts.stale_age * 1e3 / 3, every = h->opts.stale_age * 1e3 / 4;
        if (third - w->recheck_ms < every)
                every = third - w->recheck_ms;
        return every > 0 ? every : 0;
}

/* The first waiter's step: an attempt, made after releases are watched.
 * DIRLOCK_EBUSY: wait. */
static int step_first(dirlock *h, struct dl_slot_wait *q, dirlock_error *err)
{
        int rc;
        dl_waiter_lockdir_events(&q->w, true); /* before the attempt */
        dl_waiter_span(&q->w, 0);
        /* Woken as the first waiter, the slot is normally held by the
         * waiter that went before: a lookup saves the rename that would
         * fail (ACQUIRE 2 in dir_exclusive.c).  Only where releases wake
         * us: a free but empty W (its releaser died before the rmdir)
         * sends no event, and the judging attempt at the next re-check
         * takes it. */
        if (!q->judge && q->w.notify && q->slots->looks_taken(h))
                rc = DIRLOCK_EBUSY;
        else
                rc = q->slots->attempt(h, &q->holder, q->judge, err);
        if (rc == DIRLOCK_EBUSY && q->judge) {
                dl_waiter_watch_owner(&q->w, &q->holder);
                q->last_judged = dl_now();
        }
        return rc;
}

/* Where h stands: 1 first (no queue, or first in it), 0 behind, -1. */
static int place(dirlock *h, struct dl_slot_wait *q, dirlock_error *err)
{
        const struct dl_dir_queue *line = queue;
        return line != NULL ? line->place(h, q, err) : 1;
}

/* The wait ended without a slot (`waited`: timed out or canceled): one
 * last judging try, honouring the queue, else the error naming who holds
 * one. */
static int gave_up(dirlock *h, struct dl_slot_wait *q, int waited, dirlock_error *err)
{
        int first = place(h, q, err);
        if (first < 0)
                return err->code;
        int rc = first ? q->slots->attempt(h, &q->holder, true, err) : DIRLOCK_EBUSY;
        if (rc != DIRLOCK_EBUSY)
                return rc;
        char prefix[64];
        if (waited == DIRLOCK_ECANCELED)
                snprintf(prefix, sizeof prefix, "canceled: ");
        else
                snprintf(prefix, sizeof prefix, "timed out after %.3g s: ", h->opts.timeout);
        return dl_dir_refused(h, q->slots, waited, prefix, &q->holder, err);
}

/* Set up the wait after the failed try: its entries, its waiter on the
 * slots' releases, its place in the queue. */
static int begin(dirlock *h, struct dl_slot_wait *q, dirlock_error *err)
{
        const struct dl_slots *s = q->slots;
        int rc = dl_dir_wait_begin(h, s->target, s->kind, h->mode, err);
        if (rc == DIRLOCK_OK && s->enter != NULL && (rc = s->enter(h, err)) != DIRLOCK_OK)
                dl_dir_wait_end(h);
        if (rc != DIRLOCK_OK)
                return rc;
        dl_waiter_init(&q->w, s->release_dir(h), h->opts.flags, h->token, h->opts.stale_age);
        dl_waiter_cancel_on(&q->w, h->opts.cancel_fd);
        const struct dl_dir_queue *line = queue;
        if (line == NULL)
                dl_waiter_watch_owner(&q->w, &q->holder);
        else if ((rc = line->join(h, q, err)) != DIRLOCK_OK)
                return rc;
        q->renew_ms = renew_every_ms(h, &q->w);
        q->last_judged = dl_now();
        q->judge = true;
        return DIRLOCK_OK;
}

static void end(dirlock *h, struct dl_slot_wait *q)
{
        const struct dl_dir_queue *line = queue;
        dl_waiter_close(&q->w);
        dl_dir_wait_end(h);
        if (line != NULL)
                line->leave(h);
        if (q->slots->leave != NULL)
                q->slots->leave(h);
}

/* Until one of the slots is h's, the deadline passes or the wait is
 * canceled (THE WAIT above). */
static int wait_loop(dirlock *h, struct dl_slot_wait *q, const dl_time *deadline, dirlock_error *err)
{
        const struct dl_dir_queue *line = queue;
        for (;;) {
                int first = place(h, q, err);
                if (first < 0)
                        return err->code;
                int rc = first ? step_first(h, q, err) : line->behind(h, q, err);
                if (rc == DL_LOOK_AGAIN)
                        continue;
                if (rc != DIRLOCK_EBUSY)
                        return rc;
                /* INVARIANT: a step that waits has its watch on (releases
                 * for the first waiter) from before its look. */
                DL_ASSERT(!q->w.notify || !first || !q->w.lockdir_muted);
                int waited = dl_waiter_wait(&q->w, deadline);
                q->judge = dl_waiter_owner_died(&q->w) || dl_ms_since(&q->last_judged) >= q->w.recheck_ms;
                if (waited != 0)
                        return gave_up(h, q, waited, err);
                if ((rc = dl_dir_wait_step(h, err)) != DIRLOCK_OK)
                        return rc;
                if (line != NULL)
                        line->renew(h, q);
                if (q->slots->renew != NULL)
                        q->slots->renew(h);
        }
}

int dl_dir_take(dirlock *h, const struct dl_slots *s, const dl_time *deadline, dirlock_error *err)
{
        const struct dl_dir_queue *line = queue;
        struct dl_slot_wait q = {.slots = s, .w = {.pid_fd = -1}};
        int rc = DIRLOCK_EBUSY;
        if (line == NULL || !line->skip_try(h, s))
                rc = s->attempt(h, &q.holder, true, err);
        if (rc != DIRLOCK_EBUSY)
                return rc;
        if (dl_deadline_passed(deadline))
                return dl_dir_refused(h, s, timeout_code(h), "", &q.holder, err);
        if ((rc = begin(h, &q, err)) == DIRLOCK_OK)
                rc = wait_loop(h, &q, deadline, err);
        end(h, &q);
        return rc;
}
