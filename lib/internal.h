/* internal.h - what the library's files share and callers never see: the
 * handle's layout, error helpers, paths, owner records, clocks, waiting,
 * and the exclusive-lock primitive the reader-writer layer builds on. */
#ifndef DIRLOCK_INTERNAL_H
#define DIRLOCK_INTERNAL_H

#include "dirlock.h"

#include <stdbool.h>
#include <time.h>

/* ---- the handle -------------------------------------------------------- */

enum dl_kind { DL_KIND_DIR = 0, DL_KIND_FLOCK };

struct dl_rw; /* reader-writer state, owned by rwlock.c */

struct dirlock {
        int kind;             /* enum dl_kind                                 */
        int mode;             /* dirlock_mode currently held                  */
        dirlock_options opts; /* as given at acquire, normalised              */
        pid_t pid;            /* process that acquired; others may not touch  */
        unsigned holds;       /* reentrant hold count (>= 1 while held)       */
        bool excl_held;       /* we hold <name>.lock                          */
        int fd;               /* DL_KIND_FLOCK: the locked file, else -1      */
        char name[DIRLOCK_NAME_MAX + 1];
        char token[33];                   /* 128-bit random, hex: names our entries       */
        char *lockdir;                    /* absolute path of the lock directory          */
        unsigned lockdir_mode;            /* its st_mode: new directories in it follow it */
        unsigned long long partner_start; /* opts.partner_pid's start time */
        char *lock_path;                  /* <lockdir>/<name>.lock                        */
        char *entry_path;                 /* <lock_path>/owner.<token>                    */
        char *prep_path;                  /* <lockdir>/.<name>.<token>.new (acquire only)  */
        long long prep_ns;                /* when the prepared owner record was written   */
        bool prep_made;                   /* prep_path exists                             */
        struct dl_rw *rw;                 /* reader-writer state or NULL                  */
};

/* Allocate a handle for `name` in `lockdir` with a fresh token (no lock is
 * taken).  Validates the name, normalises options, makes lockdir absolute
 * and creates it unless DIRLOCK_NO_MKDIR. */
int dl_handle_new(const char *lockdir, const char *name, const dirlock_options *opts, dirlock **out,
                  dirlock_error *err);
void dl_handle_free(dirlock *h);
/* After a successful acquire: the cancel descriptor was for that call only. */
void dl_handle_forget_cancel(dirlock *h);
/* DIRLOCK_ENOTOWNER unless the calling process acquired h. */
int dl_handle_owned(const dirlock *h, dirlock_error *err);

/* ---- errors (error.c) -------------------------------------------------- */

/* Fill err (if any) and return code.  Message is printf-formatted; for
 * DIRLOCK_EIO pass the errno, and ": strerror" is appended. */
int dl_fail(dirlock_error *err, int code, int sys_errno, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void dl_ok(dirlock_error *err);

/* ---- paths (path.c) ---------------------------------------------------- */

/* malloc'd "<a>/<b><suffix>", NULL when out of memory. */
char *dl_join(const char *a, const char *b, const char *suffix);
/* Make `lockdir` absolute (malloc'd) and create it if missing and allowed;
 * *mode_out (may be NULL) gets its st_mode. */
int dl_lockdir_prepare(const char *lockdir, bool create, char **abs_out, unsigned *mode_out,
                       dirlock_error *err);
/* mkdir(path) inside a lock directory of mode `lockdir_mode`: when that
 * directory is shared (writable by group or others), the new directory
 * gets the same permission bits (setgid and sticky included), whatever
 * the umask, so that every user of the lock directory can use it (see
 * docs/sharing.md).  0 or -1 with errno. */
int dl_mkdir_in(const char *path, unsigned lockdir_mode);
/* mkdir -p (path is modified temporarily); 0 or -1 with errno. */
int dl_make_dirs(char *path);

/* ---- identity and owner records (owner.c) ------------------------------ */

#define DL_RECORD_MAX 640 /* the longest record (255-byte host, partner) fits */

typedef struct dl_record {
        pid_t pid;
        unsigned long long start_time; /* clock ticks since boot (/proc) */
        char token[33];
        long long acquired_ns;       /* CLOCK_REALTIME at acquire      */
        char boot_id[37];            /* this machine's boot            */
        unsigned long long pidns;    /* pid namespace inode            */
        int mode;                    /* dirlock_mode                   */
        unsigned long long stale_ms; /* the holder's stale age (0: none) */
        pid_t partner;               /* 0, or a process holding with it */
        unsigned long long partner_start;
        char host[256];
} dl_record;

/* Our own record for a new lock (token, our stale age and partner given;
 * partner 0 for none). */
void dl_record_self(dl_record *rec, const char *token, int mode, double stale_age, pid_t partner,
                    unsigned long long partner_start);
/* Text form, NUL-terminated; returns its length or -1 if it does not fit. */
int dl_record_format(const dl_record *rec, char *buf, size_t size);
/* Parse the text form (not NUL-terminated: `len` bytes).  0 or -1. */
int dl_record_parse(const char *buf, size_t len, dl_record *rec);
/* 1 alive, 0 provably dead, -1 cannot tell (other host, boot or pid
 * namespace).  The owner is the recording process and its partner, if
 * any: alive while either is. */
int dl_record_owner_alive(const dl_record *rec);
/* 1 when the recording process is provably dead on this host but its
 * partner lives: nobody refreshes the lock, and it stays held (see
 * dirlock_options.partner_pid). */
int dl_record_partner_only(const dl_record *rec);
/* 1 when process `pid` of this host has start time `start` (is alive),
 * 0 when it is provably gone, -1 when that cannot be told. */
int dl_process_alive(pid_t pid, unsigned long long start);
/* 1 when the record was written on this host, this boot, this pid ns. */
int dl_record_same_host(const dl_record *rec);
/* Start time of a process in clock ticks since boot, 0 when it is gone. */
unsigned long long dl_process_start_time(pid_t pid);
/* 128 random bits as 32 hex digits. */
int dl_random_token(char out[33], dirlock_error *err);

/* ---- clocks (clock.c) -------------------------------------------------- */

typedef struct timespec dl_time;

dl_time dl_now(void); /* CLOCK_MONOTONIC */
/* Deadline for a timeout in seconds; negative = never (tv_sec = -1). */
dl_time dl_deadline(double timeout);
bool dl_deadline_never(const dl_time *deadline);
/* True once a (finite) deadline has passed. */
bool dl_deadline_passed(const dl_time *deadline);
/* Milliseconds-and-fraction left until deadline (0 if past), large if never. */
double dl_remaining(const dl_time *deadline);
/* Wall clock in nanoseconds since the epoch. */
long long dl_wall_ns(void);
/* Nanoseconds since the epoch of a timestamp. */
long long dl_ts_ns(const struct timespec *ts);

/* ---- waiting (wait.c) -------------------------------------------------- */

/* Waits for "something may have changed in lockdir": an inotify event on
 * the lock directory naming one of our interesting entries, the death of a
 * watched owner process (pidfd), or a backoff step when notification is
 * not available.  Never sleeps past the deadline. */
typedef struct dl_waiter {
        int inotify_fd; /* -1 when not used                      */
        int pid_fd;     /* pidfd of the owner we wait for, or -1 */
        pid_t pid_watched;
        bool notify; /* inotify usable                        */
        double backoff_ms;
        unsigned long long rng;
        double recheck_ms; /* with inotify: re-judge at least this often */
        double cap_ms;     /* longest backoff step without inotify       */
        bool owner_died;   /* the last wait ended on the owner's death   */
        int cancel_fd;     /* readable: DIRLOCK_ECANCELED; -1 = none      */
} dl_waiter;

/* `stale_age` bounds the re-check interval and the backoff: a waiter
 * renews its waiting entries (FIFO ticket, ...) at least every third of it. */
int dl_waiter_init(dl_waiter *w, const char *lockdir, unsigned flags, const char *seed, double stale_age);
/* Also wake when this owner dies (same host only; no-op otherwise). */
void dl_waiter_watch_owner(dl_waiter *w, const dl_record *owner);
/* Also wake on deletions and renames in another directory (e.g. a readers'
 * directory).  0, or -1 when it cannot be watched (then back off). */
int dl_waiter_watch_dir(dl_waiter *w, const char *dir);
/* True when the last wait ended because the watched owner died. */
bool dl_waiter_owner_died(const dl_waiter *w);
/* Also end waits when fd polls readable (DIRLOCK_CANCEL_FD); fd < 0: no. */
void dl_waiter_cancel_on(dl_waiter *w, int fd);
/* Returns 0 after a wake-up or step, DIRLOCK_ETIMEDOUT at the deadline,
 * DIRLOCK_ECANCELED when the cancel descriptor is readable (or was
 * closed under the wait). */
int dl_waiter_wait(dl_waiter *w, const dl_time *deadline);
void dl_waiter_close(dl_waiter *w);

/* ---- the exclusive primitive (exclusive.c) ----------------------------- */

/* One attempt to take h->lock_path; with `judge`, a failed attempt looks
 * at the holder and breaks it if stale, then tries again.  DIRLOCK_OK
 * (h->excl_held set), DIRLOCK_EBUSY (holder in *holder if not NULL;
 * holder->pid == 0 when unknown or not judged), or an error.  Waiting is
 * the caller's (rwlock.c take_w): a cheap attempt on every wake-up, a
 * judging one when the watched owner died or the re-check interval passed. */
int dl_excl_try(dirlock *h, dl_record *holder, bool judge, dirlock_error *err);
/* Release h->lock_path if it is still ours: DIRLOCK_OK or DIRLOCK_ELOST. */
int dl_excl_release(dirlock *h, dirlock_error *err);
int dl_excl_refresh(dirlock *h, dirlock_error *err);
int dl_excl_check(const dirlock *h, dirlock_error *err);
/* Look at the holder of h->lock_path; break it if stale (see BREAK in
 * exclusive.c).  DL_FREE: absent, empty, or just broken (retry at once).
 * DL_HELD: *holder filled (pid 0 when the record is unreadable) and, if
 * holder_token is not NULL, the holder's token (from its entry name).
 * DL_ERROR: err filled; DIRLOCK_EPERM when the lock is stale but this
 * user may not break it. */
enum dl_judgement { DL_FREE, DL_HELD, DL_ERROR };
enum dl_judgement dl_excl_judge(dirlock *h, dl_record *holder, char holder_token[33], dirlock_error *err);
/* Remove the prepared directory of a failed or finished acquire. */
void dl_excl_discard_prep(dirlock *h);

/* What a lock directory D/NAME.lock holds, seen at one moment. */
#define OWNER_LEAF_SIZE 39 /* "owner.<32 hex>" and its NUL */
enum dl_lock_state {
        DL_LOCK_ABSENT,  /* no directory: free                        */
        DL_LOCK_EMPTY,   /* empty directory: free (invariant A)       */
        DL_LOCK_FOREIGN, /* names that are not owner entries, no owner */
        DL_LOCK_OWNED    /* held by the owner entry `leaf`            */
};
typedef struct dl_lock_view {
        enum dl_lock_state state;
        char leaf[OWNER_LEAF_SIZE]; /* DL_LOCK_OWNED: "owner.<token>"          */
        const char *token;          /* DL_LOCK_OWNED: inside leaf             */
        dl_record rec;              /* DL_LOCK_OWNED: zeroed when unreadable  */
        double age;                 /* OWNED: seconds since taken or last refreshed (AGE in
                                       exclusive.c); FOREIGN: since the directory changed */
} dl_lock_view;
/* Look into lock directory `lock_path`.  0, or -1 with errno. */
int dl_lock_look(const char *lock_path, dl_lock_view *v);
/* Remove the names in a lock directory that are not owner entries, then
 * rmdir it if that left it empty (see FOREIGN CONTENT in exclusive.c). */
void dl_lock_clear_foreign(const char *lock_path);
/* BREAK: unlink the judged owner entry `leaf` of `lock_path`, then rmdir.
 * 0, or -1 with errno (ENOENT: already broken or released; EPERM or
 * EACCES: not ours to break). */
int dl_excl_break_entry(const char *lock_path, const char *leaf);
/* Remove the prepared directories of lock `name` (all names when NULL)
 * whose owners are provably dead on this host; with `remote_age` > 0
 * also those of other hosts (and unreadable ones) older than that. */
void dl_sweep_preps(const char *lockdir, const char *name, double remote_age);

/* Generic entry judging, shared with the reader-writer layer: an entry is a
 * symlink whose target is an owner record; its age counts from its last
 * change (creation, rename, refresh: the later of its mtime and ctime).
 * Reads it; returns 0, or -1 with errno (ENOENT when gone). */
int dl_entry_read(const char *path, dl_record *rec, double *age_s);
/* Stale: older than the larger of stale_age and the holder's recorded
 * stale age (unless only its partner lives: dl_record_partner_only), or
 * owner provably dead on this host. */
bool dl_entry_stale(const dl_record *rec, double age_s, double stale_age);
/* Create entry `path` (a symlink holding h's record: h's token, stale age
 * and partner, the given mode).  0 or -1/errno. */
int dl_entry_create(const char *path, const dirlock *h, int mode);
/* A DIRLOCK_EPERM error for a stale entry `what` of `rec`'s owner that
 * this user may not remove (errno e); returns DIRLOCK_EPERM. */
int dl_fail_unbreakable(dirlock_error *err, const char *what, const dl_record *rec, int e);

/* ---- reader-writer layer (rwlock.c) ------------------------------------ */

/* Take the lock in h->opts.mode (exclusive, shared or intent) by the
 * deadline.  Exclusive means: <name>.lock and no readers. */
int dl_rw_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err);
/* Release whatever h holds (exclusive, shared or intent). */
int dl_rw_release(dirlock *h, dirlock_error *err);
int dl_rw_refresh(dirlock *h, dirlock_error *err);
int dl_rw_check(const dirlock *h, dirlock_error *err);
void dl_rw_free(dirlock *h);
/* Break leftovers of dead readers of every name in lockdir. */
int dl_rw_cleanup(const char *lockdir, dirlock_error *err);
/* Number of shared/intent holders of `name` (for inspect). */
unsigned dl_rw_count_readers(const char *lockdir, const char *name);

#endif
