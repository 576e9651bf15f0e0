/* redis.h - what the files of the Redis backend share (redis_conn.c,
 * redis_scripts.c, redis_backend.c): the per-thread connection, the
 * scripts, and how a server's answers become dirlock errors.  The data
 * model is at the top of redis_backend.c; the address grammar in
 * redis_url.h.  Only built when hiredis is (DIRLOCK_WITH_REDIS). */
#ifndef DIRLOCK_REDIS_H
#define DIRLOCK_REDIS_H

#include "internal.h"
#include "redis_url.h"

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

/* The deadline of one round trip within a call whose own deadline is
 * `call` (may be never): min(now + DL_REDIS_IO_MS, max(call, now +
 * DL_REDIS_GRACE_MS)). */
dl_time dl_redis_io_deadline(const dl_time *call);

/* ---- the per-thread connection (redis_conn.c) ---------------------------- */

typedef struct dl_redis_conn dl_redis_conn;

/* The calling thread's connection to the server of `url`, made (connect,
 * AUTH, SELECT) if there is none, or none that still works, by
 * `deadline`.  DIRLOCK_ESERVER, DIRLOCK_EAUTH, DIRLOCK_ENOMEM.  A thread
 * keeps up to DL_REDIS_CONNS_PER_THREAD, the least recently used closed
 * first; after fork() the child makes its own. */
#define DL_REDIS_CONNS_PER_THREAD 4
/* With `checked`, a kept connection is first polled: one that the server
 * closed meanwhile (a restart) is replaced before anything is sent on it,
 * so that a lost reply can only mean the server failed during this
 * request (RELEASE needs to know; idempotent requests just retry). */
int dl_redis_connect(const dl_redis_url *url, const dl_time *deadline, bool checked, dl_redis_conn **out,
                     dirlock_error *err);
/* Close the connection (after an error, or with a reply left unread); the
 * next dl_redis_connect() makes a new one. */
void dl_redis_drop(dl_redis_conn *c);
/* The server's address with the password hidden, for messages. */
const char *dl_redis_conn_name(const dl_redis_conn *c);

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
/* Wait for the reply of dl_redis_send() by `deadline`, or until one of
 * `fds` (count n, entries < 0 ignored) polls readable: then *which is its
 * index, *reply NULL, and the caller must drop the connection or read the
 * reply later.  *which is -1 when the reply came.  DIRLOCK_ESERVER on a
 * broken connection or at the deadline (connection dropped). */
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
        DL_RS_BREAK,
        DL_RS_INSPECT,
        DL_RS_TIDY,
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
 * ESERVER) with the lock `what` in the message; *reply is the script's
 * answer otherwise. */
int dl_redis_eval(dl_redis_conn *c, dl_redis_script_id id, int nkeys, const char **keys, int nargs,
                  const char **args, const dl_time *deadline, const char *what, redisReply **reply,
                  dirlock_error *err);

/* Map an error reply of the server to a dirlock code and message (which
 * names the server and `what`): WRONGTYPE and script errors are
 * DIRLOCK_EDATA, NOAUTH/WRONGPASS/NOPERM DIRLOCK_EAUTH, LOADING, BUSY,
 * OOM, READONLY, MISCONF and the like DIRLOCK_ESERVER. */
int dl_redis_reply_error(dl_redis_conn *c, const redisReply *r, const char *what, dirlock_error *err);

#endif
