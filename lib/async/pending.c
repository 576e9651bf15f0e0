/* pending.c - the pending-acquire module (lib/async): acquires an event
 * loop drives (dirlock_acquire_start and the other *_start calls,
 * dirlock_pending_*), and the tasks of the core's wait primitive (dl_poll,
 * lib/core/poll.c) they run as.
 *
 * ONE IMPLEMENTATION.  A pending acquire runs the library's own acquire
 * (dirlock_acquire, dirlock_acquire_range, dirlock_acquire_permit,
 * dirlock_acquire_many, dirlock_upgrade: the same code a blocking caller
 * runs) on a fiber of its own (fiber.c).  Every wait of the library --
 * inotify and pidfd waits, backoff steps, a Redis reply, a BLPOP, a
 * meta-lock's backoff -- goes through dl_poll.  Outside a pending acquire
 * dl_poll is ppoll(2).  Inside one it registers the wait with the thread's
 * scheduler and suspends the fiber; the fiber is resumed when the wait may
 * be over, and dl_poll returns what ppoll would have.
 *
 * THE THREAD'S SCHEDULER (struct sched, made by the thread's first pending
 * acquire).  Every pending acquire of a thread waits through one epoll set,
 * the thread's: each wait's descriptors are registered there (one-shot,
 * tagged with their acquire), its timeout is an entry of a heap under one
 * timerfd, and the thread's inotify instance is in it once.  Wake-ups that
 * need no descriptor only mark an acquire due: a kick (dl_task_kick: the
 * inotify hub read an event that matters to it, or the thread's view of a
 * queue saw the waiter ahead leave, lib/fifo) and
 * dirlock_pending_cancel.  dispatch() reads what the set has ready and marks
 * due the acquires it concerns; running resumes due acquires' fibers and
 * no one else's.  So a waiting acquire costs no descriptor of its own, a
 * wake-up costs the acquire it concerns, and a thousand acquires waiting
 * for one lock cost a release one step (issue 39: each used to hold four
 * descriptors and be stepped for every event of the thread).
 *
 * TWO WAYS TO BE POLLED.
 *   - An own descriptor (the default): dirlock_pending_fd is an epoll set
 *     of the acquire's, holding an eventfd written when it is due or done.
 *     One of the thread's own-descriptor acquires not yet done, the
 *     keeper, also has the thread's set in its own, so that whatever the
 *     thread waits for wakes the caller's loop; stepping any acquire
 *     dispatches first.  Two descriptors each.
 *   - DIRLOCK_THREAD_FD: none of its own.  dirlock_pending_fd is the
 *     thread's set, which the loop polls once for all such acquires;
 *     dirlock_pending_next() dispatches, runs the due acquires for at most
 *     about ROUND_NS per round (then the rest wait for the loop's next
 *     turn, so that timers and I/O of the loop run in between), and hands
 *     back those that ended, one per call.  An eventfd in the set keeps it
 *     readable while due acquires wait for a round or ended ones for being
 *     handed back.  A start runs the acquire at once (a free lock is taken
 *     there) while the thread's starts since its last round took less
 *     than ROUND_NS; after that it only queues it for the next round, so
 *     that a loop starting ten thousand does not stall.  The thread's
 *     set, timerfd, two eventfds and inotify instance serve them all.
 *
 * STATES of a pending acquire (p->state):
 *
 *    start -> RUNNING --- the acquire waits: dl_poll suspends ---> WAITING
 *                ^                                                    |
 *                +------ resumed when due (a descriptor of its wait --+
 *                |       was ready, its timeout passed, a kick, a cancel;
 *                |       nothing of it: it waits again)
 *                +------ the acquire returns ------> DONE (p->rc; the
 *                                                     lock until taken)
 *
 *   A THREAD_FD acquire queued at its start is WAITING and due.  RUNNING
 *   only inside a start call, dirlock_pending_step or
 *   dirlock_pending_next, on the thread that started it.  WAITING: due
 *   (p->due) exactly when it may go on; an own-descriptor acquire's
 *   descriptor polls readable then, a THREAD_FD one is on the thread's
 *   ready queue.  DONE: an own descriptor polls readable for good; a
 *   THREAD_FD acquire is on the thread's ended queue until handed back
 *   (or freed).  dirlock_pending_cancel marks the acquire canceled and
 *   due: dl_poll reports its cancel descriptor readable, its wait gives up
 *   as at its deadline (cleaning up what it made) and it ends DONE with
 *   DIRLOCK_ECANCELED, or DIRLOCK_OK if it had the lock first.
 *   dirlock_pending_free may be called in any state: a WAITING acquire is
 *   canceled and finished first, its waits blocking (p->sync: for at most
 *   the clean-up's own I/O), and a lock nobody took is released.
 *
 * CANCEL DESCRIPTORS.  The acquire is given the thread's stand-in (an
 * eventfd never written) as its cancel descriptor: dl_poll reports it
 * readable to a canceled acquire and never otherwise.  The caller's own
 * DIRLOCK_CANCEL_FD is in the thread's set, tagged with its acquire:
 * readable, it cancels it. */
#include "backend.h"
#include "dirlock_async.h"
#include "dirlock_permit.h"
#include "dirlock_range.h"
#include "dirlock_rw.h"
#include "fiber.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

enum pending_state { PENDING_RUNNING, PENDING_WAITING, PENDING_DONE };
enum pending_kind { KIND_ACQUIRE, KIND_RANGE, KIND_PERMIT, KIND_MANY, KIND_UPGRADE };

/* Descriptors of one wait, registered in the thread's set while it lasts. */
#define WAIT_FDS 8
/* The longest run of acquires one round of dirlock_pending_next makes (and
 * the time starts may take at once between two rounds), in ns. */
#define ROUND_NS 1000000L
/* Finished fibers (their stacks) and own-descriptor pairs kept per thread
 * for the next pending acquires: making them costs more than an
 * uncontended acquire. */
#define SPARE_FIBERS  64
#define SPARE_OWN_FDS 8

/* What a descriptor in the thread's set stands for. */
enum source_kind { SRC_HUB, SRC_TIMER, SRC_READY, SRC_WAIT, SRC_CANCEL };
struct source {
        enum source_kind kind;
        struct dirlock_pending *p; /* SRC_WAIT, SRC_CANCEL */
        int fd;                    /* as registered (a dup when the fd was in the set already) */
        bool dup;
};

enum queue { Q_NONE, Q_READY, Q_ENDED };

struct dirlock_pending {
        enum pending_state state;
        enum pending_kind kind;
        dl_fiber *fiber;
        pid_t thread_pid; /* the process and thread that started it: the */
        pthread_t thread; /* only ones that may step it                  */
        bool shared;      /* DIRLOCK_THREAD_FD: no descriptor of its own  */
        int epfd;         /* own descriptor: what the caller polls, ...    */
        int wake_fd;      /* ... holding this eventfd, written when due    */
        bool woken;       /* wake_fd written and not read yet              */
        bool keeper;      /* the thread's set is in epfd                   */
        bool due;         /* WAITING, and its wait may be over             */
        bool kicked;      /* dl_task_kick since DL_POLL_KICK last reported  */
        bool canceled;
        bool sync;                 /* finishing in dirlock_pending_free: waits block */
        bool started;              /* its fiber has run                              */
        struct source user_cancel; /* the caller's DIRLOCK_CANCEL_FD (fd -1: none) */
        struct source waited[WAIT_FDS];
        int nwaited;
        dl_time until;  /* the wait's timeout, when in the heap */
        size_t heap_at; /* its index in the heap, or NOT_IN_HEAP */
        enum queue queue;
        struct dirlock_pending *qprev, *qnext; /* the ready or the ended queue */
        struct dirlock_pending *oprev, *onext; /* own-descriptor acquires not done */
        void *data;
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

#define NOT_IN_HEAP SIZE_MAX

struct sched {
        pid_t pid; /* the process it was made in: a forked child makes its own */
        int ep;    /* the thread's set                                          */
        int timer_fd;
        int ready_fd; /* readable while a queue is not empty (see signal_ready)    */
        int idle_fd;  /* the stand-in cancel descriptor: never written             */
        int hub_fd;   /* the inotify instance registered in ep, or -1              */
        bool ready_signaled;
        bool armed; /* timer_fd is set to expire at `armed_at` */
        dl_time armed_at;
        dirlock_pending **heap; /* waits with a timeout, the earliest first */
        size_t nheap, capheap;
        dirlock_pending *ready_head, *ready_tail, *ended_head, *ended_tail;
        dirlock_pending *own_live; /* own-descriptor acquires not done */
        dirlock_pending *keeper;
        bool in_round;
        dl_time round_start;
        long eager_ns; /* starts' run time since the last round */
        struct source hub_src, timer_src, ready_src;
        dl_fiber *spare_fiber[SPARE_FIBERS];
        int nspare_fiber;
        int spare_own[SPARE_OWN_FDS][2];
        int nspare_own;
};

static _Thread_local struct sched *sched;
static pthread_key_t sched_key;
static pthread_once_t sched_once = PTHREAD_ONCE_INIT;

static long ns_since(const dl_time *t)
{
        dl_time now = dl_now();
        return (long)(now.tv_sec - t->tv_sec) * 1000000000L + (now.tv_nsec - t->tv_nsec);
}

static bool time_before(const dl_time *a, const dl_time *b)
{
        return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* ---- the thread's scheduler ------------------------------------------------ */

static void close_fd(int fd)
{
        if (fd >= 0)
                close(fd);
}

/* Close sched's descriptors and free it (a forked child's copy too: only
 * its own copies of the descriptors are closed, nothing is asked of the
 * set, whose registrations are its parent's). */
static void sched_free(struct sched *s)
{
        close_fd(s->ep);
        close_fd(s->timer_fd);
        close_fd(s->ready_fd);
        close_fd(s->idle_fd);
        for (int i = 0; i < s->nspare_fiber; i++)
                dl_fiber_free(s->spare_fiber[i]);
        for (int i = 0; i < s->nspare_own; i++) {
                close(s->spare_own[i][0]);
                close(s->spare_own[i][1]);
        }
        free(s->heap);
        free(s);
}

static void sched_thread_exit(void *arg)
{
        struct sched *s = arg;
        if (s == sched)
                sched = NULL;
        sched_free(s);
}

static void sched_key_create(void)
{
        dl_thread_key_create(&sched_key, sched_thread_exit);
}

static int add_source(struct sched *s, int fd, struct source *src, uint32_t events)
{
        struct epoll_event ev = {.events = events, .data.ptr = src};
        return epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev);
}

/* The thread's scheduler when this process made it, else NULL (a forked
 * child drops its copy of its parent's: every registration in it is the
 * parent's). */
static struct sched *sched_mine(void)
{
        if (sched != NULL && sched->pid != dl_self_pid()) {
                sched_free(sched); /* closes the child's copies only */
                sched = NULL;
        }
        return sched;
}

static struct sched *sched_get(dirlock_error *err)
{
        struct sched *s = sched_mine();
        if (s != NULL)
                return s;
        s = calloc(1, sizeof *s);
        if (s == NULL) {
                dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                return NULL;
        }
        s->pid = dl_self_pid();
        s->hub_fd = -1;
        s->ep = epoll_create1(EPOLL_CLOEXEC);
        s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        s->ready_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        s->idle_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        s->hub_src.kind = SRC_HUB;
        s->timer_src.kind = SRC_TIMER;
        s->ready_src.kind = SRC_READY;
        if (s->ep < 0 || s->timer_fd < 0 || s->ready_fd < 0 || s->idle_fd < 0 ||
            add_source(s, s->timer_fd, &s->timer_src, EPOLLIN) != 0 ||
            add_source(s, s->ready_fd, &s->ready_src, EPOLLIN) != 0) {
                dl_fail(err, DIRLOCK_EIO, errno,
                        "cannot make the descriptors of the thread's pending acquires");
                sched_free(s);
                return NULL;
        }
        pthread_once(&sched_once, sched_key_create);
        pthread_setspecific(sched_key, s);
        sched = s;
        return s;
}

/* The thread's inotify instance, once made (by a wait), is in the set. */
static void hub_sync(struct sched *s)
{
        int fd = dl_notify_fd_made();
        if (fd == s->hub_fd)
                return;
        s->hub_fd = -1;
        if (fd >= 0 && add_source(s, fd, &s->hub_src, EPOLLIN) == 0)
                s->hub_fd = fd;
}

static void signal_ready(struct sched *s)
{
        if (s->ready_signaled || (s->ready_head == NULL && s->ended_head == NULL))
                return;
        uint64_t one = 1;
        ssize_t w = write(s->ready_fd, &one, sizeof one);
        (void)w;
        s->ready_signaled = true;
}

static void queue_push(struct sched *s, dirlock_pending *p, enum queue q)
{
        dirlock_pending **head = q == Q_READY ? &s->ready_head : &s->ended_head;
        dirlock_pending **tail = q == Q_READY ? &s->ready_tail : &s->ended_tail;
        p->queue = q;
        p->qnext = NULL;
        p->qprev = *tail;
        if (*tail != NULL)
                (*tail)->qnext = p;
        else
                *head = p;
        *tail = p;
        signal_ready(s);
}

static void queue_unlink(struct sched *s, dirlock_pending *p)
{
        if (p->queue == Q_NONE)
                return;
        dirlock_pending **head = p->queue == Q_READY ? &s->ready_head : &s->ended_head;
        dirlock_pending **tail = p->queue == Q_READY ? &s->ready_tail : &s->ended_tail;
        if (p->qprev != NULL)
                p->qprev->qnext = p->qnext;
        else
                *head = p->qnext;
        if (p->qnext != NULL)
                p->qnext->qprev = p->qprev;
        else
                *tail = p->qprev;
        p->qprev = p->qnext = NULL;
        p->queue = Q_NONE;
}

/* ---- the heap of timeouts -------------------------------------------------- */

static void heap_set(struct sched *s, size_t i, dirlock_pending *p)
{
        s->heap[i] = p;
        p->heap_at = i;
}

static void heap_up(struct sched *s, size_t i)
{
        while (i > 0) {
                size_t parent = (i - 1) / 2;
                if (!time_before(&s->heap[i]->until, &s->heap[parent]->until))
                        break;
                dirlock_pending *t = s->heap[parent];
                heap_set(s, parent, s->heap[i]);
                heap_set(s, i, t);
                i = parent;
        }
}

static void heap_down(struct sched *s, size_t i)
{
        for (;;) {
                size_t l = 2 * i + 1, r = l + 1, least = i;
                if (l < s->nheap && time_before(&s->heap[l]->until, &s->heap[least]->until))
                        least = l;
                if (r < s->nheap && time_before(&s->heap[r]->until, &s->heap[least]->until))
                        least = r;
                if (least == i)
                        return;
                dirlock_pending *t = s->heap[least];
                heap_set(s, least, s->heap[i]);
                heap_set(s, i, t);
                i = least;
        }
}

/* Set the timer to the earliest timeout, when it is set later (or not at
 * all): an expiry earlier than needed only dispatches nothing. */
static void arm_timer(struct sched *s)
{
        if (s->nheap == 0)
                return;
        const dl_time *at = &s->heap[0]->until;
        if (s->armed && !time_before(at, &s->armed_at))
                return;
        struct itimerspec when = {{0, 0}, *at};
        if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0)
                when.it_value.tv_nsec = 1; /* zero would disarm it */
        if (timerfd_settime(s->timer_fd, TFD_TIMER_ABSTIME, &when, NULL) == 0) {
                s->armed = true;
                s->armed_at = *at;
        }
}

static int heap_push(struct sched *s, dirlock_pending *p, const dl_time *until)
{
        if (s->nheap == s->capheap) {
                size_t cap = s->capheap ? s->capheap * 2 : 64;
                dirlock_pending **grown = realloc(s->heap, cap * sizeof *grown);
                if (grown == NULL)
                        return -1;
                s->heap = grown;
                s->capheap = cap;
        }
        p->until = *until;
        heap_set(s, s->nheap++, p);
        heap_up(s, p->heap_at);
        arm_timer(s);
        return 0;
}

static void heap_remove(struct sched *s, dirlock_pending *p)
{
        size_t i = p->heap_at;
        if (i == NOT_IN_HEAP)
                return;
        p->heap_at = NOT_IN_HEAP;
        dirlock_pending *last = s->heap[--s->nheap];
        if (i == s->nheap)
                return;
        heap_set(s, i, last);
        heap_up(s, i);
        heap_down(s, last->heap_at);
}

/* ---- due acquires ------------------------------------------------------------ */

static void own_wake(dirlock_pending *p)
{
        if (p->woken)
                return;
        uint64_t one = 1;
        ssize_t w = write(p->wake_fd, &one, sizeof one);
        (void)w; /* a full eventfd is readable anyway */
        p->woken = true;
}

/* p's wait may be over: resume it at the next chance. */
static void make_due(struct sched *s, dirlock_pending *p)
{
        if (p->state != PENDING_WAITING || p->due)
                return;
        p->due = true;
        if (p->shared)
                queue_push(s, p, Q_READY);
        else
                own_wake(p);
}

/* dl_task_kick of a pending acquire. */
static void task_kick(void *task)
{
        dirlock_pending *p = task;
        p->kicked = true;
        struct sched *s = sched_mine();
        if (s != NULL)
                make_due(s, p);
}

/* Read what the thread's set has ready and mark due the acquires it
 * concerns. */
static void dispatch(struct sched *s)
{
        hub_sync(s);
        bool timer = false;
        for (;;) {
                struct epoll_event evs[64];
                int k = epoll_wait(s->ep, evs, 64, 0);
                for (int i = 0; i < k; i++) {
                        struct source *src = evs[i].data.ptr;
                        uint64_t v;
                        ssize_t r;
                        switch (src->kind) {
                        case SRC_HUB:
                                dl_notify_drain(NULL); /* kicks whoever an event matters to */
                                break;
                        case SRC_TIMER:
                                r = read(s->timer_fd, &v, sizeof v);
                                (void)r;
                                s->armed = false;
                                timer = true;
                                break;
                        case SRC_READY:
                                r = read(s->ready_fd, &v, sizeof v);
                                (void)r;
                                s->ready_signaled = false;
                                break;
                        case SRC_WAIT:
                                make_due(s, src->p);
                                break;
                        case SRC_CANCEL:
                                src->p->canceled = true;
                                make_due(s, src->p);
                                break;
                        }
                }
                if (k < 64)
                        break;
        }
        if (timer || (s->nheap > 0 && !s->armed)) {
                dl_time now = dl_now();
                while (s->nheap > 0 && !time_before(&now, &s->heap[0]->until)) {
                        dirlock_pending *p = s->heap[0];
                        heap_remove(s, p);
                        make_due(s, p);
                }
                arm_timer(s);
        }
        signal_ready(s);
}

/* ---- keeping the thread's set polled ------------------------------------------ */

/* An own-descriptor acquire not done joins the thread's list of them, and
 * becomes the keeper if there is none. */
static void keeper_elect(struct sched *s)
{
        if (s->keeper != NULL)
                return;
        for (dirlock_pending *q = s->own_live; q != NULL; q = q->onext) {
                struct epoll_event ev = {.events = EPOLLIN, .data.fd = s->ep};
                if (epoll_ctl(q->epfd, EPOLL_CTL_ADD, s->ep, &ev) == 0 || errno == EEXIST) {
                        q->keeper = true;
                        s->keeper = q;
                        return;
                }
        }
}

static void own_join(struct sched *s, dirlock_pending *p)
{
        p->oprev = NULL;
        p->onext = s->own_live;
        if (s->own_live != NULL)
                s->own_live->oprev = p;
        s->own_live = p;
        keeper_elect(s);
}

static void own_leave(struct sched *s, dirlock_pending *p)
{
        if (p->oprev == NULL && s->own_live != p)
                return; /* not on the list */
        if (p->oprev != NULL)
                p->oprev->onext = p->onext;
        else
                s->own_live = p->onext;
        if (p->onext != NULL)
                p->onext->oprev = p->oprev;
        p->oprev = p->onext = NULL;
        if (p->keeper) {
                epoll_ctl(p->epfd, EPOLL_CTL_DEL, s->ep, NULL);
                p->keeper = false;
                s->keeper = NULL;
                keeper_elect(s);
        }
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

static void unregister(struct sched *s, struct source *src)
{
        epoll_ctl(s->ep, EPOLL_CTL_DEL, src->fd, NULL);
        if (src->dup)
                close(src->fd);
        src->fd = -1;
        src->dup = false;
}

/* Register src->fd in the set (a duplicate of it when it is there
 * already: another acquire's wait on the same descriptor).  0 or -1. */
static int register_source(struct sched *s, struct source *src, uint32_t events)
{
        if (add_source(s, src->fd, src, events | EPOLLONESHOT) == 0)
                return 0;
        if (errno != EEXIST)
                return -1;
        int d = fcntl(src->fd, F_DUPFD_CLOEXEC, 0);
        if (d < 0)
                return -1;
        if (add_source(s, d, src, events | EPOLLONESHOT) != 0) {
                close(d);
                return -1;
        }
        src->fd = d;
        src->dup = true;
        return 0;
}

/* Register the wait's descriptors and its timeout (`until`, NULL: none).
 * 0, or -1 when the set cannot take them (then dl_poll blocks). */
static int wait_arm(struct sched *s, dirlock_pending *p, const struct pollfd *fds, unsigned long n,
                    const dl_time *until)
{
        p->nwaited = 0;
        for (unsigned long i = 0; i < n; i++) {
                int fd = fds[i].fd;
                if (fd < 0 || fd == s->idle_fd)
                        continue;
                bool listed = false;
                for (int j = 0; j < p->nwaited && !listed; j++)
                        listed = p->waited[j].fd == fd;
                if (listed)
                        continue;
                if (p->nwaited == WAIT_FDS)
                        return -1;
                struct source *src = &p->waited[p->nwaited];
                *src = (struct source){SRC_WAIT, p, fd, false};
                if (register_source(s, src, (uint32_t)epoll_events_of(fds[i].events)) != 0)
                        return -1;
                p->nwaited++;
        }
        return until != NULL ? heap_push(s, p, until) : 0;
}

static void wait_disarm(struct sched *s, dirlock_pending *p)
{
        for (int i = 0; i < p->nwaited; i++)
                unregister(s, &p->waited[i]);
        p->nwaited = 0;
        heap_remove(s, p);
}

/* What a wait of p would find now, without waiting: ppoll's answer for
 * the real descriptors, DL_POLL_KICK readable after a kick, the stand-in
 * cancel descriptor readable once p is canceled. */
static int look(const struct sched *s, dirlock_pending *p, struct pollfd *fds, unsigned long n)
{
        static const struct timespec zero = {0, 0};
        bool real = false;
        for (unsigned long i = 0; i < n; i++) {
                fds[i].revents = 0;
                if (fds[i].fd >= 0 && fds[i].fd != s->idle_fd)
                        real = true;
        }
        int rc = real ? ppoll(fds, n, &zero, NULL) : 0;
        if (rc < 0)
                return rc;
        for (unsigned long i = 0; i < n; i++) {
                bool now =
                    (fds[i].fd == DL_POLL_KICK && p->kicked) || (fds[i].fd == s->idle_fd && p->canceled);
                if (now && fds[i].revents == 0) {
                        fds[i].revents = (short)(fds[i].events & POLLIN);
                        rc += fds[i].revents != 0;
                }
                if (fds[i].fd == DL_POLL_KICK && fds[i].revents != 0)
                        p->kicked = false; /* reported */
        }
        return rc;
}

/* dl_poll inside pending acquire `task`, which runs on this thread. */
static int task_poll(void *task, struct pollfd *fds, unsigned long n, const struct timespec *timeout)
{
        dirlock_pending *p = task;
        struct sched *s = sched; /* made before p ran */
        int rc = look(s, p, fds, n);
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
                double left_ms = timeout != NULL ? dl_remaining(&until) : -1;
                if (timeout != NULL && left_ms <= 0)
                        return 0;
                if (p->sync) { /* being finished by dirlock_pending_free: block */
                        struct timespec left = {
                            (time_t)(left_ms / 1e3),
                            (long)((left_ms - (double)(time_t)(left_ms / 1e3) * 1e3) * 1e6)};
                        return ppoll(fds, n, timeout != NULL ? &left : NULL, NULL);
                }
                if (wait_arm(s, p, fds, n, timeout != NULL ? &until : NULL) != 0) {
                        wait_disarm(s, p);
                        struct timespec left = {
                            (time_t)(left_ms / 1e3),
                            (long)((left_ms - (double)(time_t)(left_ms / 1e3) * 1e3) * 1e6)};
                        return ppoll(fds, n, timeout != NULL ? &left : NULL, NULL); /* cannot suspend */
                }
                p->due = false;
                p->state = PENDING_WAITING;
                dl_fiber_suspend();
                p->state = PENDING_RUNNING;
                wait_disarm(s, p);
                rc = look(s, p, fds, n);
                if (rc != 0)
                        return rc;
                /* Resumed while nothing it waits for happened: wait again. */
        }
}

static const dl_tasks pending_tasks = {task_poll, task_kick};

DL_ON_LOAD(pending_register)
{
        dl_tasks_set(&pending_tasks);
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

/* p ended: off the lists it waited on, its caller told. */
static void finish(struct sched *s, dirlock_pending *p)
{
        p->state = PENDING_DONE;
        p->due = false;
        heap_remove(s, p);
        if (p->user_cancel.fd >= 0)
                unregister(s, &p->user_cancel);
        if (p->shared) {
                queue_unlink(s, p);
                queue_push(s, p, Q_ENDED);
        } else {
                own_leave(s, p);
                own_wake(p); /* never read again: readable for good */
        }
}

/* Run p's fiber until it waits or ends (its fiber made first when it has
 * none yet: a queued start). */
static void resume(struct sched *s, dirlock_pending *p)
{
        p->due = false;
        if (p->queue == Q_READY)
                queue_unlink(s, p);
        if (!p->started && p->canceled) { /* queued, never run: nothing to undo */
                p->rc = dl_fail(&p->err, DIRLOCK_ECANCELED, 0, "canceled before it began");
                finish(s, p);
                return;
        }
        p->started = true;
        if (p->fiber == NULL) {
                if (s->nspare_fiber > 0) {
                        p->fiber = s->spare_fiber[--s->nspare_fiber];
                        if (dl_fiber_reuse(p->fiber, run, p) != 0) {
                                dl_fiber_free(p->fiber);
                                p->fiber = NULL;
                        }
                }
                if (p->fiber == NULL && dl_fiber_new(&p->fiber, run, p, &p->err) != DIRLOCK_OK) {
                        p->rc = p->err.code;
                        finish(s, p);
                        return;
                }
        }
        dl_task_enter(p);
        p->state = PENDING_RUNNING;
        bool finished = dl_fiber_resume(p->fiber);
        dl_task_enter(NULL);
        hub_sync(s); /* its first wait may have made the thread's inotify instance */
        if (finished)
                finish(s, p);
}

/* ---- making one, and what is kept for the next ------------------------------- */

static void spare_fiber(struct sched *s, dl_fiber *f)
{
        if (s->nspare_fiber < SPARE_FIBERS)
                s->spare_fiber[s->nspare_fiber++] = f;
        else
                dl_fiber_free(f);
}

/* Close p's own descriptors, or keep them for the next own-descriptor
 * acquire of the thread: emptied (nothing in the set but the eventfd, the
 * eventfd read). */
static void own_fds_release(struct sched *s, dirlock_pending *p)
{
        if (p->epfd < 0)
                return;
        if (s != NULL && s->nspare_own < SPARE_OWN_FDS && !p->keeper) {
                uint64_t v;
                ssize_t r = read(p->wake_fd, &v, sizeof v);
                (void)r; /* EAGAIN: not written */
                s->spare_own[s->nspare_own][0] = p->epfd;
                s->spare_own[s->nspare_own][1] = p->wake_fd;
                s->nspare_own++;
        } else {
                close(p->epfd);
                close(p->wake_fd);
        }
        p->epfd = p->wake_fd = -1;
}

static void pending_close(dirlock_pending *p)
{
        /* Not in a forked child, nor on another thread: the thread's
         * scheduler there is not this acquire's. */
        bool own = p->thread_pid == dl_self_pid() && pthread_equal(p->thread, pthread_self());
        struct sched *s = own ? sched_mine() : NULL;
        if (s != NULL) {
                queue_unlink(s, p);
                own_leave(s, p);
                wait_disarm(s, p);
                if (p->user_cancel.fd >= 0)
                        unregister(s, &p->user_cancel);
                if (p->fiber != NULL && (p->state == PENDING_DONE || !p->started))
                        spare_fiber(s, p->fiber);
                else
                        dl_fiber_free(p->fiber);
                own_fds_release(s, p);
        } else {
                /* In a forked child the fiber's stack is simply dropped:
                 * its parent's locks are not ours. */
                for (int i = 0; i < p->nwaited; i++)
                        if (p->waited[i].dup)
                                close(p->waited[i].fd);
                if (p->user_cancel.dup)
                        close(p->user_cancel.fd);
                dl_fiber_free(p->fiber);
                close_fd(p->epfd);
                close_fd(p->wake_fd);
        }
        free(p->space);
        free(p->name);
        for (size_t i = 0; i < p->nnames; i++)
                free(p->names[i]);
        free(p->names);
        free(p);
}

/* A pending acquire of `kind`, its options copied with the stand-in in
 * place of the caller's cancel descriptor; not yet run. */
static int pending_new(enum pending_kind kind, const dirlock_options *opts, dirlock_pending **out,
                       dirlock_error *err)
{
        *out = NULL;
        if (dl_task_current() != NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "a pending acquire cannot be started from inside another");
        struct sched *s = sched_get(err);
        if (s == NULL)
                return err != NULL ? err->code : DIRLOCK_EIO;
        dirlock_pending *p = calloc(1, sizeof *p);
        if (p == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        p->kind = kind;
        p->epfd = p->wake_fd = -1;
        p->user_cancel = (struct source){SRC_CANCEL, p, -1, false};
        p->heap_at = NOT_IN_HEAP;
        p->thread_pid = dl_self_pid();
        p->thread = pthread_self();
        if (opts != NULL)
                p->opts = *opts;
        else
                dirlock_options_init(&p->opts);
        p->shared = (p->opts.flags & DIRLOCK_THREAD_FD) != 0;
        p->opts.flags &= ~DIRLOCK_THREAD_FD;
        int rc = DIRLOCK_OK;
        if (p->opts.flags & DIRLOCK_CANCEL_FD) {
                if (p->opts.cancel_fd < 0 || fcntl(p->opts.cancel_fd, F_GETFD) < 0) {
                        rc = dl_fail(err, DIRLOCK_EINVAL, 0,
                                     "DIRLOCK_CANCEL_FD with cancel_fd %d, which is not an open descriptor",
                                     p->opts.cancel_fd);
                } else {
                        p->user_cancel.fd = p->opts.cancel_fd;
                        if (register_source(s, &p->user_cancel, EPOLLIN) != 0) {
                                p->user_cancel.fd = -1;
                                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot watch cancel descriptor %d",
                                             p->opts.cancel_fd);
                        }
                }
        }
        if (rc == DIRLOCK_OK && !p->shared) {
                if (s->nspare_own > 0) {
                        s->nspare_own--;
                        p->epfd = s->spare_own[s->nspare_own][0];
                        p->wake_fd = s->spare_own[s->nspare_own][1];
                } else {
                        p->epfd = epoll_create1(EPOLL_CLOEXEC);
                        p->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
                        struct epoll_event ev = {.events = EPOLLIN, .data.fd = p->wake_fd};
                        if (p->epfd < 0 || p->wake_fd < 0 ||
                            epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->wake_fd, &ev) != 0)
                                rc = dl_fail(err, DIRLOCK_EIO, errno,
                                             "cannot make the descriptors of a pending acquire");
                }
        }
        if (rc != DIRLOCK_OK) {
                pending_close(p);
                return rc;
        }
        p->opts.flags |= DIRLOCK_CANCEL_FD;
        p->opts.cancel_fd = s->idle_fd;
        p->state = PENDING_WAITING; /* not run yet: due at once (pending_begin) */
        if (!p->shared)
                own_join(s, p);
        *out = p;
        return DIRLOCK_OK;
}

/* Run a new pending acquire to its first wait (or its end) -- or, for a
 * THREAD_FD one when the thread's starts have had their time since the
 * last round, queue it for the next round. */
static int pending_begin(dirlock_pending *p, dirlock_pending **out, dirlock_error *err)
{
        struct sched *s = sched;
        if (p->shared && s->eager_ns >= ROUND_NS) {
                p->due = true;
                queue_push(s, p, Q_READY);
        } else {
                dl_time t0 = dl_now();
                resume(s, p);
                if (p->shared)
                        s->eager_ns += ns_since(&t0);
        }
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
        if (p == NULL)
                return -1;
        if (!p->shared)
                return p->epfd;
        return p->thread_pid == dl_self_pid() && pthread_equal(p->thread, pthread_self()) && sched != NULL
                   ? sched->ep
                   : -1;
}

void dirlock_pending_set_data(dirlock_pending *p, void *data)
{
        if (p != NULL)
                p->data = data;
}

void *dirlock_pending_data(const dirlock_pending *p)
{
        return p != NULL ? p->data : NULL;
}

/* The checks of a call that runs p: its process, its thread, no fiber. */
static int may_run(const dirlock_pending *p, dirlock_error *err)
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
        if (dl_task_current() != NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "a pending acquire cannot be stepped from inside another");
        return DIRLOCK_OK;
}

int dirlock_pending_step(dirlock_pending *p, dirlock_error *err)
{
        int rc = may_run(p, err);
        if (rc != DIRLOCK_OK)
                return rc;
        struct sched *s = sched_mine();
        if (p->state != PENDING_DONE && !p->shared && s != NULL) {
                if (p->woken) {
                        uint64_t v;
                        ssize_t r = read(p->wake_fd, &v, sizeof v);
                        (void)r;
                        p->woken = false;
                }
                dispatch(s);
                if (p->due)
                        resume(s, p);
        }
        if (p->state != PENDING_DONE)
                return dl_fail(err, DIRLOCK_EAGAIN, 0, "the acquire is still waiting: poll its descriptor");
        if (err != NULL)
                *err = p->err;
        return p->rc;
}

dirlock_pending *dirlock_pending_next(void)
{
        struct sched *s = sched_mine();
        if (s == NULL || dl_task_current() != NULL)
                return NULL;
        if (!s->in_round) {
                s->in_round = true;
                s->round_start = dl_now();
        }
        dispatch(s);
        for (;;) {
                dirlock_pending *p = s->ended_head;
                if (p != NULL) {
                        queue_unlink(s, p);
                        return p;
                }
                if (s->ready_head == NULL || ns_since(&s->round_start) >= ROUND_NS)
                        break;
                resume(s, s->ready_head);
        }
        s->in_round = false;
        s->eager_ns = 0;
        signal_ready(s); /* acquires left for the next round */
        return NULL;
}

void dirlock_pending_cancel(dirlock_pending *p)
{
        if (p == NULL || p->state == PENDING_DONE || p->canceled)
                return;
        p->canceled = true;
        struct sched *s =
            p->thread_pid == dl_self_pid() && pthread_equal(p->thread, pthread_self()) ? sched_mine() : NULL;
        if (s != NULL)
                make_due(s, p);
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
        struct sched *s = may_run(p, NULL) == DIRLOCK_OK ? sched_mine() : NULL;
        if (s != NULL && p->state != PENDING_DONE) { /* (not from inside a fiber: may_run) */
                /* Canceled, and finished here: its waits block (p->sync). */
                p->canceled = true;
                p->sync = true;
                while (p->state != PENDING_DONE)
                        resume(s, p);
        }
        if (p->state == PENDING_DONE) {
                dirlock_free(p->lock, NULL); /* a lock nobody took */
                if (p->set != NULL)
                        dirlock_release_many(p->set, NULL);
        }
        pending_close(p);
}
