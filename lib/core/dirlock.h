/* dirlock.h - the core of the dirlock library, and its one header: the
 * small library at the centre, which compiles alone (the C files of
 * lib/core, and nothing else).
 *
 * Cross-process locks for CGI-style programs, made of directories:
 * exclusive locks, by name, in a lock directory (mkdir/rename based, safe
 * between the clients of a network filesystem: docs/netfs.md), taken
 * with a timeout and prompt wake-up, kept by refreshing them, broken
 * race-free when their holder died or let them go stale, with owner
 * records that say who holds what; all-or-nothing multi-locks that
 * cannot deadlock; and what a program needs to look at and repair them
 * (inspect, list, holders, break, cleanup).
 *
 * Modules add to it, each a folder of lib/ with a header of its own,
 * without changing a line of the core (docs/library.md): the
 * reader-writer variant (lib/rw, dirlock_rw.h), arrival order and the
 * waiters' queue (lib/fifo), ranges (lib/range, dirlock_range.h),
 * counting locks (lib/permit, dirlock_permit.h), deadlock detection and
 * the list of waiters (lib/deadlock, dirlock_deadlock.h), acquires an
 * event loop drives (lib/async, dirlock_async.h), fences (lib/fence,
 * dirlock_fence.h); and backends, other kinds of lock space: flock(2) on
 * files (lib/flock, dirlock_flock.h), lock servers shared by several
 * hosts (lib/redis, lib/etcd: shared objects the library loads on first
 * use).  A program includes the headers of what it uses.  What a build
 * lacks is refused with DIRLOCK_EINVAL and a message naming the module
 * or what to install; a build without a module is safe beside one with
 * it: it never overruns what the other made on disk.
 *
 * Every function returns DIRLOCK_OK (0) or one of the dirlock_code values
 * below; when `err` is not NULL it is filled with the code, the saved errno
 * (for DIRLOCK_EIO) and a message a person can read, naming the path.
 *
 * Lock spaces.  The first argument of every call names a lock space: a
 * directory path (locks are directories in it: lib/core/dir_exclusive.c),
 * or a string a backend's prefix claims: "flock:DIR" (the kernel's
 * flock(2) on files in DIR), or a lock server shared by several hosts,
 * named by a URL (redis://..., etcd://..., a cluster's members).
 * dirlock_space_form() lists the forms this build knows,
 * dirlock_space_query() says what a given string names; each backend's
 * folder in lib/ has its grammar and protocol (docs/backends.md).
 *
 * Threads and processes.  Separate handles may be used from separate
 * threads; one handle must not be used by two threads at once.  A handle
 * belongs to the process that acquired it: after fork() the child's copy
 * refuses to release, refresh, check or upgrade (DIRLOCK_ENOTOWNER),
 * unless the child adopts it (dirlock_adopt: a keeper).  A
 * child should dirlock_free() the handles it inherited and does not use:
 * a reentrant flock handle keeps its lock file open, and the child's copy
 * of that open file would keep a lock its parent takes later alive after
 * the parent's death (lib/flock/flock.c).
 *
 * State the library keeps besides handles (none of it needs setting up
 * or tearing down; each backend says what it keeps of its own, e.g.
 * connections to its servers: lib/redis/redis.h, lib/etcd/etcd.h):
 *   - a per-thread inotify instance (notify.c), made by the thread's first
 *     wait and kept until the thread exits, when a thread-key destructor
 *     closes it: closing one costs a kernel grace period (~10 ms) that
 *     every contended acquire would pay.  Every wait of the thread (one
 *     blocking call, or any number of pending acquires) shares it.  A
 *     forked child sees the pid change and opens its own (closing the
 *     inherited copy).
 *   - a per-process identity (owner.c): host name, boot id, pid namespace,
 *     and this process's pid and start time, read once, behind a mutex; a
 *     pthread_atfork() child handler forgets the pid part in the child.
 *   - a per-thread token generator (owner.c): xoshiro256** seeded with 256
 *     bits from getrandom() on the thread's first token, and seeded again
 *     in a forked child (seen by the pid), so that no two acquisitions
 *     anywhere draw the same token.
 *   - a per-thread note of the last lock directory found in place and its
 *     mode (path.c), so that repeated acquires do not stat it; if it is
 *     removed later, the next acquire makes it again.
 *   - a per-thread note of the filesystem of the last lock directory
 *     asked about (lib/netfs/netfs.c), and, per thread, the last 64 entries judged on
 *     a network filesystem with when their change time was first seen
 *     (SIGHTINGS in lib/netfs/netfs.c: an entry is broken for its age only once
 *     seen unchanged long enough).
 *   - the registered backends and modules (space.c, dir_backend.c):
 *     lists that registrations add to as the code is loaded, never later.
 *   - the library's own code, kept loaded once it has registered a
 *     thread-exit destructor (the first wait, pending acquire or
 *     connection of any thread): loaded with dlopen -- inside a Node addon,
 *     a Python or Perl module -- a later dlclose leaves it in memory, so
 *     that threads that used it still find their destructors when they
 *     exit (thread_key.c).  Python and Perl never unload a module
 *     anyway; Node unloads an addon when the worker thread that loaded it
 *     ends.
 * Every descriptor the library opens is close-on-exec (and every one a
 * backend opens: each says how).
 */
#ifndef DIRLOCK_H
#define DIRLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DIRLOCK_VERSION "1.0.0"

/* Longest lock name; names are 1..64 characters of [A-Za-z0-9._-] and do
 * not start with a dot. */
#define DIRLOCK_NAME_MAX 64

/* Length of a token: 128 random bits in lowercase hex, drawn for one
 * acquisition (dirlock_token, dirlock_owner.token). */
#define DIRLOCK_TOKEN_LEN 32

/* Default age after which an unrefreshed lock is stale (seconds). */
#define DIRLOCK_DEFAULT_STALE_AGE 180.0

/* Smallest stale age accepted (seconds); smaller ones are DIRLOCK_EINVAL.
 * A holder keeps its lock by calling dirlock_refresh() at least every
 * stale_age / 3 (33 ms at this minimum), so the stale age must leave room
 * for ordinary scheduling and disk delays between two refreshes.  Below
 * 0.1 s they would break live holders. */
#define DIRLOCK_MIN_STALE_AGE 0.1

/* Every error code, once, in number order: X(NAME, DESCRIPTION) for
 * DIRLOCK_NAME, with what it means beside it.  The list makes enum
 * dirlock_code (numbered from 0 as written), dirlock_strerror() and
 * dirlock_code_name(); bindings walk the numbers with dirlock_code_name()
 * rather than keep a list of their own.  New codes go at the end: the
 * numbers are part of the ABI. */
#define DIRLOCK_CODES(X)                                                                                     \
        X(OK, "success")                                                                                     \
        /* held by someone else (one try, timeout 0) */                                                      \
        X(EBUSY, "lock is busy")                                                                             \
        /* still held by someone else when time ran out */                                                   \
        X(ETIMEDOUT, "timed out waiting for the lock")                                                       \
        X(ENAME, "invalid lock name")                                                                        \
        /* invalid argument or option */                                                                     \
        X(EINVAL, "invalid argument")                                                                        \
        /* our lock was broken as stale (maybe re-taken), or the lock server no                              \
           longer has it */                                                                                  \
        X(ELOST, "lock was lost (broken as stale, or gone from the lock server)")                            \
        /* handle used by a process that does not own it */                                                  \
        X(ENOTOWNER, "lock is not owned by this process")                                                    \
        /* refused to break a lock whose owner is alive */                                                   \
        X(ELIVE, "lock is held by a live owner")                                                             \
        /* no such lock (inspect, break) */                                                                  \
        X(ENOLOCK, "no such lock")                                                                           \
        /* read -> write upgrade refused (use intent) */                                                     \
        X(EUPGRADE, "cannot upgrade a shared lock (use an intent lock)")                                     \
        /* reentrant release without a matching acquire */                                                   \
        X(EBALANCE, "release without a matching acquire")                                                    \
        /* system call failed; errno is kept */                                                              \
        X(EIO, "system call failed")                                                                         \
        X(ENOMEM, "out of memory")                                                                           \
        /* the wait was ended by opts->cancel_fd */                                                          \
        X(ECANCELED, "wait canceled")                                                                        \
        /* the lock is in the way but may not be broken or replaced by this user                             \
           (see docs/sharing.md) */                                                                          \
        X(EPERM, "lock may not be broken or taken by this user")                                             \
        /* the lock server could not be reached or did not answer in time                                    \
           (refused, down, broken, timed out) */                                                             \
        X(ESERVER, "lock server unreachable or not answering")                                               \
        /* the lock server refused our credentials or db */                                                  \
        X(EAUTH, "lock server refused the credentials or database")                                          \
        /* the lock space's data is not what dirlock wrote (a key of the wrong                               \
           type, a fence counter past DIRLOCK_FENCE_MAX), or a script failed */                              \
        X(EDATA, "unexpected data or script error on the lock server")                                       \
        /* a pending acquire is still waiting: poll its descriptor and step it                               \
           again */                                                                                          \
        X(EAGAIN, "the acquire is still waiting")                                                            \
        /* the lock directory is on a network filesystem where this mode is                                  \
           not safe among several clients (docs/netfs.md); DIRLOCK_ONE_CLIENT                                \
           allows it */                                                                                      \
        X(ENETFS, "mode not safe among the clients of this network filesystem")                              \
        /* the wait would never end: it closes a cycle of waits (deadlock);                                  \
           nothing was taken */                                                                              \
        X(EDEADLK, "deadlock: the wait closes a cycle of waits")

#define DIRLOCK_CODE_ENUM_(name, description) DIRLOCK_##name,
typedef enum dirlock_code { DIRLOCK_CODES(DIRLOCK_CODE_ENUM_) DIRLOCK_CODE_COUNT } dirlock_code;
#undef DIRLOCK_CODE_ENUM_

/* Filled in by every call that takes one (may be NULL). */
typedef struct dirlock_error {
        int code;          /* a dirlock_code                               */
        int sys_errno;     /* errno for DIRLOCK_EIO, else 0                */
        char message[640]; /* e.g. "cannot create lock directory 'x': ..." */
} dirlock_error;

/* Short fixed description of a code ("lock is busy", ...). */
const char *dirlock_strerror(int code);

/* Name of a code without its prefix ("OK", "EBUSY", ...), or NULL for a
 * number that is no code: 0, 1, ... up to the first NULL are every code
 * of the library a program runs with, whatever header it was built with. */
const char *dirlock_code_name(int code);

/* Lock modes.  DIRLOCK_EXCLUSIVE is the write side of the reader-writer
 * lock of the same name: an exclusive lock excludes readers too.  Shared
 * and intent locks are the reader-writer module's (lib/rw). */
typedef enum dirlock_mode {
        DIRLOCK_EXCLUSIVE = 0,
        DIRLOCK_SHARED,
        DIRLOCK_INTENT /* upgradable read ("prewrite-read") */
} dirlock_mode;

/* Reader-writer policies (see lib/rw/dir_rw.c for the exact guarantees).
 * The core serves exclusive locks under fair and simple, which are one
 * there; writer and reader are the reader-writer module's (lib/rw). */
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
/* Every process that uses this lock directory runs on this one client of
 * its network filesystem (one host's mount): allow the modes that are
 * safe only there (DIRLOCK_ENETFS otherwise; docs/netfs.md). */
#define DIRLOCK_ONE_CLIENT (1u << 5)
/* This acquire is neither reported as closing a cycle of waits nor counted
 * as a thread's hold in others' reports: for a lock that another thread
 * than the one that takes it may release (deadlock detection counts a
 * lock as held by the thread that took it; lib/deadlock/dir_deadlock.c). */
#define DIRLOCK_NO_DEADLOCK (1u << 6)
/* Tell the caller, through opts->server_notice, when a wait on a lock
 * server goes on without answers, and when answers come again. */
#define DIRLOCK_SERVER_NOTICE (1u << 7)

/* How long a lock server may leave a waiting acquire without an answer
 * before its server_notice is called (milliseconds). */
#define DIRLOCK_SERVER_NOTICE_MS 1000
/* For the *_start calls (ignored by the others): the pending acquire has
 * no descriptor of its own.  dirlock_pending_fd() returns the thread's,
 * shared by every such acquire of the thread, and dirlock_pending_next()
 * says which of them ended (dirlock_async.h). */
#define DIRLOCK_THREAD_FD (1u << 8)

typedef struct dirlock_options {
        double timeout;   /* seconds: 0 = one try, < 0 = wait forever       */
        double stale_age; /* seconds; <= 0 means DIRLOCK_DEFAULT_STALE_AGE,
                             else at least DIRLOCK_MIN_STALE_AGE          */
        unsigned flags;   /* DIRLOCK_* flags                                */
        int mode;         /* dirlock_mode, for dirlock_acquire()            */
        int policy;       /* dirlock_policy, for shared/intent/exclusive    */
        /* With DIRLOCK_CANCEL_FD: a descriptor the caller owns (an eventfd,
         * a pipe, an inotify instance...).  When it polls readable while
         * the acquire call is waiting, the call gives up with
         * DIRLOCK_ECANCELED, as it would at its timeout (one last try
         * first).  Only that acquire call watches it; the handle does not
         * keep it, and it is never read or closed by the library. */
        int cancel_fd;
        /* 0, or a process of this host (normally the caller's child) that
         * holds the lock together with the caller, the way a command run
         * by flock(1) holds its lock: the owner record names both, and a
         * judge on this host counts the lock as held while either lives.
         * If the caller dies first (nobody refreshes any more), the lock
         * stays held until the partner exits too; judges on other hosts
         * still break it after the stale age.  The partner cannot release
         * or refresh; bin/dirlock passes the command it runs. */
        pid_t partner_pid;
        /* With DIRLOCK_SERVER_NOTICE: called from inside an acquire that
         * waits on a lock server (Redis, etcd), in its thread, when the
         * server has not answered it for DIRLOCK_SERVER_NOTICE_MS or more
         * -- `answering` 0, `message` the last error, naming the server --
         * and once it answers again after that (`answering` 1).  It only
         * tells: the wait goes on either way (its timeout and cancel
         * descriptor end it), and a try (timeout 0) never calls it.  For a
         * program that waits without end and must not do so silently
         * (bin/dirlock says so on stderr).  Without the flag neither field
         * is read. */
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

/* What a waiter waits for: the kinds of waits, as the list of waiters
 * (dirlock_waiters, dirlock_deadlock.h) and the backends name them. */
enum dirlock_wait_kind {
        DIRLOCK_WAIT_LOCK = 0, /* the name's lock, in `mode`               */
        DIRLOCK_WAIT_RANGE,    /* a range [lo, hi) of the name, in `mode`   */
        DIRLOCK_WAIT_PERMIT,   /* one of `permits` permits of the name      */
        DIRLOCK_WAIT_UPGRADE   /* an intent holder, for exclusive          */
};

/* An acquired lock.  Opaque. */
typedef struct dirlock dirlock;

/* Owner record of a lock, as returned by dirlock_inspect(); the counts of
 * what the modules add (readers, ranges, permits, waiters, the fence) are
 * filled by those the build has, 0 otherwise. */
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

/* Take lock `name` in lock space `space` (a lock directory is created if
 * missing unless DIRLOCK_NO_MKDIR).  opts may be NULL for the defaults;
 * opts->mode selects exclusive, shared or intent.  On success *out is a
 * new handle. */
int dirlock_acquire(const char *space, const char *name, const dirlock_options *opts, dirlock **out,
                    dirlock_error *err);

/* Release and free the handle (always freed, whatever is returned).
 * DIRLOCK_ELOST: our lock had been broken; another holder's lock, if any,
 * was left in place.  A DIRLOCK_REENTRANT handle is a lock object instead:
 * release drops one hold (DIRLOCK_EBALANCE when none is left), the last
 * hold releases the lock, and the handle lives on until dirlock_free().
 * When that last release of a directory lock fails with DIRLOCK_EIO (an
 * entry could not be removed), or that of a lock on a Redis server with
 * DIRLOCK_ESERVER (no answer), the handle holds nothing (check, refresh
 * and the mode changes answer DIRLOCK_ELOST), and the entry left in
 * place is released by the next dirlock_reacquire() or dirlock_free(),
 * which fail with the release's error while it cannot be (the handle is
 * freed all the same, and the entry left to go stale); an entry broken
 * meanwhile needs nothing more. */
int dirlock_release(dirlock *lock, dirlock_error *err);

/* Release whatever the handle still holds and free it (any handle). */
int dirlock_free(dirlock *lock, dirlock_error *err);

/* Renew the lock's age so a long holder is not judged stale.  A holder
 * that calls it at least every stale_age / 3 never loses its lock to a
 * judge: a lock's age counts from its acquisition (the rename that made
 * it, lib/core/dir_exclusive.c) or its last refresh, whichever is later. */
int dirlock_refresh(dirlock *lock, dirlock_error *err);

/* DIRLOCK_OK while we still hold the lock, DIRLOCK_ELOST otherwise
 * (DIRLOCK_ENOTOWNER in a child after fork(), as for release). */
int dirlock_check(const dirlock *lock, dirlock_error *err);

/* For a keeper process: in a child forked from the process that holds
 * `lock`, make the child's copy of the handle the child's own, so that it
 * may refresh, check, fence and release the hold the two copies now
 * share.  Either may refresh it; only one may release it (the other's
 * copy then finds it lost, and must be freed).  bin/dirlock's keeper
 * goes on refreshing the command's locks with it if dirlock itself is
 * killed or stopped.  A reentrant handle's holds are counted per copy.
 * DIRLOCK_EINVAL in the process that owns it already, or for a handle
 * that holds nothing. */
int dirlock_adopt(dirlock *lock, dirlock_error *err);

/* Reentrant locks (DIRLOCK_REENTRANT): count one more hold on the handle;
 * each needs its own dirlock_release(), the last one releases the lock.  On
 * a handle released to zero holds, takes the lock again (new token), after
 * retrying a last release that failed (see dirlock_release). */
int dirlock_reacquire(dirlock *lock, dirlock_error *err);

/* Name, token and mode of a handle. */
const char *dirlock_name(const dirlock *lock);
const char *dirlock_token(const dirlock *lock);
int dirlock_mode_of(const dirlock *lock);

/* Owner record and age of lock `name` (DIRLOCK_ENOLOCK when free).
 * `stale_age` <= 0 means the default; it decides owner->stale. */
int dirlock_inspect(const char *space, const char *name, double stale_age, dirlock_owner *owner,
                    dirlock_error *err);

/* Every lock that exists in `space` (held, or with readers or waiters),
 * each as dirlock_inspect() describes it, in name order: *owners is a
 * malloc'd array of *count entries; free() it.  Its holders one by one:
 * dirlock_holders(); its waiters: dirlock_waiters() (dirlock_deadlock.h). */
int dirlock_list(const char *space, double stale_age, dirlock_owner **owners, size_t *count,
                 dirlock_error *err);

/* Every holder of lock `name`, one owner record each, oldest first: the
 * holder of its exclusive lock (exclusive, intent, or a `simple` reader),
 * each reader (mode shared), and each permit of its counting lock (with
 * `permits` set); range holders are dirlock_ranges()'.  `stale_age`
 * judges each (owner->stale); *out is a malloc'd array of *count entries
 * (free() it). */
int dirlock_holders(const char *space, const char *name, double stale_age, dirlock_owner **out, size_t *count,
                    dirlock_error *err);

/* Break lock `name` if it is stale (DIRLOCK_ELIVE otherwise), or whatever
 * its state when `force` is set.  Never removes a lock taken after the
 * judgement it acted on. */
int dirlock_break(const char *space, const char *name, double stale_age, int force, dirlock_error *err);

/* Remove leftovers of crashed processes (half-made lock directories, dead
 * readers' entries) older than they could be in use.  Safe at any time. */
int dirlock_cleanup(const char *space, dirlock_error *err);

/* Run fn(arg) while holding lock `name`; always releases.  *fn_result gets
 * fn's return value when it ran.  Returns the lock's code: DIRLOCK_ELOST
 * when the lock was broken while fn ran. */
int dirlock_with(const char *space, const char *name, const dirlock_options *opts, int (*fn)(void *arg),
                 void *arg, int *fn_result, dirlock_error *err);

/* ---- multi-locks ------------------------------------------------------ */

typedef struct dirlock_set dirlock_set;

/* Take all `n` named locks or none.  Duplicates collapse; the order the
 * caller gives does not matter and no two callers can deadlock.  Honours
 * opts->timeout over the whole set. */
int dirlock_acquire_many(const char *space, const char *const names[], size_t n, const dirlock_options *opts,
                         dirlock_set **out, dirlock_error *err);
/* Release all and free.  Returns the first error met; releases the rest. */
int dirlock_release_many(dirlock_set *set, dirlock_error *err);
int dirlock_refresh_many(dirlock_set *set, dirlock_error *err);
size_t dirlock_set_count(const dirlock_set *set);
/* The i-th lock of a set (in name order), or NULL past the end. */
dirlock *dirlock_set_lock(const dirlock_set *set, size_t i);

/* ---- lock spaces ---------------------------------------------------------- */

/* What a lock space string names, without touching the space (no
 * directory made, no server asked). */
typedef struct dirlock_space_info {
        const char *backend; /* "directory", "flock", "Redis", ...: for messages */
        /* A directory of this host's filesystem (a directory space, and
         * flock:DIR): the directory's path, pointing into the string given;
         * NULL for a space on a server, which several hosts may share. */
        const char *dir;
        int ranges;        /* dirlock_acquire_range() is offered           */
        int fences;        /* dirlock_fence() is offered                   */
        int upgrade;       /* intent locks upgrade (dirlock_upgrade)       */
        int owner_records; /* dirlock_inspect(), dirlock_list() are offered */
        int permits;       /* dirlock_acquire_permit() is offered          */
} dirlock_space_info;

/* DIRLOCK_EINVAL (with the reason) for an empty or unknown space, or one
 * of a kind this build of the library does not have. */
int dirlock_space_query(const char *space, dirlock_space_info *info, dirlock_error *err);

/* The forms a lock space string may take, for usage texts: the i-th, from
 * 0 ("DIR", a lock directory) until NULL; *built (may be NULL) is 0 for a
 * kind this build of the library does not have. */
const char *dirlock_space_form(size_t i, int *built);

/* ---- processes ---------------------------------------------------------- */

/* How owner records tell a live owner from a dead one, for callers that
 * record processes of their own (the board's group-commit claims).  A pid
 * alone is reused; with its start time it names one process for good. */

/* Start time of process `pid` of this host (clock ticks since boot, field
 * 22 of /proc/PID/stat), or 0 when there is no such process. */
unsigned long long dirlock_process_start(pid_t pid);
/* 1 when process `pid` of this host is alive and started at
 * `start_time`; 0 when it provably is not (no such pid, a zombie, or the
 * pid now names a later process); -1 when that cannot be told (/proc
 * hides it). */
int dirlock_process_alive(pid_t pid, unsigned long long start_time);

#ifdef __cplusplus
}
#endif
#endif
