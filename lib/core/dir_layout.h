/* dir_layout.h - the directory backend's names on disk, in one place, the
 * core's and every module's: the core and the modules build and parse
 * them from here (the builders and parsers of a name that one module
 * alone uses are that module's, in its folder).
 *
 * Lock directory D, lock NAME, T a token (DIRLOCK_TOKEN_LEN lowercase hex
 * digits, 128 random bits drawn for one acquisition).  Every entry is a
 * symbolic link whose target text is an owner record (owner.c).
 *
 * The core's (lib/core):
 *   D/NAME.lock/              the exclusive lock W (dir_exclusive.c);
 *                             empty = free, else it holds exactly:
 *   D/NAME.lock/owner.<T>     its owner entry (holder T)
 *   D/.NAME.<T>.new/          holder-to-be T's prepared lock directory
 *   D/.aside.<T>              a prepared directory being removed (cleanup)
 * The reader-writer module's (lib/rw/dir_rw.c):
 *   D/NAME.readers/r.<T>      a reader that announced itself
 *   D/NAME.readers/a.<T>      a waiting reader admitted by a fair writer
 *   D/NAME.readers/w.<T>      a fair reader waiting for a write phase
 *   D/NAME.up.<T>             intent holder T is upgrading / upgraded
 *   D/NAME.wq/x.<T>           a writer waiting for W (policy writer)
 * The queue module's (lib/fifo/dir_fifo.c):
 *   D/NAME.fifo/t.<SEQ>       a waiter's ticket, SEQ zero-padded decimal
 * The range module's (lib/range/dir_range.c):
 *   D/NAME.ranges/<entry>     range holders and waiters (dir_range.c
 *                             describes the entry names)
 *   D/.NAME.rmeta             the file the ranges' meta-lock flocks
 * The counting-lock module's (lib/permit/dir_permit.c):
 *   D/NAME.permits/           a counting lock:
 *   D/NAME.permits/n<N>/<K>/  permit K (0 <= K < N) of the holders asking
 *                             N permits: a lock directory as NAME.lock
 *                             is, holding owner.<T>
 *   D/NAME.permits/queue/t.<SEQ>  its waiters' tickets (lib/fifo)
 * The deadlock module's (lib/deadlock):
 *   D/.waits/t.<B>.<NS>.<P>.<TID>  the wait register (dir_register.c):
 *                             thread TID of process P (of the host whose
 *                             boot id is B, pid namespace NS) waits
 *   D/.waits/o.<T>            another wait (a pending acquire's, ...)
 *   D/.waits/verdicts/<N>     the deadlock verdict counter
 *                             (dir_deadlock.c, ONE VICTIM; a COUNTER of
 *                             lib/fence/dir_counter.c); kept
 *   D/.waits/.v<T>            the counter being made
 * The fence module's (lib/fence/dir_fence.c):
 *   D/NAME.fence/<N>          the lock's fence counter: one empty file
 *                             named by the last fence drawn
 *   D/.NAME.fence.<T>.new/    a fence counter being made
 * The flock backend's (lib/flock/flock.c):
 *   D/NAME.flock              reserved: the file it locks in a directory
 *                             it shares
 *
 * Names starting with a dot are private to one process (inotify waiters
 * ignore them), but for .waits, which every waiter writes in and nobody
 * needs to be woken by; lock names never start with one
 * (dirlock_name_valid). */
#ifndef DIRLOCK_DIR_LAYOUT_H
#define DIRLOCK_DIR_LAYOUT_H

#include "dirlock.h"

#include <stdbool.h>

#define DL_SUFFIX_LOCK      ".lock"
#define DL_SUFFIX_READERS   ".readers"
#define DL_SUFFIX_WQ        ".wq"
#define DL_SUFFIX_FIFO      ".fifo"
#define DL_SUFFIX_FENCE     ".fence"
#define DL_SUFFIX_RANGES    ".ranges"
#define DL_SUFFIX_RMETA     ".rmeta"
#define DL_SUFFIX_PERMITS   ".permits"
#define DL_PERMITS_GROUP    "n"
#define DL_PERMITS_QUEUE    "queue"
#define DL_WAITS_DIR        ".waits"
#define DL_WAIT_THREAD      't'
#define DL_WAIT_OTHER       'o'
#define DL_WAITS_VERDICTS   "verdicts"
#define DL_WAITS_PREP       ".v"
#define DL_RANGE_SEQ_DIGITS 20
#define DL_FENCE_DIGITS     20
#define DL_INFIX_UP         ".up."
#define DL_OWNER_PREFIX     "owner."
#define DL_ASIDE_PREFIX     ".aside."

/* Leaf sizes with their NUL. */
#define DL_OWNER_LEAF_SIZE (sizeof DL_OWNER_PREFIX - 1 + DIRLOCK_TOKEN_LEN + 1)
#define DL_ENTRY_LEAF_SIZE (2 + DIRLOCK_TOKEN_LEN + 1) /* "r.<T>" */

/* Kinds of entries in D/NAME.readers, D/NAME.wq and D/NAME.fifo. */
enum dl_entry_kind {
        DL_ENTRY_READER = 'r',
        DL_ENTRY_ADMITTED = 'a',
        DL_ENTRY_WAITING = 'w',
        DL_ENTRY_WRITER = 'x',
        DL_ENTRY_TICKET = 't'
};
#define DL_TICKET_DIGITS 20

/* ---- builders: malloc'd paths, NULL when out of memory ------------------ */

/* D/NAME<suffix> (one of the DL_SUFFIX_ names). */
char *dl_layout_path(const char *lockdir, const char *name, const char *suffix);
/* DIR/<kind>.<T> (an entry of the readers, wq or FIFO directories). */
char *dl_layout_entry(const char *dir, enum dl_entry_kind kind, const char *token);
/* LOCK_PATH/owner.<T> */
char *dl_layout_owner_entry(const char *lock_path, const char *token);
/* D/.NAME.<T>.new */
char *dl_layout_prep(const char *lockdir, const char *name, const char *token);
/* D/.aside.<T> */
char *dl_layout_aside(const char *lockdir, const char *token);
/* Put a new token in a path built above that ends with one (an entry,
 * owner.<T>, NAME.up.<T>, .aside.<T>): the same length, so in place. */
void dl_layout_retoken(char *path, const char *token);

/* ---- parsers of leaf names ---------------------------------------------- */

/* DIRLOCK_TOKEN_LEN lowercase hex digits (exactly, when `whole`). */
bool dl_layout_is_token(const char *s, bool whole);
/* "owner.<T>": the token, else NULL. */
const char *dl_layout_owner_token(const char *leaf);
/* "<kind>.<T>": the kind, else 0. */
int dl_layout_entry_kind(const char *leaf);
/* ".NAME.<T>.new" of lock `name` (any lock when NULL): the token, else NULL. */
const char *dl_layout_prep_token(const char *leaf, const char *name);
/* The lock name of a leaf of D that belongs to a lock (NAME.lock,
 * NAME.readers, NAME.wq, NAME.fifo, NAME.ranges, NAME.permits): 1 with
 * name filled,
 * else 0. */
int dl_layout_lock_name(const char *leaf, char name[DIRLOCK_NAME_MAX + 1]);
/* 1 when `leaf` ends with `suffix` after at least one character. */
int dl_layout_has_suffix(const char *leaf, const char *suffix);

#endif
