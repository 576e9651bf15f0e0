/* netfs_release.c - a holder's release on a network filesystem, where an
 * unlink that removed its entry may answer ENOENT all the same.
 *
 * RELEASE ON A NETWORK FILESYSTEM (lib/core/dir_exclusive.c, RELEASE 1).
 * On a network filesystem an unlink that removed our entry may still
 * answer ENOENT: GlusterFS's brick (10.3) reads the directory's
 * attributes through its handle after the unlink, and the directory,
 * empty (free) from the unlink on, may be removed meanwhile (an
 * earlier holder's late step 2) or replaced (a waiter's rename); the
 * brick then answers ENOENT for the unlink it made (its log: "post-
 * operation lstat on parent ... failed").  Measured (issue 38):
 * 1 to 4 false DIRLOCK_ELOST in a run of 800 acquisitions across two
 * clients.  So there
 * ENOENT is a loss only when a judge may have broken the lock first
 * (dl_netfs_released, below).  A judge breaks an entry only once it has
 * seen it unchanged for the watch (dl_fs_watch: a third of the stale
 * age plus the cache lag, CLOCKS in lib/netfs/netfs.c), never seeing a change
 * before it happens nor later than the cache lag after.  While each
 * refresh came within a third of the stale age of the change before
 * it, no judge can still see an older change past its watch; and an
 * unlink that ended within the watch of the start of the last change
 * reached the entry before any judge could break that one.  Then the
 * entry was there for our unlink and is gone: ours removed it, and
 * the release succeeded.  (dirlock break --force in that window is
 * the one break this cannot tell from the race.)  And an entry of
 * ours still there after such an ENOENT is a name the brick kept
 * (STALE NAMES): it is unlinked once more after the repair, or the
 * answer is DIRLOCK_EIO -- never a loss. */
#include "dir.h"
#include "dir_fsops.h"
#include "netfs.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* Our unlink, which ended at `done`, answered ENOENT.  1 when our entry
 * is gone and no judge can have broken the lock before the unlink (so it
 * removed our entry), or when it is still there and a second unlink after
 * the repair of STALE NAMES removed it; 0 when a judge may have broken
 * it; -1 with errno when our entry is still there all the same (ESTALE)
 * or the lock cannot be looked at (its directory changing hands: a few
 * looks, 50 ms apart). */
int dl_netfs_released(const dirlock *h, const struct timespec *done)
{
        const struct dl_dir *d = dl_dir_of(h);
        dl_lock_view v;
        for (int look = 0; dl_lock_look(d->lock_path, d->fs, &v) != 0; look++) {
                if (errno != ESTALE || look == 10)
                        return -1;
                struct timespec nap = {0, 50000000L};
                nanosleep(&nap, NULL);
        }
        if (v.state == DL_LOCK_OWNED && strcmp(v.token, h->token) == 0) {
                /* There, but the unlink cannot reach it: the brick keeps
                 * a name for the directory that is not our prepared one.
                 * The client names it (STALE NAMES in lib/netfs/netfs_fsops.c). */
                dl_fs_refresh(d->entry_path);
                if (dl_fs_unlink(d->entry_path) == 0)
                        return 1;
                errno = ESTALE;
                return -1;
        }
        /* A hundredth off the watch: the judge's monotonic clock may run
         * a little faster than ours. */
        double took = (double)(dl_ts_ns(done) - dl_ts_ns(&d->changed)) / 1e9;
        return d->kept_young && took < 0.99 * dl_fs_watch(d->fs, h->opts.stale_age);
}
