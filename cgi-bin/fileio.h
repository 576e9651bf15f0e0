/* fileio.h - whole-file reads and crash-safe replacement of a file
 * (temp file, fsync, rename, directory fsync). */
#ifndef BOARD_FILEIO_H
#define BOARD_FILEIO_H

#include <stddef.h>

#include "board_error.h"
#include "buf.h"

/* Read all of `path` into *out (appended).  Returns 1 when the file does
 * not exist, 0 when read, -1 on error (500, message names the path). */
int file_read_all(const char *path, struct buf *out, struct board_error *err);

/* Called after the temp file is complete and synced, right before the
 * rename; a non-zero return cancels the replacement. */
typedef int (*file_commit_check)(void *ctx, struct board_error *err);

/* Replace `path` with `len` bytes at `data`: write `path.tmp.<pid>.<rand>`
 * in the same directory, fsync, run `check` (may be NULL), rename over
 * `path`, fsync the directory.  On any failure the temp file is removed and
 * `path` is left as it was. */
int file_replace(const char *path, const char *data, size_t len, int mode, file_commit_check check, void *ctx,
                 struct board_error *err);

/* Overwrite `path` in place (truncate, then write in `chunks` pieces with
 * `delay_ms` between them, then fsync).  Not crash-safe: only for showing
 * torn reads. */
int file_overwrite_inplace(const char *path, const char *data, size_t len, int chunks, long delay_ms,
                           struct board_error *err);

/* 1 when `name` is a temp file "<anything>.tmp.<pid>.<16 hex>" whose
 * writer (pid) is gone: a writer killed before its rename left it.  A live
 * writer's temp file is never reported (its pid exists), so removing what
 * this names is safe with or without a lock. */
int temp_name_is_dead(const char *name);

/* Sleep `ms` milliseconds, resuming after signals. */
void sleep_ms(long ms);

/* Fill buf with `n` random bytes (getrandom). */
int random_bytes(void *buf, size_t n, struct board_error *err);

/* Lower-case hex of n bytes into out (2n+1 bytes). */
void hex_encode(const unsigned char *in, size_t n, char *out);

/* Create directory `path` (mode 0700) unless it exists. */
int ensure_dir(const char *path, struct board_error *err);

/* HTTP status for a failed system call: 500 for everything, with a message
 * that says what to do for the usual storage failures. */
const char *storage_hint(int sys_errno);

#endif
