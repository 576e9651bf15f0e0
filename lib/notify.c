/* notify.c - the per-thread inotify hub: one inotify instance per thread,
 * shared by every waiter of the thread -- the one blocking acquire that
 * waits at a time, or any number of pending acquires (pending.c) -- with
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
 * LISTENERS.  A waiter is a listener (dl_listener): a list of watch
 * descriptors, each with the event mask it wants there and a filter of
 * the names it wants.  The kernel mask of a watch is the union of its
 * listeners' masks, narrowed again when the listener that needed more
 * leaves or asks for less (so that a waiter alone with a muted lock
 * directory is not woken by its deletions).  dl_notify_drain reads every
 * queued event and marks each listener an event matters to (fired); one
 * that is not the caller's is also kicked (its kick descriptor written),
 * so that a pending acquire whose descriptor is polled elsewhere learns
 * of it.  An overflowed queue fires every listener.  IN_IGNORED (a watched
 * inode is gone) fires the listeners of that watch and forgets it.
 *
 * INVARIANT: an event read from the instance is dispatched before
 * dl_notify_drain returns: no reader takes one from a waiter it matters
 * to.  A listener joins before its caller's first look, so whatever
 * happens after that look fires it. */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

/* One watched inode of the thread's instance. */
struct watch {
        int wd;
        uint32_t kernel; /* the mask the kernel has now (events only)      */
        uint32_t flags;  /* IN_ONLYDIR, IN_DONT_FOLLOW as first given      */
        char *path;      /* the path it was added by                      */
        bool moved;      /* the path names another inode now: not retuned */
        struct watch *next;
};

struct hub {
        int fd;
        pid_t pid; /* the process that made it: a forked child makes its own */
        struct watch *watches;
        dl_listener *listeners;
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

static struct watch *watch_by_wd(int wd)
{
        for (struct watch *w = hub.watches; w != NULL; w = w->next)
                if (w->wd == wd)
                        return w;
        return NULL;
}

/* The union of what the listeners want of watch wd. */
static uint32_t wanted(int wd)
{
        uint32_t m = 0;
        for (dl_listener *l = hub.listeners; l != NULL; l = l->next)
                for (int i = 0; i < l->nwatch; i++)
                        if (l->watch[i].wd == wd)
                                m |= l->watch[i].mask;
        return m;
}

/* Make the kernel's mask of w the listeners' union, when any listens
 * (inotify_add_watch without IN_MASK_ADD replaces it).  The path may name
 * another inode by now (removed and made again): that inode's watch then
 * got the mask, and is given back its own. */
static void retune(struct watch *w)
{
        uint32_t m = wanted(w->wd);
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

void dl_notify_join(dl_listener *l)
{
        memset(l, 0, sizeof *l);
        l->kick_fd = -1;
        if (dl_notify_fd() < 0)
                return;
        l->next = hub.listeners;
        hub.listeners = l;
        l->joined = true;
}

void dl_notify_leave(dl_listener *l)
{
        if (!l->joined)
                return;
        for (dl_listener **p = &hub.listeners; *p != NULL; p = &(*p)->next)
                if (*p == l) {
                        *p = l->next;
                        break;
                }
        l->joined = false;
        for (int i = 0; i < l->nwatch; i++) {
                struct watch *w = watch_by_wd(l->watch[i].wd);
                if (w != NULL)
                        retune(w);
        }
        l->nwatch = 0;
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
        int i = 0;
        while (i < l->nwatch && l->watch[i].wd != wd)
                i++;
        if (i == l->nwatch) {
                if (l->nwatch == DL_LISTENER_WATCHES) {
                        /* Full (a queue's entries ahead come and go): the
                         * oldest after the first (the lock directory) goes. */
                        memmove(&l->watch[1], &l->watch[2], (size_t)(l->nwatch - 2) * sizeof l->watch[0]);
                        i = --l->nwatch;
                }
                l->nwatch++;
                l->watch[i].wd = wd;
        }
        l->watch[i].mask = mask;
        retune(w); /* narrower, when this listener asks for less than before */
        return wd;
}

void dl_notify_set_mask(dl_listener *l, int wd, uint32_t mask)
{
        for (int i = 0; i < l->nwatch; i++)
                if (l->watch[i].wd == wd) {
                        l->watch[i].mask = mask;
                        struct watch *w = watch_by_wd(wd);
                        if (w != NULL)
                                retune(w);
                }
}

/* Does event ev matter to listener l? */
static bool matters(const dl_listener *l, const struct inotify_event *ev)
{
        if (ev->mask & IN_Q_OVERFLOW)
                return true;
        for (int i = 0; i < l->nwatch; i++) {
                if (l->watch[i].wd != ev->wd)
                        continue;
                if (ev->mask & IN_IGNORED)
                        return true; /* the watched inode is gone */
                if (!(ev->mask & l->watch[i].mask))
                        return false;
                return ev->len == 0 || l->filter == NULL || l->filter(ev->name, ev->mask, l->filter_arg);
        }
        return false;
}

static void fire(dl_listener *l, const dl_listener *self)
{
        if (l->fired)
                return;
        l->fired = true;
        if (l != self && l->kick_fd >= 0) {
                uint64_t one = 1;
                ssize_t n = write(l->kick_fd, &one, sizeof one);
                (void)n; /* a full eventfd is readable anyway */
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
                        for (dl_listener *l = hub.listeners; l != NULL; l = l->next)
                                if (matters(l, ev))
                                        fire(l, self);
                        if (ev->mask & IN_IGNORED) {
                                for (struct watch **w = &hub.watches; *w != NULL; w = &(*w)->next)
                                        if ((*w)->wd == ev->wd) {
                                                struct watch *gone = *w;
                                                *w = gone->next;
                                                free(gone->path);
                                                free(gone);
                                                break;
                                        }
                                for (dl_listener *l = hub.listeners; l != NULL; l = l->next)
                                        for (int i = 0; i < l->nwatch; i++)
                                                if (l->watch[i].wd == ev->wd)
                                                        l->watch[i] = l->watch[--l->nwatch];
                        }
                        p += sizeof *ev + ev->len;
                }
        }
}

bool dl_notify_take(dl_listener *l)
{
        bool fired = l->fired;
        l->fired = false;
        if (fired && l->kick_fd >= 0) {
                uint64_t count;
                ssize_t n = read(l->kick_fd, &count, sizeof count);
                (void)n; /* EAGAIN: fired by our own drain */
        }
        return fired;
}
