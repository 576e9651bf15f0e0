/* range.c - the range module's calls (dirlock_range.h), in any kind of
 * space whose backend offers ranges (backend.h: range, shrink, ranges):
 * taking a range, narrowing it, and listing a name's range holders and
 * waiters; and what a holder's record says of it in that list, for every
 * backend.  The text form of a range is range_text.c's. */
#include "range.h"
#include "backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int dirlock_acquire_range(const char *space, const char *name, double lo, double hi,
                          const dirlock_options *opts, dirlock **out, dirlock_error *err)
{
        if (out == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the lock handle");
        *out = NULL;
        if (!isfinite(lo) || !isfinite(hi) || !(lo < hi))
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "invalid range [%g, %g): the ends must be finite numbers with lo < hi", lo,
                               hi);
        const dl_backend *be;
        const char *spec;
        int rc = dl_space_resolve(space, &be, &spec, err);
        if (rc == DIRLOCK_OK && be->range == NULL)
                rc = dl_fail(err, DIRLOCK_EINVAL, 0, "%s spaces have no range locks", be->name);
        dirlock *h = NULL;
        if (rc == DIRLOCK_OK)
                rc = dl_handle_open(be, spec, name, opts, &h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (h->opts.flags & DIRLOCK_REENTRANT) {
                rc = dl_fail(err, DIRLOCK_EINVAL, 0, "range locks are not reentrant");
        } else {
                h->ranged = true;
                h->lo = lo;
                h->hi = hi;
                rc = be->range(h, err);
        }
        if (rc != DIRLOCK_OK) {
                dl_handle_free(h);
                return rc;
        }
        return dl_handle_acquire_new(h, out, err);
}

int dirlock_shrink(dirlock *lock, double lo, double hi, dirlock_error *err)
{
        int rc = dl_handle_usable(lock, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (!lock->ranged || lock->be->shrink == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "lock '%s' is not a range lock", lock->name);
        if (!isfinite(lo) || !isfinite(hi) || !(lo < hi) || lo < lock->lo || hi > lock->hi)
                return dl_fail(
                    err, DIRLOCK_EINVAL, 0,
                    "cannot shrink the range [%g, %g) of lock '%s' to [%g, %g): the new range must "
                    "be a non-empty part of the held one (growing it could deadlock)",
                    lock->lo, lock->hi, lock->name, lo, hi);
        if (lo == lock->lo && hi == lock->hi)
                return DIRLOCK_OK;
        return lock->be->shrink(lock, lo, hi, err);
}

int dirlock_range_of(const dirlock *lock, double *lo, double *hi)
{
        if (lock == NULL || !lock->ranged)
                return 0;
        if (lo != NULL)
                *lo = lock->lo;
        if (hi != NULL)
                *hi = lock->hi;
        return 1;
}

static int by_lo(const void *a, const void *b)
{
        double x = ((const dirlock_range_info *)a)->lo, y = ((const dirlock_range_info *)b)->lo;
        return x < y ? -1 : x > y;
}

int dirlock_ranges(const char *space, const char *name, dirlock_range_info **out, size_t *count,
                   dirlock_error *err)
{
        if (out == NULL || count == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the ranges");
        *out = NULL;
        *count = 0;
        const dl_backend *be;
        const char *spec;
        int rc = dl_space_resolve(space, &be, &spec, err);
        if (rc == DIRLOCK_OK && be->ranges == NULL)
                rc = dl_fail(err, DIRLOCK_EINVAL, 0, "%s spaces have no range locks", be->name);
        if (rc == DIRLOCK_OK && !dirlock_name_valid(name))
                rc = dl_fail(err, DIRLOCK_ENAME, 0, "invalid lock name '%.80s'", name ? name : "(null)");
        if (rc == DIRLOCK_OK)
                rc = be->ranges(spec, name, out, count, err);
        if (rc == DIRLOCK_OK) {
                qsort(*out, *count, sizeof **out, by_lo);
                dl_ok(err);
        }
        return rc;
}

void dl_record_to_range(const dl_record *rec, long long now_ns, dirlock_range_info *range)
{
        range->pid = rec->pid;
        snprintf(range->host, sizeof range->host, "%s", rec->host);
        range->age = rec->acquired_ns > 0 ? (double)(now_ns - rec->acquired_ns) / 1e9 : 0;
}
