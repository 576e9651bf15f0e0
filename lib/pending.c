/* pending.c - acquires an event loop drives (dirlock_acquire_start and the
 * other *_start calls, dirlock_pending_*), and the one wait primitive of
 * the library, dl_poll.
 *
 * ONE IMPLEMENTATION.  A pending acquire runs the library's own acquire
 * (dirlock_acquire, dirlock_acquire_range, dirlock_acquire_permit,
 * dirlock_acquire_many, dirlock_upgrade: the same code a blocking caller
 * runs) on a fiber of its own (fiber.c).  Every wait of the library -- inotify and pidfd waits,
 * backoff steps, a Redis reply, a BLPOP, a meta-lock's backoff -- goes
 * through dl_poll.  Outside a pending acquire dl_poll is ppoll(2).  Inside
 * one it registers the descriptors and the timeout of the wait in the
 * pending acquire's epoll set and suspends the fiber; the caller's loop
 * polls that set's descriptor (dirlock_pending_fd) and, when it is
 * readable, resumes the fiber (dirlock_pending_step), where dl_poll
 * returns what ppoll would have.
 *
 * STATES of a pending acquire (p->state):
 *
 *    start -> RUNNING --- the acquire waits: dl_poll suspends ---> WAITING
 *                ^                                                    |
 *                +------ dirlock_pending_step (its descriptor was -----+
 *                |       readable, or not: then it waits again)
 *                +------ the acquire returns ------> DONE (p->rc; the
 *                                                     lock until taken)
 *
 *   RUNNING only inside a start call or dirlock_pending_step, on the thread
 *   that started it.  WAITING: the descriptor polls readable exactly when
 *   one the acquire waits for does, or its timeout (never later than the
 *   acquire's deadline) passed -- so a deadline needs no timer of the
 *   caller's.  DONE: the descriptor polls readable, so that a loop that
 *   only steps readable descriptors learns the result.
 *   dirlock_pending_cancel makes the acquire's cancel descriptor readable:
 *   its next wait gives up as at its deadline (cleaning up what it made)
 *   and it ends DONE with DIRLOCK_ECANCELED, or DIRLOCK_OK if it had the
 *   lock first.  dirlock_pending_free may be called in any state: it
 *   cancels and steps a WAITING acquire to DONE first (blocking for at
 *   most the clean-up's own I/O) and releases a lock nobody took.
 *
 * THE INOTIFY HUB.  The thread's inotify instance (notify.c) is in the
 * set of one pending acquire of the thread at a time, the keeper (the
 * kernel limits how many epoll sets one descriptor may be in, when they
 * are nested in a loop's: 500).  Every step first reads the instance and
 * dispatches its events, kicking the acquires they matter to; when the
 * keeper is done, another pending acquire of the thread takes the role.
 *
 * THE SET (the caller's descriptor) holds: a timerfd for the wait's
 * timeout, which DONE sets to have expired (and nobody reads it after:
 * readable for good), the caller's own cancel descriptor
 * if it gave one (DIRLOCK_CANCEL_FD: forwarded to the acquire's at the next
 * step), and for the length of one wait the descriptors it waits for.  The
 * acquire itself is given the pending acquire's cancel eventfd as its
 * cancel descriptor, and a kick eventfd that the inotify hub (notify.c)
 * writes when another pending acquire of the thread read an event that
 * matters to this one. */
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

enum pending_state { PENDING_RUNNING, PENDING_WAITING, PENDING_DONE };
enum pending_kind { KIND_ACQUIRE, KIND_RANGE, KIND_PERMIT, KIND_MANY, KIND_UPGRADE };

/* Descriptors of one wait, registered in the set while it lasts. */
#define WAIT_FDS 8

struct dirlock_pending {
        enum pending_state state;
        enum pending_kind kind;
        dl_fiber *fiber;
        pid_t thread_pid;             /* the process and thread that started it: the */
        pthread_t thread;             /* only ones that may step it                  */
        int epfd;                     /* what the caller polls                        */
        int timer_fd;                 /* the wait's timeout; expired for good at DONE */
        int cancel_fd;                /* the acquire's cancel descriptor              */
        int kick_fd;                  /* the inotify hub's wake-up for this acquire    */
        int user_cancel;              /* the caller's DIRLOCK_CANCEL_FD, or -1        */
        bool keeper;                  /* the thread's inotify instance is in our set  */
        struct dirlock_pending *next; /* the thread's pending acquires not done */
        int waited[WAIT_FDS];
        int nwaited;
        /* The call the fiber makes, and its arguments (copied). */
        char *space, *name;
        char **names;
        size_t nnames;
        double lo, hi;
        unsigned permits;
        dirlock_options opts;
        dirlock *upgrading; /* KIND_UPGRADE: the caller's handle */
        /* Its result. */
        int rc;
        dirlock_error err;
        dirlock *lock;
        dirlock_set *set;
};

/* The pending acquire whose fiber runs on this thread now, or NULL. */
static _Thread_local dirlock_pending *current;
/* The thread's pending acquires that are not done (the keeper among them). */
static _Thread_local dirlock_pending *live;

/* Give the keeper's role to a live pending acquire when none has it. */
static void keeper_elect(void)
{
        int hub = dl_notify_fd();
        if (hub < 0)
                return;
        for (dirlock_pending *q = live; q != NULL; q = q->next)
                if (q->keeper)
                        return;
        for (dirlock_pending *q = live; q != NULL; q = q->next) {
                struct epoll_event ev = {.events = EPOLLIN, .data.fd = hub};
                if (epoll_ctl(q->epfd, EPOLL_CTL_ADD, hub, &ev) == 0 || errno == EEXIST) {
                        q->keeper = true;
                        return;
                }
        }
}

/* p is done or freed: off the live list, its role to another. */
static void live_leave(dirlock_pending *p)
{
        for (dirlock_pending **q = &live; *q != NULL; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        break;
                }
        p->next = NULL;
        if (p->keeper) {
                epoll_ctl(p->epfd, EPOLL_CTL_DEL, dl_notify_fd(), NULL);
                p->keeper = false;
                keeper_elect();
        }
}

int dl_pending_kick_fd(void)
{
        return current != NULL ? current->kick_fd : -1;
}

/* ---- the wait primitive ----------------------------------------------------- */

static int epoll_events_of(short events)
{
        int e = 0;
        if (events & POLLIN)
                e |= EPOLLIN;
        if (events & POLLOUT)
                e |= EPOLLOUT;
        if (events & POLLPRI)
                e |= EPOLLPRI;
        return e;
}

/* Register the wait's descriptors and arm the timer at `until` (NULL:
 * none).  0, or -1 when the set cannot take them (then dl_poll blocks). */
static int wait_arm(dirlock_pending *p, const struct pollfd *fds, unsigned long n, const dl_time *until)
{
        p->nwaited = 0;
        for (unsigned long i = 0; i < n; i++) {
                if (fds[i].fd < 0)
                        continue;
                struct epoll_event ev = {.events = (uint32_t)epoll_events_of(fds[i].events),
                                         .data.fd = fds[i].fd};
                if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fds[i].fd, &ev) == 0) {
                        if (p->nwaited == WAIT_FDS)
                                return -1;
                        p->waited[p->nwaited++] = fds[i].fd;
                } else if (errno != EEXIST) { /* EEXIST: listed twice, or the set's own */
                        return -1;
                }
        }
        struct itimerspec when = {{0, 0}, {0, 0}};
        if (until != NULL) {
                when.it_value = *until;
                if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0)
                        when.it_value.tv_nsec = 1; /* zero would disarm it */
        }
        return timerfd_settime(p->timer_fd, TFD_TIMER_ABSTIME, &when, NULL);
}

static void wait_disarm(dirlock_pending *p)
{
        for (int i = 0; i < p->nwaited; i++)
                epoll_ctl(p->epfd, EPOLL_CTL_DEL, p->waited[i], NULL);
        p->nwaited = 0;
        struct itimerspec off = {{0, 0}, {0, 0}};
        timerfd_settime(p->timer_fd, TFD_TIMER_ABSTIME, &off, NULL);
        uint64_t expirations;
        ssize_t r = read(p->timer_fd, &expirations, sizeof expirations);
        (void)r; /* EAGAIN: it had not expired */
}

int dl_poll(struct pollfd *fds, unsigned long n, const struct timespec *timeout)
{
        dirlock_pending *p = current;
        if (p == NULL)
                return ppoll(fds, n, timeout, NULL);
        static const struct timespec zero = {0, 0};
        int rc = ppoll(fds, n, &zero, NULL);
        if (rc != 0 || (timeout != NULL && timeout->tv_sec == 0 && timeout->tv_nsec == 0))
                return rc;
        dl_time until = dl_now();
        if (timeout != NULL) {
                until.tv_sec += timeout->tv_sec;
                until.tv_nsec += timeout->tv_nsec;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
        }
        for (;;) {
                if (wait_arm(p, fds, n, timeout != NULL ? &until : NULL) != 0) {
                        wait_disarm(p);
                        return ppoll(fds, n, timeout, NULL); /* cannot suspend: wait here */
                }
                p->state = PENDING_WAITING;
                dl_fiber_suspend();
                p->state = PENDING_RUNNING;
                wait_disarm(p);
                rc = ppoll(fds, n, &zero, NULL);
                if (rc != 0)
                        return rc;
                if (timeout != NULL && dl_remaining(&until) <= 0)
                        return 0;
                /* Stepped while nothing it waits for happened: wait again. */
        }
}

int dl_nap_ms(double ms, const dl_time *deadline, int cancel_fd)
{
        double left = dl_remaining(deadline);
        if (ms > left)
                ms = left;
        if (ms < 0)
                ms = 0;
        struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
        struct pollfd p = {.fd = cancel_fd, .events = POLLIN};
        int rc = dl_poll(&p, cancel_fd >= 0 ? 1 : 0, &ts);
        return rc > 0 && cancel_fd >= 0 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) ? 1 : 0;
}

/* ---- the fiber's work ----------------------------------------------------------- */

static void run(void *arg)
{
        dirlock_pending *p = arg;
        switch (p->kind) {
        case KIND_ACQUIRE:
                p->rc = dirlock_acquire(p->space, p->name, &p->opts, &p->lock, &p->err);
                break;
        case KIND_RANGE:
                p->rc = dirlock_acquire_range(p->space, p->name, p->lo, p->hi, &p->opts, &p->lock, &p->err);
                break;
        case KIND_PERMIT:
                p->rc = dirlock_acquire_permit(p->space, p->name, p->permits, &p->opts, &p->lock, &p->err);
                break;
        case KIND_MANY:
                p->rc = dirlock_acquire_many(p->space, (const char *const *)p->names, p->nnames, &p->opts,
                                             &p->set, &p->err);
                break;
        case KIND_UPGRADE:
                p->rc = dirlock_upgrade(p->upgrading, &p->opts, &p->err);
                break;
        }
}

/* Run the fiber until it waits or ends; DIRLOCK_EAGAIN while it waits. */
static int step(dirlock_pending *p)
{
        if (p->state == PENDING_DONE)
                return p->rc;
        if (p->user_cancel >= 0) {
                struct pollfd c = {.fd = p->user_cancel, .events = POLLIN};
                if (poll(&c, 1, 0) > 0)
                        dirlock_pending_cancel(p);
        }
        dl_notify_drain(NULL); /* kicks whoever an event matters to */
        dirlock_pending *outer = current;
        current = p;
        p->state = PENDING_RUNNING;
        bool finished = dl_fiber_resume(p->fiber);
        current = outer;
        if (!finished) {
                keeper_elect(); /* the first wait of a thread may have made the hub */
                return DIRLOCK_EAGAIN;
        }
        p->state = PENDING_DONE;
        live_leave(p);
        struct itimerspec now = {{0, 0}, {0, 1}}; /* expires at once, stays readable */
        timerfd_settime(p->timer_fd, 0, &now, NULL);
        return p->rc;
}

/* ---- making one ------------------------------------------------------------------ */

/* ---- spare shells --------------------------------------------------------------- */

/* What a pending acquire needs besides its call -- its descriptors and
 * its fiber's stack -- costs more to make than an uncontended acquire
 * takes.  A finished one's is kept for the thread's next pending acquire
 * (up to SPARE_MAX), emptied: nothing in its set but its timer, its
 * eventfds read, its timer disarmed. */
#define SPARE_MAX 8
struct shell {
        int epfd, timer_fd, cancel_fd, kick_fd;
        dl_fiber *fiber;
        struct shell *next;
};
static _Thread_local struct shell *spare;
static _Thread_local int nspare;
static _Thread_local pid_t spare_pid;
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void shell_close(struct shell *sh)
{
        int fds[] = {sh->epfd, sh->timer_fd, sh->cancel_fd, sh->kick_fd};
        for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        dl_fiber_free(sh->fiber);
}

static void spare_thread_exit(void *unused)
{
        (void)unused;
        while (spare != NULL) {
                struct shell *sh = spare;
                spare = sh->next;
                shell_close(sh);
                free(sh);
        }
        nspare = 0;
}

static void spare_key_create(void)
{
        dl_thread_key_create(&spare_key, spare_thread_exit);
}

/* The thread's spare shell, or NULL (a forked child closes its copies). */
static struct shell *spare_take(void)
{
        if (spare_pid != dl_self_pid()) {
                spare_thread_exit(NULL);
                spare_pid = dl_self_pid();
        }
        struct shell *sh = spare;
        if (sh != NULL) {
                spare = sh->next;
                nspare--;
        }
        return sh;
}

/* Keep p's shell when it can be used again: p's own thread, its fiber
 * finished, its set holding only its timer.  True when kept. */
static bool spare_keep(dirlock_pending *p)
{
        if (nspare >= SPARE_MAX || p->fiber == NULL || p->state != PENDING_DONE || spare_pid != dl_self_pid())
                return false;
        struct shell *sh = malloc(sizeof *sh);
        if (sh == NULL)
                return false;
        if (p->user_cancel >= 0)
                epoll_ctl(p->epfd, EPOLL_CTL_DEL, p->user_cancel, NULL);
        struct itimerspec off = {{0, 0}, {0, 0}};
        timerfd_settime(p->timer_fd, 0, &off, NULL);
        uint64_t v;
        ssize_t r = read(p->timer_fd, &v, sizeof v);
        r = read(p->cancel_fd, &v, sizeof v);
        r = read(p->kick_fd, &v, sizeof v);
        (void)r; /* EAGAIN: nothing to read */
        *sh = (struct shell){p->epfd, p->timer_fd, p->cancel_fd, p->kick_fd, p->fiber, spare};
        pthread_once(&spare_once, spare_key_create);
        pthread_setspecific(spare_key, &spare);
        spare = sh;
        nspare++;
        return true;
}

static void pending_close(dirlock_pending *p)
{
        /* Not in a forked child: its epoll sets are its parent's too. */
        bool own = p->thread_pid == dl_self_pid() && pthread_equal(p->thread, pthread_self());
        if (own)
                live_leave(p);
        if (!own || !spare_keep(p)) {
                struct shell sh = {p->epfd, p->timer_fd, p->cancel_fd, p->kick_fd, p->fiber, NULL};
                shell_close(&sh);
        }
        free(p->space);
        free(p->name);
        for (size_t i = 0; i < p->nnames; i++)
                free(p->names[i]);
        free(p->names);
        free(p);
}

static int add_permanent(dirlock_pending *p, int fd)
{
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
        return epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* A pending acquire of `kind`, its options copied with our cancel
 * descriptor in place of the caller's; not yet run. */
static int pending_new(enum pending_kind kind, const dirlock_options *opts, dirlock_pending **out,
                       dirlock_error *err)
{
        *out = NULL;
        dirlock_pending *p = calloc(1, sizeof *p);
        if (p == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        p->kind = kind;
        p->epfd = p->timer_fd = p->cancel_fd = p->kick_fd = p->user_cancel = -1;
        if (opts != NULL)
                p->opts = *opts;
        else
                dirlock_options_init(&p->opts);
        if (p->opts.flags & DIRLOCK_CANCEL_FD) {
                if (p->opts.cancel_fd < 0 || fcntl(p->opts.cancel_fd, F_GETFD) < 0) {
                        pending_close(p);
                        return dl_fail(err, DIRLOCK_EINVAL, 0,
                                       "DIRLOCK_CANCEL_FD with cancel_fd %d, which is not an open descriptor",
                                       p->opts.cancel_fd);
                }
                p->user_cancel = p->opts.cancel_fd;
        }
        int rc = DIRLOCK_OK;
        struct shell *sh = spare_take();
        if (sh != NULL) {
                p->epfd = sh->epfd;
                p->timer_fd = sh->timer_fd;
                p->cancel_fd = sh->cancel_fd;
                p->kick_fd = sh->kick_fd;
                p->fiber = sh->fiber;
                free(sh);
                if (dl_fiber_reuse(p->fiber, run, p) != 0)
                        rc = dl_fail(err, DIRLOCK_EIO, 0, "getcontext failed");
        } else {
                p->epfd = epoll_create1(EPOLL_CLOEXEC);
                p->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
                p->cancel_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
                p->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
                if (p->epfd < 0 || p->timer_fd < 0 || p->cancel_fd < 0 || p->kick_fd < 0 ||
                    add_permanent(p, p->timer_fd) != 0)
                        rc = dl_fail(err, DIRLOCK_EIO, errno,
                                     "cannot make the descriptors of a pending acquire");
                if (rc == DIRLOCK_OK)
                        rc = dl_fiber_new(&p->fiber, run, p, err);
        }
        if (rc == DIRLOCK_OK && p->user_cancel >= 0 && add_permanent(p, p->user_cancel) != 0)
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot watch cancel descriptor %d", p->user_cancel);
        if (rc != DIRLOCK_OK) {
                pending_close(p);
                return rc;
        }
        p->opts.flags |= DIRLOCK_CANCEL_FD;
        p->opts.cancel_fd = p->cancel_fd;
        p->thread_pid = dl_self_pid();
        p->thread = pthread_self();
        p->state = PENDING_RUNNING;
        p->next = live;
        live = p;
        *out = p;
        return DIRLOCK_OK;
}

/* Run a new pending acquire to its first wait (or its end). */
static int pending_begin(dirlock_pending *p, dirlock_pending **out, dirlock_error *err)
{
        if (current != NULL) {
                pending_close(p);
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "a pending acquire cannot be started from inside another");
        }
        step(p);
        *out = p;
        dl_ok(err);
        return DIRLOCK_OK;
}

static int copy_string(char **to, const char *s, dirlock_error *err)
{
        *to = s != NULL ? strdup(s) : NULL;
        return s == NULL || *to != NULL ? DIRLOCK_OK : dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
}

int dirlock_acquire_start(const char *space, const char *name, const dirlock_options *opts,
                          dirlock_pending **out, dirlock_error *err)
{
        if (out == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the pending acquire");
        dirlock_pending *p;
        int rc = pending_new(KIND_ACQUIRE, opts, &p, err);
        if (rc == DIRLOCK_OK && ((rc = copy_string(&p->space, space, err)) != DIRLOCK_OK ||
                                 (rc = copy_string(&p->name, name, err)) != DIRLOCK_OK))
                pending_close(p);
        return rc != DIRLOCK_OK ? rc : pending_begin(p, out, err);
}

int dirlock_acquire_range_start(const char *space, const char *name, double lo, double hi,
                                const dirlock_options *opts, dirlock_pending **out, dirlock_error *err)
{
        if (out == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the pending acquire");
        dirlock_pending *p;
        int rc = pending_new(KIND_RANGE, opts, &p, err);
        if (rc == DIRLOCK_OK && ((rc = copy_string(&p->space, space, err)) != DIRLOCK_OK ||
                                 (rc = copy_string(&p->name, name, err)) != DIRLOCK_OK))
                pending_close(p);
        if (rc != DIRLOCK_OK)
                return rc;
        p->lo = lo;
        p->hi = hi;
        return pending_begin(p, out, err);
}

int dirlock_acquire_permit_start(const char *space, const char *name, unsigned permits,
                                 const dirlock_options *opts, dirlock_pending **out, dirlock_error *err)
{
        if (out == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the pending acquire");
        dirlock_pending *p;
        int rc = pending_new(KIND_PERMIT, opts, &p, err);
        if (rc == DIRLOCK_OK && ((rc = copy_string(&p->space, space, err)) != DIRLOCK_OK ||
                                 (rc = copy_string(&p->name, name, err)) != DIRLOCK_OK))
                pending_close(p);
        if (rc != DIRLOCK_OK)
                return rc;
        p->permits = permits;
        return pending_begin(p, out, err);
}

int dirlock_acquire_many_start(const char *space, const char *const names[], size_t n,
                               const dirlock_options *opts, dirlock_pending **out, dirlock_error *err)
{
        if (out == NULL || (names == NULL && n > 0))
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no names or no place to return the pending acquire");
        dirlock_pending *p;
        int rc = pending_new(KIND_MANY, opts, &p, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (n > 0 && (p->names = calloc(n, sizeof *p->names)) == NULL)
                rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        for (size_t i = 0; rc == DIRLOCK_OK && i < n; i++, p->nnames++)
                rc = copy_string(&p->names[i], names[i], err);
        if (rc == DIRLOCK_OK)
                rc = copy_string(&p->space, space, err);
        if (rc != DIRLOCK_OK) {
                pending_close(p);
                return rc;
        }
        return pending_begin(p, out, err);
}

int dirlock_upgrade_start(dirlock *lock, const dirlock_options *opts, dirlock_pending **out,
                          dirlock_error *err)
{
        if (out == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the pending upgrade");
        int rc = dl_handle_usable(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        dirlock_pending *p;
        rc = pending_new(KIND_UPGRADE, opts != NULL ? opts : &lock->opts, &p, err);
        if (rc != DIRLOCK_OK)
                return rc;
        p->upgrading = lock;
        return pending_begin(p, out, err);
}

/* ---- driving it -------------------------------------------------------------------- */

int dirlock_pending_fd(const dirlock_pending *p)
{
        return p != NULL ? p->epfd : -1;
}

int dirlock_pending_step(dirlock_pending *p, dirlock_error *err)
{
        if (p == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no pending acquire");
        if (p->thread_pid != dl_self_pid())
                return dl_fail(err, DIRLOCK_ENOTOWNER, 0,
                               "a pending acquire belongs to the process that started it");
        if (!pthread_equal(p->thread, pthread_self()))
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "a pending acquire is stepped by the thread that started it (its waits use "
                               "that thread's inotify instance and connections)");
        if (current != NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "a pending acquire cannot be stepped from inside another");
        int rc = step(p);
        if (rc == DIRLOCK_EAGAIN)
                return dl_fail(err, DIRLOCK_EAGAIN, 0, "the acquire is still waiting: poll its descriptor");
        if (err != NULL)
                *err = p->err;
        return rc;
}

void dirlock_pending_cancel(dirlock_pending *p)
{
        if (p == NULL || p->state == PENDING_DONE)
                return;
        uint64_t one = 1;
        ssize_t w = write(p->cancel_fd, &one, sizeof one);
        (void)w;
}

dirlock *dirlock_pending_lock(dirlock_pending *p)
{
        if (p == NULL || p->state != PENDING_DONE)
                return NULL;
        dirlock *lock = p->lock;
        p->lock = NULL;
        return lock;
}

dirlock_set *dirlock_pending_set(dirlock_pending *p)
{
        if (p == NULL || p->state != PENDING_DONE)
                return NULL;
        dirlock_set *set = p->set;
        p->set = NULL;
        return set;
}

void dirlock_pending_free(dirlock_pending *p)
{
        if (p == NULL)
                return;
        if (p->state != PENDING_DONE && p->thread_pid == dl_self_pid() &&
            pthread_equal(p->thread, pthread_self())) {
                dirlock_pending_cancel(p);
                while (step(p) == DIRLOCK_EAGAIN) {
                        struct pollfd w = {.fd = p->epfd, .events = POLLIN};
                        poll(&w, 1, -1);
                }
        }
        if (p->state == PENDING_DONE) {
                dirlock_free(p->lock, NULL); /* a lock nobody took */
                if (p->set != NULL)
                        dirlock_release_many(p->set, NULL);
        }
        /* In a forked child (or with the acquire cut short) the fiber's
         * stack is simply dropped: its parent's locks are not ours. */
        pending_close(p);
}
