/* locking.h - the board's lock modes mapped onto the dirlock library.  The
 * board has no lock logic of its own; this file only chooses the calls.
 *
 *   mode   reads            posts/deletes
 *   none   -                -
 *   wrong  -                read, [delay], exclusive lock, write, release
 *   mkdir  -                exclusive lock, read, [delay], write, release
 *   rw     shared lock      intent lock, read, [delay], upgrade, write, release
 *   flock  flock shared     flock exclusive, read, [delay], write, release
 *
 * Lock name "messages" in data_dir/locks. */
#ifndef BOARD_LOCKING_H
#define BOARD_LOCKING_H

#include "berr.h"
#include "config.h"

struct dirlock;

struct board_lock {
        const struct board_config *cfg;
        struct dirlock *handle; /* NULL when nothing is held */
};

#define BOARD_LOCK_NAME "messages"

/* Lock for reading the log (may hold nothing, per mode). */
int board_lock_read(const struct board_config *cfg, struct board_lock *lk, struct berr *err);
/* Lock taken before reading in a read-modify-write. */
int board_lock_write_begin(const struct board_config *cfg, struct board_lock *lk, struct berr *err);
/* Step between reading and writing: "wrong" takes its lock here, "rw"
 * upgrades intent to exclusive. */
int board_lock_write_commit(struct board_lock *lk, struct berr *err);
/* 0 while the lock is still ours (or nothing is held); 503 when lost. */
int board_lock_check(struct board_lock *lk, struct berr *err);
/* Release whatever is held; DIRLOCK_ELOST here is an error (500). */
int board_lock_release(struct board_lock *lk, struct berr *err);

#endif
