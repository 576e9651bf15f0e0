/* dirlock.h - the core of the dirlock library, and its one header: the
 * exclusive lock in a directory (named locks taken with retry, timeout
 * and prompt wake-up, kept by refreshing, broken race-free when stale or
 * dead, owner records), all-or-nothing multi-locks, and inspect, list,
 * holders, break and cleanup.  The C files of lib/core compile alone.
 *
 * Modules add to it, each a folder of lib/ with a header of its own
 * (docs/library.md): lib/rw (dirlock_rw.h), lib/fifo, lib/range
 * (dirlock_range.h), lib/permit (dirlock_permit.h), lib/deadlock
 * (dirlock_deadlock.h), lib/async (dirlock_async.h), lib/fence
 * (dirlock_fence.h), lib/netfs (dirlock_netfs.h); backends: lib/flock
 * (dirlock_flock.h), lib/redis and lib/etcd (loaded on first use).  What
 * a build lacks is refused with a message naming the module.
 *
 * Every call returns DIRLOCK_OK (0) or a dirlock_code, and fills `err`
 * (may be NULL).  The first argument names a lock space: a directory, or
 * a string a backend's prefix claims (dirlock_space_form).  Threads,
 * processes, fork() and the state the library keeps: dirlock(3); each
 * call: its manual page.  Every descriptor it opens is close-on-exec. */
#ifndef DIRLOCK_H
#define DIRLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DIRLOCK_VERSION "1.0.0"

/* Names: 1..64 characters of [A-Za-z0-9._-], not starting with a dot. */
#define DIRLOCK_NAME_MAX 64

/* A token: 128 random bits in lowercase hex, drawn for one acquisition. */
#define DIRLOCK_TOKEN_LEN 32

/* Default age after which an unrefreshed lock is stale (seconds). */
#define DIRLOCK_DEFAULT_STALE_AGE 180.0

/* Smallest stale age accepted (seconds): a holder refreshes every
 * stale_age / 3, and below this scheduling delays would break it. */
#define DIRLOCK_MIN_STALE_AGE 0.1

/* Every error code, once, in number order (what each means:
 * dirlock_strerror(3)); it makes enum dirlock_code, dirlock_strerror()
 * and dirlock_code_name().  New codes go at the end: the numbers are ABI. */
#define DIRLOCK_CODES(X)                                                                                     \
        X(OK, "success")                                                                                     \
        X(EBUSY, "lock is busy")                                                                             \
        X(ETIMEDOUT, "timed out waiting for the lock")                                                       \
        X(ENAME, "invalid lock name")                                                                        \
        X(EINVAL, "invalid argument")                                                                        \
        X(ELOST, "lock was lost (broken as stale, or gone from the lock server)")                            \
        X(ENOTOWNER, "lock is not owned by this process")                                                    \
        X(ELIVE, "lock is held by a live owner")                                                             \
        X(ENOLOCK, "no such lock")                                                                           \
        X(EUPGRADE, "cannot upgrade a shared lock (use an intent lock)")                                     \
        X(EBALANCE, "release without a matching acquire")                                                    \
        X(EIO, "system call failed")                                                                         \
        X(ENOMEM, "out of memory")                                                                           \
        X(ECANCELED, "wait canceled")                                                                        \
        X(EPERM, "lock may not be broken or taken by this user")                                             \
        X(ESERVER, "lock server unreachable or not answering")                                               \
        X(EAUTH, "lock server refused the credentials or database")                                          \
        X(EDATA, "unexpected data or script error on the lock server")                                       \
        X(EAGAIN, "the acquire is still waiting")                                                            \
        X(ENETFS, "mode not safe among the clients of this network filesystem")                              \
        X(EDEADLK, "deadlock: the wait closes a cycle of waits")

#define DIRLOCK_CODE_ENUM_(name, description) DIRLOCK_##name,
typedef enum dirlock_code { DIRLOCK_CODES(DIRLOCK_CODE_ENUM_) DIRLOCK_CODE_COUNT } dirlock_code;
#undef DIRLOCK_CODE_ENUM_

/* Filled in by every call that takes one (may be NULL).  The message is
 * one line of printable text: a control character of what it quotes (a
 * rejected name or path, a server's answer) is shown as \xHH. */
typedef struct dirlock_error {
        int code;          /* a dirlock_code                               */
        int sys_errno;     /* errno for DIRLOCK_EIO, else 0                */
        char message[640]; /* e.g. "cannot create lock directory 'x': ..." */
} dirlock_error;

/* Short fixed description of a code ("lock is busy", ...). */
const char *dirlock_strerror(int code);

/* Name of a code without its prefix ("EBUSY"), NULL past the last. */
const char *dirlock_code_name(int code);

/* Lock modes: an exclusive lock excludes readers too; shared and intent
 * locks are the reader-writer module's (lib/rw). */
typedef enum dirlock_mode {
        DIRLOCK_EXCLUSIVE = 0,
        DIRLOCK_SHARED,
        DIRLOCK_INTENT /* upgradable read ("prewrite-read") */
} dirlock_mode;

/* Reader-writer policies (lib/rw/dir_rw.c); the core serves fair and
 * simple, which are one for exclusive locks. */
typedef enum dirlock_policy {
        DIRLOCK_POLICY_FAIR = 0, /* no lockout either way (default)          */
        DIRLOCK_POLICY_WRITER,   /* waiting writers hold off new readers     */
        DIRLOCK_POLICY_READER,   /* readers never wait for waiting writers   */
        DIRLOCK_POLICY_SIMPLE    /* one holder at a time, readers included   */
} dirlock_policy;

/* Flags. */
#define DIRLOCK_FIFO      (1u << 0) /* serve exclusive waiters in arrival order (lib/fifo) */
#define DIRLOCK_REENTRANT (1u << 1) /* dirlock_reacquire() counts holds        */
#define DIRLOCK_NO_MKDIR  (1u << 2) /* do not create a missing lock directory  */
#define DIRLOCK_NO_NOTIFY (1u << 3) /* never use inotify; back off and poll    */
#define DIRLOCK_CANCEL_FD (1u << 4) /* end the wait when cancel_fd is readable  */
/* Every user of the lock directory runs on this one client of its
 * network filesystem: allow what is safe only there (docs/netfs.md). */
#define DIRLOCK_ONE_CLIENT (1u << 5)
/* Left out of deadlock detection: a lock another thread may release. */
#define DIRLOCK_NO_DEADLOCK (1u << 6)
/* Call opts->server_notice when a lock server stops and starts answering. */
#define DIRLOCK_SERVER_NOTICE (1u << 7)

/* ... after this many milliseconds without an answer. */
#define DIRLOCK_SERVER_NOTICE_MS 1000
/* Pending acquires: share the thread's descriptor (dirlock_async.h). */
#define DIRLOCK_THREAD_FD (1u << 8)

typedef struct dirlock_options {
        double timeout;   /* seconds: 0 = one try, < 0 = wait forever       */
        double stale_age; /* seconds; <= 0 means DIRLOCK_DEFAULT_STALE_AGE,
                             else at least DIRLOCK_MIN_STALE_AGE          */
        unsigned flags;   /* DIRLOCK_* flags                                */
        int mode;         /* dirlock_mode, for dirlock_acquire()            */
        int policy;       /* dirlock_policy, for shared/intent/exclusive    */
        /* With DIRLOCK_CANCEL_FD: readable ends the wait (ECANCELED). */
        int cancel_fd;
        /* 0, or a process of this host holding the lock with the caller,
         * as flock(1)'s command does (dirlock_acquire(3)). */
        pid_t partner_pid;
        /* With DIRLOCK_SERVER_NOTICE (dirlock_acquire(3)). */
        void (*server_notice)(int answering, const char *message, void *arg);
        void *server_notice_arg;
} dirlock_options;

/* Defaults: wait forever, stale after 180 s, exclusive, fair. */
#define DIRLOCK_OPTIONS_INIT                                                                                 \
        {                                                                                                    \
                -1.0, DIRLOCK_DEFAULT_STALE_AGE, 0u, DIRLOCK_EXCLUSIVE, DIRLOCK_POLICY_FAIR, -1, 0, NULL,    \
                    NULL                                                                                     \
        }
void dirlock_options_init(dirlock_options *opts);

/* What a waiter waits for (dirlock_waiters, dirlock_deadlock.h). */
enum dirlock_wait_kind {
        DIRLOCK_WAIT_LOCK = 0, /* the name's lock, in `mode`               */
        DIRLOCK_WAIT_RANGE,    /* a range [lo, hi) of the name, in `mode`   */
        DIRLOCK_WAIT_PERMIT,   /* one of `permits` permits of the name      */
        DIRLOCK_WAIT_UPGRADE   /* an intent holder, for exclusive          */
};

/* An acquired lock.  Opaque. */
typedef struct dirlock dirlock;

/* Owner record of a lock (dirlock_inspect); what modules count is 0
 * without them. */
typedef struct dirlock_owner {
        pid_t pid;
        unsigned long long start_time; /* process start, clock ticks since boot */
        char host[256];
        char token[DIRLOCK_TOKEN_LEN + 1]; /* 128-bit random, hex                     */
        double acquired;                   /* wall clock, seconds since the epoch     */
        double age;                        /* seconds since acquire or last refresh   */
        int same_host;                     /* recorded on this host, this boot        */
        int owner_alive;                   /* -1 unknown (other host), 0 dead, 1 alive */
        int stale;                         /* would be broken now with the given age  */
        int mode;                          /* dirlock_mode of this holder             */
        unsigned readers;                  /* shared/intent holders of the name       */
        pid_t partner;                     /* 0, or the process holding with it       */
        char name[DIRLOCK_NAME_MAX + 1];   /* the lock's name            */
        unsigned ranges;                   /* held ranges (dirlock_ranges) */
        unsigned permits;                  /* a counting lock: its N, else 0 */
        unsigned permit_holders;           /* ... and the permits held (dirlock_holders) */
        unsigned waiters;                  /* processes waiting for the name (dirlock_waiters) */
        unsigned long long fence;          /* the last fence drawn for the name, 0 none */
} dirlock_owner;

/* ---- exclusive locks (and the common entry point) ------------------- */

/* True when `name` is a valid lock name. */
int dirlock_name_valid(const char *name);

/* Take lock `name` in `space` (opts NULL: the defaults): dirlock_acquire(3). */
int dirlock_acquire(const char *space, const char *name, const dirlock_options *opts, dirlock **out,
                    dirlock_error *err);

/* Release and free the handle; a reentrant one drops a hold
 * (dirlock_release(3)). */
int dirlock_release(dirlock *lock, dirlock_error *err);

/* Release whatever the handle still holds and free it (any handle). */
int dirlock_free(dirlock *lock, dirlock_error *err);

/* Renew the lock's age; call it at least every stale_age / 3. */
int dirlock_refresh(dirlock *lock, dirlock_error *err);

/* DIRLOCK_OK while we still hold the lock, DIRLOCK_ELOST otherwise. */
int dirlock_check(const dirlock *lock, dirlock_error *err);

/* In a child forked from the holder: make its copy of the handle its
 * own (a keeper process; dirlock_refresh(3)). */
int dirlock_adopt(dirlock *lock, dirlock_error *err);

/* DIRLOCK_REENTRANT: one more hold, or take the lock again (new token). */
int dirlock_reacquire(dirlock *lock, dirlock_error *err);

/* Name, token and mode of a handle. */
const char *dirlock_name(const dirlock *lock);
const char *dirlock_token(const dirlock *lock);
int dirlock_mode_of(const dirlock *lock);

/* Owner record of lock `name` (DIRLOCK_ENOLOCK when free). */
int dirlock_inspect(const char *space, const char *name, double stale_age, dirlock_owner *owner,
                    dirlock_error *err);

/* Every lock of `space`, in name order (free() *owners). */
int dirlock_list(const char *space, double stale_age, dirlock_owner **owners, size_t *count,
                 dirlock_error *err);

/* Every holder of lock `name`, oldest first (free() *out). */
int dirlock_holders(const char *space, const char *name, double stale_age, dirlock_owner **out, size_t *count,
                    dirlock_error *err);

/* Break lock `name` if stale (DIRLOCK_ELIVE otherwise), or when `force`. */
int dirlock_break(const char *space, const char *name, double stale_age, int force, dirlock_error *err);

/* Remove what crashed processes left.  Safe at any time. */
int dirlock_cleanup(const char *space, dirlock_error *err);

/* Run fn(arg) while holding lock `name`; *fn_result gets what it returns. */
int dirlock_with(const char *space, const char *name, const dirlock_options *opts, int (*fn)(void *arg),
                 void *arg, int *fn_result, dirlock_error *err);

/* ---- multi-locks ------------------------------------------------------ */

typedef struct dirlock_set dirlock_set;

/* Take all `n` named locks or none, without deadlock (dirlock_acquire_many(3)). */
int dirlock_acquire_many(const char *space, const char *const names[], size_t n, const dirlock_options *opts,
                         dirlock_set **out, dirlock_error *err);
/* Release all and free; the first error met. */
int dirlock_release_many(dirlock_set *set, dirlock_error *err);
int dirlock_refresh_many(dirlock_set *set, dirlock_error *err);
size_t dirlock_set_count(const dirlock_set *set);
/* The i-th lock of a set (in name order), or NULL past the end. */
dirlock *dirlock_set_lock(const dirlock_set *set, size_t i);

/* ---- lock spaces ---------------------------------------------------------- */

/* What a lock space string names (dirlock_space_query(3)). */
typedef struct dirlock_space_info {
        const char *backend; /* "directory", "flock", "Redis", ...: for messages */
        /* A directory of this host (into the string given), or NULL. */
        const char *dir;
        int ranges;        /* dirlock_acquire_range() is offered           */
        int fences;        /* dirlock_fence() is offered                   */
        int upgrade;       /* intent locks upgrade (dirlock_upgrade)       */
        int owner_records; /* dirlock_inspect(), dirlock_list() are offered */
        int permits;       /* dirlock_acquire_permit() is offered          */
} dirlock_space_info;

int dirlock_space_query(const char *space, dirlock_space_info *info, dirlock_error *err);

/* The i-th form a lock space string may take, NULL past the last. */
const char *dirlock_space_form(size_t i, int *built);

/* ---- processes ---------------------------------------------------------- */

/* A process by pid and start time, as owner records name them
 * (dirlock_process_alive(3)): its start time (0: none), and whether it is
 * alive (1), provably not (0), or cannot be told (-1). */
unsigned long long dirlock_process_start(pid_t pid);
int dirlock_process_alive(pid_t pid, unsigned long long start_time);

#ifdef __cplusplus
}
#endif
#endif
