/* dir_fifo_view.c - the thread's view of a queue (dir_fifo.c): the
 * queue's tickets kept in memory from the queue directory's events, for
 * the many tasks of one thread (pending acquires of an event loop,
 * lib/async) that wait in one queue.
 *
 * THE THREAD'S VIEW OF A QUEUE (pending acquires, lib/async).  A
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
#include "dir_fsops.h"
#include "fifo.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define VIEW_EVENTS (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF)

struct view_slot {
        unsigned long long seq;
        struct dl_fifo *f; /* the task of this thread it is, or NULL */
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
        unsigned long long max;  /* the largest ticket seen since it was read  */
        struct dl_fifo *members; /* (linked by view_prev, view_next)            */
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

static void poke(const struct dl_fifo *f)
{
        if (f != NULL && f->wake != NULL)
                dl_notify_poke(f->wake);
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

/* Insert ticket seq (of f, or NULL: not known to be ours); a waiter of
 * ours just above it has someone new ahead: kicked.  0, or -1 (ENOMEM). */
static int view_insert(struct dl_fifo_view *v, unsigned long long seq, struct dl_fifo *f)
{
        size_t i = lower_bound(v, seq);
        if (i < v->n && v->v[i].seq == seq) {
                if (f != NULL)
                        v->v[i].f = f;
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
        v->v[i] = (struct view_slot){seq, f};
        v->n++;
        if (seq > v->max)
                v->max = seq;
        if (i + 1 < v->n)
                poke(v->v[i + 1].f);
        return 0;
}

/* Remove slot i; the waiter of ours just above it (but `looker`, who is
 * looking now) has someone else ahead: kicked. */
static void view_remove_at(struct dl_fifo_view *v, size_t i, const struct dl_fifo *looker)
{
        memmove(&v->v[i], &v->v[i + 1], (v->n - i - 1) * sizeof v->v[0]);
        v->n--;
        if (i < v->n && v->v[i].f != looker)
                poke(v->v[i].f);
}

static void view_remove(struct dl_fifo_view *v, unsigned long long seq, const struct dl_fifo *looker)
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
        for (struct dl_fifo *m = v->members; m != NULL; m = m->view_next)
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
        for (struct dl_fifo *m = v->members; m != NULL; m = m->view_next) {
                size_t i = lower_bound(v, m->ticket_seq);
                if (i < v->n && v->v[i].seq == m->ticket_seq)
                        v->v[i].f = m;
        }
        v->valid = true;
        return 0;
}

/* Apply what happened since the last look (the hub's queued events; `self`
 * is the looker's own listener, not kicked), and read the directory if
 * the view does not follow it.  Whether it does now (never while it is
 * not active). */
bool dl_view_sync(struct dl_fifo_view *v, const dl_listener *self)
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
struct dl_fifo_view *dl_view_get(const char *dir)
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

void dl_view_activate(struct dl_fifo_view *v)
{
        if (v->refs > 0)
                v->active = true; /* a second waiter of the thread: ACTIVE */
}

unsigned long long dl_view_max(const struct dl_fifo_view *v)
{
        return v->max;
}

void dl_view_join(struct dl_fifo_view *v, struct dl_fifo *f, unsigned long long seq)
{
        f->view = v;
        f->view_prev = NULL;
        f->view_next = v->members;
        if (v->members != NULL)
                v->members->view_prev = f;
        v->members = f;
        v->refs++;
        /* Followed through the view from here, when it follows the
         * directory (read now if it did not: the directory exists, with
         * our ticket in it); else a listing at every look, as before. */
        if (v->active && (!dl_view_sync(v, NULL) || view_insert(v, seq, f) != 0))
                view_deactivate(v);
}

/* The view goes when it has no member left. */
void dl_view_release(struct dl_fifo_view *v)
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

void dl_view_leave(struct dl_fifo *f)
{
        if (f->view == NULL)
                return;
        struct dl_fifo_view *v = f->view;
        size_t i = lower_bound(v, f->ticket_seq);
        if (i < v->n && v->v[i].seq == f->ticket_seq && v->v[i].f == f)
                view_remove_at(v, i, f);
        if (f->view_prev != NULL)
                f->view_prev->view_next = f->view_next;
        else
                v->members = f->view_next;
        if (f->view_next != NULL)
                f->view_next->view_prev = f->view_prev;
        f->view = NULL;
        f->view_prev = f->view_next = NULL;
        f->wake = NULL;
        if (--v->refs == 1)
                view_deactivate(v);
        dl_view_release(v);
}

bool dl_view_follows(const struct dl_fifo *f)
{
        return f->view != NULL && f->view->active && f->view->valid;
}

bool dl_view_wanted(const dirlock *h)
{
        return dl_task_current() != NULL && !(h->opts.flags & DIRLOCK_NO_NOTIFY) && dl_dir_of(h)->fs->notify;
}

/* One look through the view: as a look at the queue's listing
 * (dir_fifo.c), over the view's tickets below ours instead.  A waiter of
 * this thread ahead is alive: with `local`, it is taken as it is (*local
 * set, no record read); without, its record is read as any other's. */
int dl_view_ahead(dirlock *h, dl_record *ahead, char **ahead_path, bool *local, dirlock_error *err)
{
        struct dl_fifo *f = dl_fifo_of(h);
        struct dl_fifo_view *v = f->view;
        size_t i = lower_bound(v, f->ticket_seq);
        while (i > 0) {
                struct view_slot slot = v->v[i - 1];
                char *path = dl_layout_ticket(f->dir, slot.seq);
                if (path == NULL) {
                        dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                        return -1;
                }
                if (slot.f != NULL && local != NULL) {
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
                                view_remove_at(v, --i, f);
                                continue;
                        }
                        dl_fail(err, DIRLOCK_EIO, e, "cannot read ticket %llu of lock '%s'", slot.seq,
                                h->name);
                        return -1;
                }
                if (slot.f == NULL && dl_entry_stale(&rec, age, h->opts.stale_age, dl_dir_of(h)->fs)) {
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
                        view_remove_at(v, --i, f);
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
