/* wait.c - waiting for a lock to change hands without sleeping blindly.
 *
 * A waiter wakes when:
 *   - inotify reports a deletion in the lock directory (a released or
 *     broken lock is rmdir'ed there; unless the caller muted it with
 *     dl_waiter_lockdir_events: a queued waiter that is not first), a
 *     deletion or rename in another watched directory
 *     (dl_waiter_watch_dir), ignoring names that start with '.' (other
 *     processes' prepared directories, the ranges' meta-lock) but the one
 *     the waiter asked for (wake_name), or the removal of a watched entry
 *     (dl_waiter_watch_entry: the ticket of the waiter ahead in a queue);
 *   - the owner we were told to watch exits (a pidfd polls readable);
 *   - a re-check interval passes (RECHECK_MS, or a third of the stale age
 *     when that is shorter), so that what sends no event is still noticed:
 *     a lock aging past its stale age, an owner that died before we
 *     watched it, a release on another NFS client; and so that the caller
 *     renews its own waiting entries (FIFO ticket, ...) at least every
 *     third of the stale age, as a holder renews its lock;
 *   - the deadline comes: never later than it (ppoll with a timespec);
 *   - the caller's cancel descriptor polls readable (DIRLOCK_CANCEL_FD):
 *     the wait returns DIRLOCK_ECANCELED and the caller gives up as at its
 *     deadline.
 * The inotify instance is kept per thread and reused: closing one waits
 * for a kernel grace period (fsnotify's SRCU, ~10 ms here), which would be
 * paid on every contended acquire.  Its watches stay (an entry's watch
 * goes with the entry; the lock directory's mask is set again by each
 * dl_waiter_init); events that arrive while no one waits are drained when
 * the next wait begins, before the caller's next attempt, so no wake-up
 * is lost.  One waiter per thread is
 * active at a time (waits do not nest).  After fork() the child makes its
 * own instance, so parent and child never read each other's events.
 *
 * Without inotify (a lock directory on a network filesystem, netfs.c;
 * inotify limits reached; DIRLOCK_NO_NOTIFY) it sleeps a jittered
 * backoff instead:
 * BACKOFF_START_MS doubling up to BACKOFF_CAP_MS (or a third of the stale
 * age), each step scaled by a random factor in [0.5, 1.5) so that waiters
 * spread out. */
#include "internal.h"
#include "netfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RECHECK_MS       100.0
#define BACKOFF_START_MS 1.0
#define BACKOFF_CAP_MS   100.0

/* ---- the per-thread inotify instance -------------------------------- */

static pthread_key_t notify_key;
static pthread_once_t notify_once = PTHREAD_ONCE_INIT;
static _Thread_local int notify_fd = -1;
static _Thread_local pid_t notify_pid;

static void notify_thread_exit(void *unused)
{
        (void)unused;
        if (notify_fd >= 0)
                close(notify_fd);
        notify_fd = -1;
}

static void notify_key_create(void)
{
        pthread_key_create(&notify_key, notify_thread_exit);
}

static int thread_inotify(void)
{
        pid_t pid = dl_self_pid();
        if (notify_fd >= 0 && notify_pid == pid)
                return notify_fd;
        if (notify_fd >= 0)
                close(notify_fd); /* inherited over fork: shared, so closing is cheap */
        notify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        notify_pid = pid;
        if (notify_fd >= 0) {
                pthread_once(&notify_once, notify_key_create);
                pthread_setspecific(notify_key, &notify_fd);
        }
        return notify_fd;
}

/* xorshift64*: jitter only, seeded from the handle's random token. */
static double next_unit(dl_waiter *w)
{
        w->rng ^= w->rng >> 12;
        w->rng ^= w->rng << 25;
        w->rng ^= w->rng >> 27;
        return (double)((w->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

int dl_waiter_init(dl_waiter *w, const char *lockdir, unsigned flags, const char *seed, double stale_age)
{
        memset(w, 0, sizeof *w);
        w->inotify_fd = -1;
        w->pid_fd = -1;
        w->cancel_fd = -1;
        w->backoff_ms = BACKOFF_START_MS;
        w->recheck_ms = RECHECK_MS;
        w->cap_ms = BACKOFF_CAP_MS;
        if (stale_age > 0 && stale_age * 1e3 / 3 < w->recheck_ms) {
                w->recheck_ms = stale_age * 1e3 / 3;
                w->cap_ms = w->recheck_ms;
        }
#ifdef DIRLOCK_TEST_HOOKS
        /* Test builds only: a long re-check interval turns a lost wake-up
         * from a short stall into one a test cannot miss (rw-wake.t). */
        const char *recheck = getenv("DIRLOCK_TEST_RECHECK_MS");
        if (recheck != NULL && atof(recheck) > 0)
                w->recheck_ms = w->cap_ms = atof(recheck);
#endif
        w->rng = 0x9E3779B97F4A7C15ULL;
        for (const char *c = seed; c && *c; c++)
                w->rng = (w->rng ^ (unsigned char)*c) * 0x100000001B3ULL;
        if (w->rng == 0)
                w->rng = 1;
        if ((flags & DIRLOCK_NO_NOTIFY) || !dl_fs_of(lockdir, NULL)->notify)
                return 0;
        w->lockdir = lockdir;
        w->inotify_fd = thread_inotify();
        if (w->inotify_fd < 0)
                return 0; /* EMFILE, ENFILE, ENOSYS: fall back to backoff */
        w->notify = true;
        /* In the lock directory only deletions matter: a released or broken
         * lock is rmdir'ed.  (Renames there are other processes' prepared
         * directories becoming locks; waking every waiter on each of those
         * would only cost context switches under contention.) */
        if (inotify_add_watch(w->inotify_fd, lockdir, IN_DELETE | IN_DELETE_SELF | IN_ONLYDIR) < 0) {
                w->inotify_fd = -1;
                w->notify = false;
        }
        /* Forget what happened before this waiter began; the caller makes
         * an attempt after this, which sees that state anyway. */
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        while (w->notify && read(w->inotify_fd, buf, sizeof buf) > 0)
                ;
        return 0;
}

int dl_waiter_watch_dir(dl_waiter *w, const char *dir)
{
        if (!w->notify)
                return -1;
        uint32_t mask = IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_ONLYDIR;
        if (inotify_add_watch(w->inotify_fd, dir, mask) < 0) {
                /* ENOSPC: out of watches; poll by backoff from now on.
                 * ENOENT (the directory is gone, e.g. a writer removed
                 * the emptied readers' directory) and the like only fail
                 * this one watch. */
                if (errno == ENOSPC || errno == ENOMEM)
                        w->notify = false;
                return -1;
        }
        return 0;
}

bool dl_waiter_watch_missing(dl_waiter *w, const char *dir)
{
        return dl_waiter_watch_dir(w, dir) != 0 && w->notify && errno == ENOENT;
}

int dl_waiter_watch_entry(dl_waiter *w, const char *path)
{
        if (!w->notify) {
                errno = ENOTSUP;
                return -1;
        }
        /* The watch goes with the entry: IN_IGNORED follows its removal. */
        if (inotify_add_watch(w->inotify_fd, path, IN_DELETE_SELF | IN_DONT_FOLLOW) < 0) {
                int e = errno;
                if (e == ENOSPC || e == ENOMEM)
                        w->notify = false;
                errno = e;
                return -1;
        }
        return 0;
}

void dl_waiter_lockdir_events(dl_waiter *w, bool on)
{
        if (!w->notify || w->lockdir_muted == !on)
                return;
        /* Replacing the watch's mask: a muted lock directory reports only
         * its own removal. */
        uint32_t mask = on ? IN_DELETE | IN_DELETE_SELF | IN_ONLYDIR : IN_DELETE_SELF | IN_ONLYDIR;
        if (inotify_add_watch(w->inotify_fd, w->lockdir, mask) < 0) {
                w->notify = false; /* back off and poll from now on */
                return;
        }
        w->lockdir_muted = !on;
}

/* A pidfd on process pid if it is still the one started at `start`, else -1. */
static int open_pidfd(pid_t pid, unsigned long long start)
{
#ifdef SYS_pidfd_open
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0)
                return -1;
        /* pidfd_open descriptors are close-on-exec by definition.  Make sure
         * the pid still names the recorded process and not a reuse. */
        if (dl_process_start_time(pid) != start) {
                close(fd);
                return -1;
        }
        return fd;
#else
        (void)pid;
        (void)start;
        return -1;
#endif
}

void dl_waiter_watch_owner(dl_waiter *w, const dl_record *owner)
{
        if (owner == NULL || owner->pid <= 0)
                return;
        /* The owner itself; once it is gone, its partner (which then holds
         * the lock alone, see dirlock_options.partner_pid). */
        if (owner->pid == w->pid_watched && w->pid_fd >= 0)
                return;
        if (owner->partner > 0 && owner->partner == w->pid_watched && w->pid_fd >= 0)
                return;
        if (w->pid_fd >= 0) {
                close(w->pid_fd);
                w->pid_fd = -1;
        }
        w->pid_watched = owner->pid;
        if (!dl_record_same_host(owner))
                return;
        w->pid_fd = open_pidfd(owner->pid, owner->start_time);
        if (w->pid_fd < 0 && owner->partner > 0) {
                w->pid_fd = open_pidfd(owner->partner, owner->partner_start);
                if (w->pid_fd >= 0)
                        w->pid_watched = owner->partner;
        }
}

bool dl_waiter_owner_died(const dl_waiter *w)
{
        return w->owner_died;
}

/* Drain queued events; true when one names an entry that matters: not
 * one starting with '.', unless it is exactly the waiter's wake_name, and
 * one its `relevant` filter (if any) accepts. */
static bool drain_events(int fd, const dl_waiter *w)
{
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool relevant = false;
        for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n <= 0)
                        return relevant;
                for (char *p = buf; p < buf + n;) {
                        struct inotify_event *ev = (struct inotify_event *)p;
                        if (ev->len == 0 || (ev->mask & IN_Q_OVERFLOW) ||
                            (w->wake_name != NULL && strcmp(ev->name, w->wake_name) == 0))
                                relevant = true;
                        else if (ev->name[0] != '.' &&
                                 (w->relevant == NULL || w->relevant(ev->name, ev->mask, w->relevant_arg)))
                                relevant = true;
                        p += sizeof *ev + ev->len;
                }
        }
}

static struct timespec ms_to_timespec(double ms)
{
        if (ms < 0)
                ms = 0;
        struct timespec ts;
        ts.tv_sec = (time_t)(ms / 1000.0);
        ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000.0) * 1e6);
        if (ts.tv_nsec >= 1000000000L)
                ts.tv_nsec = 999999999L;
        return ts;
}

void dl_waiter_cancel_on(dl_waiter *w, int fd)
{
        w->cancel_fd = fd;
}

/* POLLNVAL too: a cancel descriptor closed under the wait ends it. */
static bool readable(int fd, const struct timespec *ts)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        return ppoll(&p, 1, ts, NULL) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL));
}

int dl_waiter_wait(dl_waiter *w, const dl_time *deadline)
{
        static const struct timespec now = {0, 0};
        w->owner_died = false;
        if (w->cancel_fd >= 0 && readable(w->cancel_fd, &now))
                return DIRLOCK_ECANCELED;
        double left = dl_remaining(deadline);
        if (left <= 0)
                return DIRLOCK_ETIMEDOUT;

        if (!w->notify && w->pid_fd < 0) {
                double step = w->backoff_ms * (0.5 + next_unit(w));
                if (step > w->cap_ms)
                        step = w->cap_ms;
                w->backoff_ms = w->backoff_ms * 2 > w->cap_ms ? w->cap_ms : w->backoff_ms * 2;
                bool last = step >= left;
                struct timespec ts = ms_to_timespec(last ? left : step);
                if (w->cancel_fd >= 0) {
                        if (readable(w->cancel_fd, &ts)) /* EINTR: an early step, harmless */
                                return DIRLOCK_ECANCELED;
                        return last && dl_remaining(deadline) <= 0 ? DIRLOCK_ETIMEDOUT : 0;
                }
                while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                        ;
                return last ? DIRLOCK_ETIMEDOUT : 0;
        }

        /* Without inotify but with a pidfd, still re-check on the backoff. */
        double span = w->notify ? w->recheck_ms : w->backoff_ms * (0.5 + next_unit(w));
        if (span > w->cap_ms)
                span = w->cap_ms;
        if (!w->notify)
                w->backoff_ms = w->backoff_ms * 2 > w->cap_ms ? w->cap_ms : w->backoff_ms * 2;
        for (;;) {
                bool last = span >= left;
                struct timespec ts = ms_to_timespec(last ? left : span);
                struct pollfd fds[3];
                nfds_t n = 0;
                if (w->notify)
                        fds[n++] = (struct pollfd){.fd = w->inotify_fd, .events = POLLIN};
                if (w->pid_fd >= 0)
                        fds[n++] = (struct pollfd){.fd = w->pid_fd, .events = POLLIN};
                if (w->cancel_fd >= 0)
                        fds[n++] = (struct pollfd){.fd = w->cancel_fd, .events = POLLIN};
                dl_time started = dl_now();
                int rc = ppoll(fds, n, &ts, NULL);
                if (rc == 0)
                        return last ? DIRLOCK_ETIMEDOUT : 0;
                if (rc < 0 && errno != EINTR)
                        return last ? DIRLOCK_ETIMEDOUT : 0;
                for (nfds_t i = 0; rc > 0 && i < n; i++) {
                        if (fds[i].revents == 0)
                                continue;
                        if (fds[i].fd == w->cancel_fd)
                                return DIRLOCK_ECANCELED;
                        if (fds[i].fd == w->pid_fd) {
                                close(w->pid_fd);
                                w->pid_fd = -1;
                                w->pid_watched = 0;
                                w->owner_died = true;
                                return 0;
                        }
                        if (drain_events(w->inotify_fd, w))
                                return 0;
                }
                /* Interrupted, or only irrelevant events: wait for what is left. */
                dl_time now = dl_now();
                double spent = (double)(now.tv_sec - started.tv_sec) * 1e3 +
                               (double)(now.tv_nsec - started.tv_nsec) / 1e6;
                span -= spent;
                left = dl_remaining(deadline);
                if (left <= 0)
                        return DIRLOCK_ETIMEDOUT;
                if (span <= 0)
                        return 0;
        }
}

void dl_waiter_close(dl_waiter *w)
{
        /* The inotify instance belongs to the thread and stays open. */
        if (w->pid_fd >= 0)
                close(w->pid_fd);
        w->inotify_fd = -1;
        w->pid_fd = -1;
}
