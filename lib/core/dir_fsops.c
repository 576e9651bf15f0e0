/* dir_fsops.c - the directory backend's system calls on paths.  Each
 * behaves as its system call, except on a network filesystem, where the
 * network-filesystem module makes them say what happened: an ESTALE is
 * looked at again after the module refreshed the path (dl_fs_refresh), a
 * listing tells its end from an error (dl_fs_next), and the presence of
 * an entry that decides something is asked of a listing (dl_fs_present,
 * dl_fs_open_dir_sure).  Why each: ESTALE, LISTINGS, NEGATIVE LOOKUPS and
 * STALE NAMES in lib/netfs/netfs_fsops.c. */
#include "dir_fsops.h"
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *dl_split_dir(const char *path, char dir[PATH_MAX])
{
        const char *slash = strrchr(path, '/');
        if (slash == NULL || slash == path || (size_t)(slash - path) >= PATH_MAX)
                return NULL;
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
        return slash + 1;
}

/* Run CALL (an expression that is -1 on failure) until it succeeds or
 * fails otherwise than with ESTALE, refreshing PATH and PATH2 (may be
 * NULL) between tries. */
#define LOOK_AGAIN(rc, CALL, PATH, PATH2)                                                                    \
        do {                                                                                                 \
                for (int try_ = 0;; try_++) {                                                                \
                        rc = (CALL);                                                                         \
                        if (rc != -1 || errno != ESTALE || try_ == DL_ESTALE_TRIES)                          \
                                break;                                                                       \
                        dl_fs_refresh(PATH);                                                                 \
                        if ((PATH2) != NULL)                                                                 \
                                dl_fs_refresh(PATH2);                                                        \
                        errno = ESTALE;                                                                      \
                }                                                                                            \
        } while (0)

int dl_fs_unlink(const char *path)
{
        int rc;
        LOOK_AGAIN(rc, unlink(path), path, (const char *)NULL);
        return rc;
}

int dl_fs_rmdir(const char *path)
{
        int rc;
        LOOK_AGAIN(rc, rmdir(path), path, (const char *)NULL);
        return rc;
}

int dl_fs_rename(const char *from, const char *to)
{
        int rc;
        LOOK_AGAIN(rc, rename(from, to), from, to);
        return rc;
}

int dl_fs_mkdir_in(const char *path, unsigned lockdir_mode)
{
        int rc;
        LOOK_AGAIN(rc, dl_mkdir_in(path, lockdir_mode), path, (const char *)NULL);
        return rc;
}

int dl_fs_symlink(const char *target, const char *path)
{
        int rc;
        LOOK_AGAIN(rc, symlink(target, path), path, (const char *)NULL);
        return rc;
}

int dl_fs_lstat(const char *path, struct stat *st)
{
        int rc;
        LOOK_AGAIN(rc, lstat(path, st), path, (const char *)NULL);
        return rc;
}

ssize_t dl_fs_readlink(const char *path, char *buf, size_t size)
{
        ssize_t rc;
        LOOK_AGAIN(rc, readlink(path, buf, size), path, (const char *)NULL);
        return rc;
}

int dl_fs_stat(const char *path, struct stat *st)
{
        int rc;
        LOOK_AGAIN(rc, stat(path, st), path, (const char *)NULL);
        return rc;
}

int dl_fs_touch(const char *path)
{
        int rc;
        LOOK_AGAIN(rc, utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW), path, (const char *)NULL);
        return rc;
}

int dl_fs_open_dir(const char *path)
{
        int fd;
        LOOK_AGAIN(fd, open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), path, (const char *)NULL);
        return fd;
}

DIR *dl_fs_opendir(const char *path)
{
        /* opendir, not open + fdopendir: glibc's opendir opens with
         * O_DIRECTORY | O_CLOEXEC itself, where fdopendir costs two fcntl
         * calls more on every listing (a waiter lists its queue at each
         * step). */
        DIR *d;
        for (int try = 0;; try++) {
                d = opendir(path);
                if (d != NULL || errno != ESTALE || try == DL_ESTALE_TRIES)
                        return d;
                dl_fs_refresh(path);
                errno = ESTALE;
        }
}

int dl_fs_next(DIR *d, struct dirent **de)
{
        errno = 0;
        *de = readdir(d);
        if (*de != NULL)
                return 1;
        return errno == 0 ? 0 : -1;
}

/* One listing of the directory of `path` and `other` (NULL, or a path
 * in the same directory) looking for their last names (for
 * dl_fs_present and dl_fs_present2): whether `path` is listed, and
 * *other_found whether `other` is; -1 with errno ESTALE when the
 * directory was replaced as we read it. */
static int listed_with(const char *path, const char *other, int *other_found)
{
        char dir[PATH_MAX];
        const char *name = dl_split_dir(path, dir);
        size_t dir_len = name != NULL ? (size_t)(name - path) : 0; /* with its '/' */
        if (name == NULL ||
            (other != NULL && (strncmp(other, path, dir_len) != 0 || strchr(other + dir_len, '/')))) {
                errno = EINVAL;
                return -1;
        }
        const char *other_name = other != NULL ? other + dir_len : NULL;
        int found = 0, found_other = 0;
        if (other_found != NULL)
                *other_found = 0;
        DIR *d = dl_fs_opendir(dir);
        if (d == NULL)
                return errno == ENOENT ? 0 : -1;
        struct dirent *de;
        int more = 0;
        while ((!found || (other_name != NULL && !found_other)) && (more = dl_fs_next(d, &de)) > 0) {
                found |= strcmp(de->d_name, name) == 0;
                found_other |= other_name != NULL && strcmp(de->d_name, other_name) == 0;
        }
        int e = errno;
        closedir(d);
        errno = e;
        if (more < 0 && !(found && (other_name == NULL || found_other)))
                return -1;
        if (other_found != NULL)
                *other_found = found_other;
        return found;
}

static int listed(const char *path)
{
        return listed_with(path, NULL, NULL);
}

int dl_fs_open_dir_sure(const char *path, bool network)
{
        int fd = dl_fs_open_dir(path);
        for (int try = 0; fd < 0 && errno == ENOENT && network; try++) {
                int present = dl_fs_present(path, true); /* the listing also drops a cached "absent" */
                if (present <= 0) {
                        if (present == 0)
                                errno = ENOENT;
                        return -1;
                }
                if (try == DL_ESTALE_TRIES) {
                        errno = ESTALE; /* listed, yet not to be opened: changing */
                        return -1;
                }
                fd = dl_fs_open_dir(path);
        }
        return fd;
}

int dl_fs_present2(const char *path, const char *other, int *other_present)
{
        int rc;
        LOOK_AGAIN(rc, listed_with(path, other, other_present), path, (const char *)NULL);
        return rc;
}

int dl_fs_present(const char *path, bool ask_server)
{
        if (!ask_server) {
                struct stat st;
                if (dl_fs_lstat(path, &st) == 0)
                        return 1;
                return errno == ENOENT ? 0 : -1;
        }
        int rc;
        LOOK_AGAIN(rc, listed(path), path, (const char *)NULL);
        return rc;
}
