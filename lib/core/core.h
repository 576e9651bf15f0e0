/* core.h - what the core's files share and callers never see: the part of
 * a handle every backend has, error helpers, paths, owner records and
 * identity, clocks, the one wait primitive, and waiting on local files;
 * and the hooks a module sets on every handle.  The backend seam is
 * backend.h; the directory backend's own internals are dir.h. */
#ifndef DIRLOCK_CORE_H
#define DIRLOCK_CORE_H

#include "dirlock.h"

#include <assert.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* DL_ASSERT(c): a precondition or invariant that a protocol's comment
 * states, checked where the comment states it, as SQLite's assert()s
 * check its comments: in the builds the tests run under the sanitizers
 * (make test SANITIZE=1) and the test-hook build (tests/tests.mk), which
 * compile with DIRLOCK_ASSERTS.  The shipped library pays nothing. */
#ifdef DIRLOCK_ASSERTS
#define DL_ASSERT(c) assert(c)
#else
#define DL_ASSERT(c) ((void)0)
#endif

/* DL_ON_LOAD(fn) { ... }: run when the program, or the shared library it
 * is in, is loaded -- before main, or inside the dlopen that loads it.
 * How a module or a backend adds itself to the core's registries
 * (dl_backend_register, dl_dir_module_add, ...): adding one is a folder,
 * and no line elsewhere.  A registration only links a node of static
 * storage into a list, and never fails. */
#define DL_ON_LOAD(fn) __attribute__((constructor)) static void fn(void)

/* ---- the handle -------------------------------------------------------- */

struct dl_backend;

/* What every handle has; the backend keeps the rest in `impl`. */
struct dirlock {
        const struct dl_backend *be;      /* the lock space's backend (backend.h) */
        void *impl;                       /* the backend's state for this lock    */
        int mode;                         /* dirlock_mode currently held          */
        dirlock_options opts;             /* as given at acquire, normalised      */
        pid_t pid;                        /* process that acquired; only it acts  */
        unsigned holds;                   /* reentrant hold count (>= 1 while held) */
        unsigned long long partner_start; /* opts.partner_pid's start time        */
        unsigned long long fence;         /* this acquisition's fence, 0 = not drawn */
        /* What is asked, besides a whole lock: set by the module's call
         * before the backend's entry makes the handle that kind of lock
         * (backend.h: range, permit). */
        bool ranged; /* a range lock of [lo, hi) (lib/range) */
        double lo, hi;
        unsigned permits; /* a counting lock's permit: its N, else 0 (lib/permit) */
        char name[DIRLOCK_NAME_MAX + 1];
        char token[DIRLOCK_TOKEN_LEN + 1]; /* 128-bit random, hex: names this acquisition */
};

void dl_handle_free(dirlock *h);
/* After a successful acquire: the cancel descriptor was for that call only. */
void dl_handle_forget_cancel(dirlock *h);
/* DIRLOCK_ENOTOWNER unless the calling process acquired h. */
int dl_handle_owned(const dirlock *h, dirlock_error *err);
/* The preamble of a public call on a handle: DIRLOCK_EINVAL for NULL,
 * DIRLOCK_ENOTOWNER in another process than the one that acquired it. */
int dl_handle_usable(const dirlock *h, dirlock_error *err);
/* dl_handle_usable, and DIRLOCK_ELOST for a reentrant handle released to
 * zero holds: the preamble of a call on a held lock. */
int dl_handle_held(const dirlock *h, dirlock_error *err);
/* Draw a new token for h and let its backend put it in its paths (tokens
 * are never reused: INVARIANT B in dir_exclusive.c), after releasing what
 * a failed release left (the backend's release_kept). */
int dl_handle_new_token(dirlock *h, dirlock_error *err);
/* A handle of lock `name` in lock space `space` (dl_space_resolve, then
 * dl_handle_open in backend.h): what a module's acquire call starts from,
 * before the backend's entry makes it that module's kind of lock. */
int dl_handle_open_in(const char *space, const char *name, const dirlock_options *opts, dirlock **out,
                      dirlock_error *err);

/* Hooks on the life of every handle, whatever its backend, that one
 * module sets (lib/deadlock: the locks this process holds, for its
 * self-deadlock check).  Without it they do nothing. */
typedef struct dl_handle_hooks {
        /* h now holds its lock (true), or holds nothing any more (false). */
        void (*held)(const dirlock *h, bool held);
        /* Before a waiting acquire of h: DIRLOCK_EDEADLK when it would
         * wait for the calling thread itself, else DIRLOCK_OK. */
        int (*before_wait)(const dirlock *h, dirlock_error *err);
} dl_handle_hooks;
void dl_handle_hooks_set(const dl_handle_hooks *hooks);
/* The hooks' calls, for the core's own files (handle.c, multi.c). */
void dl_handle_note_held(const dirlock *h, bool held);

/* ---- errors (error.c) -------------------------------------------------- */

/* Fill err (if any) and return code.  Message is printf-formatted; for
 * DIRLOCK_EIO pass the errno, and ": strerror" is appended. */
int dl_fail(dirlock_error *err, int code, int sys_errno, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void dl_ok(dirlock_error *err);
/* An acquire (or upgrade) that waited `timeout` s ended without its lock:
 * DIRLOCK_EBUSY for a try (timeout 0), "WHAT is held by WHO";
 * DIRLOCK_ECANCELED when its cancel descriptor fired, "canceled waiting
 * for WHAT (held by WHO)"; else DIRLOCK_ETIMEDOUT, "timed out after T s:
 * WHAT is held by WHO".  `what` names the lock ("lock 'x'"), `who` what
 * holds it (dl_record_describe, or "3 readers"). */
int dl_gave_up(dirlock_error *err, double timeout, bool canceled, const char *what, const char *who);
/* The same when nobody holds WHAT but a waiter ahead goes first: "WHAT
 * goes first to a waiter ahead, AHEAD" (never "held by" a waiter). */
int dl_gave_up_ahead(dirlock_error *err, double timeout, bool canceled, const char *what, const char *ahead);
/* Put "lock 'NAME': " before err's message (unless it starts so already),
 * for an error met while acting on that lock; returns rc. */
int dl_about(dirlock_error *err, int rc, const char *name);

/* ---- paths (path.c) ---------------------------------------------------- */

/* malloc'd "<a>/<b><suffix>", NULL when out of memory. */
char *dl_join(const char *a, const char *b, const char *suffix);
/* Make lock directory `dir` absolute (malloc'd) and create it if missing
 * and allowed; *mode_out (may be NULL) gets its st_mode. */
int dl_lockdir_prepare(const char *dir, bool create, char **abs_out, unsigned *mode_out, dirlock_error *err);
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
/* A boot id as /proc gives it: 36 characters and its NUL. */
#define DL_BOOT_ID_SIZE 37

typedef struct dl_record {
        pid_t pid;
        unsigned long long start_time; /* clock ticks since boot (/proc) */
        char token[DIRLOCK_TOKEN_LEN + 1];
        long long acquired_ns;         /* CLOCK_REALTIME at acquire      */
        char boot_id[DL_BOOT_ID_SIZE]; /* this machine's boot            */
        unsigned long long pidns;      /* pid namespace inode            */
        int mode;                      /* dirlock_mode                   */
        unsigned long long stale_ms;   /* the holder's stale age (0: none) */
        pid_t partner;                 /* 0, or a process holding with it */
        unsigned long long partner_start;
        pid_t tid; /* the thread that took it (deadlock detection); 0: unknown */
        char host[256];
        /* Not in the text: when the entry it was read from last changed
         * (its file times, INVARIANT C in dir_exclusive.c), filled by the
         * readers of entries; 0 otherwise. */
        long long changed_ns;
} dl_record;

/* Our own record for a new lock (token, our stale age and partner given;
 * partner 0 for none), naming the calling thread. */
void dl_record_self(dl_record *rec, const char *token, int mode, double stale_age, pid_t partner,
                    unsigned long long partner_start);
/* Text form, NUL-terminated; returns its length, or -1 if it does not fit
 * (buf then holds an empty string, when size > 0). */
int dl_record_format(const dl_record *rec, char *buf, size_t size);
/* Parse the text form (not NUL-terminated: `len` bytes).  0 or -1. */
int dl_record_parse(const char *buf, size_t len, dl_record *rec);
/* Who holds a lock, for messages: "pid 812 on www1" after `role` (e.g.
 * "a reader, ", or ""); "an owner without a readable record" for rec
 * NULL.  Truncated to `size`. */
void dl_record_describe(const dl_record *rec, const char *role, char *out, size_t size);
/* What a record says of its owner, for dirlock_inspect(): pid, start
 * time, host, when acquired, same host, alive (dl_record_owner_alive; -1
 * without a pid), partner.  The backend fills in the rest (token, mode,
 * age, stale, readers, ranges). */
void dl_record_to_owner(const dl_record *rec, dirlock_owner *owner);
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
/* getpid(), without a system call after the first (cleared by fork()). */
pid_t dl_self_pid(void);
/* gettid(), the same way, per thread. */
pid_t dl_self_tid(void);
/* 128 random bits as DIRLOCK_TOKEN_LEN hex digits. */
int dl_random_token(char out[DIRLOCK_TOKEN_LEN + 1], dirlock_error *err);

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
/* Milliseconds since `then` (a dl_now() reading). */
double dl_ms_since(const dl_time *then);
/* Wall clock in nanoseconds since the epoch. */
long long dl_wall_ns(void);
/* Nanoseconds since the epoch of a timestamp. */
long long dl_ts_ns(const struct timespec *ts);

/* ---- thread-exit destructors (thread_key.c) ---------------------------- */

/* pthread_key_create(key, destructor), the library pinned in memory first
 * so that no dlclose unmaps the destructor before a thread runs it: 0 or
 * an errno value.  Every thread-exit destructor of the library is
 * registered through it. */
int dl_thread_key_create(pthread_key_t *key, void (*destructor)(void *));

/* ---- the one wait primitive (poll.c) ----------------------------------- */

/* Every wait of the library goes through here: ppoll(2) without a signal
 * mask -- or, while a task that waits by suspending runs on the calling
 * thread (a pending acquire of lib/async), that task's way of waiting,
 * with the same result.  `timeout` NULL: no timeout. */
int dl_poll(struct pollfd *fds, unsigned long n, const struct timespec *timeout);
/* Sleep up to `ms`, never past the deadline; 1 when cancel_fd (>= 0)
 * polled readable meanwhile, else 0.  Through dl_poll. */
int dl_nap_ms(double ms, const dl_time *deadline, int cancel_fd);
/* A pseudo-descriptor for dl_poll: inside a suspending task it polls
 * readable (POLLIN) once after each dl_task_kick of that task; ppoll(2)
 * ignores it (negative), so a blocking caller never waits for it. */
#define DL_POLL_KICK (-2)
/* The task that runs on this thread now, or NULL: the calls it makes
 * block no thread (deadlock detection leaves them out; a queue may be
 * followed for many of them at once). */
void *dl_task_current(void);
/* Make `task` go on at its next chance: its wait ends when it waits for
 * DL_POLL_KICK.  For the thread that runs it. */
void dl_task_kick(void *task);
/* What a module that runs tasks (lib/async) sets: how a task waits and
 * is kicked.  Set once, at load (DL_ON_LOAD). */
typedef struct dl_tasks {
        int (*poll)(void *task, struct pollfd *fds, unsigned long n, const struct timespec *timeout);
        void (*kick)(void *task);
} dl_tasks;
void dl_tasks_set(const dl_tasks *tasks);
/* The task that runs on this thread from now on (NULL: none), as the
 * module that runs tasks switches to one and back. */
void dl_task_enter(void *task);

/* ---- the per-thread inotify hub (notify.c) ------------------------------ */

#define DL_LISTENER_WATCHES 16
struct dl_listener;
struct inotify_event;
/* One watch of a listener: a slot of its own, linked into the list of
 * the listeners of that watched inode (notify.c), so that an event is
 * dispatched to the listeners of its watch alone. */
typedef struct dl_listen_slot {
        int wd;                   /* -1: a free slot                      */
        uint32_t mask;            /* IN_* events wanted there             */
        unsigned long long added; /* order of adding (the oldest goes first when full) */
        struct dl_listener *owner;
        struct dl_listen_slot *prev, *next;
} dl_listen_slot;
/* One waiter's interest in the thread's inotify instance. */
typedef struct dl_listener {
        dl_listen_slot watch[DL_LISTENER_WATCHES];
        bool joined; /* the thread has an instance, and we are on its list */
        bool fired;  /* an event that matters came since dl_notify_take   */
        /* The task made to go on (dl_task_kick) when another's drain
         * fires us, or NULL. */
        void *kick;
        /* NULL (every name), or false when an event naming `name` in a
         * watched directory cannot matter to this waiter. */
        bool (*filter)(const char *name, unsigned mask, void *arg);
        void *filter_arg;
        /* NULL, or called with every event that matters to it instead of
         * firing it (the thread's view of a queue, lib/fifo). */
        void (*on_event)(struct dl_listener *l, const struct inotify_event *ev);
        /* On leaving, watches no listener wants any more are removed from
         * the instance (not only narrowed): a directory watched for long. */
        bool drop_unwanted;
        struct dl_listener *prev, *next;
} dl_listener;
/* The thread's instance (made on first use), -1 when none can be had. */
int dl_notify_fd(void);
/* The thread's instance if this process made it already, else -1. */
int dl_notify_fd_made(void);
void dl_notify_join(dl_listener *l);
void dl_notify_leave(dl_listener *l);
/* Watch `path` for `mask` (IN_ONLYDIR and the like in `flags`): its watch
 * descriptor, or -1 with errno (ENOSPC, ENOMEM: out of watches). */
int dl_notify_add(dl_listener *l, const char *path, uint32_t mask, uint32_t flags);
void dl_notify_set_mask(dl_listener *l, int wd, uint32_t mask);
/* Read every queued event and fire the listeners it matters to (`self`
 * is the caller's own, which is not kicked). */
void dl_notify_drain(const dl_listener *self);
/* Whether l fired since the last call (and reset it). */
bool dl_notify_take(dl_listener *l);
/* Fire l as an event that matters to it would (kicking its task): what
 * the thread's view of a queue does for a waiter whose waiter ahead
 * left. */
void dl_notify_poke(dl_listener *l);

/* ---- backing off (backoff.c) ------------------------------------------- */

/* A jittered exponential backoff: each step is the base times a random
 * factor in [0.5, 1.5), at most cap_ms; the base starts at first_ms and
 * doubles after each step up to cap_ms.  `seed` (a token) seeds the
 * jitter, so that processes backing off from one event spread out. */
typedef struct dl_backoff {
        double first_ms; /* the first step's base, again after a reset */
        double base_ms;  /* the next step's base                       */
        double cap_ms;   /* the longest step, and the base's ceiling    */
        unsigned long long rng;
} dl_backoff;

void dl_backoff_init(dl_backoff *b, double first_ms, double cap_ms, const char *seed);
/* The next step, in ms. */
double dl_backoff_next(dl_backoff *b);
/* Start again from the first step (the jitter goes on). */
void dl_backoff_reset(dl_backoff *b);

/* ---- waiting (waiter.c) ------------------------------------------------ */

/* Waits for "something may have changed in lockdir": an inotify event on
 * the lock directory naming one of our interesting entries, the death of a
 * watched owner process (pidfd), or a backoff step when notification is
 * not available.  Never sleeps past the deadline. */
typedef struct dl_waiter {
        dl_listener listener; /* its interest in the thread's inotify hub */
        int lockdir_wd;       /* the lock directory's watch, or -1       */
        int pid_fd;           /* pidfd of the owner we wait for, or -1   */
        pid_t pid_watched;
        bool notify;           /* inotify usable                        */
        dl_backoff backoff;    /* without inotify: its cap is the longest step */
        double recheck_ms;     /* with inotify: re-judge at least this often */
        double span_ms;        /* > 0: wait this long instead (dl_waiter_span) */
        bool owner_died;       /* the last wait ended on the owner's death   */
        int cancel_fd;         /* readable: DIRLOCK_ECANCELED; -1 = none      */
        const char *wake_name; /* a name starting with '.' that counts too */
        /* NULL, or a filter of the other names (IN_* mask given): false
         * when such an event cannot matter to this waiter. */
        bool (*relevant)(const char *name, unsigned mask, void *arg);
        void *relevant_arg;
        const char *lockdir; /* the caller's; releases there wake us      */
        bool lockdir_muted;  /* ... unless muted (dl_waiter_lockdir_events) */
} dl_waiter;

/* The calling thread's next dl_waiter_wait returns by `at` at the latest
 * (0, as on a re-check), whatever else wakes it, until called again with
 * NULL: the moment a deadlock check falls due (lib/deadlock).  Per
 * thread; a task never sets it. */
void dl_waiter_wake_by(const dl_time *at);
/* `stale_age` bounds the re-check interval and the backoff: a waiter
 * renews its waiting entries (queue ticket, ...) at least every third of
 * it. */
int dl_waiter_init(dl_waiter *w, const char *lockdir, unsigned flags, const char *seed, double stale_age);
/* Also wake when this owner dies (same host only; no-op otherwise). */
void dl_waiter_watch_owner(dl_waiter *w, const dl_record *owner);
/* A pidfd that polls readable when the owner of `rec` dies: on its process
 * if that still runs (the recorded start time: not a reused pid), else on
 * its partner (which then holds the lock alone); *followed (may be NULL)
 * gets that pid.  -1 when neither runs, when the record is another host's
 * (dl_record_same_host), or without pidfds. */
int dl_owner_pidfd(const dl_record *rec, pid_t *followed);
/* Whether this system gives pidfds at all (pidfd_open: Linux 5.3; not
 * under valgrind 3.19).  Without them a waiter cannot be woken by a
 * same-host owner's death and re-judges it every DL_RECHECK_MS instead. */
bool dl_pidfd_supported(void);
/* How often a waiter looks again when nothing can wake it (the safety
 * net under inotify, and the owner check without pidfds), in ms. */
#define DL_RECHECK_MS 100.0
/* Also wake on deletions and renames in another directory (e.g. a readers'
 * directory).  0, or -1 when it cannot be watched (then back off). */
int dl_waiter_watch_dir(dl_waiter *w, const char *dir);
/* dl_waiter_watch_dir, saying whether `dir` was missing: true when it
 * does not exist, so that a directory made there later is not watched
 * (its caller looks again before sleeping once it exists); false when it
 * is watched, or when this waiter does not use inotify at all. */
bool dl_waiter_watch_missing(dl_waiter *w, const char *dir);
/* Also wake when entry `path` (a file or symlink, not followed) is
 * removed: the queue's predecessor ticket.  0, or -1 with errno (ENOENT:
 * it is gone already, look again instead of waiting). */
int dl_waiter_watch_entry(dl_waiter *w, const char *path);
/* Whether deletions in the lock directory (releases) wake this waiter:
 * on by dl_waiter_init; a queued waiter that is not first turns them off,
 * so that a release wakes only the first.  Turning them on happens before
 * the caller's next look, so no release after that look is missed. */
void dl_waiter_lockdir_events(dl_waiter *w, bool on);
/* True when the last wait ended because the watched owner died. */
bool dl_waiter_owner_died(const dl_waiter *w);
/* Also end waits when fd polls readable (DIRLOCK_CANCEL_FD); fd < 0: no. */
void dl_waiter_cancel_on(dl_waiter *w, int fd);
/* With inotify: wait up to `ms` (0: the re-check interval again) before
 * returning for a re-check -- for a waiter that an event of the thread's
 * own wakes when it matters (the waiter ahead in a queue is a task of
 * this thread: lib/fifo), whose only other business is renewing its
 * entries. */
void dl_waiter_span(dl_waiter *w, double ms);
/* Stop watching the owner given to dl_waiter_watch_owner (its pidfd is
 * closed). */
void dl_waiter_unwatch_owner(dl_waiter *w);
/* Returns 0 after a wake-up or step, DIRLOCK_ETIMEDOUT at the deadline,
 * DIRLOCK_ECANCELED when the cancel descriptor is readable (or was
 * closed under the wait). */
int dl_waiter_wait(dl_waiter *w, const dl_time *deadline);
void dl_waiter_close(dl_waiter *w);

#endif
