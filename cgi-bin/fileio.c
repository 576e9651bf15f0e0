/* fileio.c - whole-file reads and writes (see fileio.h). */
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

int file_read_fd(int fd, const char *path, struct buf *out, struct board_error *err)
{
        char chunk[65536];
        for (;;) {
                ssize_t n = read(fd, chunk, sizeof chunk);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return board_fail(err, 500, "cannot read '%s': %s", path, strerror(errno));
                }
                if (n == 0)
                        return 0;
                if (buf_append(out, chunk, (size_t)n) < 0)
                        return board_fail(err, 500, "out of memory reading '%s'", path);
        }
}

int file_read_all(const char *path, struct buf *out, struct board_error *err)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 1;
                int e = errno;
                return board_fail(err, 500, "cannot open '%s': %s%s", path, strerror(e), storage_hint(e));
        }
        int rc = file_read_fd(fd, path, out, err);
        close(fd);
        return rc;
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
                int e = errno;
                board_fail(err, 500, "cannot create '%s': %s%s", tmp.data, strerror(e), storage_hint(e));
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
                board_fail(err, 500, "%s '%s': %s%s", what, tmp.data, strerror(e), storage_hint(e));
                unlink(tmp.data);
                buf_free(&tmp);
                return -1;
        }
        if (commit && commit->check && commit->check(commit->ctx, err) != 0) {
                unlink(tmp.data);
                buf_free(&tmp);
                return -1;
        }
        if (rename(tmp.data, path) < 0) {
                e = errno;
                board_fail(err, 500, "cannot rename '%s' to '%s': %s%s", tmp.data, path, strerror(e),
                           storage_hint(e));
                unlink(tmp.data);
                buf_free(&tmp);
                return -1;
        }
        buf_free(&tmp);
        if (commit && commit->done)
                commit->done(commit->ctx);
        if (fsync_dir_of(path) < 0) {
                e = errno;
                return board_fail(err, 500, "cannot fsync the directory of '%s': %s", path, strerror(e));
        }
        return 0;
}

int file_overwrite_inplace(const char *path, const char *data, size_t len, int chunks, long delay_ms,
                           struct board_error *err)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
                int e = errno;
                return board_fail(err, 500, "cannot open '%s' for writing: %s%s", path, strerror(e),
                                  storage_hint(e));
        }
        if (ftruncate(fd, 0) < 0) {
                int e = errno;
                close(fd);
                return board_fail(err, 500, "cannot truncate '%s': %s%s", path, strerror(e), storage_hint(e));
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
                        return board_fail(err, 500, "cannot write '%s': %s%s (the log is now damaged)", path,
                                          strerror(e), storage_hint(e));
                }
                off += n;
                if (off < len)
                        sleep_ms(delay_ms);
        }
        if (fsync(fd) < 0) {
                int e = errno;
                close(fd);
                return board_fail(err, 500, "cannot fsync '%s': %s", path, strerror(e));
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
        return board_fail(err, 500, "cannot create directory '%s': %s%s", path, strerror(e), storage_hint(e));
}
