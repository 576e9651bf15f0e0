/* dirlock_permit.h - the counting-lock module (lib/permit): at most N
 * holders of a lock at once, each with its own permit.  A counting lock
 * is a lock of its own beside the name's whole lock, so a build without
 * this module is safe beside one with it: it never takes a permit, and
 * its cleanup and break leave them alone. */
#ifndef DIRLOCK_PERMIT_H
#define DIRLOCK_PERMIT_H

#include "dirlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest number of permits a counting lock may have. */
#define DIRLOCK_PERMITS_MAX 65535

/* Take one of the `permits` permits of counting lock `name`: at most
 * `permits` holders have one at any moment (1..DIRLOCK_PERMITS_MAX), each
 * with its own owner record, token and fence, the way a semaphore counts
 * -- but a holder that dies gives its permit back (on this host at once,
 * on another after the stale age).  opts->mode must be DIRLOCK_EXCLUSIVE
 * (the default); timeout, stale age, DIRLOCK_FIFO, DIRLOCK_REENTRANT, the
 * cancel descriptor and the rest work as for dirlock_acquire(), and the
 * handle is released, refreshed, checked and fenced as a lock's; it has no
 * modes to change (upgrade and downgrade: DIRLOCK_EINVAL).
 *
 * N belongs to the lock while it is used: an acquire asking another N
 * than that of the holders present is refused with DIRLOCK_EINVAL, naming
 * theirs -- never let in beyond either number; once they are gone, any N
 * may be asked.  A counting lock is a lock of its own: the permits of
 * NAME never wait for NAME's exclusive, shared or range locks, nor hold
 * them off.  Directory spaces: lib/permit/dir_permit.c; Redis spaces:
 * lib/redis/redis_permits.c; flock and etcd spaces have none
 * (DIRLOCK_EINVAL). */
int dirlock_acquire_permit(const char *space, const char *name, unsigned permits, const dirlock_options *opts,
                           dirlock **out, dirlock_error *err);
/* The N of a counting lock's handle; 0 for any other lock. */
unsigned dirlock_permits_of(const dirlock *lock);

#ifdef __cplusplus
}
#endif
#endif
