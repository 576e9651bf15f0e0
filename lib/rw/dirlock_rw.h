/* dirlock_rw.h - the reader-writer module (lib/rw): shared and intent
 * ("upgradable read") modes beside exclusive, the policies writer and
 * reader beside fair and simple, and the calls that change a held lock's
 * mode.  Without it a build takes exclusive locks only (fair and simple:
 * dirlock_options.mode and .policy, dirlock.h) and refuses the rest with
 * DIRLOCK_EINVAL naming this module.  The protocol: lib/rw/dir_rw.c. */
#ifndef DIRLOCK_RW_H
#define DIRLOCK_RW_H

#include "dirlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Shared and intent locks are taken with dirlock_acquire() and
 * opts->mode = DIRLOCK_SHARED / DIRLOCK_INTENT.  Then: */

/* Intent -> exclusive.  Waits only for the readers present, holding off new
 * ones.  On a plain shared lock: DIRLOCK_EUPGRADE.  On timeout the handle
 * keeps its intent lock.  opts may be NULL (use the acquire options). */
int dirlock_upgrade(dirlock *lock, const dirlock_options *opts, dirlock_error *err);

/* Exclusive -> shared, without letting a writer in between. */
int dirlock_downgrade(dirlock *lock, dirlock_error *err);

/* Upgraded intent -> intent again: readers may enter from here, writers
 * and other intent holders still wait.  For a writer whose change became
 * visible in one atomic step (a rename) and that keeps the lock for the
 * work that follows (syncing, bookkeeping) without holding readers off.
 * A no-op on an intent lock; DIRLOCK_EINVAL on a lock not taken in intent
 * mode.  It may upgrade again later. */
int dirlock_downgrade_intent(dirlock *lock, dirlock_error *err);

/* A mode's name for people: "exclusive", "shared", "intent", or
 * "upgrading" (an intent holder on its way to exclusive, as lists show
 * it); "?" for a number that is no mode (lib/rw/modes.c). */
const char *dirlock_mode_name(int mode);

#ifdef __cplusplus
}
#endif
#endif
