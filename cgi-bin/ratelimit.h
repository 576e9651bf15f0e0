/* ratelimit.h - minimum interval between posts from one address, kept in
 * data_dir/ratelimit ("addr TAB seconds" lines).  Callers hold the board's
 * write lock, its "ratelimit" lock, or the SQLite write transaction around
 * check and record (and forget). */
#ifndef BOARD_RATELIMIT_H
#define BOARD_RATELIMIT_H

#include "board_error.h"

/* 0 when `addr` may post now, 1 when it must wait (*retry_after seconds),
 * -1 on error.  interval 0 always allows. */
int ratelimit_check(const char *path, const char *addr, long long now, long interval, long *retry_after,
                    struct board_error *err);

/* ratelimit_check() as the answer to a post: 0 when `addr` may post now,
 * -1 with a 429 (err->retry_after set) when it must wait, or with the
 * error that kept it from checking. */
int ratelimit_admit(const char *path, const char *addr, long long now, long interval,
                    struct board_error *err);

/* Record a post from `addr` at `now`, dropping entries older than
 * `interval`.  Does nothing when interval is 0. */
int ratelimit_record(const char *path, const char *addr, long long now, long interval,
                     struct board_error *err);

/* Take back the post recorded for `addr` at `then` (it failed): its entry
 * is removed when it still says `then`. */
int ratelimit_forget(const char *path, const char *addr, long long then, long interval,
                     struct board_error *err);

#endif
