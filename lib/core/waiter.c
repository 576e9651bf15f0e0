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
 *   - a re-check interval passes (DL_RECHECK_MS, or a third of the stale age
 *     when that is shorter), so that what sends no event is still noticed:
 *     a lock aging past its stale age, an owner that died before we
 *     watched it, a release on another NFS client; and so that the caller
 *     renews its own waiting entries (FIFO ticket, ...) at least every
 *     third of the stale age, as a holder renews its lock;
 *   - the deadline comes: never later than it (ppoll with a timespec);
 *   - the caller's cancel descriptor polls readable (DIRLOCK_CANCEL_FD):
 *     the wait returns DIRLOCK_ECANCELED and the caller gives up as at its
 *     deadline.
 * Events come through the thread's inotify hub (notify.c), which one
 * blocking waiter or any number of pending acquires of the thread share;
 * a waiter joins it before its caller's first look, so nothing that
 * happens after that look is missed, and events from before it are
 * forgotten.  Every wait goes through dl_poll (poll.c): a pending
 * acquire stops there instead of blocking.
 *
 * Without inotify (a lock directory on a network filesystem, lib/netfs/netfs.c;
 * inotify limits reached; DIRLOCK_NO_NOTIFY) it sleeps a jittered
 * backoff instead (backoff.c): from POLL_FIRST_MS up to POLL_MAX_MS (or a
 * third of the stale age), so that waiters spread out. */
#include "core.h"
#include "fs.h"
#include "test_hooks.h"

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

/* The backoff of a waiter that no notification wakes: its first and its
 * longest step. */
#define POLL_FIRST_MS 1.0
#define POLL_MAX_MS   100.0

/* The hub's name filter: not a name starting with '.' (other processes'
 * prepared directories, the ranges' meta-lock), unless it is exactly the
 * waiter's wake_name; and one its `relevant` filter (if any) accepts. */
static bool name_matters(const char *name, unsigned mask, void *arg)
{
        const dl_waiter *w = arg;
        if (w->wake_name != NULL && strcmp(name, w->wake_name) == 0)
                return true;
        return name[0] != '.' && (w->relevant == NULL || w->relevant(name, mask, w->relevant_arg));
}

#define LOCKDIR_EVENTS       (IN_DELETE | IN_DELETE_SELF)
#define LOCKDIR_EVENTS_MUTED IN_DELETE_SELF
#define DIR_EVENTS           (IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF)

int dl_waiter_init(dl_waiter *w, const char *lockdir, unsigned flags, const char *seed, double stale_age)
{
        memset(w, 0, sizeof *w);
        w->lockdir_wd = -1;
        w->pid_fd = -1;
        w->cancel_fd = -1;
        w->recheck_ms = DL_RECHECK_MS;
        double cap_ms = POLL_MAX_MS;
        if (stale_age > 0 && stale_age * 1e3 / 3 < w->recheck_ms) {
                w->recheck_ms = stale_age * 1e3 / 3;
                cap_ms = w->recheck_ms;
        }
        const char *recheck = dl_test_hook(RECHECK_MS);
        if (recheck != NULL && atof(recheck) > 0)
                w->recheck_ms = cap_ms = atof(recheck);
        dl_backoff_init(&w->backoff, POLL_FIRST_MS, cap_ms, seed);
        if ((flags & DIRLOCK_NO_NOTIFY) || !dl_fs_of(lockdir, NULL)->notify)
                return 0;
        w->lockdir = lockdir;
        dl_notify_join(&w->listener);
        if (!w->listener.joined)
                return 0; /* EMFILE, ENFILE, ENOSYS: fall back to backoff */
        w->listener.filter = name_matters;
        w->listener.filter_arg = w;
        w->listener.kick = dl_task_current();
        w->notify = true;
        /* In the lock directory only deletions matter: a released or broken
         * lock is rmdir'ed.  (Renames there are other processes' prepared
         * directories becoming locks; waking every waiter on each of those
         * would only cost context switches under contention.) */
        w->lockdir_wd = dl_notify_add(&w->listener, lockdir, LOCKDIR_EVENTS, IN_ONLYDIR);
        if (w->lockdir_wd < 0) {
                dl_notify_leave(&w->listener);
                w->notify = false;
        }
        /* Forget what happened before this waiter began; the caller makes
         * an attempt after this, which sees that state anyway. */
        dl_notify_drain(&w->listener);
        dl_notify_take(&w->listener);
        return 0;
}

int dl_waiter_watch_dir(dl_waiter *w, const char *dir)
{
        if (!w->notify)
                return -1;
        if (dl_notify_add(&w->listener, dir, DIR_EVENTS, IN_ONLYDIR) < 0) {
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
        if (dl_notify_add(&w->listener, path, IN_DELETE_SELF, IN_DONT_FOLLOW) < 0) {
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
        /* A muted lock directory reports only its own removal, to this
         * waiter; the hub narrows the kernel's mask when no other waiter
         * of the thread wants more. */
        dl_notify_set_mask(&w->listener, w->lockdir_wd, on ? LOCKDIR_EVENTS : LOCKDIR_EVENTS_MUTED);
        w->lockdir_muted = !on;
}

/* A pidfd on process pid if it is still the one started at `start`, else -1. */
static int open_pidfd(pid_t pid, unsigned long long start)
{
#ifdef SYS_pidfd_open
        if (pid <= 0)
                return -1;
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0)
                return -1;
        /* pidfd_open descriptors are close-on-exec by definition.  Make sure
         * the pid still names the recorded process and not a reuse. */
        if (dl_process_start_time(pid) != start) {
                close(fd);
                return -1;
        }
        /* A process that has exited but is not reaped yet (a zombie) still
         * has a pidfd, readable from the start: watching it would end
         * every wait at once while its partner holds the lock (a busy
         * loop).  It is gone, as for a judge (dirlock_process_alive). */
        static const struct timespec now = {0, 0};
        struct pollfd exited = {.fd = fd, .events = POLLIN};
        if (dl_poll(&exited, 1, &now) > 0) {
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

bool dl_pidfd_supported(void)
{
#ifdef SYS_pidfd_open
        /* -1 not known yet, 0 no, 1 yes; a race only asks twice. */
        static int supported = -1;
        int known = __atomic_load_n(&supported, __ATOMIC_RELAXED);
        if (known < 0) {
                int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
                known = fd >= 0 || (errno != ENOSYS && errno != EPERM);
                if (fd >= 0)
                        close(fd);
                __atomic_store_n(&supported, known, __ATOMIC_RELAXED);
        }
        return known == 1;
#else
        return false;
#endif
}

int dl_owner_pidfd(const dl_record *rec, pid_t *followed)
{
        if (!dl_record_same_host(rec))
                return -1;
        int fd = open_pidfd(rec->pid, rec->start_time);
        if (fd >= 0) {
                if (followed != NULL)
                        *followed = rec->pid;
                return fd;
        }
        fd = open_pidfd(rec->partner, rec->partner_start);
        if (fd >= 0 && followed != NULL)
                *followed = rec->partner;
        return fd;
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
        pid_t followed;
        w->pid_fd = dl_owner_pidfd(owner, &followed);
        if (w->pid_fd >= 0)
                w->pid_watched = followed;
}

bool dl_waiter_owner_died(const dl_waiter *w)
{
        return w->owner_died;
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

void dl_waiter_span(dl_waiter *w, double ms)
{
        w->span_ms = ms;
}

void dl_waiter_unwatch_owner(dl_waiter *w)
{
        if (w->pid_fd >= 0)
                close(w->pid_fd);
        w->pid_fd = -1;
        w->pid_watched = 0;
}

/* POLLNVAL too: a cancel descriptor closed under the wait ends it. */
static bool readable(int fd, const struct timespec *ts)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        return dl_poll(&p, 1, ts) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL));
}

static _Thread_local bool wake_set;
static _Thread_local dl_time wake_at;

void dl_waiter_wake_by(const dl_time *at)
{
        wake_set = at != NULL;
        if (at != NULL)
                wake_at = *at;
}

/* Milliseconds until the thread's wake_by moment (0 when past), or a
 * span longer than any wait when none is set. */
static double wake_in(void)
{
        return wake_set ? dl_remaining(&wake_at) : 1e12;
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
        /* Fired since the caller's last look by a read of the hub that was
         * not a wait's (the thread's view of a queue reads it, lib/fifo/
         * fifo.c): it was not kicked then, and would not be again (a
         * listener is kicked once until taken).  Look again. */
        if (w->notify && dl_notify_take(&w->listener))
                return 0;

        if (!w->notify && w->pid_fd < 0) {
                double step = dl_backoff_next(&w->backoff);
                if (step > wake_in())
                        step = wake_in();
                if (dl_nap_ms(step, deadline, w->cancel_fd)) /* EINTR: an early step, harmless */
                        return DIRLOCK_ECANCELED;
                return step >= left && dl_remaining(deadline) <= 0 ? DIRLOCK_ETIMEDOUT : 0;
        }

        /* Without inotify but with a pidfd, still re-check on the backoff. */
        double span = w->notify ? w->recheck_ms : dl_backoff_next(&w->backoff);
        if (span > w->backoff.cap_ms)
                span = w->backoff.cap_ms;
        if (w->notify && w->span_ms > 0)
                span = w->span_ms; /* the caller's longer span (dl_waiter_span) */
        if (span > wake_in())
                span = wake_in();
        for (;;) {
                bool last = span >= left;
                struct timespec ts = ms_to_timespec(last ? left : span);
                struct pollfd fds[4];
                nfds_t n = 0;
                /* A blocking waiter reads the hub itself; a pending
                 * acquire is kicked by whoever reads it (lib/async). */
                if (w->notify && w->listener.kick == NULL)
                        fds[n++] = (struct pollfd){.fd = dl_notify_fd(), .events = POLLIN};
                if (w->notify && w->listener.kick != NULL)
                        fds[n++] = (struct pollfd){.fd = DL_POLL_KICK, .events = POLLIN};
                if (w->pid_fd >= 0)
                        fds[n++] = (struct pollfd){.fd = w->pid_fd, .events = POLLIN};
                if (w->cancel_fd >= 0)
                        fds[n++] = (struct pollfd){.fd = w->cancel_fd, .events = POLLIN};
                dl_time started = dl_now();
                int rc = dl_poll(fds, n, &ts);
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
                }
                if (rc > 0 && w->notify) {
                        dl_notify_drain(&w->listener);
                        if (dl_notify_take(&w->listener))
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
        w->pid_fd = -1;
        dl_notify_leave(&w->listener);
}
