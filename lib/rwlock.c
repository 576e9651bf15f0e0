/* rwlock.c - the reader-writer layer: shared, intent and exclusive modes
 * over the exclusive primitive.  (Placeholder: exclusive mode only.) */
#include "internal.h"

int dl_rw_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        if (h->opts.mode != DIRLOCK_EXCLUSIVE)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "shared and intent locks are not available");
        return dl_excl_acquire(h, deadline, err);
}

int dl_rw_release(dirlock *h, dirlock_error *err)
{
        return dl_excl_release(h, err);
}

int dl_rw_refresh(dirlock *h, dirlock_error *err)
{
        return dl_excl_refresh(h, err);
}

int dl_rw_check(const dirlock *h, dirlock_error *err)
{
        return dl_excl_check(h, err);
}

void dl_rw_free(dirlock *h)
{
        (void)h;
}

int dl_rw_cleanup(const char *lockdir, dirlock_error *err)
{
        (void)lockdir;
        dl_ok(err);
        return DIRLOCK_OK;
}

unsigned dl_rw_count_readers(const char *lockdir, const char *name)
{
        (void)lockdir;
        (void)name;
        return 0;
}

int dirlock_upgrade(dirlock *lock, const dirlock_options *opts, dirlock_error *err)
{
        (void)lock;
        (void)opts;
        return dl_fail(err, DIRLOCK_EUPGRADE, 0, "upgrade is not available");
}

int dirlock_downgrade(dirlock *lock, dirlock_error *err)
{
        (void)lock;
        return dl_fail(err, DIRLOCK_EINVAL, 0, "downgrade is not available");
}
