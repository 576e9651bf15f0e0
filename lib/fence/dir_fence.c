/* dir_fence.c - fences in a directory space (dirlock_fence, docs/fencing.md),
 * and the counter they are drawn from, which deadlock detection's verdict
 * counter (deadlock.c, ONE VICTIM) is too.
 *
 * COUNTER.  A directory holding one empty file whose name is a number
 * (DL_FENCE_DIGITS digits, so names sort as numbers): D/NAME.fence/ holds
 * the last fence drawn for lock NAME.  It is made holding 0 by renaming a
 * prepared directory into place (of two makers exactly one rename
 * succeeds), never made again while it exists, and only ever moves by
 * rename(N, M), which succeeds only while it still holds N: a
 * compare-and-swap on the name (ENOENT: someone else moved it first).
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
#include "dir.h"
#include "fsops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dl_counter_read(const char *dir, unsigned long long *n)
{
        DIR *d = dl_fs_opendir(dir);
        if (d == NULL)
                return errno == ENOENT ? 0 : -1;
        int found = 0, more;
        bool past = false, other = false;
        struct dirent *de;
        while ((more = dl_fs_next(d, &de)) > 0) {
                const char *p = de->d_name;
                if (strcmp(p, ".") == 0 || strcmp(p, "..") == 0)
                        continue;
                unsigned long long v = 0;
                int r = strlen(p) == DL_FENCE_DIGITS ? dl_fence_parse(p, DL_FENCE_DIGITS, &v) : 0;
                if (r < 0) {
                        past = true;
                } else if (r == 0) {
                        other = true;
                } else if (!found || v > *n) {
                        *n = v;
                        found = 1;
                }
        }
        int e = errno;
        closedir(d);
        errno = e;
        if (more < 0)
                return -1; /* a listing cut short is no answer */
        if (past || (other && !found))
                return -2;
        return found;
}

static char *counter_entry(const char *dir, unsigned long long n)
{
        char leaf[DL_FENCE_DIGITS + 1];
        snprintf(leaf, sizeof leaf, "%0*llu", DL_FENCE_DIGITS, n);
        return dl_join(dir, leaf, NULL);
}

int dl_counter_make(const char *dir, const char *prep, unsigned lockdir_mode, dirlock_error *err)
{
        char *zero = counter_entry(prep, 0);
        int rc = DIRLOCK_OK;
        if (zero == NULL) {
                rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        } else if (dl_fs_mkdir_in(prep, lockdir_mode) != 0) {
                rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot create '%s'", prep);
        } else {
                int fd = open(zero, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
                if (fd < 0 || close(fd) != 0) {
                        rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot create '%s'", zero);
                } else if (dl_fs_rename(prep, dir) != 0 && errno != ENOTEMPTY && errno != EEXIST) {
                        rc = dl_fail(err, DIRLOCK_EIO, errno, "cannot create counter '%s'", dir);
                }
        }
        free(zero);
        dl_counter_prep_remove(prep); /* still there when another maker won */
        return rc;
}

void dl_counter_prep_remove(const char *prep)
{
        char *zero = counter_entry(prep, 0);
        if (zero != NULL)
                dl_fs_unlink(zero);
        free(zero);
        dl_fs_rmdir(prep);
}

int dl_counter_swap(const char *dir, unsigned long long from, unsigned long long to)
{
        char *a = counter_entry(dir, from), *b = counter_entry(dir, to);
        int rc = a != NULL && b != NULL ? dl_fs_rename(a, b) : -1;
        int e = a != NULL && b != NULL ? errno : ENOMEM;
        free(a);
        free(b);
        errno = e;
        return rc;
}

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

static int dir_fence_draw(dirlock *h, dl_dir_held_fn held, unsigned long long *fence, dirlock_error *err)
{
        char *dir = dl_layout_path(dl_dir_of(h)->lockdir, h->name, DL_SUFFIX_FENCE);
        if (dir == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        int rc = DIRLOCK_EIO;
        for (int round = 0; round < 100; round++) {
                unsigned long long n = 0;
                int found = dl_counter_read(dir, &n);
                if (found == -1 && errno == ESTALE) {
                        dl_fs_refresh(dir); /* replaced as we read it (fsops.c): again */
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
                        rc = held(h, err);
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

int dl_dir_fence(dirlock *h, dl_dir_held_fn held, unsigned long long *fence, dirlock_error *err)
{
        int rc = held(h, err); /* not worth drawing for a lost lock */
        return rc != DIRLOCK_OK ? rc : dir_fence_draw(h, held, fence, err);
}

unsigned long long dl_dir_fence_last(const char *lockdir, const char *name)
{
        char *dir = dl_layout_path(lockdir, name, DL_SUFFIX_FENCE);
        unsigned long long n = 0;
        int found = dir != NULL ? dl_counter_read(dir, &n) : 0;
        free(dir);
        return found == 1 ? n : 0;
}
