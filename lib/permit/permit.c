/* permit.c - the counting-lock module's calls (dirlock_permit.h), in any
 * kind of space whose backend offers counting locks (backend.h: permit):
 * taking one of a lock's N permits, and a handle's N. */
#include "backend.h"
#include "dirlock_permit.h"

int dirlock_acquire_permit(const char *space, const char *name, unsigned permits, const dirlock_options *opts,
                           dirlock **out, dirlock_error *err)
{
        if (out == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the lock handle");
        *out = NULL;
        if (permits < 1 || permits > DIRLOCK_PERMITS_MAX)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "a counting lock has 1 to %u permits, not %u",
                               (unsigned)DIRLOCK_PERMITS_MAX, permits);
        if (opts != NULL && opts->mode != DIRLOCK_EXCLUSIVE)
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "a permit of a counting lock is taken in exclusive mode (the default), not "
                               "mode %d: each permit has one holder",
                               opts->mode);
        const dl_backend *be;
        const char *spec;
        int rc = dl_space_resolve(space, &be, &spec, err);
        if (rc == DIRLOCK_OK && be->permit == NULL)
                rc = dl_fail(err, DIRLOCK_EINVAL, 0, "%s spaces have no counting locks", be->name);
        dirlock *h = NULL;
        if (rc == DIRLOCK_OK)
                rc = dl_handle_open(be, spec, name, opts, &h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        h->permits = permits;
        rc = be->permit(h, err);
        if (rc != DIRLOCK_OK) {
                dl_handle_free(h);
                return rc;
        }
        return dl_handle_acquire_new(h, out, err);
}

unsigned dirlock_permits_of(const dirlock *lock)
{
        return lock != NULL ? lock->permits : 0;
}
