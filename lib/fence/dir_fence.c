/* dir_fence.c - fences in a directory space (dirlock_fence,
 * docs/fencing.md): the fence module's part of the directory backend.
 * D/NAME.fence/ is a COUNTER (dir_counter.c) holding the last fence
 * drawn for lock NAME.
 *
 * DRAW (while holding the lock):
 *   1. Read the counter: the largest number N named in D/NAME.fence/.
 *      Missing: make it, holding 0.
 *   2. F = max(N + 1, the wall clock in microseconds).
 *   3. rename(D/NAME.fence/N, D/NAME.fence/F), the compare-and-swap:
 *      ENOENT means another drawer advanced it first: go to 1.  So the
 *      counter only ever grows, whoever races, paused or not.
 *   4. Check that we still hold the lock.  If we do, we held it without a
 *      break from our acquisition to here, so every acquisition after ours
 *      draws after step 3 and gets more than F; every earlier one drew
 *      while it held the lock, before ours began, so got less -- or, if it
 *      lost its lock and drew late, its own check fails and its number is
 *      never used.  If we do not: DIRLOCK_ELOST, and F is skipped.
 * Taking the clock in step 2 keeps fences growing even if the counter is
 * removed or rolled back (a restored backup), as long as the clocks of
 * the hosts that draw do not step back and no lock draws more than a
 * million fences a second.
 *
 * LIMIT.  F is at most DIRLOCK_FENCE_MAX (dirlock.h): a counter at or past
 * it, or one that names no number, is not what dirlock wrote, and step 1
 * refuses it (DIRLOCK_EDATA) rather than hand out a fence again. */
#include "dir_counter.h"
#include "dir_fsops.h"
#include "fence.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Make lock h's fence counter, holding 0, unless someone else does first. */
static int fence_counter_make(const dirlock *h, const char *dir, dirlock_error *err)
{
        const struct dl_dir *d = dl_dir_of(h);
        char leaf[1 + DIRLOCK_NAME_MAX + sizeof DL_SUFFIX_FENCE + 1 + DIRLOCK_TOKEN_LEN + sizeof ".new"];
        snprintf(leaf, sizeof leaf, ".%s" DL_SUFFIX_FENCE ".%s.new", h->name, h->token);
        char *prep = dl_join(d->lockdir, leaf, NULL);
        int rc = prep != NULL ? dl_counter_make(dir, prep, d->lockdir_mode, err)
                              : dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        free(prep);
        return rc;
}

static int dir_fence_draw(dirlock *h, unsigned long long *fence, dirlock_error *err)
{
        char *dir = dl_layout_path(dl_dir_of(h)->lockdir, h->name, DL_SUFFIX_FENCE);
        if (dir == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        int rc = DIRLOCK_EIO;
        for (int round = 0; round < 100; round++) {
                unsigned long long n = 0;
                int found = dl_counter_read(dir, &n);
                if (found == -1 && errno == ESTALE) {
                        dl_fs_refresh(dir); /* replaced as we read it (dir_fsops.c): again */
                        continue;
                }
                if (found == -1) {
                        rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot read fence counter '%s'", dir);
                        break;
                }
                if (found == -2) {
                        rc = dl_fail(err, DIRLOCK_EDATA, 0,
                                     "fence counter '%s' holds a name that is no fence (a number past %llu, "
                                     "the largest, or no number): not a counter dirlock wrote; removing it "
                                     "lets fences go on from the clock",
                                     dir, DIRLOCK_FENCE_MAX);
                        break;
                }
                if (found == 0) {
                        rc = fence_counter_make(h, dir, err);
                        if (rc != DIRLOCK_OK)
                                break;
                        /* never DIRLOCK_OK without a fence, even after the last round */
                        rc = dl_fail(err, DIRLOCK_EIO, EAGAIN, "fence counter '%s' keeps moving", dir);
                        continue;
                }
                unsigned long long now = (unsigned long long)(dl_wall_ns() / 1000);
                if (n >= DIRLOCK_FENCE_MAX || now > DIRLOCK_FENCE_MAX) {
                        rc = dl_fail(err, DIRLOCK_EDATA, 0,
                                     n >= DIRLOCK_FENCE_MAX
                                         ? "fence counter '%s' is at %llu, the largest fence: not a counter "
                                           "dirlock wrote; removing it lets fences go on from the clock"
                                         : "no fence for '%s' fits %llu, the largest: the clock is set past "
                                           "it",
                                     dir, DIRLOCK_FENCE_MAX);
                        break;
                }
                unsigned long long next = n + 1 > now ? n + 1 : now;
                int moved = dl_counter_swap(dir, n, next);
                int e = errno;
                if (moved == 0) {
                        /* Step 4: still ours?  Then `next` is this acquisition's. */
                        rc = h->be->check(h, err);
                        if (rc == DIRLOCK_OK)
                                *fence = next;
                        break;
                }
                if (e != ENOENT && e != ESTALE) { /* both: someone advanced it first */
                        rc = dl_fail(err, e == ENOMEM ? DIRLOCK_ENOMEM : DIRLOCK_EIO, e,
                                     "cannot advance fence counter '%s'", dir);
                        break;
                }
                rc = dl_fail(err, DIRLOCK_EIO, EAGAIN, "fence counter '%s' keeps moving", dir);
        }
        free(dir);
        return rc;
}

/* The backend's `fence` entry: h's fence, drawn while h holds its lock
 * (asked before drawing -- not worth it for a lost lock -- and after,
 * step 4). */
static int dir_fence(dirlock *h, unsigned long long *fence, dirlock_error *err)
{
        int rc = h->be->check(h, err);
        return rc != DIRLOCK_OK ? rc : dir_fence_draw(h, fence, err);
}

/* dirlock_inspect: the last fence drawn for lock `name`, 0 when none. */
static void fence_inspect(const char *lockdir, const char *name, double stale_age, dirlock_owner *owner)
{
        (void)stale_age;
        char *dir = dl_layout_path(lockdir, name, DL_SUFFIX_FENCE);
        unsigned long long n = 0;
        int found = dir != NULL ? dl_counter_read(dir, &n) : 0;
        free(dir);
        owner->fence = found == 1 ? n : 0;
}

static const dl_backend fence_entries = {.fence = dir_fence};

static struct dl_dir_module fence_module = {
    .name = "the fence module (lib/fence)",
    .offers = &fence_entries,
    .inspect = fence_inspect,
};
DL_DIR_MODULE(fence_module)
