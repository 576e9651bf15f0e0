/* lockmode.h - the board's lock modes (the configuration's lock_mode),
 * one row each: the mode's name and which lock each step of a page view
 * and of a read-modify-write of the flat log takes, whether the write
 * lock is fenced, and whether posts may go through group commit.  The
 * rows are in lockmode.c; locking.c carries a row out with the dirlock
 * library, config.c parses the names, store_log.c asks whether group
 * commit may run.  A new mode is one enum value and one row.
 *
 *   mode   reads            posts/deletes
 *   none   -                -
 *   wrong  -                read, [delay], exclusive lock, write, release
 *   mkdir  -                exclusive lock, read, [delay], write, release
 *   rw     shared lock      intent lock, read, [delay], upgrade, write, release
 *   flock  flock shared     flock exclusive, read, [delay], write, release */
#ifndef BOARD_LOCKMODE_H
#define BOARD_LOCKMODE_H

#include <stdbool.h>

/* Prefixed: glibc's <fcntl.h> has a LOCK_RW of its own (_GNU_SOURCE). */
enum board_lock_mode { BOARD_LOCK_NONE, BOARD_LOCK_WRONG, BOARD_LOCK_MKDIR, BOARD_LOCK_RW, BOARD_LOCK_FLOCK };
/* How many modes there are: one row each, from 0 up. */
#define BOARD_LOCK_MODES (BOARD_LOCK_FLOCK + 1)

/* A step that takes no lock (otherwise a step's lock is a dirlock_mode). */
#define BOARD_LOCK_NOTHING (-1)

struct board_lock_mode_row {
        const char *name; /* the configuration's lock_mode value */
        /* The locks are flock(2) locks on files in the lock space's
         * directory (dirlock_flock_acquire), not the lock space's own. */
        bool flock;
        /* What a page view holds while it picks the log (store_log.c):
         * a dirlock_mode, or BOARD_LOCK_NOTHING. */
        int read;
        /* What a post or delete holds around its read-modify-write: a
         * dirlock_mode, or BOARD_LOCK_NOTHING. */
        int write;
        /* The write lock is taken only after the read, right before the
         * write ("wrong": too late to keep two writers from reading the
         * same log); otherwise before the read. */
        bool write_after_read;
        /* An intent write lock is upgraded to exclusive before an in-place
         * write starts (readers would see it half written); a rename write
         * upgrades only right before the rename.  Either way it steps back
         * to intent once the write is visible. */
        bool upgrade_before_inplace;
        /* The write lock's fence is drawn when it is taken, and the write
         * admitted by it (fence.h). */
        bool fenced;
        /* The small side files (the post interval's, the failed-delete
         * counts) are kept under named exclusive locks of the mode's kind.
         * Without them, the failed-delete counts still are, under the
         * library's exclusive lock (board_lock_always, locking.h). */
        bool side_locks;
        /* Posts may go through the pending queue (config group_commit,
         * postqueue.h): its leader stores them under its write lock. */
        bool group_commit;
};

/* The row of `mode`.  A value without a row is a bug (the configuration
 * parser admits only modes that have one): it aborts, naming the value. */
const struct board_lock_mode_row *board_lock_mode_row(enum board_lock_mode mode);
/* The name of `mode` (its row's; aborts as board_lock_mode_row does). */
const char *board_lock_mode_name(enum board_lock_mode mode);
/* The mode named `name` into *out: 0, or -1 when no mode has that name. */
int board_lock_mode_parse(const char *name, enum board_lock_mode *out);

#endif
