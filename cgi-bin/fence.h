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
 * (logfile.h).  The comparison and the rename that makes the new log
 * visible must be one step: the late writer does not hold the board's
 * lock any more, so that lock cannot serialise them.  The gate does:
 *   1. fence_gate_enter() takes an exclusive flock(2) on
 *      data_dir/fence.lock (the store's own short lock, held only from
 *      here to the rename: no stale age, released by the kernel when its
 *      holder dies; on NFS the server's lock manager serves it);
 *   2. it reads the fence recorded in the log now (its first line) and
 *      compares: a lower write fence is refused (503);
 *   3. the caller renames its new log (recording its fence) into place;
 *   4. fence_gate_leave() releases the flock.
 * Every rename of the log happens in such a step, so each compares with
 * the log it replaces: a late writer either renames before its successor
 * compares (and the successor, with a higher fence, writes over it as it
 * would anyway: nothing the successor acknowledged is lost) or compares
 * after the successor's rename and is refused.
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
 * -1 with 503 (a lower fence: refused) or 500 (the gate's file). */
int fence_gate_enter(struct fence_gate *g, const char *data_dir, const char *log_path,
                     unsigned long long mine, struct board_error *err);

/* Step 4; harmless on a gate not entered. */
void fence_gate_leave(struct fence_gate *g);

#endif
