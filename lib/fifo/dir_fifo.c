/* dir_fifo.c - the queue module (lib/fifo): the waiters of a name's
 * exclusive lock (D/NAME.lock), or of a counting lock's permits, queue in
 * arrival order, so that a release wakes one waiter instead of all of
 * them (dir_queue.c, THE QUEUE), and DIRLOCK_FIFO waiters are served
 * strictly in that order.  Without this module dl_dir_take wakes every
 * waiter at every release, and DIRLOCK_FIFO is refused.
 *
 * QUEUE.  D/NAME.fifo/ holds one ticket per waiter: a symlink t.<SEQ>
 * (SEQ zero-padded decimal, so names sort as numbers) whose target is the
 * waiter's owner record.  A waiter takes the next number by creating
 * t.<max+1>, where max is the largest ticket it saw; symlink(2) fails with
 * EEXIST when another waiter took that number first, and it tries the next.
 * The creation is the atomic step: of two waiters, the one whose symlink
 * came first holds the smaller number, so sequence order is arrival order
 * among waiters that overlap.  (When the queue empties, numbering starts
 * again from what is left: a waiter that read the old maximum just before
 * may be numbered after a later one.  Only the order suffers, never mutual
 * exclusion: the queue decides who tries, the lock decides who holds.)
 *
 * INVARIANT F: of the queued waiters, only the one with the smallest live
 * ticket tries to take NAME.lock (it looks, `place`, before every try).  It gives its ticket back once it
 * holds the lock (or gives up).
 *
 * WAKE-UPS (dir_queue.c dl_dir_take, waiter.c).  Each waiter follows the nearest
 * live ticket below its own: it watches that one entry (inotify
 * IN_DELETE_SELF) and its owner's process (pidfd), and only the first
 * waiter watches the lock directory for releases.  A release therefore
 * wakes the first waiter; its giving back the ticket wakes the second,
 * which becomes first; nobody else runs.  A look (dl_fifo_ahead) reads the
 * queue's names and then only the tickets from ours down to the nearest
 * live one.  The thread's view of a queue (dir_fifo_view.c) saves the
 * many tasks of one event loop that wait in one queue the listings.
 *
 * DEAD WAITERS.  A ticket whose owner is provably dead on this host, or
 * whose age exceeds the stale age (waiters renew theirs at least every
 * third of it while they wait), is unlinked by the waiter behind it when
 * it looks (woken by the owner's pidfd, or at the re-check interval):
 * that waiter then follows the next live ticket, or tries the lock.
 *
 * A one-try acquire (timeout 0) does not queue at all, like tryLock() on
 * a fair lock; an acquire without DIRLOCK_FIFO tries once on arrival, so
 * it may take a free lock ahead of the queue, and while queued it takes
 * one it finds free at two re-checks in a row (no lock-out of the queue
 * results: its first waiter is woken by every release; and a first waiter
 * that stopped running holds the others up for two re-check intervals,
 * not for the stale age its ticket takes to go stale, as it does in a
 * DIRLOCK_FIFO queue).
 */
#include "dir_fsops.h"
#include "fifo.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest ticket number present; 0 when none. */
static int max_seq(const char *dir, unsigned long long *max)
{
        *max = 0;
        DIR *d = dl_fs_opendir(dir);
        if (d == NULL)
                return errno == ENOENT ? 0 : -1;
        struct dirent *de;
        unsigned long long seq;
        int more;
        while ((more = dl_fs_next(d, &de)) > 0)
                if (dl_layout_ticket_seq(de->d_name, &seq) && seq > *max)
                        *max = seq;
        int e = errno;
        closedir(d);
        errno = e;
        return more < 0 ? -1 : 0;
}

/* Take a ticket: the next sequence number in the queue. */
static int ticket_take(dirlock *h, dirlock_error *err)
{
        struct dl_fifo *f = dl_fifo_of(h);
        if (f->ticket != NULL)
                return DIRLOCK_OK;
        struct dl_fifo_view *v = dl_view_wanted(h) ? dl_view_get(f->dir) : NULL;
        if (v != NULL)
                dl_view_activate(v);
        bool viewed = v != NULL && dl_view_sync(v, NULL);
        unsigned long long seq = viewed ? dl_view_max(v) : 0;
        for (int round = 0; round < 1000; round++) {
                if (viewed && round > 0 && dl_view_sync(v, NULL) && dl_view_max(v) > seq) {
                        seq = dl_view_max(v); /* EEXIST: others took numbers meanwhile */
                } else if (!viewed && (round == 0 || errno == ENOENT)) {
                        if (max_seq(f->dir, &seq) != 0)
                                return dl_fail(err, DIRLOCK_EIO, errno, "cannot read queue '%s'", f->dir);
                }
                seq++;
                char *path = dl_layout_ticket(f->dir, seq);
                if (path == NULL)
                        return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                dl_time made = dl_now(); /* no later than the ticket's ctime */
                if (dl_entry_make_in(f->dir, path, h, h->mode) == 0) {
                        f->ticket = path;
                        f->ticket_seq = seq;
                        f->ticket_renewed = made;
                        if (v != NULL)
                                dl_view_join(v, f, seq);
                        return DIRLOCK_OK;
                }
                int e = errno;
                free(path);
                if (e != EEXIST) {
                        if (v != NULL)
                                dl_view_release(v); /* when made for us alone */
                        return dl_fail(err, DIRLOCK_EIO, e, "cannot queue in '%s'", f->dir);
                }
                errno = e;
        }
        if (v != NULL)
                dl_view_release(v);
        return dl_fail(err, DIRLOCK_EIO, EAGAIN, "cannot queue in '%s'", f->dir);
}

/* A ticket seen in the queue. */
struct seen {
        unsigned long long seq;
        char leaf[2 + DL_TICKET_DIGITS + 1];
};

static int cmp_seq_desc(const void *a, const void *b)
{
        unsigned long long x = ((const struct seen *)a)->seq, y = ((const struct seen *)b)->seq;
        return x < y ? 1 : x > y ? -1 : 0;
}

/* The tickets below ours, largest first: malloc'd in *out (NULL when
 * none), their count in *n; *mine_listed whether ours is there.  0, or
 * -1 with errno. */
static int tickets_ahead(DIR *d, unsigned long long mine, struct seen **out, size_t *n, bool *mine_listed)
{
        struct seen *v = NULL;
        size_t len = 0, cap = 0;
        unsigned long long seq;
        struct dirent *de;
        int more;
        *mine_listed = false;
        while ((more = dl_fs_next(d, &de)) > 0) {
                if (!dl_layout_ticket_seq(de->d_name, &seq))
                        continue;
                if (seq >= mine) {
                        *mine_listed |= seq == mine;
                        continue;
                }
                if (len == cap) {
                        cap = cap ? cap * 2 : 16;
                        struct seen *grown = realloc(v, cap * sizeof *v);
                        if (grown == NULL) {
                                free(v);
                                errno = ENOMEM;
                                return -1;
                        }
                        v = grown;
                }
                v[len].seq = seq;
                memcpy(v[len].leaf, de->d_name, sizeof v[len].leaf); /* checked: exactly this long */
                len++;
        }
        if (more < 0) {
                int e = errno;
                free(v);
                errno = e;
                return -1;
        }
        if (len > 1)
                qsort(v, len, sizeof *v, cmp_seq_desc);
        *out = v;
        *n = len;
        return 0;
}

/* ahead_once's answers besides 1, 0 and -1. */
#define QUEUE_CHANGED (-2) /* the queue's directory was replaced as we read it (ESTALE) */
#define TICKET_GONE   (-3) /* our ticket is not in the queue: broken as stale */

/* One look (ticket_ahead). */
static int ahead_once(dirlock *h, dl_record *ahead, char **ahead_path, dirlock_error *err)
{
        struct dl_fifo *f = dl_fifo_of(h);
        DIR *d = dl_fs_opendir(f->dir);
        if (d == NULL) {
                if (errno == ESTALE)
                        return QUEUE_CHANGED;
                if (errno == ENOENT) /* with our ticket in it, the queue would be there */
                        return TICKET_GONE;
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read queue '%s'", f->dir);
                return -1;
        }
        struct seen *seen;
        size_t n;
        bool mine_listed;
        if (tickets_ahead(d, f->ticket_seq, &seen, &n, &mine_listed) != 0) {
                int e = errno;
                closedir(d);
                if (e == ESTALE)
                        return QUEUE_CHANGED;
                dl_fail(err, e == ENOMEM ? DIRLOCK_ENOMEM : DIRLOCK_EIO, e, "cannot read queue '%s'", f->dir);
                return -1;
        }
        if (!mine_listed) {
                free(seen);
                closedir(d);
                return TICKET_GONE;
        }
        /* Nearest first: the first live one is the waiter we follow; the
         * dead ones on the way are skipped (INVARIANT F, DEAD WAITERS). */
        int first = 1;
        for (size_t i = 0; i < n && first; i++) {
                const char *leaf = seen[i].leaf;
                dl_record rec;
                double age;
                if (dl_entry_readat(dirfd(d), leaf, &rec, &age) != 0) {
                        if (errno == ENOENT || errno == EINVAL)
                                continue; /* gone meanwhile, or not a ticket (not a symlink) */
                        if (errno == ESTALE) {
                                first = -2; /* the queue was replaced: look again */
                                break;
                        }
                        dl_fail(err, DIRLOCK_EIO, errno, "cannot read ticket %s of lock '%s'", leaf, h->name);
                        first = -1;
                        break;
                }
                if (dl_entry_stale(&rec, age, h->opts.stale_age, dl_dir_of(h)->fs)) {
                        /* A dead waiter's ticket is skipped -- once it is
                         * gone: one we may not remove still holds its place. */
                        if (unlinkat(dirfd(d), leaf, 0) != 0 && (errno == EPERM || errno == EACCES)) {
                                int e = errno;
                                char what[DIRLOCK_NAME_MAX + 64];
                                snprintf(what, sizeof what, "queue ticket %s of lock '%s'", leaf, h->name);
                                dl_fail_unbreakable(err, what, &rec, e);
                                first = -1;
                        }
                        continue;
                }
                first = 0;
                *ahead = rec;
                if (ahead_path != NULL) {
                        *ahead_path = dl_layout_ticket(f->dir, seen[i].seq);
                        if (*ahead_path == NULL) {
                                dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                                first = -1;
                        }
                }
        }
        free(seen);
        closedir(d);
        if (first != 0 && ahead_path != NULL) {
                free(*ahead_path);
                *ahead_path = NULL;
        }
        return first;
}

/* Give the ticket back (idempotent). */
static void ticket_leave(dirlock *h)
{
        struct dl_fifo *f = dl_fifo_of(h);
        if (f == NULL || f->ticket == NULL)
                return;
        dl_view_leave(f); /* first: our waiter behind us is kicked */
        /* Only our own ticket: if it was broken as stale, its number may be
         * someone else's now. */
        dl_record rec;
        double age;
        if (dl_entry_read(f->ticket, &rec, &age) == 0 && strcmp(rec.token, h->token) == 0)
                dl_entry_drop(h, f->dir, f->ticket);
        free(f->ticket);
        f->ticket = NULL;
}

/* 1 when no live ticket precedes ours (dead ones are broken on the way),
 * 0 otherwise with *ahead the nearest live waiter ahead and its ticket's
 * path in *ahead_path (malloc'd; NULL otherwise): the entry a queued
 * waiter watches; -1 on error.  Only the tickets from ours down to the
 * nearest live one are read.  `local` (may be NULL): set when that waiter
 * is a task of this thread, followed through the thread's view of the
 * queue -- then *ahead is not read, nothing needs watching (the view
 * pokes f->wake when it goes) and nothing needs re-checking. */
static int ticket_ahead(dirlock *h, dl_record *ahead, char **ahead_path, bool *local, dirlock_error *err)
{
        if (ahead_path != NULL)
                *ahead_path = NULL;
        if (local != NULL)
                *local = false;
        struct dl_fifo *f = dl_fifo_of(h);
        if (f->view != NULL && dl_view_sync(f->view, f->wake))
                return dl_view_ahead(h, ahead, ahead_path, local, err);
        for (int try = 0;; try++) {
                int first = ahead_once(h, ahead, ahead_path, err);
                if (first != QUEUE_CHANGED && first != TICKET_GONE)
                        return first;
                if (try == DL_ESTALE_TRIES) {
                        dl_fail(err, DIRLOCK_EIO, first == QUEUE_CHANGED ? ESTALE : ENOENT,
                                first == QUEUE_CHANGED ? "queue '%s' keeps changing as it is read"
                                                       : "queue '%s': our ticket keeps being broken",
                                f->dir);
                        return -1;
                }
                if (first == QUEUE_CHANGED) {
                        dl_fs_refresh(f->dir); /* dir_fsops.c */
                        continue;
                }
                /* We did not run for longer than the stale age (SIGSTOP,
                 * a suspended host): our ticket was broken as a dead
                 * waiter's (DEAD WAITERS), and the queue's directory
                 * maybe removed by the last one out.  Our place is lost:
                 * queue again, at the end. */
                ticket_leave(h);
                int rc = ticket_take(h, err);
                if (rc != DIRLOCK_OK)
                        return -1;
        }
}

/* Renew the ticket's age while waiting, once `every_ms` have passed since
 * it was made or last renewed (0: every call). */
static void ticket_touch(dirlock *h, double every_ms)
{
        struct dl_fifo *f = dl_fifo_of(h);
        if (f == NULL || f->ticket == NULL)
                return;
        dl_time now = dl_now(); /* monotonic: a wall-clock step cannot delay it */
        double since_ms = (double)(now.tv_sec - f->ticket_renewed.tv_sec) * 1e3 +
                          (double)(now.tv_nsec - f->ticket_renewed.tv_nsec) / 1e6;
        if (since_ms < every_ms)
                return;
        dl_fs_touch(f->ticket);
        f->ticket_renewed = now;
}

/* ---- the queue's steps (dir.h, struct dl_dir_queue) ------------------------ */

/* h's place in a queue, made on first use: the queue of the slots it
 * waits for.  NULL when out of memory. */
static struct dl_fifo *fifo_made(dirlock *h, const struct dl_slots *s)
{
        struct dl_dir *d = dl_dir_of(h);
        if (d->queue_state != NULL)
                return d->queue_state;
        struct dl_fifo *f = calloc(1, sizeof *f);
        if (f != NULL && (f->dir = s->queue_dir(h)) == NULL) {
                free(f);
                f = NULL;
        }
        d->queue_state = f;
        return f;
}

/* One try (timeout 0) cannot queue, so it tries even past a FIFO queue,
 * as tryLock() does on a fair lock; a DIRLOCK_FIFO waiter makes none
 * while a queue exists: arrival order. */
static bool fifo_skip_try(dirlock *h, const struct dl_slots *s)
{
        struct stat st;
        struct dl_fifo *f;
        return (h->opts.flags & DIRLOCK_FIFO) && h->opts.timeout != 0 && (f = fifo_made(h, s)) != NULL &&
               dl_fs_stat(f->dir, &st) == 0;
}

/* Who queues: a DIRLOCK_FIFO waiter always; any other waiter once its one
 * try has failed, where releases can be watched (not on a network
 * filesystem: no release wakes anyone there, and every waiter polls the
 * slots).  Queued through the thread's view (dir_fifo_view.c), it is
 * poked when the one ahead goes, or the view stops: its steps watch whom
 * they follow, and a waiter behind one of this thread watches nobody (no
 * pidfd for each of a thousand). */
static int fifo_join(dirlock *h, struct dl_slot_wait *q, dirlock_error *err)
{
        struct dl_fifo *f = fifo_made(h, q->slots);
        if (f == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        int rc = DIRLOCK_OK;
        if (((h->opts.flags & DIRLOCK_FIFO) || q->w.notify) && (rc = ticket_take(h, err)) != DIRLOCK_OK)
                return rc;
        f->free_before = false;
        if (f->view != NULL && q->w.notify)
                f->wake = &q->w.listener;
        else
                dl_waiter_watch_owner(&q->w, &q->holder);
        return DIRLOCK_OK;
}

static int fifo_place(dirlock *h, struct dl_slot_wait *q, dirlock_error *err)
{
        struct dl_fifo *f = dl_fifo_of(h);
        free(f->ahead);
        f->ahead = NULL;
        f->local = false;
        if (f->ticket == NULL)
                return 1;
        return ticket_ahead(h, &q->holder, &f->ahead, f->wake != NULL ? &f->local : NULL, err);
}

/* How long a waiter behind one of its own thread's waits between wakes:
 * long enough to cost nothing, short enough that its ticket and wait
 * register entry are renewed in time (every renew_ms, checked at each
 * wake: at most renew + span apart, within a third of the stale age);
 * 0 (the re-check interval) when that is not longer. */
static double follower_span_ms(const dirlock *h, const struct dl_slot_wait *q)
{
        double span = (h->opts.stale_age * 1e3 / 3 - q->renew_ms) / 2;
        return span > q->w.recheck_ms ? span : 0;
}

/* The step of a waiter behind others: watch the ticket ahead.  Without
 * DIRLOCK_FIFO it also looks at the slots once per re-check interval, and
 * tries when it finds one free at two looks in a row: the first waiter
 * normally takes a free slot within a millisecond, so one free that long
 * means it has stopped running (SIGSTOP, swapped out), and it then holds
 * the others up for two intervals at most, not for the stale age its
 * ticket needs to go stale.  (A FIFO queue waits for that.) */
static int fifo_behind(dirlock *h, struct dl_slot_wait *q, dirlock_error *err)
{
        struct dl_fifo *f = dl_fifo_of(h);
        if (f->local) {
                /* The one ahead is a task of this thread: it runs when we
                 * do, and the thread's view of the queue pokes us when it
                 * goes.  Nothing to watch, and the slots' being free for
                 * long is its business. */
                DL_ASSERT(f->wake == &q->w.listener);
                dl_waiter_lockdir_events(&q->w, false);
                dl_waiter_unwatch_owner(&q->w);
                dl_waiter_span(&q->w, follower_span_ms(h, q));
                return DIRLOCK_EBUSY;
        }
        dl_waiter_span(&q->w, 0);
        if (!(h->opts.flags & DIRLOCK_FIFO) && q->judge) {
                q->last_judged = dl_now();
                bool free_now = q->slots->looks_free(h);
                if (free_now && f->free_before) {
                        dl_record holder;
                        int rc = q->slots->attempt(h, &holder, true, err);
                        if (rc != DIRLOCK_EBUSY)
                                return rc;
                }
                f->free_before = free_now;
        }
        dl_waiter_lockdir_events(&q->w, false);
        /* Through an active view the queue's directory is watched
         * already: the ticket ahead going pokes us. */
        if (!dl_view_follows(f) && dl_waiter_watch_entry(&q->w, f->ahead) != 0 && errno == ENOENT)
                return DL_LOOK_AGAIN;
        dl_waiter_watch_owner(&q->w, &q->holder);
        /* INVARIANT: waiting behind, its watch is on the one ahead. */
        DL_ASSERT(!q->w.notify || q->w.lockdir_muted);
        return DIRLOCK_EBUSY;
}

static void fifo_renew(dirlock *h, struct dl_slot_wait *q)
{
        ticket_touch(h, q->renew_ms);
}

static void fifo_leave(dirlock *h)
{
        struct dl_fifo *f = dl_fifo_of(h);
        if (f == NULL)
                return;
        free(f->ahead);
        f->ahead = NULL;
        ticket_leave(h);
}

static void fifo_close(dirlock *h)
{
        struct dl_fifo *f = dl_fifo_of(h);
        if (f == NULL)
                return;
        fifo_leave(h);
        dl_view_leave(f);
        free(f->dir);
        free(f);
        dl_dir_of(h)->queue_state = NULL;
}

static const struct dl_dir_queue fifo_queue = {
    .skip_try = fifo_skip_try,
    .join = fifo_join,
    .place = fifo_place,
    .behind = fifo_behind,
    .renew = fifo_renew,
    .leave = fifo_leave,
    .close = fifo_close,
};

/* ---- from outside: the queues' leftovers ------------------------------------ */

/* dirlock_cleanup: a queue's dead waiters' tickets, and the queue when
 * that left it empty (never on a network filesystem: KEPT DIRECTORIES in
 * lib/netfs/netfs.c).  A counting lock's queue is its module's to clean. */
static void fifo_cleanup(const char *lockdir, const dl_fs *fs, const char *leaf, const char *path)
{
        (void)lockdir;
        if (!dl_layout_has_suffix(leaf, DL_SUFFIX_FIFO))
                return;
        dl_scan sc = {.active = "t"};
        if (dl_scan_dir(path, DIRLOCK_DEFAULT_STALE_AGE, fs, &sc, NULL) == 0 && !fs->network)
                dl_fs_rmdir(path); /* only if empty */
}

static struct dl_dir_module fifo_module = {
    .name = "the queue module (lib/fifo)",
    .queue = &fifo_queue,
    .cleanup = fifo_cleanup,
};
DL_DIR_MODULE(fifo_module)
