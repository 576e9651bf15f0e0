/* fifo.c - the waiting queue of a name's exclusive lock (D/NAME.lock):
 * tickets in arrival order.  DIRLOCK_FIFO waiters are served strictly in
 * that order; other waiters queue too, after one failed try (rwlock.c
 * dl_take_w), so that a release wakes one waiter instead of all of them.
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
 * ticket tries to take NAME.lock (rwlock.c looks with dl_fifo_ahead before
 * every try).  It gives its ticket back once it holds the lock (or gives
 * up).
 *
 * WAKE-UPS (rwlock.c dl_take_w, wait.c).  Each waiter follows the nearest
 * live ticket below its own: it watches that one entry (inotify
 * IN_DELETE_SELF) and its owner's process (pidfd), and only the first
 * waiter watches the lock directory for releases.  A release therefore
 * wakes the first waiter; its giving back the ticket wakes the second,
 * which becomes first; nobody else runs.  A look (dl_fifo_ahead) reads the
 * queue's names and then only the tickets from ours down to the nearest
 * live one.
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
 *
 * THE THREAD'S VIEW OF A QUEUE (pending acquires, lib/pending.c).  A
 * thread running many pending acquires of one lock -- an event loop with a
 * thousand waiting tasks -- would read the whole queue at every join and
 * every look: quadratic, and each waiter woken every re-check interval.
 * Instead the thread keeps one view per queue directory its pending
 * acquires wait in: the directory watched through the thread's inotify hub
 * (creations, removals, renames, its own removal), read once, and from
 * then on kept equal to the directory's tickets by applying every event:
 * the view holds every ticket whose creation came before the thread's last
 * read of its inotify instance, and no ticket whose removal did
 * (inotify queues an event before the call that made it returns, and a
 * look reads the instance first).  An overflowed queue or the directory's
 * removal makes it read the directory again at the next look.  So:
 *   - a join takes max + 1, the largest ticket seen since the view was
 *     read (a removed one counts: a number past every ticket is as good
 *     as the next one), with no listing: O(1);
 *   - a look finds the nearest ticket below ours in the view (binary
 *     search), reading only the tickets it passes, as a listing would;
 *   - a waiter whose waiter ahead is of this thread (the usual case in a
 *     loop) watches nothing: the view kicks it when that ticket goes
 *     (its holder gave it back, or the directory saw it removed), and it
 *     needs no re-check -- its predecessor runs in this very thread -- so
 *     it waits up to a renewal of its entries (dl_take_w).  Only the first
 *     waiter of the thread, and one following another process's ticket,
 *     re-check as before: one per lock and thread, not one per waiter.
 * ACTIVE.  A view is followed (watched and read) only while two pending
 * acquires of the thread or more are in the queue through it: a thread
 * with one waiter gains nothing from it, and would be woken by every
 * other process's arrival and departure.  The second member's join makes
 * it active; the members before it go on with the watches they had and
 * look through the view from their next look.  Down to one member, it
 * stops following (its watch removed) and kicks that member, which looks
 * again as a waiter outside a view does.
 * INVARIANT F holds as before: who is first is decided by the same rule
 * (no live ticket below ours), over the view instead of a listing, and
 * the view never lacks a ticket a listing made after the same moment
 * would show.  A blocking acquire never uses a view: its thread would be
 * woken by every arrival and departure in the queue. */
#include "fsops.h"
#include "rw_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
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

/* ---- the thread's view of a queue -------------------------------------- */

#define VIEW_EVENTS (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF)

struct view_slot {
        unsigned long long seq;
        struct dl_rw *rw; /* the pending acquire of this thread it is, or NULL */
};

struct dl_fifo_view {
        char *dir;
        unsigned refs;        /* its members: the handles that joined through it */
        bool active;          /* followed (two members or more): see ACTIVE    */
        dl_listener listener; /* its watch on dir, through the hub             */
        bool watching;        /* the watch is on                               */
        bool valid;           /* slots are dir's tickets (read, events applied) */
        struct view_slot *v;  /* by seq, ascending                             */
        size_t n, cap;
        unsigned long long max; /* the largest ticket seen since it was read  */
        struct dl_rw *members;  /* (linked by view_prev, view_next)           */
        struct dl_fifo_view *next;
};

static _Thread_local struct dl_fifo_view *views;
static _Thread_local pid_t views_pid; /* the process they are of */

/* The thread's views, when this process made them: a forked child drops
 * its copies of its parent's (their members are the parent's acquires,
 * their watches the parent's instance). */
static struct dl_fifo_view *views_mine(void)
{
        pid_t pid = dl_self_pid();
        if (views_pid == pid)
                return views;
        while (views != NULL) {
                struct dl_fifo_view *v = views;
                views = v->next;
                free(v->v);
                free(v->dir);
                free(v);
        }
        views_pid = pid;
        return NULL;
}

static struct dl_fifo_view *view_of(dl_listener *l)
{
        return (struct dl_fifo_view *)((char *)l - offsetof(struct dl_fifo_view, listener));
}

static void poke(const struct dl_rw *rw)
{
        if (rw != NULL && rw->wake != NULL)
                dl_notify_poke(rw->wake);
}

/* The first slot whose seq is >= seq. */
static size_t lower_bound(const struct dl_fifo_view *v, unsigned long long seq)
{
        size_t lo = 0, hi = v->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (v->v[mid].seq < seq)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* Insert ticket seq (of rw, or NULL: not known to be ours); a waiter of
 * ours just above it has someone new ahead: kicked.  0, or -1 (ENOMEM). */
static int view_insert(struct dl_fifo_view *v, unsigned long long seq, struct dl_rw *rw)
{
        size_t i = lower_bound(v, seq);
        if (i < v->n && v->v[i].seq == seq) {
                if (rw != NULL)
                        v->v[i].rw = rw;
                return 0;
        }
        if (v->n == v->cap) {
                size_t cap = v->cap ? v->cap * 2 : 64;
                struct view_slot *grown = realloc(v->v, cap * sizeof *grown);
                if (grown == NULL)
                        return -1;
                v->v = grown;
                v->cap = cap;
        }
        memmove(&v->v[i + 1], &v->v[i], (v->n - i) * sizeof v->v[0]);
        v->v[i] = (struct view_slot){seq, rw};
        v->n++;
        if (seq > v->max)
                v->max = seq;
        if (i + 1 < v->n)
                poke(v->v[i + 1].rw);
        return 0;
}

/* Remove slot i; the waiter of ours just above it (but `looker`, who is
 * looking now) has someone else ahead: kicked. */
static void view_remove_at(struct dl_fifo_view *v, size_t i, const struct dl_rw *looker)
{
        memmove(&v->v[i], &v->v[i + 1], (v->n - i - 1) * sizeof v->v[0]);
        v->n--;
        if (i < v->n && v->v[i].rw != looker)
                poke(v->v[i].rw);
}

static void view_remove(struct dl_fifo_view *v, unsigned long long seq, const struct dl_rw *looker)
{
        size_t i = lower_bound(v, seq);
        if (i < v->n && v->v[i].seq == seq)
                view_remove_at(v, i, looker);
}

/* The view no longer follows the directory: read it again at the next
 * look; every member looks again. */
static void view_invalidate(struct dl_fifo_view *v)
{
        v->valid = false;
        v->n = 0;
        for (struct dl_rw *m = v->members; m != NULL; m = m->view_next)
                poke(m);
}

/* The hub's callback: every event of the queue's directory. */
static void view_event(dl_listener *l, const struct inotify_event *ev)
{
        struct dl_fifo_view *v = view_of(l);
        if (ev->mask & (IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF)) {
                if (ev->mask & IN_IGNORED)
                        v->watching = false; /* the hub forgets the watch */
                view_invalidate(v);
                return;
        }
        unsigned long long seq;
        if (!v->valid || ev->len == 0 || !dl_layout_ticket_seq(ev->name, &seq))
                return;
        if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
                if (view_insert(v, seq, NULL) != 0)
                        view_invalidate(v); /* out of memory: a listing next time */
        } else if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
                view_remove(v, seq, NULL);
        }
}

static int cmp_slot(const void *a, const void *b)
{
        unsigned long long x = ((const struct view_slot *)a)->seq, y = ((const struct view_slot *)b)->seq;
        return x < y ? -1 : x > y;
}

/* Read the directory into the view (its watch on first, so that no change
 * after the listing is missed).  0, or -1 (the directory is missing, or
 * cannot be watched or read). */
static int view_read(struct dl_fifo_view *v)
{
        if (!v->watching) {
                if (dl_notify_add(&v->listener, v->dir, VIEW_EVENTS, IN_ONLYDIR) < 0)
                        return -1;
                v->watching = true;
        }
        DIR *d = dl_fs_opendir(v->dir);
        if (d == NULL)
                return -1;
        v->n = 0;
        v->max = 0;
        struct dirent *de;
        unsigned long long seq;
        int more;
        while ((more = dl_fs_next(d, &de)) > 0) {
                if (!dl_layout_ticket_seq(de->d_name, &seq))
                        continue;
                if (v->n == v->cap) {
                        size_t cap = v->cap ? v->cap * 2 : 64;
                        struct view_slot *grown = realloc(v->v, cap * sizeof *grown);
                        if (grown == NULL) {
                                more = -1;
                                break;
                        }
                        v->v = grown;
                        v->cap = cap;
                }
                v->v[v->n++] = (struct view_slot){seq, NULL};
                if (seq > v->max)
                        v->max = seq;
        }
        closedir(d);
        if (more < 0) {
                v->n = 0;
                return -1;
        }
        qsort(v->v, v->n, sizeof v->v[0], cmp_slot);
        for (struct dl_rw *m = v->members; m != NULL; m = m->view_next) {
                size_t i = lower_bound(v, m->ticket_seq);
                if (i < v->n && v->v[i].seq == m->ticket_seq)
                        v->v[i].rw = m;
        }
        v->valid = true;
        return 0;
}

/* Apply what happened since the last look (the hub's queued events; `self`
 * is the looker's own listener, not kicked), and read the directory if
 * the view does not follow it.  Whether it does now (never while it is
 * not active). */
static bool view_sync(struct dl_fifo_view *v, const dl_listener *self)
{
        if (!v->active)
                return false;
        dl_notify_drain(self);
        if (!v->valid)
                view_read(v);
        return v->valid;
}

/* No longer followed: its watch goes (the thread is not woken by the
 * queue's changes any more), and its members look again, each setting
 * up its own watches as a waiter outside a view does. */
static void view_deactivate(struct dl_fifo_view *v)
{
        if (!v->active)
                return;
        v->active = false;
        view_invalidate(v);
        dl_notify_leave(&v->listener); /* its watch removed: nobody else wants it */
        dl_notify_join(&v->listener);
        v->listener.on_event = view_event;
        v->listener.drop_unwanted = true;
        v->watching = false;
}

/* The thread's view of queue `dir`, made when there is none (NULL when it
 * cannot be had: no inotify instance, out of memory). */
static struct dl_fifo_view *view_get(const char *dir)
{
        for (struct dl_fifo_view *v = views_mine(); v != NULL; v = v->next)
                if (strcmp(v->dir, dir) == 0)
                        return v;
        struct dl_fifo_view *v = calloc(1, sizeof *v);
        if (v == NULL || (v->dir = strdup(dir)) == NULL) {
                free(v);
                return NULL;
        }
        dl_notify_join(&v->listener);
        if (!v->listener.joined) {
                free(v->dir);
                free(v);
                return NULL;
        }
        v->listener.on_event = view_event;
        v->listener.drop_unwanted = true;
        v->next = views;
        views = v;
        return v;
}

static void view_join(struct dl_fifo_view *v, struct dl_rw *rw)
{
        rw->view = v;
        rw->view_prev = NULL;
        rw->view_next = v->members;
        if (v->members != NULL)
                v->members->view_prev = rw;
        v->members = rw;
        v->refs++;
}

/* The view goes when it has no member left. */
static void view_release(struct dl_fifo_view *v)
{
        if (v->refs > 0)
                return;
        dl_notify_leave(&v->listener); /* its watch removed: nobody else wants it */
        for (struct dl_fifo_view **q = &views; *q != NULL; q = &(*q)->next)
                if (*q == v) {
                        *q = v->next;
                        break;
                }
        free(v->v);
        free(v->dir);
        free(v);
}

/* rw leaves its view (its slot, if still its own, goes: the waiter of
 * ours behind it is kicked). */
static void view_leave(struct dl_rw *rw)
{
        struct dl_fifo_view *v = rw->view;
        size_t i = lower_bound(v, rw->ticket_seq);
        if (i < v->n && v->v[i].seq == rw->ticket_seq && v->v[i].rw == rw)
                view_remove_at(v, i, rw);
        if (rw->view_prev != NULL)
                rw->view_prev->view_next = rw->view_next;
        else
                v->members = rw->view_next;
        if (rw->view_next != NULL)
                rw->view_next->view_prev = rw->view_prev;
        rw->view = NULL;
        rw->view_prev = rw->view_next = NULL;
        rw->wake = NULL;
        if (--v->refs == 1)
                view_deactivate(v);
        view_release(v);
}

bool dl_fifo_viewed(const struct dl_rw *rw)
{
        return rw->view != NULL && rw->view->active && rw->view->valid;
}

void dl_fifo_unview(struct dl_rw *rw)
{
        if (rw->view != NULL)
                view_leave(rw);
}

/* Whether h's queue is followed through a view: a pending acquire's, where
 * inotify hears the queue's changes. */
static bool wants_view(const dirlock *h)
{
        return dl_pending_current() != NULL && !(h->opts.flags & DIRLOCK_NO_NOTIFY) &&
               dl_dir_of(h)->fs->notify;
}

int dl_fifo_join(dirlock *h, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw->ticket != NULL)
                return DIRLOCK_OK;
        struct dl_fifo_view *v = wants_view(h) ? view_get(rw->fifo_dir) : NULL;
        if (v != NULL && v->refs > 0)
                v->active = true; /* a second waiter of the thread: ACTIVE */
        bool viewed = v != NULL && view_sync(v, NULL);
        unsigned long long seq = viewed ? v->max : 0;
        for (int round = 0; round < 1000; round++) {
                if (viewed && round > 0 && view_sync(v, NULL) && v->max > seq) {
                        seq = v->max; /* EEXIST: others took numbers meanwhile */
                } else if (!viewed && (round == 0 || errno == ENOENT)) {
                        if (max_seq(rw->fifo_dir, &seq) != 0)
                                return dl_fail(err, DIRLOCK_EIO, errno, "cannot read queue '%s'",
                                               rw->fifo_dir);
                }
                seq++;
                char *path = dl_layout_ticket(rw->fifo_dir, seq);
                if (path == NULL)
                        return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                dl_time made = dl_now(); /* no later than the ticket's ctime */
                if (dl_rw_entry_make(rw->fifo_dir, path, h, h->mode) == 0) {
                        rw->ticket = path;
                        rw->ticket_seq = seq;
                        rw->ticket_renewed = made;
                        /* Followed through the view from here, when it
                         * follows the directory (read now if it did not:
                         * the directory exists, with our ticket in it). */
                        if (v != NULL) {
                                view_join(v, rw);
                                if (v->active && (!view_sync(v, NULL) || view_insert(v, seq, rw) != 0))
                                        view_deactivate(v); /* a listing at every look, as before */
                        }
                        return DIRLOCK_OK;
                }
                int e = errno;
                free(path);
                if (e != EEXIST) {
                        if (v != NULL)
                                view_release(v); /* when made for us alone */
                        return dl_fail(err, DIRLOCK_EIO, e, "cannot queue in '%s'", rw->fifo_dir);
                }
                errno = e;
        }
        if (v != NULL)
                view_release(v);
        return dl_fail(err, DIRLOCK_EIO, EAGAIN, "cannot queue in '%s'", rw->fifo_dir);
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
 * none), their count in *n.  0, or -1 with errno. */
static int tickets_ahead(DIR *d, unsigned long long mine, struct seen **out, size_t *n)
{
        struct seen *v = NULL;
        size_t len = 0, cap = 0;
        unsigned long long seq;
        struct dirent *de;
        int more;
        while ((more = dl_fs_next(d, &de)) > 0) {
                if (!dl_layout_ticket_seq(de->d_name, &seq) || seq >= mine)
                        continue;
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

/* One look (dl_fifo_ahead); -2 with errno ESTALE when the queue's
 * directory was replaced as we read it. */
static int fifo_ahead_once(dirlock *h, dl_record *ahead, char **ahead_path, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        DIR *d = dl_fs_opendir(rw->fifo_dir);
        if (d == NULL) {
                if (errno == ESTALE)
                        return -2;
                dl_fail(err, DIRLOCK_EIO, errno, "cannot read queue '%s'", rw->fifo_dir);
                return -1;
        }
        struct seen *seen;
        size_t n;
        if (tickets_ahead(d, rw->ticket_seq, &seen, &n) != 0) {
                int e = errno;
                closedir(d);
                if (e == ESTALE)
                        return -2;
                dl_fail(err, e == ENOMEM ? DIRLOCK_ENOMEM : DIRLOCK_EIO, e, "cannot read queue '%s'",
                        rw->fifo_dir);
                return -1;
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
                        *ahead_path = dl_layout_ticket(rw->fifo_dir, seen[i].seq);
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

/* One look through the view: as fifo_ahead_once, over the view's tickets
 * below ours instead of a listing.  A waiter of this thread ahead is
 * alive: with `local`, it is taken as it is (*local set, no record read);
 * without, its record is read as any other's. */
static int view_ahead(dirlock *h, dl_record *ahead, char **ahead_path, bool *local, dirlock_error *err)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        struct dl_fifo_view *v = rw->view;
        size_t i = lower_bound(v, rw->ticket_seq);
        while (i > 0) {
                struct view_slot slot = v->v[i - 1];
                char *path = dl_layout_ticket(rw->fifo_dir, slot.seq);
                if (path == NULL) {
                        dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                        return -1;
                }
                if (slot.rw != NULL && local != NULL) {
                        *local = true;
                        if (ahead_path != NULL)
                                *ahead_path = path;
                        else
                                free(path);
                        return 0;
                }
                dl_record rec;
                double age;
                if (dl_entry_read(path, &rec, &age) != 0) {
                        int e = errno;
                        free(path);
                        if (e == ENOENT || e == EINVAL) { /* gone meanwhile, or not a ticket */
                                view_remove_at(v, --i, rw);
                                continue;
                        }
                        dl_fail(err, DIRLOCK_EIO, e, "cannot read ticket %llu of lock '%s'", slot.seq,
                                h->name);
                        return -1;
                }
                if (slot.rw == NULL && dl_entry_stale(&rec, age, h->opts.stale_age, dl_dir_of(h)->fs)) {
                        /* A dead waiter's ticket is skipped once it is gone
                         * (DEAD WAITERS). */
                        if (dl_fs_unlink(path) != 0 && (errno == EPERM || errno == EACCES)) {
                                int e = errno;
                                char what[DIRLOCK_NAME_MAX + 64];
                                snprintf(what, sizeof what, "queue ticket %llu of lock '%s'", slot.seq,
                                         h->name);
                                dl_fail_unbreakable(err, what, &rec, e);
                                free(path);
                                return -1;
                        }
                        free(path);
                        view_remove_at(v, --i, rw);
                        continue;
                }
                *ahead = rec;
                if (ahead_path != NULL)
                        *ahead_path = path;
                else
                        free(path);
                return 0;
        }
        return 1;
}

int dl_fifo_ahead(dirlock *h, dl_record *ahead, char **ahead_path, bool *local, dirlock_error *err)
{
        if (ahead_path != NULL)
                *ahead_path = NULL;
        if (local != NULL)
                *local = false;
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw->view != NULL && view_sync(rw->view, rw->wake))
                return view_ahead(h, ahead, ahead_path, local, err);
        for (int try = 0;; try++) {
                int first = fifo_ahead_once(h, ahead, ahead_path, err);
                if (first != -2)
                        return first;
                if (try == DL_ESTALE_TRIES) {
                        dl_fail(err, DIRLOCK_EIO, ESTALE, "queue '%s' keeps changing as it is read",
                                dl_dir_of(h)->rw->fifo_dir);
                        return -1;
                }
                dl_fs_refresh(dl_dir_of(h)->rw->fifo_dir); /* fsops.c */
        }
}

int dl_fifo_first(dirlock *h, dl_record *ahead, dirlock_error *err)
{
        return dl_fifo_ahead(h, ahead, NULL, NULL, err);
}

void dl_fifo_leave(dirlock *h)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw == NULL || rw->ticket == NULL)
                return;
        dl_fifo_unview(rw); /* first: our waiter behind us is kicked */
        /* Only our own ticket: if it was broken as stale, its number may be
         * someone else's now. */
        dl_record rec;
        double age;
        if (dl_entry_read(rw->ticket, &rec, &age) == 0 && strcmp(rec.token, h->token) == 0)
                dl_rw_entry_drop(h, rw->fifo_dir, rw->ticket);
        free(rw->ticket);
        rw->ticket = NULL;
}

void dl_fifo_touch(dirlock *h, double every_ms)
{
        struct dl_rw *rw = dl_dir_of(h)->rw;
        if (rw == NULL || rw->ticket == NULL)
                return;
        dl_time now = dl_now(); /* monotonic: a wall-clock step cannot delay it */
        double since_ms = (double)(now.tv_sec - rw->ticket_renewed.tv_sec) * 1e3 +
                          (double)(now.tv_nsec - rw->ticket_renewed.tv_nsec) / 1e6;
        if (since_ms < every_ms)
                return;
        dl_fs_touch(rw->ticket);
        rw->ticket_renewed = now;
}
