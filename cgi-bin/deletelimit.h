/* deletelimit.h - failed deletes (wrong passwords) per address and per
 * message, kept in data_dir/delete-failures: one line per failure and key,
 * "KEY TAB seconds", where KEY is "a ADDRESS" or "m NUMBER".  After `max`
 * failures within `window` seconds for either key, a delete is refused
 * (429 with Retry-After) before its password is hashed, so guessing costs
 * the board no yescrypt work and cannot starve posting.  Entries older
 * than the window are dropped whenever the file is rewritten.  Callers
 * hold the board's "deletelimit" lock (locking.h) around record; check
 * reads a file that is only ever replaced whole (rename). */
#ifndef BOARD_DELETELIMIT_H
#define BOARD_DELETELIMIT_H

#include "board_error.h"

/* 0 when `addr` may try to delete message `no` now; 1 when it must wait
 * (*retry_after seconds, err says why, status 429); -1 on error. */
int deletelimit_check(const char *path, const char *addr, long long no, long long now, long max, long window,
                      long *retry_after, struct board_error *err);

/* Count a failed delete of message `no` from `addr` at `now`. */
int deletelimit_record(const char *path, const char *addr, long long no, long long now, long window,
                       struct board_error *err);

#endif
