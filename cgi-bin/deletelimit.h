/* deletelimit.h - failed deletes (wrong passwords) per address and per
 * message, kept in data_dir/delete-failures: one line per attempt and key,
 * "KEY TAB seconds", where KEY is "a ADDRESS" or "m NUMBER".
 *
 * An attempt is counted before its password is hashed (reserve) and taken
 * back when the password was right, or when nothing was hashed after all
 * (take_back); a wrong one stays counted.  With `max` attempts counted
 * within `window` seconds for either key -- failures, and attempts still
 * being hashed -- a delete is refused (429 with Retry-After) before its
 * password is hashed.  So at most `max` passwords per key are hashed in a
 * window however many requests come at once: guessing costs the board
 * little yescrypt work and cannot starve posting.  Entries older than the
 * window are dropped whenever the file is rewritten (temp + rename).
 * Callers hold the board's "deletelimit" lock (locking.h) around reserve
 * and take_back, read-modify-writes of the file; check only reads a file
 * that is only ever replaced whole. */
#ifndef BOARD_DELETELIMIT_H
#define BOARD_DELETELIMIT_H

#include "board_error.h"

/* Whether `addr` may try to delete message `no` now, without counting:
 * 0 yes, 1 no (as reserve), -1 on error.  A look without the lock that
 * refuses most guesses of a flood cheaply; only reserve decides. */
int deletelimit_check(const char *path, const char *addr, long long no, long long now, long max, long window,
                      long *retry_after, struct board_error *err);

/* Count an attempt of `addr` to delete message `no` at `now`: 0 when it
 * may go on (counted); 1 when `max` attempts are counted already for the
 * address or the message (*retry_after seconds, err says why, status
 * 429; nothing counted); -1 on error (nothing counted).  0 without
 * counting when max or window is 0 (no limit). */
int deletelimit_reserve(const char *path, const char *addr, long long no, long long now, long max,
                        long window, long *retry_after, struct board_error *err);

/* Take back the attempt deletelimit_reserve() counted with the same
 * addr, no and now (one entry of each key at `now`; entries are all
 * alike, so which one does not matter). */
int deletelimit_take_back(const char *path, const char *addr, long long no, long long now, long window,
                          struct board_error *err);

#endif
