/* logfile.h - the file of the flat message log, data_dir/messages.log:
 * parse it, read it whole, write it whole (temp + fsync + rename +
 * directory fsync, or in place for the torn-read demonstration).  No
 * locking here: the store over it (store_log.h) takes the locks.
 *
 * Besides one line per message (logrecord.h) the log may end with the
 * board's high-water mark, "#last_no TAB N LF": the highest number ever
 * given, written only when that message is no longer in the file (it was
 * deleted), so that numbers are never given twice.  Invariant: N is above
 * every message number in the file.
 *
 * The log may begin with the highest fence that wrote it, "#fence TAB F"
 * (fence.h): written by every write that holds a lock with fences, kept
 * by those that do not. */
#ifndef BOARD_LOGFILE_H
#define BOARD_LOGFILE_H

#include <stddef.h>

#include "board_error.h"
#include "config.h"
#include "fileio.h"
#include "msglist.h"

/* Parse a whole log; a line that does not parse, or numbers that do not
 * increase, are an error naming `path` and the line number (500).  The
 * mark sets out->last_no. */
int logfile_parse(const char *text, size_t len, const char *path, struct msglist *out,
                  struct board_error *err);

/* The fence line of a log's text: its length (0 without one) and *fence. */
size_t logfile_fence_line(const char *text, size_t len, unsigned long long *fence);

/* The fence recorded in log `path` now (0: none, or no log), read from its
 * first line only.  0, or -1 with a 500 error. */
int logfile_read_fence(const char *path, unsigned long long *fence, struct board_error *err);

/* Read `path` into *out (appended); a missing file is an empty log. */
int logfile_read(const char *path, struct msglist *out, struct board_error *err);

/* Write the newest `cap` messages of `l` as the new log, and the mark
 * when msglist_max_no(l) is above the last of them.  method
 * BOARD_WRITE_RENAME: crash-safe replacement (file_replace: commit->check
 * right before the rename, commit->done right after it);
 * BOARD_WRITE_INPLACE: overwrite in chunks with delay_ms between them
 * (commit->check before the first byte is written, commit->done after the
 * last is synced).  `commit` may be NULL. */
int logfile_write(const char *path, const struct msglist *l, size_t cap, enum board_write_method method,
                  long delay_ms, const struct file_commit *commit, struct board_error *err);

#endif
