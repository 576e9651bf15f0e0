/* deadlock.h - what the deadlock module's files share: a waiter's record
 * (wait_record.c), the wait register of a directory space
 * (dir_register.c) and the deadlock check its waits make
 * (dir_deadlock.c).  The module's one call is dirlock_waiters
 * (dirlock_deadlock.h, deadlock.c); held.c keeps the locks this process
 * holds for the check a thread makes of itself. */
#ifndef DIRLOCK_DEADLOCK_INTERNAL_H
#define DIRLOCK_DEADLOCK_INTERNAL_H

#include "dir.h"
#include "dirlock_deadlock.h"
#include "dirlock_permit.h"

/* ---- waiters' records (wait_record.c) ----------------------------------- */

#define DL_WAIT_RECORD_MAX (DL_RECORD_MAX + DIRLOCK_NAME_MAX + 160)

/* What a waiter waits for, as it records it for others to see. */
typedef struct dl_wait_record {
        char name[DIRLOCK_NAME_MAX + 1]; /* the lock                         */
        int kind;                        /* dirlock_wait_kind                */
        int mode;                        /* dirlock_mode asked               */
        char target;                     /* the backend's letter: what blocks it */
        char id[DIRLOCK_TOKEN_LEN + 1];  /* drawn for this one wait          */
        double lo, hi;                   /* DIRLOCK_WAIT_RANGE               */
        unsigned permits;                /* DIRLOCK_WAIT_PERMIT: N           */
        bool pending;                    /* a pending acquire's: no thread blocked */
        bool told;                       /* its thread is being told DIRLOCK_EDEADLK */
        dl_record who;                   /* the waiter; who.acquired_ns: since */
} dl_wait_record;

/* Text form, NUL-terminated; its length, or -1 if it does not fit. */
int dl_wait_record_format(const dl_wait_record *w, char *buf, size_t size);
/* Parse `len` bytes of text form: 0, or -1. */
int dl_wait_record_parse(const char *buf, size_t len, dl_wait_record *w);

/* ---- the wait register (dir_register.c) ---------------------------------- */

/* The register's names (the table: dir_layout.h; dir_wait_entry.c),
 * malloc'd, NULL when out of memory: D/.waits/t.<B>.<NS>.<P>.<TID>, thread `tid` of the process
 * of boot id `boot_id`, pid namespace `pidns`, pid `pid`; D/.waits/o.<T>;
 * D/.waits/verdicts, and D/.waits/.v<T>. */
char *dl_layout_wait_thread(const char *lockdir, const char *boot_id, unsigned long long pidns, pid_t pid,
                            pid_t tid);
char *dl_layout_wait_other(const char *lockdir, const char *token);
char *dl_layout_verdicts(const char *lockdir);
char *dl_layout_verdicts_prep(const char *lockdir, const char *token);

/* The register's hooks on the directory backend's waits (dir.h, struct
 * dl_dir_waits): h's entry in D/.waits -- a blocking thread's made
 * DL_WAIT_LIST_MS into its wait (WHEN in dir_register.c) -- renewed
 * every quarter of the stale age, and a blocking thread's deadlock checks
 * (DL_DEADLOCK_FIRST_MS and DL_DEADLOCK_SECOND_MS after the wait began,
 * then every DL_DEADLOCK_RECHECK_MS); its waits wake for both
 * (dl_waiter_wake_by). */
extern const struct dl_dir_waits dl_register_waits;

/* A wait's entry and what the register keeps of it (a handle's
 * wait_state, dir.h). */
struct dl_wreg {
        char *path;         /* the entry while it waits, else NULL */
        dl_wait_record rec; /* what it holds                        */
        dl_time renewed;    /* made or last renewed                 */
        dl_time checked;    /* the last deadlock check, or the wait's start */
        bool node;          /* a thread's entry (t.<...>)           */
        unsigned checks;    /* deadlock checks made                 */
        bool waking;        /* the wait wakes for the next (the first two) */
        bool unwritten;     /* path chosen, entry not made yet (WHEN)    */
};

/* Write entry `path` holding `text`: a symlink made aside and renamed
 * onto it, so that a reader sees the old record or the new one, never
 * none (D/.waits made first when missing, mode as the lock directory's,
 * `lockdir_mode`).  0, or -1 with errno.  dir_wait_entry.c. */
int dl_wait_entry_write(const char *path, const char *text, const char *token, unsigned lockdir_mode);
/* Mark h's entry told, or no longer (dir_deadlock.c, ONE VICTIM):
 * rewritten at once, by the same atomic rename.  0, or -1 (not marked:
 * nothing was written, or no entry is made yet). */
int dl_wait_told(dirlock *h, bool told);
/* The waiters of lock `name` (every lock when NULL), longest first; dead
 * waiters' entries are removed on the way.  dirlock_waiters(). */
int dl_waits_list(const char *lockdir, const char *name, dirlock_waiter **out, size_t *count,
                  dirlock_error *err);
/* Their number (0 on error). */
unsigned dl_waits_count(const char *lockdir, const char *name);
/* dirlock_cleanup: dead waiters' entries, and the register when empty. */
void dl_waits_cleanup(const char *lockdir);
/* The names that have waiters, malloc'd array of malloc'd strings. */
int dl_waits_names(const char *lockdir, char ***names, size_t *count);

/* ---- deadlock detection (dir_deadlock.c) ----------------------------------- */

/* When a blocked waiter first checks for deadlock (a wait for a lock in
 * use usually ends sooner: a hand-off takes well under a millisecond on
 * tmpfs), when it checks a second time, and how often it checks again.
 * The first bounds how soon the wait that closes a cycle -- its victim,
 * the youngest -- reports it (100 ms is promised); the second catches a
 * cycle whose victim checked before another member's entry was made (a
 * process slow to run on a busy machine); the rechecks a cycle whose
 * check saw a lock change hands and proved nothing. */
#define DL_DEADLOCK_FIRST_MS   25.0
#define DL_DEADLOCK_SECOND_MS  50.0
#define DL_DEADLOCK_RECHECK_MS 200.0
/* When a blocked thread's wait gets its entry in the register: before
 * its first check (WHEN in dir_register.c).  20 ms: with 16 processes
 * taking turns at a lock with no hold time, a wait lasts about 10 ms,
 * and at 5 ms most waits paid the entry's three directory operations
 * (13 % of the throughput, make bench-core's contended figure). */
#define DL_WAIT_LIST_MS 20.0
/* Whether h's wait (its entry just made, h's record `self`) closes a
 * cycle of waits: DIRLOCK_EDEADLK with the cycle in err, or DIRLOCK_OK
 * (none proven). */
int dl_deadlock_check(dirlock *h, const dl_wait_record *self, dirlock_error *err);

#endif
