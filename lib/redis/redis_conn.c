/* redis_conn.c - the connections of the Redis backend: kept open per
 * thread and server between locks, in the library's per-thread
 * connection cache (conn_cache.c: a connection in use is its user's
 * alone; the idle ones are closed at thread exit, and a forked child
 * makes its own), with every wait bounded by a deadline.
 *
 * KEYS.  A connection is kept under its server's key (dl_redis_server):
 * the canonical address with credentials, files, database and prefix,
 * so that two spaces never share one.  Up to DL_REDIS_CONNS_PER_THREAD
 * idle ones are kept per thread, the least recently used closed first.
 *
 * I/O.  hiredis formats commands (redisFormatCommandArgv) and parses
 * replies (a redisReader); the bytes go over a link (redis_link.h: plain
 * TCP, a unix socket or TLS, one table of operations), which never
 * raises SIGPIPE.  On plain TCP a reply is read with a blocking recv()
 * bounded by the socket's SO_RCVTIMEO, DL_REDIS_READ_SLICE_MS, as long as
 * at least that much of the caller's deadline is left (a slow reply is
 * waited for slice by slice); the rest of the time, on a unix socket or
 * TLS, and whenever another descriptor is watched too (cancel, pidfd),
 * after poll() says it is readable -- save for bytes TLS has already
 * decrypted, which are read at once.  Every wait is so bounded by the
 * caller's deadline.  System calls are most of a lock's cost on a
 * virtual machine: the common path makes none but send and recv on TCP,
 * send, poll and read on a unix socket (there a reader blocked in recv()
 * is also woken when the server reads our request -- the socket's
 * write-space wake-up, which poll() filters out -- and a context switch
 * costs more than the poll()), and no getpid() (a fork is seen by an
 * atfork handler).  A connection on which anything failed, or whose reply
 * was abandoned, is closed at once: a reused connection never holds a
 * stale reply.
 *
 * LOGGING IN.  A new connection sends AUTH [USER] PASSWORD when the
 * address gives a password or names where it is (password_file,
 * password_env: read at each connect, wiped once sent), then SELECT for
 * a database other than 0.  A server that closes a new plain TCP
 * connection before its first answer is asked, once, whether it speaks
 * TLS (a TLS-only port closes plain ones): then the refusal says so.
 *
 * SCRIPTS are called by SHA1 (EVALSHA).  The SHA1 of each is learnt once
 * per process from SCRIPT LOAD, sent in the same round trip as the first
 * EVAL; a server that forgot it (restarted, SCRIPT FLUSH) answers NOSCRIPT
 * and is sent the script again with EVAL, which also loads it.
 *
 * ERRORS become dirlock codes here (dl_redis_reply_error): unreachable,
 * broken or silent servers DIRLOCK_ESERVER; refused credentials or
 * database, and TLS refusals, DIRLOCK_EAUTH; an ACL that does not let
 * the user run a command or touch a key of the space DIRLOCK_EPERM; data
 * dirlock did not write (a key of the wrong type) and script errors
 * DIRLOCK_EDATA.  Messages name the server with its password replaced by
 * ***, and never hold a password. */
#include "redis.h"
#include "redis_link.h"
#include "secret.h"
#include "test_hooks.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Under DL_REDIS_GRACE_MS, so that even a call at timeout 0 (a round trip
 * of DL_REDIS_GRACE_MS) reads its reply on TCP without a poll() first. */
_Static_assert(DL_REDIS_READ_SLICE_MS < DL_REDIS_GRACE_MS, "a call at timeout 0 reads without poll()");

struct dl_redis_conn {
        dl_redis_link link;          /* link.type NULL: closed after a failure (dl_redis_drop) */
        redisReader *reader;         /* the replies' parser */
        short read_want;             /* what the next read waits for: POLLIN, or POLLOUT (TLS) */
        bool unsent;                 /* the last request failed before any byte of it went out */
        bool answered;               /* a reply came on it */
        bool closed_unanswered;      /* the server closed it before any reply */
        int clock;                   /* CLOCK_UNREAD, CLOCK_KNOWN or CLOCK_REFUSED */
        unsigned clock_epoch;        /* this thread's clock_epoch when the clock was read */
        long long clock_offset_ms;   /* server ms (TIME) - our monotonic ms, when read */
        char key[DL_REDIS_URL_MAX];  /* its server's key, under which it is kept */
        char name[DL_REDIS_URL_MAX]; /* the address with the password hidden, for messages */
};

static bool is_open(const dl_redis_conn *c)
{
        return c->link.type != NULL;
}

/* The link's close sends nothing (redis_link.h): fit for a forked child's
 * copy as well. */
static void conn_close(void *p, bool forked)
{
        (void)forked;
        dl_redis_conn *c = p;
        dl_redis_link_close(&c->link);
        if (c->reader != NULL)
                redisReaderFree(c->reader);
        free(c);
}

static const dl_conn_cache conns = {DL_REDIS_CONNS_PER_THREAD, conn_close};

/* Bumped by dl_redis_clock_stale(): a connection of this thread whose
 * server clock was read in an earlier epoch reads it again. */
static _Thread_local unsigned clock_epoch;

/* ---- time ------------------------------------------------------------------ */

dl_time dl_redis_io_deadline(const dl_time *call)
{
        return dl_request_deadline(call, DL_REDIS_GRACE_MS, DL_REDIS_IO_MS);
}

/* ---- errors ---------------------------------------------------------------- */

const char *dl_redis_conn_name(const dl_redis_conn *c)
{
        return c->name;
}

void dl_redis_drop(dl_redis_conn *c)
{
        dl_redis_link_close(&c->link);
}

/* A failed connection: close it and say why. */
static int conn_failed(dl_redis_conn *c, dirlock_error *err, const char *what, const char *detail)
{
        int rc = dl_fail(err, DIRLOCK_ESERVER, 0, "Redis server %.300s: %s%s%s", c->name, what,
                         detail ? ": " : "", detail ? detail : "");
        dl_redis_drop(c);
        return rc;
}

/* The link failed with errno (redis_link.h): a refusal (EACCES) is
 * DIRLOCK_EAUTH, anything else a broken connection. */
static int link_failed(dl_redis_conn *c, dirlock_error *err, const char *what)
{
        if (errno == EACCES) {
                int rc =
                    dl_fail(err, DIRLOCK_EAUTH, 0, "Redis server %.300s: TLS: %s", c->name, c->link.detail);
                dl_redis_drop(c);
                return rc;
        }
        return conn_failed(c, err, what, c->link.detail[0] ? c->link.detail : strerror(errno));
}

static bool starts(const char *s, const char *word)
{
        return strncmp(s, word, strlen(word)) == 0;
}

/* An ACL's refusal: of a command or key (NOPERM), or inside a script
 * (Redis 7: "The user executing the script can't ..."). */
static bool acl_refusal(const char *s)
{
        return starts(s, "NOPERM") || strstr(s, "user executing the script can't") != NULL;
}

int dl_redis_reply_error(dl_redis_conn *c, const redisReply *r, const char *what, dirlock_error *err)
{
        const char *s = r->str ? r->str : "";
        const char *w = what ? what : "request";
        if (starts(s, "ERR Protocol error"))
                dl_redis_drop(c); /* the server closes such a connection */
        if (acl_refusal(s))
                return dl_fail(err, DIRLOCK_EPERM, 0,
                               "Redis server %.300s: the user may not run the %s (its ACL does not allow a "
                               "command or a key of the space; docs/security.md lists what a locker needs): "
                               "%.200s",
                               c->name, w, s);
        if (starts(s, "NOAUTH") || starts(s, "WRONGPASS") || starts(s, "ERR Protocol error: unauthenticated"))
                return dl_fail(err, DIRLOCK_EAUTH, 0, "Redis server %.300s refused the %s: %.200s", c->name,
                               w, s);
        if (starts(s, "WRONGTYPE"))
                return dl_fail(err, DIRLOCK_EDATA, 0,
                               "Redis server %.300s: a key of %s holds a value of the wrong type (data that "
                               "dirlock did not write under its prefix): %.160s",
                               c->name, w, s);
        if (starts(s, "LOADING") || starts(s, "BUSY") || starts(s, "MASTERDOWN") || starts(s, "TRYAGAIN") ||
            starts(s, "CLUSTERDOWN"))
                return dl_fail(err, DIRLOCK_ESERVER, 0, "Redis server %.300s cannot serve the %s now: %.200s",
                               c->name, w, s);
        if (starts(s, "OOM") || starts(s, "READONLY") || starts(s, "MISCONF") || starts(s, "NOREPLICAS"))
                return dl_fail(err, DIRLOCK_ESERVER, 0,
                               "Redis server %.300s refuses writes for the %s: %.200s", c->name, w, s);
        if (starts(s, "MOVED") || starts(s, "ASK") || starts(s, "CROSSSLOT"))
                return dl_fail(err, DIRLOCK_EDATA, 0,
                               "Redis server %.300s does not hold the keys of the %s (a cluster: address "
                               "the node that serves this prefix's slot): %.160s",
                               c->name, w, s);
        return dl_fail(err, DIRLOCK_EDATA, 0, "Redis server %.300s: the %s failed: %.200s", c->name, w, s);
}

/* ---- I/O -------------------------------------------------------------------- */

static int write_all(dl_redis_conn *c, const char *buf, size_t len, const dl_time *deadline,
                     dirlock_error *err)
{
        size_t off = 0;
        while (off < len) {
                ssize_t n = c->link.type->send(&c->link, buf + off, len - off);
                if (n > 0) {
                        off += (size_t)n;
                        continue;
                }
                c->unsent = off == 0;
                if (n < 0 && errno == EAGAIN) {
                        if (dl_redis_link_poll(&c->link, c->link.want, NULL, 0, NULL, deadline) <= 0)
                                return conn_failed(c, err, "no room to send within the time left", NULL);
                        continue;
                }
                return link_failed(c, err, "cannot send");
        }
        return DIRLOCK_OK;
}

static int send_formatted(dl_redis_conn *c, int argc, const char **argv, const size_t *argvlen,
                          const dl_time *deadline, dirlock_error *err)
{
        char *cmd = NULL;
        int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
        if (len < 0 || cmd == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        int rc = write_all(c, cmd, (size_t)len, deadline, err);
        redisFreeCommand(cmd);
        return rc;
}

int dl_redis_send(dl_redis_conn *c, int argc, const char **argv, const size_t *argvlen,
                  const dl_time *deadline, dirlock_error *err)
{
        c->unsent = !is_open(c);
        if (!is_open(c))
                return dl_fail(err, DIRLOCK_ESERVER, 0, "Redis server %.300s: not connected", c->name);
        return send_formatted(c, argc, argv, argvlen, deadline, err);
}

bool dl_redis_unsent(const dl_redis_conn *c)
{
        return c->unsent;
}

/* One recv() on the link, fed to the reply parser.  DIRLOCK_OK when bytes
 * came, and when none were ready (the slice passed, a signal, TLS wants
 * more: read_want says what to wait for); else the failure (the
 * connection is closed). */
static int read_some(dl_redis_conn *c, dirlock_error *err)
{
        char buf[16384];
        ssize_t n = c->link.type->recv(&c->link, buf, sizeof buf);
        if (n > 0) {
                c->read_want = POLLIN;
                if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK)
                        return conn_failed(c, err, "unreadable reply", c->reader->errstr);
                return DIRLOCK_OK;
        }
        if (n < 0 && errno == EAGAIN) {
                c->read_want = c->link.want;
                return DIRLOCK_OK;
        }
        if (!c->answered && (n == 0 || errno == ECONNRESET))
                c->closed_unanswered = true;
        if (n == 0)
                return conn_failed(c, err, "connection closed by the server", NULL);
        return link_failed(c, err, "cannot read the reply");
}

int dl_redis_await_reply(dl_redis_conn *c, const dl_time *deadline, const int *fds, int n, int *which,
                         redisReply **reply, dirlock_error *err)
{
        *reply = NULL;
        if (which != NULL)
                *which = -1;
        if (!is_open(c))
                return dl_fail(err, DIRLOCK_ESERVER, 0, "Redis server %.300s: not connected", c->name);
        short revents[DL_REDIS_AWAIT_FDS_MAX];
        DL_ASSERT(n >= 0 && n <= DL_REDIS_AWAIT_FDS_MAX);
        for (;;) {
                void *r = NULL;
                if (redisReaderGetReply(c->reader, &r) != REDIS_OK)
                        return conn_failed(c, err, "unreadable reply", c->reader->errstr);
                if (r != NULL) {
                        c->answered = true;
                        *reply = r;
                        return DIRLOCK_OK;
                }
                bool slice = n == 0 && c->link.type->blocking_reads &&
                             dl_remaining(deadline) >= DL_REDIS_READ_SLICE_MS;
                if (slice || c->link.type->pending(&c->link) > 0) {
                        /* Bytes the library holds, or nothing else to
                         * watch and a whole slice left: a blocking read
                         * cannot pass the deadline, and saves a poll(). */
                        int rc = read_some(c, err);
                        if (rc != DIRLOCK_OK)
                                return rc;
                        continue;
                }
                int got = dl_redis_link_poll(&c->link, c->read_want, fds, n, revents, deadline);
                if (got < 0)
                        return conn_failed(c, err, "cannot wait for the reply", strerror(errno));
                if (got == 0)
                        return conn_failed(c, err, "no answer within the time left", NULL);
                for (int i = 0; i < n; i++)
                        if (fds[i] >= 0 && (revents[i] & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) {
                                if (which != NULL)
                                        *which = i;
                                return DIRLOCK_OK;
                        }
                int rc = read_some(c, err);
                if (rc != DIRLOCK_OK)
                        return rc;
        }
}

int dl_redis_command(dl_redis_conn *c, int argc, const char **argv, const size_t *argvlen,
                     const dl_time *deadline, redisReply **reply, dirlock_error *err)
{
        *reply = NULL;
        int rc = dl_redis_send(c, argc, argv, argvlen, deadline, err);
        return rc != DIRLOCK_OK ? rc : dl_redis_await_reply(c, deadline, NULL, 0, NULL, reply, err);
}

/* ---- connecting ------------------------------------------------------------- */

/* One command of the log-in (AUTH, SELECT): an error reply is the
 * refusal `code` of `words` (DIRLOCK_EPERM when an ACL refuses the
 * command), and closes the connection. */
static int login_step(dl_redis_conn *c, int argc, const char **argv, const dl_time *deadline, int code,
                      const char *words, dirlock_error *err)
{
        redisReply *r = NULL;
        int rc = dl_redis_command(c, argc, argv, NULL, deadline, &r, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (r->type == REDIS_REPLY_ERROR) {
                rc =
                    acl_refusal(r->str)
                        ? dl_fail(err, DIRLOCK_EPERM, 0,
                                  "Redis server %.300s: the user may not use %s (its ACL does not allow %s): "
                                  "%.200s",
                                  c->name, words, argv[0], r->str)
                        : dl_fail(err, code, 0, "Redis server %.300s refused %s: %.200s", c->name, words,
                                  r->str);
                dl_redis_drop(c);
        }
        freeReplyObject(r);
        return rc;
}

/* AUTH and SELECT on a new connection (LOGGING IN): a refused password or
 * database is DIRLOCK_EAUTH, a file or variable that cannot be read
 * DIRLOCK_EINVAL. */
static int log_in(dl_redis_conn *c, const dl_redis_url *u, const dl_time *deadline, dirlock_error *err)
{
        const char *argv[3];
        int argc = 0;
        if (dl_redis_url_logs_in(u)) {
                char password[DL_REDIS_PASSWORD_MAX + 1];
                int rc = u->has_password ? DIRLOCK_OK
                                         : dl_secret_read(u->password_file, u->password_env, password,
                                                          sizeof password, c->name, err);
                if (rc != DIRLOCK_OK)
                        return rc;
                argv[argc++] = "AUTH";
                if (u->has_user)
                        argv[argc++] = u->user;
                argv[argc++] = u->has_password ? u->password : password;
                rc = login_step(c, argc, argv, deadline, DIRLOCK_EAUTH, "the credentials", err);
                dl_secret_wipe(password, sizeof password);
                if (rc != DIRLOCK_OK)
                        return rc;
        }
        if (u->db != 0) {
                char db[16], words[32];
                snprintf(db, sizeof db, "%d", u->db);
                snprintf(words, sizeof words, "database %d", u->db);
                argv[0] = "SELECT";
                argv[1] = db;
                return login_step(c, 2, argv, deadline, DIRLOCK_EAUTH, words, err);
        }
        return DIRLOCK_OK;
}
enum { CLOCK_UNREAD, CLOCK_KNOWN, CLOCK_REFUSED };

static long long mono_ms(const dl_time *t)
{
        return (long long)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

/* Read the server's clock (TIME) and keep its offset from our monotonic
 * clock, taken at the middle of the round trip (so within half of it).
 * A server that refuses TIME (an ACL) is not asked again on this
 * connection: requests then carry no server-side deadline
 * (dl_redis_not_after). */
static int read_server_clock(dl_redis_conn *c, const dl_time *deadline, dirlock_error *err)
{
        const char *argv[1] = {"TIME"};
        redisReply *r = NULL;
        dl_time before = dl_now();
        int rc = dl_redis_command(c, 1, argv, NULL, deadline, &r, err);
        if (rc != DIRLOCK_OK)
                return rc;
        dl_time after = dl_now();
        c->clock = CLOCK_REFUSED;
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_STRING &&
            r->element[1]->type == REDIS_REPLY_STRING) {
                long long server = strtoll(r->element[0]->str, NULL, 10) * 1000 +
                                   strtoll(r->element[1]->str, NULL, 10) / 1000;
                c->clock_offset_ms = server - (mono_ms(&before) + mono_ms(&after)) / 2;
                c->clock = CLOCK_KNOWN;
                c->clock_epoch = clock_epoch;
        }
        freeReplyObject(r);
        return DIRLOCK_OK;
}

/* The server's clock (ms, as TIME and the scripts' NOW) at our monotonic
 * time *t, by the offset read when the connection opened (to within half
 * a round trip, plus whatever the server's clock was set by since); 0
 * when the server would not tell its time. */
static long long server_ms(const dl_redis_conn *c, const dl_time *t)
{
        return c->clock == CLOCK_KNOWN ? mono_ms(t) + c->clock_offset_ms : 0;
}

int dl_redis_not_after(const dl_redis_server *srv, const dl_time *deadline, const dl_time *io, char buf[24],
                       dirlock_error *err)
{
        snprintf(buf, 24, "0");
        if (dl_deadline_never(deadline))
                return DIRLOCK_OK;
        dl_redis_conn *c;
        int rc = dl_redis_connect(srv, io, false, &c, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (c->clock == CLOCK_UNREAD || (c->clock == CLOCK_KNOWN && c->clock_epoch != clock_epoch))
                rc = read_server_clock(c, io, err);
        if (rc == DIRLOCK_OK) {
                /* From the deadline, or from now when this attempt is the
                 * one made at or after it (connecting may have taken some
                 * of it). */
                dl_time now = dl_now();
                long long at = server_ms(c, dl_deadline_passed(deadline) ? &now : deadline);
                if (at > 0)
                        snprintf(buf, 24, "%lld", at + (long long)(DL_REDIS_GRACE_MS / 2));
        }
        dl_redis_done(c);
        return rc;
}

void dl_redis_clock_stale(void)
{
        clock_epoch++;
}

static int open_conn(dl_redis_conn *c, const dl_redis_url *u, const dl_time *deadline, dirlock_error *err)
{
        c->reader = redisReaderCreate();
        if (c->reader == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        c->read_want = POLLIN;
        int rc = dl_redis_link_open(&c->link, u, deadline, c->name, err);
        if (rc == DIRLOCK_OK)
                rc = log_in(c, u, deadline, err);
        if (rc == DIRLOCK_OK)
                rc = read_server_clock(c, deadline, err);
        if (rc == DIRLOCK_ESERVER && c->closed_unanswered && !u->tls && !u->unix_socket &&
            dl_redis_tls_probe(u, deadline))
                rc = dl_fail(err, DIRLOCK_EAUTH, 0,
                             "Redis server %.300s closed the connection before its first answer: it speaks "
                             "TLS on this port (rediss://, with cacert=FILE)",
                             c->name);
#ifdef DIRLOCK_TEST_HOOKS
        /* a clock offset gone stale since the connection opened (our host
         * suspended, the server's clock set forward): tests/core-redis.t */
        const char *skew = dl_test_hook(REDIS_CLOCK_SKEW_MS);
        if (rc == DIRLOCK_OK && skew != NULL)
                c->clock_offset_ms -= atoll(skew);
#endif
        return rc;
}

/* A kept connection is usable when nothing is waiting to be read on it:
 * a server that went away (restarted, killed) has closed it, and a reply
 * nobody asked for means it is out of step.  Checked before a use that
 * must know whether a lost reply was its own, so that such a request is
 * sent only on a connection that was fine.  Not on a unix socket: there
 * sending on a connection the server closed fails before anything goes
 * out (EPIPE), and dl_redis_unsent() says so. */
static bool idle_and_open(const dl_redis_conn *c)
{
        struct pollfd p = {.fd = c->link.fd, .events = POLLIN | POLLRDHUP};
        return c->link.type->pending(&c->link) == 0 && poll(&p, 1, 0) == 0;
}

int dl_redis_connect(const dl_redis_server *srv, const dl_time *deadline, bool checked, dl_redis_conn **out,
                     dirlock_error *err)
{
        *out = NULL;
        dl_redis_conn *c = dl_conn_get(&conns, srv->key);
        if (c != NULL) {
                if (is_open(c) && (!checked || c->link.type->send_fails_closed || idle_and_open(c))) {
                        *out = c;
                        return DIRLOCK_OK;
                }
                conn_close(c, false);
        }
        c = calloc(1, sizeof *c);
        if (c == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        c->link.fd = -1;
        snprintf(c->key, sizeof c->key, "%s", srv->key);
        if (dl_redis_url_format(&srv->url, true, c->name, sizeof c->name) < 0)
                snprintf(c->name, sizeof c->name, "%s", "(address too long)");
        int rc = open_conn(c, &srv->url, deadline, err);
        if (rc != DIRLOCK_OK) {
                conn_close(c, false);
                return rc;
        }
        *out = c;
        return DIRLOCK_OK;
}

void dl_redis_done(dl_redis_conn *c)
{
        if (c == NULL)
                return;
        if (is_open(c))
                dl_conn_put(&conns, c, c->key);
        else
                conn_close(c, false);
}

/* ---- scripts ---------------------------------------------------------------- */

/* SHA1 of each script as the server computed it (SCRIPT LOAD), learnt once
 * per process; the same on every server. */
static pthread_mutex_t sha_mutex = PTHREAD_MUTEX_INITIALIZER;
static char shas[DL_RS_COUNT][41];

static void sha_get(dl_redis_script_id id, char out[41])
{
        pthread_mutex_lock(&sha_mutex);
        memcpy(out, shas[id], 41);
        pthread_mutex_unlock(&sha_mutex);
}

static void sha_set(dl_redis_script_id id, const redisReply *r)
{
        if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40)
                return;
        pthread_mutex_lock(&sha_mutex);
        memcpy(shas[id], r->str, 40);
        shas[id][40] = '\0';
        pthread_mutex_unlock(&sha_mutex);
}

int dl_redis_eval(dl_redis_conn *c, dl_redis_script_id id, int nkeys, const char **keys, int nargs,
                  const char **args, const dl_time *deadline, const char *what, redisReply **reply,
                  dirlock_error *err)
{
        *reply = NULL;
        enum { MAX_ARGV = 48 };
        if (nkeys + nargs + 3 > MAX_ARGV)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "too many keys for one script call");
        const char *argv[MAX_ARGV];
        char nk[16];
        snprintf(nk, sizeof nk, "%d", nkeys);
        char sha[41];
        sha_get(id, sha);
        int argc = 0;
        argv[argc++] = sha[0] ? "EVALSHA" : "EVAL";
        argv[argc++] = sha[0] ? sha : dl_redis_script_source(id);
        argv[argc++] = nk;
        for (int i = 0; i < nkeys; i++)
                argv[argc++] = keys[i];
        for (int i = 0; i < nargs; i++)
                argv[argc++] = args[i];
        int rc;
        redisReply *r = NULL;
        if (sha[0] == '\0') {
                /* First use in this process: learn the SHA1 in the same round trip. */
                const char *load[3] = {"SCRIPT", "LOAD", dl_redis_script_source(id)};
                rc = dl_redis_send(c, 3, load, NULL, deadline, err);
                if (rc == DIRLOCK_OK)
                        rc = dl_redis_send(c, argc, argv, NULL, deadline, err);
                redisReply *loaded = NULL;
                if (rc == DIRLOCK_OK)
                        rc = dl_redis_await_reply(c, deadline, NULL, 0, NULL, &loaded, err);
                if (rc == DIRLOCK_OK) {
                        sha_set(id, loaded);
                        freeReplyObject(loaded);
                        rc = dl_redis_await_reply(c, deadline, NULL, 0, NULL, &r, err);
                }
        } else {
                rc = dl_redis_command(c, argc, argv, NULL, deadline, &r, err);
                if (rc == DIRLOCK_OK && r->type == REDIS_REPLY_ERROR && r->str &&
                    starts(r->str, "NOSCRIPT")) {
                        /* The server forgot it (restart, SCRIPT FLUSH): EVAL loads it again. */
                        freeReplyObject(r);
                        r = NULL;
                        argv[0] = "EVAL";
                        argv[1] = dl_redis_script_source(id);
                        rc = dl_redis_command(c, argc, argv, NULL, deadline, &r, err);
                }
        }
        if (rc != DIRLOCK_OK)
                return rc;
        if (r->type == REDIS_REPLY_ERROR) {
                char w[160];
                snprintf(w, sizeof w, "%s script for %s", dl_redis_script_name(id),
                         what ? what : "the lock space");
                rc = dl_redis_reply_error(c, r, w, err);
                freeReplyObject(r);
                return rc;
        }
        *reply = r;
        return DIRLOCK_OK;
}
