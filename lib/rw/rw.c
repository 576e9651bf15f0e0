/* rw.c - the reader-writer module's calls (dirlock_rw.h): changing a held
 * lock's mode, in any kind of space whose backend offers it (backend.h:
 * upgrade, downgrade, downgrade_intent).  Shared and intent locks are
 * taken with dirlock_acquire() and dirlock_options.mode. */
#include "backend.h"
#include "dirlock_rw.h"

/* A counting lock's permit has one mode: nothing to change. */
static int no_modes(const dirlock *lock, dirlock_error *err)
{
        return dl_fail(err, DIRLOCK_EINVAL, 0, "a permit of counting lock '%s' has no modes to change",
                       lock->name);
}

int dirlock_upgrade(dirlock *lock, const dirlock_options *opts, dirlock_error *err)
{
        int rc = dl_handle_held(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (lock->permits > 0)
                return no_modes(lock, err);
        if (lock->be->upgrade == NULL)
                return dl_fail(err, DIRLOCK_EUPGRADE, 0, "%s lock '%s' cannot be upgraded", lock->be->name,
                               lock->name);
        return lock->be->upgrade(lock, opts, err);
}

int dirlock_downgrade(dirlock *lock, dirlock_error *err)
{
        int rc = dl_handle_held(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (lock->permits > 0)
                return no_modes(lock, err);
        if (lock->be->downgrade == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "%s lock '%s' cannot be downgraded", lock->be->name,
                               lock->name);
        return lock->be->downgrade(lock, err);
}

int dirlock_downgrade_intent(dirlock *lock, dirlock_error *err)
{
        dirlock_error local;
        if (err == NULL)
                err = &local;
        int rc = dl_handle_held(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (lock->permits > 0)
                return no_modes(lock, err);
        if (lock->mode == DIRLOCK_INTENT)
                return DIRLOCK_OK;
        if (lock->mode != DIRLOCK_EXCLUSIVE || lock->opts.mode != DIRLOCK_INTENT)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "lock '%s' was not taken in intent mode: only an upgraded intent lock can go "
                               "back to intent",
                               lock->name);
        if (lock->be->downgrade_intent == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "%s lock '%s' cannot go back to intent",
                               lock->be->name, lock->name);
        return lock->be->downgrade_intent(lock, err);
}
