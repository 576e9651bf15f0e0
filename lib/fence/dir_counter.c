/* dir_counter.c - a COUNTER in a directory space: a number that only
 * grows, however many processes and hosts advance it at once.  Fences are
 * drawn from one (dir_fence.c), and so are deadlock detection's verdicts
 * (lib/deadlock/dir_deadlock.c, ONE VICTIM).
 *
 * COUNTER.  A directory holding one empty file whose name is a number
 * (DL_FENCE_DIGITS digits, so names sort as numbers): D/NAME.fence/ holds
 * the last fence drawn for lock NAME, for instance.  It is made holding 0 by renaming a
 * prepared directory into place (of two makers exactly one rename
 * succeeds), never made again while it exists, and only ever moves by
 * rename(N, M), which succeeds only while it still holds N: a
 * compare-and-swap on the name (ENOENT: someone else moved it first).
 */
#include "dir_counter.h"
#include "dir_fsops.h"
#include "fence.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
