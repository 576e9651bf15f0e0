/* notify.c - the per-thread inotify hub: one inotify instance per thread,
 * shared by every waiter of the thread -- the one blocking acquire that
 * waits at a time, or any number of pending acquires (lib/async) -- with
 * each event handed to the waiters that asked for it, as libuv's file
 * watchers share one instance per loop.
 *
 * Why one instance: an instance costs a kernel grace period to close
 * (fsnotify's SRCU, ~10 ms here) and counts against a per-user limit
 * (fs.inotify.max_user_instances, 128 by default), so a thread keeps one,
 * made on first use and closed at thread exit; a forked child makes its
 * own.  Why a hub: the kernel keeps one mask per watched inode and
 * instance, so two waiters of one thread cannot each set theirs (a queued
 * waiter turns lock-directory deletions off for itself only, wait.c), and
 * whoever reads an event takes it from every other reader.
 *
 * LISTENERS.  A waiter is a listener (dl_listener): up to
 * DL_LISTENER_WATCHES watch slots, each with the event mask it wants there,
 * and a filter of the names it wants.  The kernel mask of a watch is the
 * union of its listeners' masks, narrowed again when the listener that
 * needed more leaves or asks for less (so that a waiter alone with a muted
 * lock directory is not woken by its deletions).  dl_notify_drain reads
 * every queued event and marks each listener an event matters to (fired);
 * one that is not the caller's is also kicked (dl_task_kick), so that a
 * pending acquire learns of it wherever its loop polls.  An overflowed
 * queue fires every listener.  IN_IGNORED (a watched inode is gone) fires
 * the listeners of that watch and forgets it.
 *
 * COST.  Each watch keeps the slots of its listeners in two lists: `loud`
 * (wanting some event besides the inode's own removal) and `quiet` (a
 * queued waiter's muted lock directory: only IN_DELETE_SELF), and a count
 * per event bit.  So an event is dispatched to the listeners of its watch
 * that may want it, not to every listener of the thread, and the union of
 * masks is read off the counts: a thousand waiters of one lock in one
 * event loop cost a release one dispatch, not a thousand (issue 39).
 *
 * INVARIANT: an event read from the instance is dispatched before
 * dl_notify_drain returns: no reader takes one from a waiter it matters
 * to.  A listener joins before its caller's first look, so whatever
 * happens after that look fires it. */
#include "core.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

/* The events that count as the watched inode's own removal. */
#define SELF_EVENTS (IN_DELETE_SELF | IN_IGNORED)

/* One watched inode of the thread's instance. */
struct watch {
        int wd;
        uint32_t kernel;              /* the mask the kernel has now (events only)      */
        uint32_t flags;               /* IN_ONLYDIR, IN_DONT_FOLLOW as first given      */
        char *path;                   /* the path it was added by                      */
        bool moved;                   /* the path names another inode now: not retuned */
        dl_listen_slot *loud, *quiet; /* its listeners' slots (see COST)  */
        unsigned bits[32];            /* slots wanting each event bit     */
        struct watch *next;
};

struct hub {
        int fd;
        pid_t pid; /* the process that made it: a forked child makes its own */
        struct watch *watches;
        dl_listener *listeners;
        unsigned long long added; /* slots added so far (their order) */
};

static _Thread_local struct hub hub = {.fd = -1};
static pthread_key_t hub_key;
static pthread_once_t hub_once = PTHREAD_ONCE_INIT;

static void forget_watches(void)
{
        while (hub.watches != NULL) {
                struct watch *w = hub.watches;
                hub.watches = w->next;
                free(w->path);
                free(w);
        }
}

static void hub_thread_exit(void *unused)
{
        (void)unused;
        if (hub.fd >= 0)
                close(hub.fd);
        hub.fd = -1;
        forget_watches();
}

static void hub_key_create(void)
{
        dl_thread_key_create(&hub_key, hub_thread_exit);
}

int dl_notify_fd(void)
{
        pid_t pid = dl_self_pid();
        if (hub.fd >= 0 && hub.pid == pid)
                return hub.fd;
        if (hub.fd >= 0) {
                close(hub.fd); /* inherited over fork: shared, so closing is cheap */
                forget_watches();
                hub.listeners = NULL; /* the parent's waiters, not ours */
        }
        hub.fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        hub.pid = pid;
        if (hub.fd >= 0) {
                pthread_once(&hub_once, hub_key_create);
                pthread_setspecific(hub_key, &hub);
        }
        return hub.fd;
}

int dl_notify_fd_made(void)
{
        return hub.fd >= 0 && hub.pid == dl_self_pid() ? hub.fd : -1;
}

static struct watch *watch_by_wd(int wd)
{
        for (struct watch *w = hub.watches; w != NULL; w = w->next)
                if (w->wd == wd)
                        return w;
        return NULL;
}

/* ---- a watch's listeners ------------------------------------------------- */

static bool is_loud(uint32_t mask)
{
        return (mask & ~(uint32_t)SELF_EVENTS) != 0;
}

static void count_bits(struct watch *w, uint32_t mask, int by)
{
        for (int b = 0; b < 32; b++)
                if (mask & (1u << b))
                        w->bits[b] = (unsigned)((int)w->bits[b] + by);
}

static void slot_link(struct watch *w, dl_listen_slot *s)
{
        dl_listen_slot **head = is_loud(s->mask) ? &w->loud : &w->quiet;
        s->prev = NULL;
        s->next = *head;
        if (*head != NULL)
                (*head)->prev = s;
        *head = s;
        count_bits(w, s->mask, +1);
}

static void slot_unlink(struct watch *w, dl_listen_slot *s)
{
        dl_listen_slot **head = is_loud(s->mask) ? &w->loud : &w->quiet;
        if (s->prev != NULL)
                s->prev->next = s->next;
        else
                *head = s->next;
        if (s->next != NULL)
                s->next->prev = s->prev;
        s->prev = s->next = NULL;
        count_bits(w, s->mask, -1);
}

/* Free slot s of its listener (unlinked from its watch when that is known). */
static void slot_free(dl_listen_slot *s)
{
        struct watch *w = watch_by_wd(s->wd);
        if (w != NULL)
                slot_unlink(w, s);
        s->wd = -1;
        s->mask = 0;
}

/* The union of what the listeners want of w. */
static uint32_t wanted(const struct watch *w)
{
        uint32_t m = 0;
        for (int b = 0; b < 32; b++)
                if (w->bits[b] > 0)
                        m |= 1u << b;
        return m;
}

/* Make the kernel's mask of w the listeners' union, when any listens
 * (inotify_add_watch without IN_MASK_ADD replaces it).  The path may name
 * another inode by now (removed and made again): that inode's watch then
 * got the mask, and is given back its own. */
static void retune(struct watch *w)
{
        uint32_t m = wanted(w);
        if (m == 0 || m == w->kernel || w->moved)
                return;
        int got = inotify_add_watch(hub.fd, w->path, m | w->flags);
        if (got == w->wd) {
                w->kernel = m;
                return;
        }
        w->moved = true; /* its own watch goes with IN_IGNORED */
        struct watch *other = got >= 0 ? watch_by_wd(got) : NULL;
        if (other != NULL && other->kernel != m)
                inotify_add_watch(hub.fd, w->path, other->kernel | other->flags);
}

/* Remove w from the instance and forget it: nobody listens to it. */
static void drop(struct watch *w)
{
        inotify_rm_watch(hub.fd, w->wd); /* its IN_IGNORED finds no watch */
        for (struct watch **q = &hub.watches; *q != NULL; q = &(*q)->next)
                if (*q == w) {
                        *q = w->next;
                        break;
                }
        free(w->path);
        free(w);
}

/* ---- listeners ------------------------------------------------------------- */

void dl_notify_join(dl_listener *l)
{
        memset(l, 0, sizeof *l);
        for (int i = 0; i < DL_LISTENER_WATCHES; i++)
                l->watch[i].wd = -1;
        if (dl_notify_fd() < 0)
                return;
        l->next = hub.listeners;
        if (hub.listeners != NULL)
                hub.listeners->prev = l;
        hub.listeners = l;
        l->joined = true;
}

void dl_notify_leave(dl_listener *l)
{
        if (!l->joined)
                return;
        if (l->prev != NULL)
                l->prev->next = l->next;
        else
                hub.listeners = l->next;
        if (l->next != NULL)
                l->next->prev = l->prev;
        l->prev = l->next = NULL;
        l->joined = false;
        for (int i = 0; i < DL_LISTENER_WATCHES; i++) {
                dl_listen_slot *s = &l->watch[i];
                if (s->wd < 0)
                        continue;
                struct watch *w = watch_by_wd(s->wd);
                slot_free(s);
                if (w == NULL)
                        continue;
                if (l->drop_unwanted && w->loud == NULL && w->quiet == NULL)
                        drop(w);
                else
                        retune(w);
        }
}

int dl_notify_add(dl_listener *l, const char *path, uint32_t mask, uint32_t flags)
{
        if (!l->joined) {
                errno = ENOTSUP;
                return -1;
        }
        /* Always asked of the kernel: the path may name a new inode since
         * it was last watched (a directory removed and made again).
         * IN_MASK_ADD never takes away what other listeners asked for. */
        int wd = inotify_add_watch(hub.fd, path, mask | flags | IN_MASK_ADD);
        if (wd < 0)
                return -1;
        struct watch *w = watch_by_wd(wd);
        if (w == NULL) {
                w = calloc(1, sizeof *w);
                char *copy = w ? strdup(path) : NULL;
                if (copy == NULL) {
                        free(w);
                        errno = ENOMEM;
                        return -1;
                }
                w->wd = wd;
                w->path = copy;
                w->flags = flags;
                w->next = hub.watches;
                hub.watches = w;
        }
        w->kernel |= mask;
        for (struct watch *old = hub.watches; old != NULL; old = old->next)
                if (old != w && !old->moved && strcmp(old->path, path) == 0)
                        old->moved = true; /* the path names w's inode now */
        dl_listen_slot *s = NULL, *free_slot = NULL, *oldest = NULL;
        for (int i = 0; i < DL_LISTENER_WATCHES; i++) {
                dl_listen_slot *t = &l->watch[i];
                if (t->wd == wd)
                        s = t;
                else if (t->wd < 0 && free_slot == NULL)
                        free_slot = t;
                else if (t->wd >= 0 && i > 0 && (oldest == NULL || t->added < oldest->added))
                        oldest = t;
        }
        if (s != NULL) {
                slot_unlink(w, s);
        } else {
                /* Full (a queue's entries ahead come and go): the oldest
                 * but the first (the lock directory) goes. */
                s = free_slot != NULL ? free_slot : oldest;
                if (s->wd >= 0)
                        slot_free(s);
                s->wd = wd;
                s->owner = l;
                s->added = ++hub.added;
        }
        s->mask = mask;
        slot_link(w, s);
        retune(w); /* narrower, when this listener asks for less than before */
        return wd;
}

void dl_notify_set_mask(dl_listener *l, int wd, uint32_t mask)
{
        for (int i = 0; i < DL_LISTENER_WATCHES; i++) {
                dl_listen_slot *s = &l->watch[i];
                if (s->wd != wd)
                        continue;
                struct watch *w = watch_by_wd(wd);
                if (w == NULL) {
                        s->mask = mask;
                        continue;
                }
                slot_unlink(w, s);
                s->mask = mask;
                slot_link(w, s);
                retune(w);
        }
}

/* ---- dispatching ------------------------------------------------------------ */

/* Does event ev matter to the listener of slot s (a slot of ev's watch)? */
static bool matters(const dl_listen_slot *s, const struct inotify_event *ev)
{
        if (ev->mask & IN_IGNORED)
                return true; /* the watched inode is gone */
        if (!(ev->mask & s->mask))
                return false;
        const dl_listener *l = s->owner;
        return ev->len == 0 || l->filter == NULL || l->filter(ev->name, ev->mask, l->filter_arg);
}

static void fire(dl_listener *l, const dl_listener *self, const struct inotify_event *ev)
{
        if (l->on_event != NULL) {
                l->on_event(l, ev);
                return;
        }
        if (l->fired)
                return;
        l->fired = true;
        if (l != self && l->kick != NULL)
                dl_task_kick(l->kick);
}

void dl_notify_poke(dl_listener *l)
{
        if (l == NULL || l->fired)
                return;
        l->fired = true;
        if (l->kick != NULL)
                dl_task_kick(l->kick);
}

/* Fire the listeners of ev's watch it matters to: the loud ones, and for
 * the inode's own removal the quiet ones too.  A listener's on_event may
 * poke others, never change a watch's lists: the walk is safe. */
static void dispatch(const struct inotify_event *ev, const dl_listener *self)
{
        if (ev->mask & IN_Q_OVERFLOW) {
                for (dl_listener *l = hub.listeners; l != NULL; l = l->next)
                        fire(l, self, ev);
                return;
        }
        struct watch *w = watch_by_wd(ev->wd);
        if (w == NULL)
                return;
        for (dl_listen_slot *s = w->loud; s != NULL; s = s->next)
                if (matters(s, ev))
                        fire(s->owner, self, ev);
        if (ev->mask & SELF_EVENTS)
                for (dl_listen_slot *s = w->quiet; s != NULL; s = s->next)
                        if (matters(s, ev))
                                fire(s->owner, self, ev);
        if (ev->mask & IN_IGNORED) {
                /* The inode is gone, and so is the watch: its slots are free. */
                while (w->loud != NULL)
                        slot_free(w->loud);
                while (w->quiet != NULL)
                        slot_free(w->quiet);
                for (struct watch **q = &hub.watches; *q != NULL; q = &(*q)->next)
                        if (*q == w) {
                                *q = w->next;
                                break;
                        }
                free(w->path);
                free(w);
        }
}

void dl_notify_drain(const dl_listener *self)
{
        if (hub.fd < 0 || hub.pid != dl_self_pid())
                return;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        for (;;) {
                ssize_t n = read(hub.fd, buf, sizeof buf);
                if (n <= 0)
                        return;
                for (char *p = buf; p < buf + n;) {
                        struct inotify_event *ev = (struct inotify_event *)p;
                        dispatch(ev, self);
                        p += sizeof *ev + ev->len;
                }
        }
}

bool dl_notify_take(dl_listener *l)
{
        bool fired = l->fired;
        l->fired = false;
        return fired;
}
