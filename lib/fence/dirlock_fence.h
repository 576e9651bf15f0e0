/* dirlock_fence.h - the fence module (lib/fence): a number for each
 * acquisition of a lock, greater than every earlier one's, to pass with
 * every write to what the lock guards (docs/fencing.md). */
#ifndef DIRLOCK_FENCE_H
#define DIRLOCK_FENCE_H

#include "dirlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fencing.  A fence is a 64-bit number for one acquisition of a lock,
 * strictly greater than the fence of every earlier acquisition of the same
 * lock in the same space, whichever process or host made it.  Pass it
 * with every write to the resource the lock guards: a store that keeps the
 * highest fence it has accepted and refuses lower ones is safe from a
 * holder that lost its lock while it was paused and writes late -- the
 * window that dirlock_check() cannot close (docs/fencing.md).  The fence
 * is drawn on the first call, while the lock is held (DIRLOCK_ELOST if it
 * is not any more), and the same number is returned for the handle after
 * that.  Fences are microsecond timestamps made strictly increasing, so
 * they do not go back even if the counter is lost (docs/fencing.md says
 * what that assumes).  flock spaces have none (DIRLOCK_EINVAL).  A fence
 * is at most DIRLOCK_FENCE_MAX, 2^53 - 1, so that it is exact in a double
 * (Lua on a Redis server, JSON, JavaScript): a counter at or past it --
 * data dirlock did not write -- is refused with DIRLOCK_EDATA, never
 * answered with a fence given before. */
#define DIRLOCK_FENCE_BITS 53
#define DIRLOCK_FENCE_MAX  ((1ULL << DIRLOCK_FENCE_BITS) - 1)
int dirlock_fence(dirlock *lock, unsigned long long *fence, dirlock_error *err);

#ifdef __cplusplus
}
#endif
#endif
