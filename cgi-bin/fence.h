/* fence.h - fencing tokens in the board's stores: the one place where a
 * write's fence is compared with the highest fence that wrote the store
 * (docs/fencing.md).
 *
 * Every write under a lock with fences (mkdir and rw modes, in a lock
 * directory or on a Redis server: not flock, and no lock at all in none
 * and wrong) carries the fence of its acquisition (board_lock.fence,
 * drawn right after the lock was taken).  The store records the highest
 * fence that wrote it and refuses a write with a lower one: 503, nothing
 * written.  That is what stops a holder whose lock was broken while it
 * was stopped (SIGSTOP, a host cut off from the lock server) from writing
 * over its successor's work when it runs again, a window that
 * dirlock_check() right before the write narrows but cannot close.
 *
 * Invariant: the fence recorded in the store never decreases, and no write
 * with a fence below it ever becomes visible.
 *
 * The flat log (store_log.c) records its fence in its first line
 * (logfile.h), and every write of it is a read-modify-write: the whole
 * log read, changed, written to a new file and renamed into place.  A
 * late writer does not hold the board's lock any more, so that lock
 * cannot serialise it with its successor; the store's own short lock,
 * an exclusive flock(2) on data_dir/fence.lock (held for a moment, no
 * stale age, released by the kernel when its holder dies; on NFS the
 * server's lock manager serves it), does.  Its file holds the highest
 * fence announced.  A holder stopped inside that moment holds every
 * writer until it runs again, since breaking the gate would let it
 * rename after its successor read: so each wait for the gate (steps 0
 * and 1) lasts at most the board's lock_timeout (1 s at least), then the
 * write gets a 503.
 *   0. fence_announce(), before the writer reads the log: under the
 *      flock, a fence below the one announced is refused (503), else it
 *      becomes the one announced;
 *   1. fence_gate_enter() takes the flock again, right before the rename;
 *   2. it compares the write's fence with the highest of the log's and
 *      the announced one: a lower write fence is refused (503);
 *   3. the caller renames its new log (recording its fence) into place
 *      (or, with write_method = inplace, writes it over the old one:
 *      the gate is held for the whole write);
 *   4. fence_gate_leave() releases the flock.
 * Every rename of the log happens in such a step, and every read that a
 * write is made from after step 0.  So a late writer either renames
 * before its successor announces -- and the successor reads a log with
 * the late write in it, and keeps it -- or comes to its gate after that
 * and is refused.  Step 0 is what makes the read safe: without it a late
 * writer could rename between its successor's read and its successor's
 * gate (the log still recording an older fence), be told its post was
 * stored, and then be written over by a log read before it.
 *
 * The SQLite store (store_sqlite.c) needs no gate: it compares and
 * records in the same transaction as its change (fence_admit there). */
#ifndef BOARD_FENCE_H
#define BOARD_FENCE_H

#include "board_error.h"

struct fence_gate {
        int fd; /* the flock'd data_dir/fence.lock, -1 when not entered */
};

#define FENCE_GATE_INIT                                                                                      \
        {                                                                                                    \
                -1                                                                                           \
        }

/* Step 2's comparison: 0 when a write with fence `mine` may replace a
 * store that records `recorded` (mine >= recorded; 0 is "no fence" and
 * is never compared), else -1 with a 503. */
int fence_admit(unsigned long long recorded, unsigned long long mine, struct board_error *err);

/* Steps 1 and 2 for the flat log `log_path` in directory `data_dir`: 0
 * with the gate held (leave it after the rename, whatever happened), or
 * -1 with 503 (a lower fence: refused; or the gate stayed held for
 * `wait_s` seconds, 1 at least) or 500 (the gate's file). */
int fence_gate_enter(struct fence_gate *g, const char *data_dir, const char *log_path,
                     unsigned long long mine, double wait_s, struct board_error *err);

/* Step 0 for a writer with fence `mine` about to read the flat log in
 * `data_dir`: 0 (announced; and when `mine` is 0, nothing to announce),
 * or -1 with 503 (a higher fence was announced: the lock was taken over;
 * or the gate stayed held for `wait_s` seconds, 1 at least) or with the
 * gate file's error (it cannot be read or written: 500 or
 * 503 as board_fail_storage() words it; it holds something else than a
 * fence: 500).  Nothing is read or written after a -1. */
int fence_announce(const char *data_dir, unsigned long long mine, double wait_s, struct board_error *err);

/* Step 4; harmless on a gate not entered. */
void fence_gate_leave(struct fence_gate *g);

#endif
