/* fileio.c - whole-file reads and writes (see fileio.h).
 *
 * On a network filesystem a file another client replaced (the log, after
 * another host's post) answers ESTALE to an open() through a name this
 * client still maps to the old file, and ESTALE or ENOENT (GlusterFS) to
 * a read() of a descriptor opened on it: "it changed under us".  A read looks again: it asks the
 * server about the name (statx AT_STATX_FORCE_SYNC, which makes the
 * client drop what it remembered, as lib/dir/fsops.c does for the locks)
 * and opens and reads the file now there, a few times at most.  What is
 * left of ESTALE after that, and a storage out of reach (ENOTCONN...),
 * is a 503 (board_fail_storage), not a 500: nothing is wrong with the
 * request, and a retry may get past it. */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "delay.h"
#include "tempname.h"

/* How many times a read of a replaced file is started again: after
 * 1 ms, 2 ms, ... (a file that others keep replacing, as on a board
 * without a lock, may be replaced again between a look and the open). */
#define STALE_TRIES 8

bool replaced_under_read(int sys_errno)
{
        /* A local filesystem never fails a read with either. */
        return sys_errno == ESTALE || sys_errno == ENOENT;
}

void file_refresh(const char *path, int try)
{
        sleep_ms(1L << (try < 8 ? try : 8));
        struct statx sx;
        char *copy = strdup(path);
        if (copy != NULL) {
                (void)statx(AT_FDCWD, dirname(copy), AT_STATX_FORCE_SYNC, STATX_TYPE | STATX_INO, &sx);
                free(copy);
        }
        (void)statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC, STATX_TYPE | STATX_INO, &sx);
}

int file_open_read(const char *path)
{
        for (int try = 0;; try++) {
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd >= 0 || errno != ESTALE || try == STALE_TRIES)
                        return fd;
                file_refresh(path, try);
        }
}

int file_read_fd(int fd, const char *path, struct buf *out, struct board_error *err)
{
        char chunk[65536];
        for (;;) {
                ssize_t n = read(fd, chunk, sizeof chunk);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int e = errno;
                        board_fail_storage(err, e, "cannot read '%s'", path);
                        errno = e; /* replaced_under_read(): the caller may open it again */
                        return -1;
                }
                if (n == 0)
                        return 0;
                if (buf_append(out, chunk, (size_t)n) < 0)
                        return board_fail(err, 500, "out of memory reading '%s'", path);
        }
}

int file_read_all(const char *path, struct buf *out, struct board_error *err)
{
        size_t kept = out->len;
        for (int try = 0;; try++) {
                int fd = file_open_read(path);
                if (fd < 0) {
                        if (errno == ENOENT)
                                return 1;
                        return board_fail_storage(err, errno, "cannot open '%s'", path);
                }
                int rc = file_read_fd(fd, path, out, err);
                int e = errno;
                close(fd);
                if (rc == 0 || !replaced_under_read(e) || try == STALE_TRIES)
                        return rc;
                out->len = kept; /* replaced as we read it: read the one there now */
                file_refresh(path, try);
        }
}

int write_all(int fd, const void *data, size_t len)
{
        const char *p = data;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

static int fsync_dir_of(const char *path)
{
        char *copy = strdup(path);
        if (!copy)
                return -1;
        int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        free(copy);
        if (fd < 0)
                return -1;
        int rc = fsync(fd);
        int e = errno;
        close(fd);
        errno = e;
        /* Some file systems refuse fsync on directories; that is not a
         * failure of the write itself. */
        if (rc < 0 && (errno == EINVAL || errno == EBADF))
                return 0;
        return rc;
}

int file_replace(const char *path, const char *data, size_t len, int mode, const struct file_commit *commit,
                 struct board_error *err)
{
        temp_remove_dead_beside(path);
        struct buf tmp = BUF_INIT;
        if (temp_name_make(path, NULL, &tmp, err) < 0) {
                buf_free(&tmp);
                return -1;
        }
        int fd = open(tmp.data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd < 0) {
                board_fail_storage(err, errno, "cannot create '%s'", tmp.data);
                buf_free(&tmp);
                return -1;
        }
        const char *what = NULL;
        if (write_all(fd, data, len) < 0)
                what = "cannot write";
        else if (fsync(fd) < 0)
                what = "cannot fsync";
        int e = errno;
        if (close(fd) < 0 && !what) {
                what = "cannot close";
                e = errno;
        }
        if (what) {
                board_fail_storage(err, e, "%s '%s'", what, tmp.data);
                unlink(tmp.data);
                buf_free(&tmp);
                return -1;
        }
        if (commit && commit->check && commit->check(commit->ctx, err) != 0) {
                unlink(tmp.data);
                buf_free(&tmp);
                return -1;
        }
        int renamed;
        for (int try = 0; (renamed = rename(tmp.data, path)) < 0 && errno == ESTALE && try < STALE_TRIES;
             try++)
                file_refresh(path, try); /* `path` replaced by another client: name it again */
        if (renamed < 0) {
                board_fail_storage(err, errno, "cannot rename '%s' to '%s'", tmp.data, path);
                unlink(tmp.data);
                buf_free(&tmp);
                return -1;
        }
        buf_free(&tmp);
        if (commit && commit->done)
                commit->done(commit->ctx);
        /* The new content is in place and will be read: whatever happens
         * now, the change was made, and an error answer would have the
         * client make it twice.  A directory that cannot be synced is
         * reported on stderr (the server's error log), not to the client. */
        if (fsync_dir_of(path) < 0)
                fprintf(stderr, "board: '%s' was replaced, but its directory cannot be synced: %s\n", path,
                        strerror(errno));
        return 0;
}

int file_overwrite_inplace(const char *path, const char *data, size_t len, int chunks, long delay_ms,
                           struct board_error *err)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                return board_fail_storage(err, errno, "cannot open '%s' for writing", path);
        if (ftruncate(fd, 0) < 0) {
                int e = errno;
                close(fd);
                return board_fail_storage(err, e, "cannot truncate '%s'", path);
        }
        if (chunks < 1)
                chunks = 1;
        size_t step = len / (size_t)chunks + 1;
        size_t off = 0;
        while (off < len) {
                size_t n = len - off < step ? len - off : step;
                if (write_all(fd, data + off, n) < 0) {
                        int e = errno;
                        close(fd);
                        return board_fail_storage(err, e, "cannot write '%s' (the log is now damaged)", path);
                }
                off += n;
                if (off < len)
                        sleep_ms(delay_ms);
        }
        if (fsync(fd) < 0) {
                int e = errno;
                close(fd);
                return board_fail_storage(err, e, "cannot fsync '%s'", path);
        }
        close(fd);
        return 0;
}

int ensure_dir(const char *path, struct board_error *err)
{
        /* 0700: the log holds password hashes, ratelimit addresses. */
        if (mkdir(path, 0700) == 0 || errno == EEXIST)
                return 0;
        int e = errno;
        return board_fail_storage(err, e, "cannot create directory '%s'", path);
}
