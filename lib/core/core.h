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

/* DL_ASSERT(c): an invariant a protocol's comment states, checked where
 * it states it, in builds with DIRLOCK_ASSERTS (the sanitizer and
 * test-hook builds, tests/tests.mk); the shipped library pays nothing. */
#ifdef DIRLOCK_ASSERTS
#define DL_ASSERT(c) assert(c)
#else
#define DL_ASSERT(c) ((void)0)
#endif

/* DL_ON_LOAD(fn) { ... }: run as the program or library it is in loads:
 * how a module or backend registers itself (a node of static storage
 * linked into a list; it never fails). */
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
        /* Set by a module's call before its backend entry (range, permit). */
        bool ranged; /* a range lock of [lo, hi) (lib/range) */
        double lo, hi;
        unsigned permits; /* a counting lock's permit: its N, else 0 (lib/permit) */
        char name[DIRLOCK_NAME_MAX + 1];
        char token[DIRLOCK_TOKEN_LEN + 1]; /* 128-bit random, hex: names this acquisition */
};

void dl_handle_free(dirlock *h);
void dl_handle_forget_cancel(dirlock *h);
/* DIRLOCK_ENOTOWNER unless the calling process acquired h. */
int dl_handle_owned(const dirlock *h, dirlock_error *err);
/* A public call's preamble: DIRLOCK_EINVAL for NULL, else dl_handle_owned. */
int dl_handle_usable(const dirlock *h, dirlock_error *err);
/* dl_handle_usable, and DIRLOCK_ELOST for a handle that holds nothing. */
int dl_handle_held(const dirlock *h, dirlock_error *err);
/* A new token for h, after release_kept (INVARIANT B, dir_exclusive.c). */
int dl_handle_new_token(dirlock *h, dirlock_error *err);
/* A handle of `name` in `space`, open: where a module's acquire starts. */
int dl_handle_open_in(const char *space, const char *name, const dirlock_options *opts, dirlock **out,
                      dirlock_error *err);

/* Hooks on every handle's life, set by lib/deadlock (its held table). */
typedef struct dl_handle_hooks {
        void (*held)(const dirlock *h, bool held);
        /* DIRLOCK_EDEADLK when h's wait would be for the thread itself. */
        int (*before_wait)(const dirlock *h, dirlock_error *err);
        /* Whether a handle of this thread holds its lock under `token`. */
        bool (*thread_holds)(const char *token);
} dl_handle_hooks;
void dl_handle_hooks_set(const dl_handle_hooks *hooks);
void dl_handle_note_held(const dirlock *h, bool held);
/* Whether a hold recorded as this thread's, under `token`, is one of its
 * handles' (1), or none is: a leftover of a release its server never
 * heard, or of a DIRLOCK_NO_DEADLOCK handle (0); -1 without the module
 * that keeps the table (lib/deadlock). */
int dl_handle_thread_holds(const char *token);

/* ---- errors (error.c) -------------------------------------------------- */

/* Fill err (if any) and return code; with an errno, ": strerror" follows. */
int dl_fail(dirlock_error *err, int code, int sys_errno, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void dl_ok(dirlock_error *err);
/* A wait of `timeout` s ended without its lock: EBUSY (a try), ECANCELED
 * or ETIMEDOUT, "WHAT is held by WHO" (dl_record_describe, "3 readers"). */
int dl_gave_up(dirlock_error *err, double timeout, bool canceled, const char *what, const char *who);
/* The same when a waiter ahead goes first. */
int dl_gave_up_ahead(dirlock_error *err, double timeout, bool canceled, const char *what, const char *ahead);
/* Put "lock 'NAME': " before err's message (once); returns rc. */
int dl_about(dirlock_error *err, int rc, const char *name);

/* ---- paths (path.c) ---------------------------------------------------- */

/* malloc'd "<a>/<b><suffix>", NULL when out of memory. */
char *dl_join(const char *a, const char *b, const char *suffix);
/* Lock directory `dir` made absolute (malloc'd) and, if allowed, created. */
int dl_lockdir_prepare(const char *dir, bool create, char **abs_out, unsigned *mode_out, dirlock_error *err);
/* mkdir(path) in a lock directory of mode `lockdir_mode`, with its
 * permission bits when it is shared (docs/sharing.md).  0 or -1/errno. */
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
        /* Not in the text: its entry's change time (INVARIANT C), or 0. */
        long long changed_ns;
} dl_record;

/* Our own record for a new lock, naming the calling thread. */
void dl_record_self(dl_record *rec, const char *token, int mode, double stale_age, pid_t partner,
                    unsigned long long partner_start);
/* Text form; its length, or -1 (and "") if it does not fit. */
int dl_record_format(const dl_record *rec, char *buf, size_t size);
/* Parse the text form (not NUL-terminated: `len` bytes).  0 or -1. */
int dl_record_parse(const char *buf, size_t len, dl_record *rec);
/* "pid 812 on www1" after `role` ("a reader, "), for messages. */
void dl_record_describe(const dl_record *rec, const char *role, char *out, size_t size);
/* What a record says of its owner, for dirlock_inspect(). */
void dl_record_to_owner(const dl_record *rec, dirlock_owner *owner);
/* 1 alive (it or its partner), 0 provably dead, -1 cannot tell. */
int dl_record_owner_alive(const dl_record *rec);
/* 1 when only the partner lives: the lock stays held, unrefreshed. */
int dl_record_partner_only(const dl_record *rec);
int dl_process_alive(pid_t pid, unsigned long long start);
/* 1 when the record was written on this host, this boot, this pid ns. */
int dl_record_same_host(const dl_record *rec);
/* Start time of a process in clock ticks since boot, 0 when it is gone. */
unsigned long long dl_process_start_time(pid_t pid);
/* getpid() and gettid(), cached (cleared by fork()). */
pid_t dl_self_pid(void);
pid_t dl_self_tid(void);
/* 128 random bits as DIRLOCK_TOKEN_LEN hex digits. */
int dl_random_token(char out[DIRLOCK_TOKEN_LEN + 1], dirlock_error *err);

/* ---- clocks (clock.c) -------------------------------------------------- */

typedef struct timespec dl_time;

dl_time dl_now(void); /* CLOCK_MONOTONIC */
/* Deadline for a timeout in seconds; negative = never. */
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

/* pthread_key_create, the library pinned in memory first (thread_key.c). */
int dl_thread_key_create(pthread_key_t *key, void (*destructor)(void *));

/* ---- the one wait primitive (poll.c) ----------------------------------- */

/* Every wait of the library: ppoll(2), or the running task's wait. */
int dl_poll(struct pollfd *fds, unsigned long n, const struct timespec *timeout);
/* Sleep up to `ms`, never past the deadline; 1 when cancel_fd fired. */
int dl_nap_ms(double ms, const dl_time *deadline, int cancel_fd);
/* A pseudo-descriptor: readable once after each dl_task_kick of the task. */
#define DL_POLL_KICK (-2)
/* The task that runs on this thread now, or NULL. */
void *dl_task_current(void);
/* Make `task` (of this thread) go on: its DL_POLL_KICK polls readable. */
void dl_task_kick(void *task);
/* How a task waits and is kicked: set once, at load, by lib/async. */
typedef struct dl_tasks {
        int (*poll)(void *task, struct pollfd *fds, unsigned long n, const struct timespec *timeout);
        void (*kick)(void *task);
} dl_tasks;
void dl_tasks_set(const dl_tasks *tasks);
/* The task that runs on this thread from now on (NULL: none). */
void dl_task_enter(void *task);

/* ---- the per-thread inotify hub (notify.c) ------------------------------ */

#define DL_LISTENER_WATCHES 16
struct dl_listener;
struct inotify_event;
/* One watch of a listener, on its inode's list of listeners (notify.c). */
typedef struct dl_listen_slot {
        int wd;                   /* -1: a free slot                      */
        uint32_t mask;            /* IN_* events wanted there             */
        unsigned long long added; /* order of adding (the oldest goes first when full) */
        struct dl_listener *owner;
        struct dl_listen_slot *prev, *next;
} dl_listen_slot;
/* One waiter's interest in the thread's inotify instance (notify.c). */
typedef struct dl_listener {
        dl_listen_slot watch[DL_LISTENER_WATCHES];
        bool joined; /* the thread has an instance, and we are on its list */
        bool fired;  /* an event that matters came since dl_notify_take   */
        /* The task kicked when another's drain fires us, or NULL. */
        void *kick;
        /* NULL, or false for a name whose events cannot matter. */
        bool (*filter)(const char *name, unsigned mask, void *arg);
        void *filter_arg;
        /* NULL, or called with each event instead of firing (lib/fifo). */
        void (*on_event)(struct dl_listener *l, const struct inotify_event *ev);
        /* On leaving, remove watches nobody wants (not only narrow them). */
        bool drop_unwanted;
        struct dl_listener *prev, *next;
} dl_listener;
/* The thread's instance (made on first use), -1 when none can be had. */
int dl_notify_fd(void);
/* The thread's instance if this process made it already, else -1. */
int dl_notify_fd_made(void);
void dl_notify_join(dl_listener *l);
void dl_notify_leave(dl_listener *l);
/* Watch `path` for `mask`: its watch descriptor, or -1 with errno. */
int dl_notify_add(dl_listener *l, const char *path, uint32_t mask, uint32_t flags);
void dl_notify_set_mask(dl_listener *l, int wd, uint32_t mask);
/* Read every queued event and fire its listeners (all but `self` kicked). */
void dl_notify_drain(const dl_listener *self);
/* Whether l fired since the last call (and reset it). */
bool dl_notify_take(dl_listener *l);
/* Fire l as an event that matters to it would (kicking its task). */
void dl_notify_poke(dl_listener *l);

/* ---- backing off (backoff.c) ------------------------------------------- */

/* A jittered exponential backoff (backoff.c): from first_ms, doubling, at
 * most cap_ms, each step times [0.5, 1.5); `seed` (a token) seeds it. */
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

/* Waits for "something may have changed" (waiter.c says what wakes it). */
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
        /* NULL, or false for a name whose event cannot matter. */
        bool (*relevant)(const char *name, unsigned mask, void *arg);
        void *relevant_arg;
        const char *lockdir; /* the caller's; releases there wake us      */
        bool lockdir_muted;  /* ... unless muted (dl_waiter_lockdir_events) */
} dl_waiter;

/* This thread's waits return by `at` (NULL: no more): lib/deadlock's
 * next check. */
void dl_waiter_wake_by(const dl_time *at);
/* `stale_age` / 3 bounds the re-check interval and the backoff. */
int dl_waiter_init(dl_waiter *w, const char *lockdir, unsigned flags, const char *seed, double stale_age);
/* Also wake when this owner dies (same host only; no-op otherwise). */
void dl_waiter_watch_owner(dl_waiter *w, const dl_record *owner);
/* A pidfd that polls readable when the owner of `rec` (or, once it is
 * gone, its partner: *followed) dies; -1 when none can be had. */
int dl_owner_pidfd(const dl_record *rec, pid_t *followed);
/* Whether pidfd_open works here (else waiters re-judge every DL_RECHECK_MS). */
bool dl_pidfd_supported(void);
/* How often a waiter looks again when nothing can wake it, in ms. */
#define DL_RECHECK_MS 100.0
/* Also wake on deletions and renames in `dir`; 0, or -1 (then back off). */
int dl_waiter_watch_dir(dl_waiter *w, const char *dir);
/* dl_waiter_watch_dir; true when `dir` is missing (look again once made). */
bool dl_waiter_watch_missing(dl_waiter *w, const char *dir);
/* Also wake when entry `path` goes; -1 with ENOENT when it is gone. */
int dl_waiter_watch_entry(dl_waiter *w, const char *path);
/* Whether releases (deletions in the lock directory) wake this waiter;
 * on from dl_waiter_init, and on again before the caller's next look. */
void dl_waiter_lockdir_events(dl_waiter *w, bool on);
/* True when the last wait ended because the watched owner died. */
bool dl_waiter_owner_died(const dl_waiter *w);
/* Also end waits when fd polls readable (DIRLOCK_CANCEL_FD); fd < 0: no. */
void dl_waiter_cancel_on(dl_waiter *w, int fd);
/* With inotify: wait up to `ms` (0: the re-check interval) before a
 * re-check (a waiter behind a task of this thread, lib/fifo). */
void dl_waiter_span(dl_waiter *w, double ms);
/* Stop watching the owner given to dl_waiter_watch_owner. */
void dl_waiter_unwatch_owner(dl_waiter *w);
/* 0 after a wake-up, DIRLOCK_ETIMEDOUT at the deadline, or ECANCELED. */
int dl_waiter_wait(dl_waiter *w, const dl_time *deadline);
void dl_waiter_close(dl_waiter *w);

#endif
