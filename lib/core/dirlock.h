/* dirlock.h - public interface of the dirlock library.
 *
 * Cross-process locks for CGI-style programs, made of directories:
 *   - exclusive locks (mkdir/rename based, safe on network filesystems:
 *     docs/netfs.md), with timeout, prompt wake-up, race-free breaking of
 *     stale locks and owner records;
 *   - all-or-nothing multi-locks that cannot deadlock;
 *   - a reader-writer variant (shared, exclusive and upgradable "intent"
 *     modes) with selectable policies;
 *   - kernel flock(2) locks behind the same handle type, for comparison.
 *
 * Every function returns DIRLOCK_OK (0) or one of the dirlock_code values
 * below; when `err` is not NULL it is filled with the code, the saved errno
 * (for DIRLOCK_EIO) and a message a person can read, naming the path.
 *
 * Lock spaces.  The first argument of every call names a lock space: a
 * directory path (locks are directories in it: lib/dir/exclusive.c),
 * "flock:DIR" (the kernel's flock(2) on files in DIR), or a lock server
 * shared by several hosts, named by a URL (redis://..., in a build with
 * hiredis; etcd://..., a cluster's members, in a build with libcurl and
 * json-c).  dirlock_space_form() lists the forms this build knows,
 * dirlock_space_query() says what a given string names; each backend's
 * folder in lib/ has its grammar and protocol (docs/backends.md).

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
 * or tearing down):
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
 *     asked about (netfs.c), and, per thread, the last 64 entries judged on
 *     a network filesystem with when their change time was first seen
 *     (SIGHTINGS in netfs.c: an entry is broken for its age only once
 *     seen unchanged long enough).
 *   - per-thread connections to Redis servers (redis_conn.c, kept in the
 *     per-thread connection cache of conn_cache.c): opened by a call on a
 *     Redis space that finds none idle for its server address, used by
 *     that call alone, then kept idle -- up to four per thread, the least
 *     recently used closed for a fifth -- closed after any failure and
 *     when the thread exits; a forked child frees its copies (seen by the
 *     pid, which a pthread_atfork handler clears) and opens its own.  The
 *     SHA1 of each server-side script is learnt once per process, behind
 *     a mutex.
 *   - per-thread connections to etcd members (lib/etcd/etcd_http.c): a pool
 *     of up to eight libcurl handles, each checked out for one request or
 *     watch and kept for the next (with its TCP connections), and for up
 *     to four clusters the member that answered last; freed when the
 *     thread exits, and by a forked child (seen by the pid) before it
 *     makes its own.  libcurl is initialised once per process.
 *   - the library's own code, kept loaded once it has registered a
 *     thread-exit destructor (the first wait, pending acquire or
 *     connection of any thread): loaded with dlopen -- inside a Node addon,
 *     a Python or Perl module -- a later dlclose leaves it in memory, so
 *     that threads that used it still find their destructors when they
 *     exit (lib/thread_key.c).  Python and Perl never unload a module
 *     anyway; Node unloads an addon when the worker thread that loaded it
 *     ends.
 * Every descriptor the library opens is close-on-exec (a Redis socket is
 * made so right after hiredis opens it; libcurl's sockets are opened so,
 * and the socket pair it makes for itself is marked so at once).
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
 * lock of the same name: an exclusive lock excludes readers too. */
typedef enum dirlock_mode {
        DIRLOCK_EXCLUSIVE = 0,
        DIRLOCK_SHARED,
        DIRLOCK_INTENT /* upgradable read ("prewrite-read") */
} dirlock_mode;

/* Reader-writer policies (see lib/dir/rwlock.c for the exact guarantees). */
typedef enum dirlock_policy {
        DIRLOCK_POLICY_FAIR = 0, /* no lockout either way (default)          */
        DIRLOCK_POLICY_WRITER,   /* waiting writers hold off new readers     */
        DIRLOCK_POLICY_READER,   /* readers never wait for waiting writers   */
        DIRLOCK_POLICY_SIMPLE    /* one holder at a time, readers included   */
} dirlock_policy;

/* Flags. */
#define DIRLOCK_FIFO      (1u << 0) /* serve exclusive waiters in arrival order */
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
 * lock as held by the thread that took it; lib/dir/deadlock.c). */
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
 * says which of them ended (see "acquiring without blocking"). */
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

/* An acquired lock.  Opaque. */
typedef struct dirlock dirlock;

/* Owner record of a lock, as returned by dirlock_inspect(). */
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

/* Take lock `name` in directory `lockdir` (created if missing unless
 * DIRLOCK_NO_MKDIR).  opts may be NULL for the defaults; opts->mode selects
 * exclusive, shared or intent.  On success *out is a new handle. */
int dirlock_acquire(const char *lockdir, const char *name, const dirlock_options *opts, dirlock **out,
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
 * it, lib/dir/exclusive.c) or its last refresh, whichever is later. */
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

/* Fencing.  A fence is a 64-bit number for one acquisition of a lock,
 * strictly greater than the fence of every earlier acquisition of the same
 * lock in the same space, whichever process or host made it.  Pass it
 * with every write to the resource the lock guards: a store that keeps the
 * highest fence it has accepted and refuses lower ones is safe from a
 * holder that lost its lock while it was paused and writes late -- the
 * window that dirlock_check() cannot close (docs/fencing.md).  The fence
 * is drawn on the first call, while the lock is held (DIRLOCK_ELOST if it
 * is not any more), and the same number is returned for the handle after
 * that.  Fences are microsecond timestamps made strictly increasing, so
 * they do not go back even if the counter is lost (docs/fencing.md says
 * what that assumes).  flock spaces have none (DIRLOCK_EINVAL).  A fence
 * is at most DIRLOCK_FENCE_MAX, 2^53 - 1, so that it is exact in a double
 * (Lua on a Redis server, JSON, JavaScript): a counter at or past it --
 * data dirlock did not write -- is refused with DIRLOCK_EDATA, never
 * answered with a fence given before. */
#define DIRLOCK_FENCE_BITS 53
#define DIRLOCK_FENCE_MAX  ((1ULL << DIRLOCK_FENCE_BITS) - 1)
int dirlock_fence(dirlock *lock, unsigned long long *fence, dirlock_error *err);

/* Name, token and mode of a handle. */
const char *dirlock_name(const dirlock *lock);
const char *dirlock_token(const dirlock *lock);
int dirlock_mode_of(const dirlock *lock);

/* Owner record and age of lock `name` (DIRLOCK_ENOLOCK when free).
 * `stale_age` <= 0 means the default; it decides owner->stale. */
int dirlock_inspect(const char *lockdir, const char *name, double stale_age, dirlock_owner *owner,
                    dirlock_error *err);

/* Every lock that exists in `lockdir` (held, or with readers or waiters),
 * each as dirlock_inspect() describes it, in name order: *owners is a
 * malloc'd array of *count entries; free() it.  Its holders one by one:
 * dirlock_holders(); its waiters: dirlock_waiters(). */
int dirlock_list(const char *lockdir, double stale_age, dirlock_owner **owners, size_t *count,
                 dirlock_error *err);

/* Break lock `name` if it is stale (DIRLOCK_ELIVE otherwise), or whatever
 * its state when `force` is set.  Never removes a lock taken after the
 * judgement it acted on. */
int dirlock_break(const char *lockdir, const char *name, double stale_age, int force, dirlock_error *err);

/* Remove leftovers of crashed processes (half-made lock directories, dead
 * readers' entries) older than they could be in use.  Safe at any time. */
int dirlock_cleanup(const char *lockdir, dirlock_error *err);

/* Run fn(arg) while holding lock `name`; always releases.  *fn_result gets
 * fn's return value when it ran.  Returns the lock's code: DIRLOCK_ELOST
 * when the lock was broken while fn ran. */
int dirlock_with(const char *lockdir, const char *name, const dirlock_options *opts, int (*fn)(void *arg),
                 void *arg, int *fn_result, dirlock_error *err);

/* ---- multi-locks ------------------------------------------------------ */

typedef struct dirlock_set dirlock_set;

/* Take all `n` named locks or none.  Duplicates collapse; the order the
 * caller gives does not matter and no two callers can deadlock.  Honours
 * opts->timeout over the whole set. */
int dirlock_acquire_many(const char *lockdir, const char *const names[], size_t n,
                         const dirlock_options *opts, dirlock_set **out, dirlock_error *err);
/* Release all and free.  Returns the first error met; releases the rest. */
int dirlock_release_many(dirlock_set *set, dirlock_error *err);
int dirlock_refresh_many(dirlock_set *set, dirlock_error *err);
size_t dirlock_set_count(const dirlock_set *set);
/* The i-th lock of a set (in name order), or NULL past the end. */
dirlock *dirlock_set_lock(const dirlock_set *set, size_t i);

/* ---- reader-writer locks ---------------------------------------------- */

/* Shared and intent locks are taken with dirlock_acquire() and
 * opts->mode = DIRLOCK_SHARED / DIRLOCK_INTENT.  Then: */

/* Intent -> exclusive.  Waits only for the readers present, holding off new
 * ones.  On a plain shared lock: DIRLOCK_EUPGRADE.  On timeout the handle
 * keeps its intent lock.  opts may be NULL (use the acquire options). */
int dirlock_upgrade(dirlock *lock, const dirlock_options *opts, dirlock_error *err);

/* Exclusive -> shared, without letting a writer in between. */
int dirlock_downgrade(dirlock *lock, dirlock_error *err);

/* Upgraded intent -> intent again: readers may enter from here, writers
 * and other intent holders still wait.  For a writer whose change became
 * visible in one atomic step (a rename) and that keeps the lock for the
 * work that follows (syncing, bookkeeping) without holding readers off.
 * A no-op on an intent lock; DIRLOCK_EINVAL on a lock not taken in intent
 * mode.  It may upgrade again later. */
int dirlock_downgrade_intent(dirlock *lock, dirlock_error *err);

/* ---- range locks ------------------------------------------------------- */

/* Lock the half-open range [lo, hi) of lock `name` in opts->mode (shared,
 * intent or exclusive) and policy.  Ranges that do not overlap never wait
 * for each other; overlapping ones follow the reader-writer rules and the
 * policy (under `fair` a waiting writer holds off new overlapping readers,
 * and neither side can be locked out).  A whole lock of `name` (from
 * dirlock_acquire) conflicts with every range of it, whatever the modes.
 * Endpoints are doubles: finite, lo < hi -- seed 002's tree keeps nested
 * real intervals, and a double has room for 52 levels of bisection.
 * The handle is released, refreshed, checked, fenced, upgraded (intent ->
 * exclusive) and downgraded as a whole lock's; it is not reentrant.
 * Directory spaces: lib/dir/range.c; Redis spaces: lib/redis/redis_range.c;
 * etcd spaces keep ranges in the name's queue (lib/etcd/etcd_queue.c);
 * flock spaces have none (DIRLOCK_EINVAL). */
int dirlock_acquire_range(const char *lockdir, const char *name, double lo, double hi,
                          const dirlock_options *opts, dirlock **out, dirlock_error *err);
/* A range written as text, as the dirlock command's --range takes it and
 * the bindings pass it on: the one grammar of it (lib/range_text.c).
 *
 *   range  = number ":" number                      ; LO:HI, nothing around
 *   number = [sign] (digits ["." [digits]] / "." digits) [exponent]
 *   exponent = ("e" / "E") [sign] digits
 *   sign   = "+" / "-"
 *   digits = 1*("0"-"9")
 *
 * No spaces, no hexadecimal, no "inf" or "nan"; the decimal point is "."
 * whatever the locale.  Each number becomes the nearest double (so 1e-320
 * is the subnormal it names, and 1e-400 is 0); a number too large for a
 * double is refused.  Then, as for dirlock_acquire_range: LO < HI.  On
 * success *lo and *hi are set; otherwise DIRLOCK_EINVAL, a message saying
 * what is wrong, and *lo and *hi are left alone. */
int dirlock_range_parse(const char *text, double *lo, double *hi, dirlock_error *err);
/* Narrow a held range to [lo, hi), a part of it, at once; waiters that no
 * longer overlap get in.  A range can only shrink: growing could deadlock. */
int dirlock_shrink(dirlock *lock, double lo, double hi, dirlock_error *err);
/* 1 and the range held (either pointer may be NULL) for a range lock, 0
 * for a whole lock. */
int dirlock_range_of(const dirlock *lock, double *lo, double *hi);

/* A range holder or waiter of a lock, as dirlock_ranges() lists them. */
typedef struct dirlock_range_info {
        double lo, hi;
        int mode;      /* dirlock_mode                                  */
        int waiting;   /* 1: a waiter's reservation, 0: held            */
        int upgrading; /* an intent holder upgrading to exclusive       */
        pid_t pid;
        char host[256];
        double age; /* seconds since taken, queued or refreshed */
} dirlock_range_info;

/* Every range holder and waiter of lock `name`, ordered by lo: *out is a
 * malloc'd array of *count entries (free() it). */
int dirlock_ranges(const char *lockdir, const char *name, dirlock_range_info **out, size_t *count,
                   dirlock_error *err);

/* ---- counting locks ---------------------------------------------------- */

/* Largest number of permits a counting lock may have. */
#define DIRLOCK_PERMITS_MAX 65535

/* Take one of the `permits` permits of counting lock `name`: at most
 * `permits` holders have one at any moment (1..DIRLOCK_PERMITS_MAX), each
 * with its own owner record, token and fence, the way a semaphore counts
 * -- but a holder that dies gives its permit back (on this host at once,
 * on another after the stale age).  opts->mode must be DIRLOCK_EXCLUSIVE
 * (the default); timeout, stale age, DIRLOCK_FIFO, DIRLOCK_REENTRANT, the
 * cancel descriptor and the rest work as for dirlock_acquire(), and the
 * handle is released, refreshed, checked and fenced as a lock's; it has no
 * modes to change (upgrade and downgrade: DIRLOCK_EINVAL).
 *
 * N belongs to the lock while it is used: an acquire asking another N
 * than that of the holders present is refused with DIRLOCK_EINVAL, naming
 * theirs -- never let in beyond either number; once they are gone, any N
 * may be asked.  A counting lock is a lock of its own: the permits of
 * NAME never wait for NAME's exclusive, shared or range locks, nor hold
 * them off.  Directory spaces: lib/dir/permits.c; Redis spaces:
 * lib/redis/redis_permits.c; flock and etcd spaces have none
 * (DIRLOCK_EINVAL). */
int dirlock_acquire_permit(const char *space, const char *name, unsigned permits, const dirlock_options *opts,
                           dirlock **out, dirlock_error *err);
/* The N of a counting lock's handle; 0 for any other lock. */
unsigned dirlock_permits_of(const dirlock *lock);

/* ---- who holds, who waits ------------------------------------------------ */

/* Every holder of lock `name`, one owner record each, oldest first: the
 * holder of its exclusive lock (exclusive, intent, or a `simple` reader),
 * each reader (mode shared), and each permit of its counting lock (with
 * `permits` set); range holders are dirlock_ranges()'.  `stale_age`
 * judges each (owner->stale); *out is a malloc'd array of *count entries
 * (free() it). */
int dirlock_holders(const char *space, const char *name, double stale_age, dirlock_owner **out, size_t *count,
                    dirlock_error *err);

/* What a waiter waits for. */
enum dirlock_wait_kind {
        DIRLOCK_WAIT_LOCK = 0, /* the name's lock, in `mode`               */
        DIRLOCK_WAIT_RANGE,    /* a range [lo, hi) of the name, in `mode`   */
        DIRLOCK_WAIT_PERMIT,   /* one of `permits` permits of the name      */
        DIRLOCK_WAIT_UPGRADE   /* an intent holder, for exclusive          */
};

/* A process (thread) waiting for a lock, as dirlock_waiters() lists them. */
typedef struct dirlock_waiter {
        char name[DIRLOCK_NAME_MAX + 1];
        int kind;         /* dirlock_wait_kind                               */
        int mode;         /* dirlock_mode it asks for                        */
        double lo, hi;    /* DIRLOCK_WAIT_RANGE: the range                   */
        unsigned permits; /* DIRLOCK_WAIT_PERMIT: the lock's N               */
        pid_t pid;
        pid_t tid; /* the waiting thread; 0 when not known              */
        unsigned long long start_time;
        char host[256];
        double since;    /* wall clock, seconds since the epoch, it began to wait */
        double age;      /* seconds since it began or last renewed its entry */
        int pending;     /* 1: a pending acquire (dirlock_acquire_start)   */
        int owner_alive; /* -1 unknown (other host), 0 dead, 1 alive       */
} dirlock_waiter;

/* Every waiter of lock `name` (of every lock of the space when `name` is
 * NULL), the longest waiting first: whole, shared, intent, upgrade, range
 * and permit waits alike.  *out is a malloc'd array of *count entries
 * (free() it); a waiter that died is left out (and its entry removed). */
int dirlock_waiters(const char *space, const char *name, dirlock_waiter **out, size_t *count,
                    dirlock_error *err);

/* ---- acquiring without blocking --------------------------------------- */

/* For event loops (libuv, epoll, asyncio, Node): an acquire that never
 * blocks its caller.  Start it, poll its descriptor for reading, step it
 * when the descriptor is readable; it ends with the lock or an error:
 *
 *     dirlock_pending *p;
 *     dirlock_acquire_start(space, name, &opts, &p, &err);
 *     ... add dirlock_pending_fd(p) to the loop, for POLLIN; when readable:
 *     rc = dirlock_pending_step(p, &err);
 *     if (rc == DIRLOCK_EAGAIN) wait again;
 *     else { lock = dirlock_pending_lock(p); dirlock_pending_free(p); ... }
 *
 * It is the same acquire as dirlock_acquire() -- the same protocol, the
 * same options, modes, spaces, errors and timeout -- run so that wherever
 * it would wait it returns to the loop instead (lib/pending.c has the
 * state machine).  The deadline needs no timer of the caller's: the
 * descriptor becomes readable when it passes, and the next step ends the
 * acquire with DIRLOCK_ETIMEDOUT.  Any number may be pending in one thread
 * (each holds two descriptors, and the thread a few for all of them).
 *
 * Thousands in one loop: start them with DIRLOCK_THREAD_FD.  They have no
 * descriptor of their own; dirlock_pending_fd() is the thread's, polled
 * once; when it is readable:
 *
 *     while ((p = dirlock_pending_next()) != NULL) {
 *             rc = dirlock_pending_step(p, &err);  -- it ended: its result
 *             ... dirlock_pending_data(p) says whose it is; free it
 *     }
 *
 * Each turn runs about a millisecond of them and leaves the rest for the
 * next (the descriptor stays readable), so that the loop keeps turning;
 * waiters of one lock in one thread follow its queue together and cost a
 * hand-off one step, not one each (lib/pending.c, lib/dir/fifo.c;
 * bench/README.md for 10,000 at once).  A thread may start both kinds:
 * its loop then polls the thread's descriptor too and runs
 * dirlock_pending_next() when it is readable (until then, THREAD_FD
 * acquires that can go on keep one of the others' descriptors readable).
 * A pending acquire is started, stepped and freed by one thread, and
 * belongs to its process like a handle.  opts->cancel_fd (with
 * DIRLOCK_CANCEL_FD) works as for dirlock_acquire(), and so does
 * dirlock_pending_cancel().  Each *_start call runs the acquire up to its
 * first wait at once: a free lock is already held when it returns (the
 * descriptor then polls readable, and the first step says DIRLOCK_OK). */
typedef struct dirlock_pending dirlock_pending;

int dirlock_acquire_start(const char *space, const char *name, const dirlock_options *opts,
                          dirlock_pending **out, dirlock_error *err);
int dirlock_acquire_range_start(const char *space, const char *name, double lo, double hi,
                                const dirlock_options *opts, dirlock_pending **out, dirlock_error *err);
int dirlock_acquire_permit_start(const char *space, const char *name, unsigned permits,
                                 const dirlock_options *opts, dirlock_pending **out, dirlock_error *err);
int dirlock_acquire_many_start(const char *space, const char *const names[], size_t n,
                               const dirlock_options *opts, dirlock_pending **out, dirlock_error *err);
/* Intent -> exclusive without blocking; the handle is not used by anyone
 * else until the pending upgrade is done (DIRLOCK_OK: upgraded; else it
 * keeps its intent lock, as dirlock_upgrade()). */
int dirlock_upgrade_start(dirlock *lock, const dirlock_options *opts, dirlock_pending **out,
                          dirlock_error *err);

/* The descriptor to poll for reading (the same for the pending acquire's
 * whole life; the library closes it in dirlock_pending_free). */
int dirlock_pending_fd(const dirlock_pending *p);
/* Go on as far as possible without blocking: DIRLOCK_EAGAIN while it still
 * waits, else the acquire's result (the same on every later call).  A
 * DIRLOCK_THREAD_FD acquire only says how it is: dirlock_pending_next()
 * runs it. */
int dirlock_pending_step(dirlock_pending *p, dirlock_error *err);
/* Give up: the acquire ends at its next step with DIRLOCK_ECANCELED (or
 * DIRLOCK_OK, when it got the lock first), having removed what it made. */
void dirlock_pending_cancel(dirlock_pending *p);
/* After DIRLOCK_OK: the new handle, or set (acquire_many), handed to the
 * caller once (NULL before, after, or for an upgrade). */
dirlock *dirlock_pending_lock(dirlock_pending *p);
dirlock_set *dirlock_pending_set(dirlock_pending *p);
/* DIRLOCK_THREAD_FD: when the thread's descriptor polls readable, call
 * this until it returns NULL: it runs the thread's pending acquires that
 * can go on -- for about a millisecond per round, leaving the rest for the
 * loop's next turn (the descriptor stays readable) -- and returns one that
 * ended (then call dirlock_pending_step for its result), once each.  NULL:
 * none left to report now.  Only THREAD_FD acquires are returned; an
 * acquire freed before it is returned never is. */
dirlock_pending *dirlock_pending_next(void);
/* A pointer of the caller's kept with the acquire (NULL at start). */
void dirlock_pending_set_data(dirlock_pending *p, void *data);
void *dirlock_pending_data(const dirlock_pending *p);
/* Free it in any state: a waiting acquire is canceled and finished first
 * (which may block for the clean-up's own I/O, at most a lock server's
 * answer), a lock it got and nobody took is released.  In a forked child
 * it only closes the child's copies of its descriptors: the acquire under
 * way is the parent's, and what it had allocated stays until exec or
 * exit. */
void dirlock_pending_free(dirlock_pending *p);

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

/* ---- filesystems ---------------------------------------------------------- */

/* What the library knows of the filesystem a lock directory is on, and
 * what it allows there among processes of several clients (lib/netfs.c,
 * docs/netfs.md).  What is not ok is refused with DIRLOCK_ENETFS unless
 * the caller passes DIRLOCK_ONE_CLIENT; where `usable` is 0 (sshfs)
 * every lock is refused. */
typedef struct dirlock_fs_info {
        char type[32];    /* as the mount table names it: "ext4", "tmpfs",
                             "fuse.glusterfs", "nfs4", ... ("" unknown)        */
        char kind[32];    /* "local", "glusterfs", "nfs", "smb", "sshfs",
                             "fuse" (another FUSE filesystem), ...             */
        int network;      /* a network filesystem: its clients may be hosts  */
        int notify;       /* waiters are woken by inotify (else they poll)   */
        int shared_ok;    /* shared and intent locks are safe across clients */
        int ranges_ok;    /* range locks are safe across clients             */
        double cache_lag; /* seconds a client may show an entry's times late;
                             judging a lock stale takes that much longer     */
        int exclusive_ok; /* exclusive locks (FIFO or not) are safe across
                             clients                                         */
        int usable;       /* some lock is safe here, on one client at least  */
} dirlock_fs_info;

/* Look at directory `dir` (it must exist): DIRLOCK_OK and *info, or
 * DIRLOCK_EIO. */
int dirlock_fs_query(const char *dir, dirlock_fs_info *info, dirlock_error *err);

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

/* ---- kernel locks, for comparison ------------------------------------- */

/* flock(2) on file `lockdir/name.flock`, shared or exclusive, with the same
 * timeout semantics; released with dirlock_release().  Has the kernel's
 * semantics: no stale breaking, no owner record, readers can lock out a
 * writer. */
int dirlock_flock_acquire(const char *lockdir, const char *name, const dirlock_options *opts, dirlock **out,
                          dirlock_error *err);

#ifdef __cplusplus
}
#endif
#endif
