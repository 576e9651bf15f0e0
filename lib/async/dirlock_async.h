/* dirlock_async.h - the pending-acquire module (lib/async): acquires an
 * event loop drives without blocking, run on fibers of their own.  Its
 * range, permit and upgrade acquires need those modules (lib/range,
 * lib/permit, lib/rw) beside it. */
#ifndef DIRLOCK_ASYNC_H
#define DIRLOCK_ASYNC_H

#include "dirlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* For event loops (libuv, epoll, asyncio, Node): an acquire that never
 * blocks its caller.  Start it, poll its descriptor for reading, step it
 * when the descriptor is readable; it ends with the lock or an error:
 *
 *     dirlock_pending *p;
 *     dirlock_acquire_start(space, name, &opts, &p, &err);
 *     ... add dirlock_pending_fd(p) to the loop, for POLLIN; when readable:
 *     rc = dirlock_pending_step(p, &err);
 *     if (rc == DIRLOCK_EAGAIN) wait again;
 *     else { lock = dirlock_pending_lock(p); dirlock_pending_free(p); ... }
 *
 * It is the same acquire as dirlock_acquire() -- the same protocol, the
 * same options, modes, spaces, errors and timeout -- run so that wherever
 * it would wait it returns to the loop instead (lib/async/pending.c has the
 * state machine).  The deadline needs no timer of the caller's: the
 * descriptor becomes readable when it passes, and the next step ends the
 * acquire with DIRLOCK_ETIMEDOUT.  Any number may be pending in one thread
 * (each holds two descriptors, and the thread a few for all of them).
 *
 * Thousands in one loop: start them with DIRLOCK_THREAD_FD.  They have no
 * descriptor of their own; dirlock_pending_fd() is the thread's, polled
 * once; when it is readable:
 *
 *     while ((p = dirlock_pending_next()) != NULL) {
 *             rc = dirlock_pending_step(p, &err);  -- it ended: its result
 *             ... dirlock_pending_data(p) says whose it is; free it
 *     }
 *
 * Each turn runs about a millisecond of them and leaves the rest for the
 * next (the descriptor stays readable), so that the loop keeps turning;
 * waiters of one lock in one thread follow its queue together and cost a
 * hand-off one step, not one each (lib/async/pending.c, lib/fifo/;
 * bench/README.md for 10,000 at once).  A thread may start both kinds:
 * its loop then polls the thread's descriptor too and runs
 * dirlock_pending_next() when it is readable (until then, THREAD_FD
 * acquires that can go on keep one of the others' descriptors readable).
 * A pending acquire is started, stepped and freed by one thread, and
 * belongs to its process like a handle.  opts->cancel_fd (with
 * DIRLOCK_CANCEL_FD) works as for dirlock_acquire(), and so does
 * dirlock_pending_cancel().  Each *_start call runs the acquire up to its
 * first wait at once: a free lock is already held when it returns (the
 * descriptor then polls readable, and the first step says DIRLOCK_OK). */
typedef struct dirlock_pending dirlock_pending;

int dirlock_acquire_start(const char *space, const char *name, const dirlock_options *opts,
                          dirlock_pending **out, dirlock_error *err);
int dirlock_acquire_range_start(const char *space, const char *name, double lo, double hi,
                                const dirlock_options *opts, dirlock_pending **out, dirlock_error *err);
int dirlock_acquire_permit_start(const char *space, const char *name, unsigned permits,
                                 const dirlock_options *opts, dirlock_pending **out, dirlock_error *err);
int dirlock_acquire_many_start(const char *space, const char *const names[], size_t n,
                               const dirlock_options *opts, dirlock_pending **out, dirlock_error *err);
/* Intent -> exclusive without blocking; the handle is not used by anyone
 * else until the pending upgrade is done (DIRLOCK_OK: upgraded; else it
 * keeps its intent lock, as dirlock_upgrade()). */
int dirlock_upgrade_start(dirlock *lock, const dirlock_options *opts, dirlock_pending **out,
                          dirlock_error *err);

/* The descriptor to poll for reading (the same for the pending acquire's
 * whole life; the library closes it in dirlock_pending_free). */
int dirlock_pending_fd(const dirlock_pending *p);
/* Go on as far as possible without blocking: DIRLOCK_EAGAIN while it still
 * waits, else the acquire's result (the same on every later call).  A
 * DIRLOCK_THREAD_FD acquire only says how it is: dirlock_pending_next()
 * runs it. */
int dirlock_pending_step(dirlock_pending *p, dirlock_error *err);
/* Give up: the acquire ends at its next step with DIRLOCK_ECANCELED (or
 * DIRLOCK_OK, when it got the lock first), having removed what it made. */
void dirlock_pending_cancel(dirlock_pending *p);
/* After DIRLOCK_OK: the new handle, or set (acquire_many), handed to the
 * caller once (NULL before, after, or for an upgrade). */
dirlock *dirlock_pending_lock(dirlock_pending *p);
dirlock_set *dirlock_pending_set(dirlock_pending *p);
/* DIRLOCK_THREAD_FD: when the thread's descriptor polls readable, call
 * this until it returns NULL: it runs the thread's pending acquires that
 * can go on -- for about a millisecond per round, leaving the rest for the
 * loop's next turn (the descriptor stays readable) -- and returns one that
 * ended (then call dirlock_pending_step for its result), once each.  NULL:
 * none left to report now.  Only THREAD_FD acquires are returned; an
 * acquire freed before it is returned never is. */
dirlock_pending *dirlock_pending_next(void);
/* A pointer of the caller's kept with the acquire (NULL at start). */
void dirlock_pending_set_data(dirlock_pending *p, void *data);
void *dirlock_pending_data(const dirlock_pending *p);
/* Free it in any state: a waiting acquire is canceled and finished first
 * (which may block for the clean-up's own I/O, at most a lock server's
 * answer), a lock it got and nobody took is released.  In a forked child
 * it only closes the child's copies of its descriptors: the acquire under
 * way is the parent's, and what it had allocated stays until exec or
 * exit. */
void dirlock_pending_free(dirlock_pending *p);

#ifdef __cplusplus
}
#endif
#endif
