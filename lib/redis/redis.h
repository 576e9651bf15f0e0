/* redis.h - what the files of the Redis backend share, one section per
 * file: the connections (redis_conn.c, over the links of redis_link.h:
 * TCP, unix sockets, TLS), the scripts (redis_scripts.c),
 * the handle and the calls made for it (redis_handle.c), the waits whole
 * locks and ranges share (redis_wait.c), whole locks (redis_whole.c) and
 * ranges (redis_range.c); redis_backend.c, the table, uses them all and
 * is used by none.  The data model is at the top of redis_backend.c; the
 * address grammar in redis_url.h.  Only built when hiredis and OpenSSL
 * are (DIRLOCK_WITH_REDIS). */
#ifndef DIRLOCK_REDIS_H
#define DIRLOCK_REDIS_H

#include "dirlock_deadlock.h"
#include "dirlock_permit.h"
#include "dirlock_rw.h"
#include "fence.h"
#include "range.h"
#include "redis_url.h"
#include "server.h"

#include <hiredis/hiredis.h>

/* ---- time budgets -------------------------------------------------------- */

/* The longest one connect or round trip may take when the caller's
 * timeout allows more (or is infinite): a server that does not answer
 * within it counts as unreachable, and a waiter with time left tries
 * again. */
#define DL_REDIS_IO_MS 2000.0
/* The least one round trip is given, even at timeout 0 or right at a
 * deadline (the last try): a timed call returns at most this much after
 * its deadline. */
#define DL_REDIS_GRACE_MS 250.0
/* A server that cannot be reached is tried again with a jittered backoff
 * (backoff.c) of this first and this longest step, until the deadline. */
#define DL_REDIS_RETRY_FIRST_MS 10.0
#define DL_REDIS_RETRY_MAX_MS   500.0

/* The deadline of one round trip within a call whose own deadline is
 * `call` (may be never): min(now + DL_REDIS_IO_MS, max(call, now +
 * DL_REDIS_GRACE_MS)), by dl_request_deadline. */
dl_time dl_redis_io_deadline(const dl_time *call);

/* ---- connections (redis_conn.c) -------------------------------------------- */

/* A lock space's server as the backend addresses it: the parsed address,
 * and the key its connections are kept under in the per-thread cache
 * (conn_cache.c): the canonical address with credentials, database and
 * prefix, so that no two spaces share a connection. */
typedef struct dl_redis_server {
        dl_redis_url url;
        char key[DL_REDIS_URL_MAX];
} dl_redis_server;

typedef struct dl_redis_conn dl_redis_conn;

/* A connection to `srv` that is the caller's alone until dl_redis_done():
 * one this thread kept, or a new one (connect, AUTH, SELECT) made by
 * `deadline`.  DIRLOCK_ESERVER; DIRLOCK_EAUTH (the password or database
 * refused, a TLS refusal); DIRLOCK_EPERM (the user's ACL refuses
 * SELECT); DIRLOCK_EINVAL (a file or variable the address names cannot
 * be used); DIRLOCK_ENOMEM (*out NULL).
 * A thread keeps up to DL_REDIS_CONNS_PER_THREAD idle, the least recently
 * used closed first; after fork() the child makes its own. */
#define DL_REDIS_CONNS_PER_THREAD 4
/* With `checked`, a kept TCP connection is first polled: one that the
 * server closed meanwhile (a restart) is replaced before anything is sent
 * on it, so that a lost reply can only mean the server failed during this
 * request (RELEASE needs to know; idempotent requests just retry).  On a
 * unix socket a send on such a connection fails before anything goes
 * out, which dl_redis_unsent() tells, so it is not polled. */
int dl_redis_connect(const dl_redis_server *srv, const dl_time *deadline, bool checked, dl_redis_conn **out,
                     dirlock_error *err);
/* Done with c: kept for the next user of this thread when it still
 * works, else freed.  NULL: nothing. */
void dl_redis_done(dl_redis_conn *c);
/* Close c's socket (after an error, or with a reply left unread): the
 * caller still calls dl_redis_done(), which then frees it. */
void dl_redis_drop(dl_redis_conn *c);
/* The server's address with the password hidden, for messages. */
const char *dl_redis_conn_name(const dl_redis_conn *c);
/* The server-side deadline of an acquire attempt made for `deadline`
 * (ARGV "not after" of the ACQUIRE scripts), into buf: the server's clock
 * at `deadline` -- or now, for the attempt made at or after it -- plus
 * DL_REDIS_GRACE_MS / 2, which the sender still waits for its reply; "0"
 * (none) for a wait without deadline or a server that will not tell its
 * clock.  A script that runs later than that (the server was stopped or
 * stalled while the request sat in its socket, and its sender has given
 * up) takes nothing.  Connects (by `io`), and reads the server's clock
 * when it is not known: DIRLOCK_ESERVER as dl_redis_connect. */
int dl_redis_not_after(const dl_redis_server *srv, const dl_time *deadline, const dl_time *io, char buf[24],
                       dirlock_error *err);
/* A script said an attempt came late: the clock offsets of this thread's
 * connections may be stale (our host was suspended, a server's clock was
 * set): each reads its server's clock again before its next attempt. */
void dl_redis_clock_stale(void);

/* Send one command (argv) and read its reply by `deadline`.  A reply that
 * is an error is returned as a reply (the caller maps it: dl_redis_reply_error).
 * On DIRLOCK_ESERVER the connection was dropped. */
int dl_redis_command(dl_redis_conn *c, int argc, const char **argv, const size_t *argvlen,
                     const dl_time *deadline, redisReply **reply, dirlock_error *err);

/* Send one command without reading its reply (BLPOP): then
 * dl_redis_await_reply().  The connection must not be used for anything
 * else until the reply is read or the connection dropped. */
int dl_redis_send(dl_redis_conn *c, int argc, const char **argv, const size_t *argvlen,
                  const dl_time *deadline, dirlock_error *err);
/* Whether the last request on c failed before any byte of it went out
 * (so the server never saw it). */
bool dl_redis_unsent(const dl_redis_conn *c);
/* Wait for the reply of dl_redis_send() by `deadline`, or until one of
 * `fds` (count n <= DL_REDIS_AWAIT_FDS_MAX: a waiter's cancel descriptor,
 * its blocker's pidfd and those of its peers; entries < 0 ignored) polls
 * readable: then *which is its index, *reply NULL, and the caller must
 * drop the connection or read the reply later.  *which is -1 when the
 * reply came.  DIRLOCK_ESERVER on a broken connection or at the deadline
 * (connection dropped). */
#define DL_REDIS_AWAIT_FDS_MAX (2 + DL_REDIS_PEERS_MAX)
int dl_redis_await_reply(dl_redis_conn *c, const dl_time *deadline, const int *fds, int n, int *which,
                         redisReply **reply, dirlock_error *err);

/* ---- scripts (redis_scripts.c) --------------------------------------------- */

typedef enum dl_redis_script_id {
        DL_RS_ACQUIRE,
        DL_RS_RELEASE,
        DL_RS_REFRESH,
        DL_RS_CHECK,
        DL_RS_UPGRADE,
        DL_RS_DOWNGRADE,
        DL_RS_DOWNGRADE_INTENT,
        DL_RS_BREAK,
        DL_RS_INSPECT,
        DL_RS_TIDY,
        DL_RS_RANGE_ACQUIRE, /* range locks: redis_range.c */
        DL_RS_RANGE_RELEASE,
        DL_RS_RANGE_SHRINK,
        DL_RS_RANGE_REFRESH,
        DL_RS_RANGE_CHECK,
        DL_RS_RANGE_UPGRADE,
        DL_RS_RANGE_DOWNGRADE,
        DL_RS_RANGE_DOWNGRADE_INTENT,
        DL_RS_RANGE_LIST,
        DL_RS_PERMIT_ACQUIRE, /* counting locks: redis_permits.c */
        DL_RS_PERMIT_RELEASE,
        DL_RS_PERMIT_REFRESH,
        DL_RS_PERMIT_CHECK,
        DL_RS_HOLDERS, /* the views: redis_backend.c */
        DL_RS_WAITERS,
        DL_RS_DEADLOCK, /* deadlock detection: redis_deadlock.c */
        DL_RS_COUNT
} dl_redis_script_id;

/* The Lua source of a script, and its name for messages. */
const char *dl_redis_script_source(dl_redis_script_id id);
const char *dl_redis_script_name(dl_redis_script_id id);

/* Run script `id` with `nkeys` keys then `nargs` arguments (NUL-terminated
 * strings), by `deadline`: EVALSHA, and on NOSCRIPT (a restarted or
 * flushed server) EVAL, which loads it again.  The first call of a
 * process learns each script's SHA1 with SCRIPT LOAD, pipelined with its
 * EVAL: one round trip always.  Error replies are mapped (EDATA, EAUTH,
 * EPERM, ESERVER) with the lock `what` in the message; *reply is the script's
 * answer otherwise. */
int dl_redis_eval(dl_redis_conn *c, dl_redis_script_id id, int nkeys, const char **keys, int nargs,
                  const char **args, const dl_time *deadline, const char *what, redisReply **reply,
                  dirlock_error *err);

/* Map an error reply of the server to a dirlock code and message (which
 * names the server and `what`): WRONGTYPE and script errors are
 * DIRLOCK_EDATA, NOAUTH/WRONGPASS DIRLOCK_EAUTH, an ACL's refusal of a
 * command or key (NOPERM, or inside a script) DIRLOCK_EPERM, LOADING, BUSY,
 * OOM, READONLY, MISCONF and the like DIRLOCK_ESERVER. */
int dl_redis_reply_error(dl_redis_conn *c, const redisReply *r, const char *what, dirlock_error *err);

/* ---- the handle and its calls (redis_handle.c) ------------------------------ */

/* The size of a space's key, {P}:names (dl_redis_make_keys). */
#define DL_REDIS_SPACE_KEY_MAX (DL_REDIS_PREFIX_MAX + 9)

struct dl_redis {
        dl_redis_server server;
        char base[DL_REDIS_PREFIX_MAX + DIRLOCK_NAME_MAX + 4]; /* {P}:NAME */
        char space_key[DL_REDIS_SPACE_KEY_MAX];                /* {P}:names */
        unsigned long long fence;                              /* drawn at acquire */
        long long seq;                                         /* arrival number, 0: none */
        /* The last release of the whole lock never reached the server (no
         * connection): the hold may still be there, under h->token, until
         * release_kept gets through or it expires. */
        bool release_pending;
};

struct dl_redis *dl_redis_of(const dirlock *h);
/* h's stale age in ms, and its queue ttl: min(stale age, 6 s). */
long long dl_redis_stale_ms(const dirlock *h);
long long dl_redis_queue_ttl_ms(const dirlock *h);
/* Lock space `space`'s server, or DIRLOCK_EINVAL with the reason. */
int dl_redis_parse_space(const char *space, dl_redis_server *srv, dirlock_error *err);
/* The keys of space `srv`: its key {P}:names (the set of its lock names,
 * the last KEYS of every script: scripts/common.lua) into space_key and,
 * unless base is NULL, lock `name`'s base {P}:NAME into base.  Every key
 * of the space starts with "{P}:", so an ACL of ~{P}:* covers them. */
void dl_redis_make_keys(const dl_redis_server *srv, const char *name, char *base, size_t bsize,
                        char *space_key, size_t ssize);
int dl_redis_bad_reply(dirlock_error *err, const char *what);
/* DIRLOCK_ELOST: h's entry (a whole lock's or a range's) on the server
 * is gone.  `answer` is the script's LOST answer (scripts/common.lua): -2
 * when the server has nothing of the lock any more, which the message
 * says; anything else is an entry that expired or was broken. */
#define DL_REDIS_GONE (-2)
int dl_redis_lost(dirlock_error *err, const dirlock *h, long long answer);
/* Run script `id` on h's name, one that answers 1 while h's token still
 * holds its entry: DIRLOCK_OK, DIRLOCK_ELOST (dl_redis_lost), or the
 * server's error. */
int dl_redis_while_held(const dirlock *h, dl_redis_script_id id, int nargs, const char **args,
                        dirlock_error *err);
/* Release h's entry with script `id` (ARGV: the token; it answers 1 when
 * it removed the entry, else LOST).  `entry` names it for the message
 * ("the lock", "a permit", "a range") when a broken connection leaves
 * unknown whether the release or an expiry removed it (DIRLOCK_ESERVER).
 * *unanswered, unless NULL: no answer came (the entry may be in place). */
int dl_redis_release_entry(const dirlock *h, dl_redis_script_id id, const char *entry, bool *unanswered,
                           dirlock_error *err);
bool dl_redis_reply_is(const redisReply *r, int type);
long long dl_redis_reply_int(const redisReply *r);
const char *dl_redis_reply_str(const redisReply *r);
/* h's owner record in `mode`, as the scripts store it. */
int dl_redis_format_record(const dirlock *h, int mode, char *buf, size_t size, dirlock_error *err);

/* Run one script on the space of `srv` by `deadline`; with `retry`, a lost
 * reply is asked again once on a new connection (*resent tells). */
int dl_redis_run_script(const dl_redis_server *srv, dl_redis_script_id id, int nkeys, const char **keys,
                        int nargs, const char **args, const dl_time *deadline, const char *what, bool retry,
                        bool *resent, redisReply **reply, dirlock_error *err);
/* A script on h's name (KEYS: its base and the space's), with the time
 * budget of h's timeout. */
int dl_redis_run_on(const dirlock *h, dl_redis_script_id id, int nargs, const char **args, bool retry,
                    bool *resent, redisReply **reply, dirlock_error *err);
/* A script on lock `name` with the admin time budget. */
int dl_redis_admin_script(const dl_redis_server *srv, const char *name, dl_redis_script_id id, int nargs,
                          const char **args, redisReply **reply, dirlock_error *err);

/* ---- waiting, for whole locks and ranges (redis_wait.c) -------------------- */

/* The arguments of one acquire attempt, as the scripts take them (text). */
struct dl_redis_attempt {
        const char *token, *mode, *policy, *stale, *record;
        const char *may_queue; /* "0" for a try (timeout 0)              */
        const char *seq;       /* our arrival number, "0" before the first */
        const char *last;      /* "1": the last attempt, which never queues */
        const char *not_after; /* dl_redis_not_after                        */
        const char *qttl;      /* the queue ttl in ms                       */
};
#define DL_REDIS_ATTEMPT_ARGS 12

/* The most holders of a counting lock on the waiter's host that one
 * answer of PERMIT_ACQUIRE names (PEERS in redis_permits.c), and so the
 * most pidfds a waiter watches besides its blocker's owner. */
#define DL_REDIS_PEERS_MAX 32

/* What differs between the acquires of whole locks and of ranges: their
 * script, how its arguments are ordered, and the words of messages.  The
 * script answers {1, fence...} (one per name) or a busy answer {0, seq,
 * blocker token, its record, ms until it expires, index of the busy name,
 * kind}. */
struct dl_redis_acquire {
        dl_redis_script_id script; /* DL_RS_ACQUIRE, DL_RS_RANGE_ACQUIRE               */
        const char *what;          /* "the lock", "the range": connection errors       */
        const char *reply;         /* "an acquire": a reply that was not understood    */
        const char *subject;       /* "lock", "a range of lock": "canceled waiting for" */
        bool grants;               /* a releaser may take it for us (a "g<fence>" wake) */
        /* The script's arguments for attempt t (at most
         * DL_REDIS_ATTEMPT_ARGS) into args; returns their number. */
        int (*args)(const struct dl_redis_attempt *t, const void *arg, const char **args);
        const void *arg;
        /* NULL, or what a refusal {-3, ...} of the script means: a
         * counting lock held with another number of permits (the error
         * code, err filled). */
        int (*refused)(const dirlock *h, const redisReply *rep, dirlock_error *err);
        /* 'q' (a whole lock) or 'p' (a permit): the wait is one deadlock
         * detection follows, for a single name (redis_deadlock.c); 0: none */
        char deadlock;
};

/* Take every lock of hs[0..n-1] -- one space, one token (hs[0]'s),
 * distinct names; one handle for a range -- by the deadline, all or none:
 * attempt, wait for the blocker, attempt again (ACQUIRE at the top of
 * redis_wait.c). */
int dl_redis_acquire(dirlock **hs, size_t n, const struct dl_redis_acquire *a, const dl_time *deadline,
                     dirlock_error *err);

/* An upgrade (intent -> exclusive) of a whole lock or a range: its
 * script, run until it says done (1), lost (< 0) or the deadline, waiting
 * for the readers in the way as an acquire waits (wake list, their
 * expiry, a dead same-host owner broken by token). */
struct dl_redis_upgrade {
        int script;          /* DL_RS_UPGRADE, DL_RS_RANGE_UPGRADE     */
        bool policy_arg;     /* the script takes the `simple` flag too */
        char blocker_kind;   /* the blocking entry's kind (messages)   */
        const char *running; /* "the upgrade", for connection errors   */
        const char *reply;   /* "an upgrade", for a reply not understood */
};
int dl_redis_upgrade_wait(dirlock *h, const dirlock_options *opts, const struct dl_redis_upgrade *u,
                          dirlock_error *err);

/* ---- deadlock detection (redis_deadlock.c) ---------------------------------- */

/* How many threads the DEADLOCK script reads at most; when a queued
 * waiter first checks (a wait for a lock in use usually ends sooner: the
 * check would be a round trip for nothing), and how often it checks
 * again (PROMPTNESS in redis_deadlock.c). */
#define DL_REDIS_DEADLOCK_NODES      64
#define DL_REDIS_DEADLOCK_FIRST_MS   10.0
#define DL_REDIS_DEADLOCK_RECHECK_MS 250.0

/* Whether h's wait (kind 'q' or 'p', queued under arrival number seq) is
 * the victim of a knot of waits: DIRLOCK_EDEADLK naming it (*err), or
 * DIRLOCK_OK -- none proven, the check failed included, or another
 * thread is the victim (the wait goes on and checks again).  One round
 * trip, by `deadline`. */
int dl_redis_deadlock_check(dirlock *h, char kind, long long seq, const dl_time *deadline,
                            dirlock_error *err);

/* ---- whole locks (redis_whole.c) --------------------------------------------- */

/* hs[0..n-1] with the ACQUIRE script (dl_redis_acquire). */
int dl_redis_whole_acquire(dirlock **hs, size_t n, const dl_time *deadline, dirlock_error *err);
int dl_redis_whole_release(dirlock *h, dirlock_error *err);
int dl_redis_whole_release_kept(dirlock *h, dirlock_error *err);
int dl_redis_whole_refresh(dirlock *h, dirlock_error *err);
int dl_redis_whole_check(const dirlock *h, dirlock_error *err);
int dl_redis_whole_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err);
int dl_redis_whole_downgrade(dirlock *h, dirlock_error *err);
int dl_redis_whole_downgrade_intent(dirlock *h, dirlock_error *err);

/* ---- counting locks (redis_permits.c) ---------------------------------------- */

int dl_redis_permit_open(dirlock *h, dirlock_error *err);
int dl_redis_permit_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err);
int dl_redis_permit_release(dirlock *h, dirlock_error *err);
int dl_redis_permit_refresh(dirlock *h, dirlock_error *err);
int dl_redis_permit_check(const dirlock *h, dirlock_error *err);

/* ---- range locks (redis_range.c) ------------------------------------------- */

int dl_redis_range_open(dirlock *h, dirlock_error *err);
int dl_redis_range_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err);
int dl_redis_range_release(dirlock *h, dirlock_error *err);
int dl_redis_range_refresh(dirlock *h, dirlock_error *err);
int dl_redis_range_check(const dirlock *h, dirlock_error *err);
int dl_redis_range_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err);
int dl_redis_range_downgrade(dirlock *h, dirlock_error *err);
int dl_redis_range_downgrade_intent(dirlock *h, dirlock_error *err);
int dl_redis_range_shrink(dirlock *h, double lo, double hi, dirlock_error *err);
int dl_redis_ranges(const char *spec, const char *name, dirlock_range_info **out, size_t *count,
                    dirlock_error *err);

#endif
