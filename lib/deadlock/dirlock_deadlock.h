/* dirlock_deadlock.h - the deadlock module (lib/deadlock): every waiter
 * of a directory space is listed in its wait register while it waits, and
 * a thread whose wait closes a knot of waits that can never end is told
 * DIRLOCK_EDEADLK instead of waiting out its timeout (DIRLOCK_NO_DEADLOCK
 * leaves an acquire out).  It adds one call, the list of waiters;
 * without the module a build neither lists nor detects, and waits as
 * before.  The proofs: lib/deadlock/dir_deadlock.c. */
#ifndef DIRLOCK_DEADLOCK_H
#define DIRLOCK_DEADLOCK_H

#include "dirlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A process (thread) waiting for a lock, as dirlock_waiters() lists them. */
typedef struct dirlock_waiter {
        char name[DIRLOCK_NAME_MAX + 1];
        int kind;         /* dirlock_wait_kind                               */
        int mode;         /* dirlock_mode it asks for                        */
        double lo, hi;    /* DIRLOCK_WAIT_RANGE: the range                   */
        unsigned permits; /* DIRLOCK_WAIT_PERMIT: the lock's N               */
        pid_t pid;
        pid_t tid; /* the waiting thread; 0 when not known              */
        unsigned long long start_time;
        char host[256];
        double since;    /* wall clock, seconds since the epoch, it began to wait */
        double age;      /* seconds since it began or last renewed its entry */
        int pending;     /* 1: a pending acquire (dirlock_acquire_start)   */
        int owner_alive; /* -1 unknown (other host), 0 dead, 1 alive       */
} dirlock_waiter;

/* Every waiter of lock `name` (of every lock of the space when `name` is
 * NULL), the longest waiting first: whole, shared, intent, upgrade, range
 * and permit waits alike.  *out is a malloc'd array of *count entries
 * (free() it); a waiter that died is left out (and its entry removed). */
int dirlock_waiters(const char *space, const char *name, dirlock_waiter **out, size_t *count,
                    dirlock_error *err);

#ifdef __cplusplus
}
#endif
#endif
