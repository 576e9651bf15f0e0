/* fileio.h - whole files: reading one, replacing one crash-safely (temp
 * file, fsync, rename, directory fsync), overwriting one in place (the
 * torn-read demonstration), and making the directories they live in. */
#ifndef BOARD_FILEIO_H
#define BOARD_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

#include "board_error.h"
#include "buf.h"

/* Read all of `path` into *out (appended).  Returns 1 when the file does
 * not exist, 0 when read, -1 on error (500, or 503 when the storage is
 * out of reach: board_fail_storage; message names the path).  A file
 * replaced as it is opened or read is opened and read again (fileio.c). */
int file_read_all(const char *path, struct buf *out, struct board_error *err);

/* open(path, O_RDONLY), opened again after asking the server about `path`
 * when a network filesystem says ESTALE (fileio.c). */
int file_open_read(const char *path);
/* Before try `try` + 1 of a read or rename that met a replaced file
 * (fileio.c): nap 2^try ms, then make the filesystem's client ask the
 * server about `path` and its directory. */
void file_refresh(const char *path, int try);

/* Read what is left of open file `fd` (named `path` in errors) into *out
 * (appended); the descriptor stays open.  0, or -1 (500 or 503) with
 * errno kept (replaced_under_read(): open it again). */
int file_read_fd(int fd, const char *path, struct buf *out, struct board_error *err);
/* Whether a read failed with `sys_errno` because another client of a
 * network filesystem replaced the file (ESTALE, or ENOENT on GlusterFS):
 * the file now at its name is to be read instead. */
bool replaced_under_read(int sys_errno);

/* Write all `len` bytes at `data` to `fd`, resuming after signals and
 * short writes.  0, or -1 with errno set. */
int write_all(int fd, const void *data, size_t len);

/* The caller's part in a replacement (file_replace).  `check` runs after
 * the temp file is complete and synced, right before the rename; a
 * non-zero return cancels the replacement.  `done` runs right after the
 * rename made the new content visible, before the directory is synced
 * (what readers need is done; what a crash needs is not yet).  Either may
 * be NULL. */
struct file_commit {
        int (*check)(void *ctx, struct board_error *err);
        void (*done)(void *ctx);
        void *ctx;
};

/* Replace `path` with `len` bytes at `data`: write a temp file beside it
 * (tempname.h), fsync, run commit->check, rename over `path`, run
 * commit->done, fsync the directory (`commit` may be NULL).  On a failure
 * before the rename the temp file is removed and `path` is left as it
 * was; once the rename is made it succeeds (a directory that cannot be
 * synced then is reported on stderr). */
int file_replace(const char *path, const char *data, size_t len, int mode, const struct file_commit *commit,
                 struct board_error *err);

/* Overwrite `path` in place (truncate, then write in `chunks` pieces with
 * `delay_ms` between them, then fsync).  Not crash-safe: only for showing
 * torn reads. */
int file_overwrite_inplace(const char *path, const char *data, size_t len, int chunks, long delay_ms,
                           struct board_error *err);

/* Create directory `path` (mode 0700) unless it exists. */
int ensure_dir(const char *path, struct board_error *err);

#endif
