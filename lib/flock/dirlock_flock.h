/* dirlock_flock.h - the flock backend (lib/flock): the kernel's flock(2)
 * on files in a directory, behind the same handle type, for comparison;
 * its spaces are "flock:DIR". */
#ifndef DIRLOCK_FLOCK_H
#define DIRLOCK_FLOCK_H

#include "dirlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* flock(2) on file `dir/name.flock`, shared or exclusive, with the same
 * timeout semantics; released with dirlock_release().  Has the kernel's
 * semantics: no stale breaking, no owner record, readers can lock out a
 * writer. */
int dirlock_flock_acquire(const char *dir, const char *name, const dirlock_options *opts, dirlock **out,
                          dirlock_error *err);

#ifdef __cplusplus
}
#endif
#endif
