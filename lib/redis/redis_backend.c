/* redis_backend.c - the Redis backend (backend.h): a lock space on a Redis
 * server (redis://..., redis+unix://..., redis_url.h), shared by the
 * processes of every host that can reach it.  Here: the handle's state,
 * the wait loop, and the table of entry points.  The scripts that change
 * the server's state, each with the invariant it keeps, are in
 * redis_scripts.c; the connection in redis_conn.c.  docs/library.md says
 * how it differs from a directory space.
 *
 * ======================================================================
 * DATA MODEL.  Every key of space P carries the hash tag {P}; lock NAME
 * is K = {P}:NAME:
 *
 *   K:w   string: "<token> <owner record>" of the holder of W (exclusive,
 *         intent, or any mode under `simple`), PX = that holder's stale
 *         age: the record goes with the lock when it expires
 *   K:u   string: the token of the intent holder that is upgrading or
 *         upgraded (it counts only while it equals K:w), PX = stale age
 *   K:r   zset: reader tokens, scored by when they expire (server ms)
 *   K:q   zset: waiting tokens, scored by their arrival number
 *   K:qe  zset: waiting tokens, scored by when they expire (server ms)
 *   K:qm  hash: waiting token -> "mode policy stale_ms names queue_ttl_ms"
 *   K:o   hash: token -> owner record of each reader and waiter (owner.c's
 *         text: pid, start time, host, boot, pid namespace, token, acquire
 *         time, mode, stale age, partner), removed with its entry
 *   K:f   string: the last fence drawn for NAME (never expires)
 *   K:g   hash: range holder or waiter token -> "<state><mode> <seq> <lo>
 *         <hi> <policy> <queue ttl ms>" (redis_range.c says the protocol)
 *   K:ge  zset: range tokens, scored by when their entries expire (ms)
 *   K:go  hash: range token -> owner record
 *   {P}:seq         the arrival counter (INCR), one number per waiter,
 *                   kept across its attempts and the same in every queue
 *   {P}:names       set of the names that have or had state (list, cleanup)
 *   {P}:wake:<T>    list waiter T blocks on (BLPOP): "g<fence>" when the
 *                   lock was granted to it, "g" when its upgrade is done,
 *                   "w" when it should try again; PEXPIRE = its queue ttl
 *
 * The server's clock (TIME in the scripts) decides every expiry, so the
 * clocks of the hosts do not matter.
 *
 * ======================================================================
 * ACQUIRE (the wait loop below).  One ACQUIRE script per attempt, over all
 * the names of a multi-lock at once (all or nothing).  Busy: the script
 * has queued us with our arrival number and names the entry in the way
 * (a holder, a reader, or a waiter ahead of us), its owner record, and
 * when that entry would expire.  Then BLPOP {P}:wake:<T> goes out at once
 * (a release that comes while we look at the blocker hands over without
 * waiting for that look), and:
 *   - its owner is provably dead on this host (pid and start time): drop
 *     the connection with the BLPOP in flight, BREAK exactly that token,
 *     and try again at once;
 *   - else the BLPOP waits for the least of: the time to our deadline,
 *     the time until the blocking entry expires (then it is gone: look
 *     again), and a third of our queue ttl (to renew our queue entry), while
 *     poll() also watches the cancel descriptor and, for a live owner on
 *     this host, its pidfd.  The reply "g<fence>" means the releaser's
 *     script took the lock for us: done, without another round trip.
 *     Anything else: attempt again.  A wait abandoned while BLPOP is in
 *     flight (cancel, pidfd, a dead owner) closes the connection, so no reply is left
 *     unread on a reused one (a grant popped that way is found by the
 *     next attempt: a token that already holds the lock simply takes it
 *     again, with a new fence).
 *   - at the deadline, or when canceled, one last attempt that leaves
 *     the queues if it fails (and lets in whoever we held back).
 * timeout 0 is one attempt that never queues.  A server that cannot be
 * reached: a timed acquire tries again with backoff until its deadline
 * and then fails with DIRLOCK_ESERVER (not DIRLOCK_ETIMEDOUT: the lock's
 * state is unknown, not busy); an infinite wait keeps trying.  No round
 * trip waits longer than DL_REDIS_IO_MS, nor past the deadline by more
 * than DL_REDIS_GRACE_MS.
 *
 * QUEUE TTL.  A waiter's queue entry expires after min(stale age, 6 s)
 * and is renewed on every attempt, so a waiter that dies -- or that gave
 * up while the server could not be reached -- holds the queue up for at
 * most 6 s, even with the default stale age of 180 s.
 *
 * LATE REQUESTS.  A stopped server keeps what was sent to it and runs it
 * when it goes on, maybe after its sender gave up.  Every attempt of a
 * timed acquire therefore carries its deadline as the server's clock will
 * read it (dl_redis_not_after: the offset of TIME from our monotonic clock,
 * read when the connection opened; the deadline, or the moment of sending
 * for the attempt made at or after it, plus DL_REDIS_GRACE_MS / 2).  A
 * script run after it takes nothing the token does not hold already and
 * leaves the queues (kind 'l'), and a queue entry never outlives it, so no
 * release grants the lock to a waiter that has left.  An attempt refused
 * as late is made once more with the clock read again (the offset may
 * have gone stale: our host suspended, the server's clock set); refused
 * again, the acquire ends with DIRLOCK_ESERVER (the server did not answer
 * in time; the lock may be free).  Error of the
 * offset: half a round trip, plus any step of the server's clock since
 * the connection opened.  A sender gives up its last attempt no sooner
 * than DL_REDIS_GRACE_MS after its deadline, half of that after the
 * scripts stop taking for it: that half is the margin for the error.
 *
 * LOST REPLIES.  Scripts are written so that asking again is safe:
 * ACQUIRE by a token that already holds takes again; REFRESH, CHECK and
 * BREAK are idempotent.  RELEASE, REFRESH and CHECK retry once on a new
 * connection when a reply is lost.  RELEASE makes sure that a request
 * which failed on a connection the server had closed meanwhile did not
 * reach it -- a kept TCP connection is checked before use (poll), and on
 * a unix socket the send itself fails before anything goes out (EPIPE)
 * -- so a restarted server answers RELEASE with "not held":
 * DIRLOCK_ELOST.  Only a release whose reply was lost and whose retry
 * finds nothing cannot tell released from lost: it says so, with
 * DIRLOCK_ESERVER.
 *
 * FENCES are drawn in the ACQUIRE script (or by the releaser's script
 * that grants): max(K:f + 1, server time in microseconds).  dirlock_fence()
 * asks the server (CHECK) that the lock is still held before it hands out
 * the number, as the directory backend does (docs/fencing.md). */
#include "backend.h"
#include "redis.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define QUEUE_TTL_MAX_MS 6000.0
#define BACKOFF_START_MS 10.0
#define BACKOFF_CAP_MS   500.0

struct dl_redis *dl_redis_of(const dirlock *h)
{
        return (struct dl_redis *)h->impl;
}

/* ---- helpers ------------------------------------------------------------- */

/* The space string with anything between "://" and '@' hidden. */
static void redact(const char *space, char *out, size_t size)
{
        const char *s = strstr(space, "://");
        const char *at = s ? strchr(s, '@') : NULL;
        if (s == NULL || at == NULL)
                snprintf(out, size, "%.200s", space);
        else
                snprintf(out, size, "%.*s***%.200s", (int)(s + 3 - space), space, at);
}

int dl_redis_parse_space(const char *space, dl_redis_url *u, dirlock_error *err)
{
        char why[200];
        if (dl_redis_url_parse(space, strlen(space), u, why, sizeof why) == 0)
                return DIRLOCK_OK;
        char shown[300];
        redact(space, shown, sizeof shown);
        return dl_fail(err, DIRLOCK_EINVAL, 0, "lock space '%s': %s", shown, why);
}

static void make_keys(const dl_redis_url *u, const char *name, char *base, size_t bsize, char *space,
                      size_t ssize)
{
        snprintf(space, ssize, "{%s}", u->prefix);
        if (base != NULL)
                snprintf(base, bsize, "{%s}:%s", u->prefix, name);
}

/* Prefix err's message with "lock 'NAME': ". */
int dl_redis_about(dirlock_error *err, int rc, const char *name)
{
        if (err == NULL || rc == DIRLOCK_OK || name == NULL)
                return rc;
        char prefix[DIRLOCK_NAME_MAX + 16];
        int n = snprintf(prefix, sizeof prefix, "lock '%s': ", name);
        size_t size = sizeof err->message;
        if (n <= 0 || (size_t)n >= size)
                return rc;
        memmove(err->message + n, err->message, size - (size_t)n - 1);
        memcpy(err->message, prefix, (size_t)n);
        err->message[size - 1] = '\0';
        return rc;
}

long long dl_redis_stale_ms(const dirlock *h)
{
        double ms = h->opts.stale_age * 1e3;
        if (ms > 1e12)
                ms = 1e12;
        return (long long)ms;
}

long long dl_redis_queue_ttl_ms(const dirlock *h)
{
        double ms = h->opts.stale_age * 1e3;
        return (long long)(ms < QUEUE_TTL_MAX_MS ? ms : QUEUE_TTL_MAX_MS);
}

bool dl_redis_reply_is(const redisReply *r, int type)
{
        return r != NULL && r->type == type;
}

long long dl_redis_reply_int(const redisReply *r)
{
        if (r == NULL)
                return 0;
        if (r->type == REDIS_REPLY_INTEGER)
                return r->integer;
        if (r->type == REDIS_REPLY_STRING)
                return strtoll(r->str, NULL, 10);
        return 0;
}

const char *dl_redis_reply_str(const redisReply *r)
{
        return r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) ? r->str : "";
}

int dl_redis_bad_reply(dirlock_error *err, const char *what)
{
        return dl_fail(err, DIRLOCK_EDATA, 0, "unexpected answer from the Redis server to %s", what);
}

/* "held by pid 812 on www1" and the like, from a blocker's record. */
void dl_redis_describe(const char *record, const char *kind, char *out, size_t size)
{
        dl_record rec;
        const char *role = kind[0] == 'r'   ? "a reader, "
                           : kind[0] == 'q' ? "a waiter ahead, "
                           : kind[0] == 'g' ? "a range, "
                                            : "";
        if (record[0] != '\0' && dl_record_parse(record, strlen(record), &rec) == 0)
                snprintf(out, size, "%spid %ld on %.200s", role, (long)rec.pid, rec.host);
        else
                snprintf(out, size, "%san owner without a readable record", role);
}

/* A pidfd on the process of `rec` that still runs (or its partner), or -1. */
int dl_redis_open_pidfd(const dl_record *rec)
{
#ifdef SYS_pidfd_open
        pid_t pids[2] = {rec->pid, rec->partner};
        unsigned long long starts[2] = {rec->start_time, rec->partner_start};
        for (int i = 0; i < 2; i++) {
                if (pids[i] <= 0)
                        continue;
                int fd = (int)syscall(SYS_pidfd_open, pids[i], 0);
                if (fd < 0)
                        continue;
                if (dl_process_start_time(pids[i]) == starts[i])
                        return fd;
                close(fd);
        }
#else
        (void)rec;
#endif
        return -1;
}

/* Sleep up to ms (not past the deadline); 1 when the cancel fd fired. */
int dl_redis_nap(double ms, const dl_time *deadline, int cancel_fd)
{
        return dl_nap_ms(ms, deadline, cancel_fd);
}

/* Run one script on the space of `u`, by `deadline`.  With `retry`, a
 * failure after the request was sent (reply lost) is tried once more on
 * a new connection; *resent tells whether that happened. */
int dl_redis_run_script(const dl_redis_url *u, dl_redis_script_id id, int nkeys, const char **keys, int nargs,
                        const char **args, const dl_time *deadline, const char *what, bool retry,
                        bool *resent, redisReply **reply, dirlock_error *err)
{
        bool checked = resent != NULL; /* RELEASE must know whether a lost reply was its own */
        if (resent != NULL)
                *resent = false;
        for (int attempt = 0;; attempt++) {
                dl_redis_conn *c;
                int rc = dl_redis_connect(u, deadline, checked, &c, err);
                if (rc != DIRLOCK_OK)
                        return rc;
                rc = dl_redis_eval(c, id, nkeys, keys, nargs, args, deadline, what, reply, err);
                if (rc != DIRLOCK_ESERVER || !retry || attempt > 0 || dl_deadline_passed(deadline))
                        return rc;
                if (resent != NULL && !dl_redis_unsent(c))
                        *resent = true; /* it may have run: the retry cannot tell */
        }
}

/* A script on one name of handle h; op deadline from its own timeout. */
int dl_redis_run_on(const dirlock *h, dl_redis_script_id id, int nargs, const char **args, bool retry,
                    bool *resent, redisReply **reply, dirlock_error *err)
{
        const struct dl_redis *r = dl_redis_of(h);
        const char *keys[2] = {r->base, r->space};
        dl_time call = dl_deadline(h->opts.timeout);
        dl_time io = dl_redis_io_deadline(&call);
        char what[DIRLOCK_NAME_MAX + 16];
        snprintf(what, sizeof what, "lock '%s'", h->name);
        return dl_redis_run_script(&r->url, id, 2, keys, nargs, args, &io, what, retry, resent, reply, err);
}

/* ---- a handle -------------------------------------------------------------- */

static int redis_open(dirlock *h, const char *spec, dirlock_error *err)
{
        struct dl_redis *r = calloc(1, sizeof *r);
        if (r == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        int rc = dl_redis_parse_space(spec, &r->url, err);
        if (rc != DIRLOCK_OK) {
                free(r);
                return rc;
        }
        make_keys(&r->url, h->name, r->base, sizeof r->base, r->space, sizeof r->space);
        h->impl = r;
        return DIRLOCK_OK;
}

static void redis_close(dirlock *h)
{
        free(h->impl);
        h->impl = NULL;
}

static int redis_retoken(dirlock *h, dirlock_error *err)
{
        (void)err;
        struct dl_redis *r = dl_redis_of(h);
        r->fence = 0;
        r->seq = 0;
        return DIRLOCK_OK;
}

int dl_redis_format_record(const dirlock *h, int mode, char *buf, size_t size, dirlock_error *err)
{
        dl_record rec;
        dl_record_self(&rec, h->token, mode, h->opts.stale_age, h->opts.partner_pid, h->partner_start);
        if (dl_record_format(&rec, buf, size) < 0)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "owner record of lock '%s' too long", h->name);
        return DIRLOCK_OK;
}

/* ---- acquiring: the wait loop -------------------------------------------- */

int dl_redis_parse_busy(const redisReply *rep, size_t n, long long *seq, struct dl_redis_blocker *b,
                        dirlock_error *err)
{
        if (rep->elements != 7)
                return dl_redis_bad_reply(err, "an acquire");
        *seq = dl_redis_reply_int(rep->element[1]);
        snprintf(b->token, sizeof b->token, "%s", dl_redis_reply_str(rep->element[2]));
        snprintf(b->record, sizeof b->record, "%s", dl_redis_reply_str(rep->element[3]));
        b->left_ms = dl_redis_reply_int(rep->element[4]);
        long long i = dl_redis_reply_int(rep->element[5]);
        b->index = i >= 0 && (size_t)i < n ? (size_t)i : 0;
        snprintf(b->kind, sizeof b->kind, "%s", dl_redis_reply_str(rep->element[6]));
        return DIRLOCK_OK;
}

bool dl_redis_late(const struct dl_redis_blocker *b, const dl_redis_url *u, bool *resynced, double timeout,
                   const char *name, int *rc, dirlock_error *err)
{
        if (strcmp(b->kind, "l") != 0)
                return false;
        /* Run after our deadline: really so (the server was stopped), or
         * by a stale clock offset: read the server's clock again and try
         * once more. */
        if (!*resynced) {
                *resynced = true;
                dl_redis_clock_stale(u);
                *rc = DIRLOCK_OK;
                return true;
        }
        *rc = dl_fail(err, DIRLOCK_ESERVER, 0,
                      "the Redis server ran the request for lock '%s' only after its deadline (%.3g s; "
                      "it was stopped or overloaded meanwhile): nothing was taken",
                      name, timeout);
        return true;
}

/* BREAK token `t` of lock hs->name (a same-host owner found dead). */
int dl_redis_break_token(const dirlock *h, const char *t, dirlock_error *err)
{
        const char *args[1] = {t};
        redisReply *rep;
        int rc = dl_redis_run_on(h, DL_RS_BREAK, 1, args, true, NULL, &rep, err);
        if (rc == DIRLOCK_OK)
                freeReplyObject(rep);
        return rc;
}

/* Why a wait ended: "timed out after 2 s" / "canceled" / "busy". */
int dl_redis_gave_up(dirlock_error *err, int code, double timeout, const char *name,
                     const struct dl_redis_blocker *b)
{
        char who[300];
        dl_redis_describe(b->record, b->kind, who, sizeof who);
        if (code == DIRLOCK_EBUSY)
                return dl_fail(err, code, 0, "lock '%s' is held by %s", name, who);
        if (code == DIRLOCK_ECANCELED)
                return dl_fail(err, code, 0, "canceled waiting for lock '%s' (held by %s)", name, who);
        return dl_fail(err, code, 0, "timed out after %.3g s: lock '%s' is held by %s", timeout, name, who);
}

/* Ask for the next message of our wake list (BLPOP, at most *wait_ms, at
 * least 1 ms); *c is the connection it is then in flight on. */
static int wake_send(const dl_redis_url *u, const char *wake_key, double *wait_ms, const dl_time *deadline,
                     dl_redis_conn **c, dirlock_error *err)
{
        if (*wait_ms < 1)
                *wait_ms = 1;
        dl_time io = dl_redis_io_deadline(deadline);
        int rc = dl_redis_connect(u, &io, false, c, err);
        if (rc != DIRLOCK_OK)
                return rc;
        char secs[32];
        snprintf(secs, sizeof secs, "%.3f", *wait_ms / 1e3);
        const char *argv[3] = {"BLPOP", wake_key, secs};
        return dl_redis_send(*c, 3, argv, NULL, &io, err);
}

/* The answer to wake_send on c, watching cancel_fd and pid_fd meanwhile. */
static int wake_receive(dl_redis_conn *c, double wait_ms, int cancel_fd, int pid_fd, bool *granted,
                        unsigned long long *fence, bool *canceled, bool *pid_fired, dirlock_error *err)
{
        *granted = *canceled = *pid_fired = false;
        /* The server answers by wait_ms (never past our deadline); a server
         * that does not (stopped) is given DL_REDIS_GRACE_MS more, then
         * counts as unreachable. */
        dl_time until = dl_deadline((wait_ms + DL_REDIS_GRACE_MS) / 1e3);
        int fds[2] = {cancel_fd, pid_fd};
        int which;
        redisReply *rep;
        int rc = dl_redis_await_reply(c, &until, fds, 2, &which, &rep, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (which >= 0) {
                dl_redis_drop(c); /* BLPOP still in flight: never reuse this connection */
                *canceled = which == 0;
                *pid_fired = which == 1;
                return DIRLOCK_OK;
        }
        if (dl_redis_reply_is(rep, REDIS_REPLY_ERROR)) {
                rc = dl_redis_reply_error(c, rep, "wait", err);
        } else if (dl_redis_reply_is(rep, REDIS_REPLY_ARRAY) && rep->elements == 2) {
                const char *msg = dl_redis_reply_str(rep->element[1]);
                if (msg[0] == 'g') {
                        *granted = true;
                        *fence = dl_fence_of_text(msg + 1);
                }
        }
        freeReplyObject(rep);
        return rc;
}

/* Wait on our wake list for at most wait_ms (and the deadline), watching
 * cancel_fd and pid_fd.  Sets *granted (with *fence, 0 for an upgrade)
 * when the lock was handed to us, *canceled when cancel_fd fired. */
int dl_redis_await_wake(const dl_redis_url *u, const char *wake_key, double wait_ms, const dl_time *deadline,
                        int cancel_fd, int pid_fd, bool *granted, unsigned long long *fence, bool *canceled,
                        bool *pid_fired, dirlock_error *err)
{
        *granted = *canceled = *pid_fired = false;
        dl_redis_conn *c;
        int rc = wake_send(u, wake_key, &wait_ms, deadline, &c, err);
        return rc != DIRLOCK_OK
                   ? rc
                   : wake_receive(c, wait_ms, cancel_fd, pid_fd, granted, fence, canceled, pid_fired, err);
}

/* The BLPOP goes out first and the blocker's owner is judged while it is
 * in flight: a release that comes meanwhile hands the lock over at once
 * instead of waiting for our look at /proc (two reads of its stat file
 * and a pidfd_open, about as long as a round trip).  A dead owner found
 * then costs the connection (its BLPOP is in flight: a grant it pops is
 * found by the next attempt, which takes again what is already ours). */
int dl_redis_wait_blocker(dirlock *breaker, const struct dl_redis_blocker *b, struct dl_redis_owner_watch *ow,
                          const char *wake_key, long long ttl_ms, const dl_time *deadline, int cancel_fd,
                          bool *broke, bool *canceled, bool *granted, unsigned long long *fence,
                          dirlock_error *err)
{
        *broke = *granted = false;
        dl_record rec;
        bool readable = b->record[0] != '\0' && dl_record_parse(b->record, strlen(b->record), &rec) == 0;
        double wait_ms = dl_remaining(deadline);
        if (wait_ms > (double)b->left_ms + 2)
                wait_ms = (double)b->left_ms + 2;
        if (wait_ms > (double)ttl_ms / 3)
                wait_ms = (double)ttl_ms / 3;
        const struct dl_redis *r = dl_redis_of(breaker);
        dl_redis_conn *c;
        int rc = wake_send(&r->url, wake_key, &wait_ms, deadline, &c, err);
        if (rc != DIRLOCK_OK)
                return rc;
        /* A pidfd already on this very process would have fired had it
         * died: only a new owner, or one not watched, is judged. */
        bool watched = readable && rec.pid == ow->pid && ow->pid_fd >= 0;
        if (readable && !watched && dl_record_owner_alive(&rec) == 0) {
                dl_redis_drop(c);
                rc = dl_redis_break_token(breaker, b->token, err);
                *broke = rc == DIRLOCK_OK || rc == DIRLOCK_ESERVER; /* the next attempt says more */
                return *broke ? DIRLOCK_OK : rc;
        }
        if (readable && rec.pid != ow->pid) {
                if (ow->pid_fd >= 0)
                        close(ow->pid_fd);
                ow->pid_fd = dl_record_same_host(&rec) ? dl_redis_open_pidfd(&rec) : -1;
                ow->pid = rec.pid;
        }
        bool pid_fired;
        rc = wake_receive(c, wait_ms, cancel_fd, ow->pid_fd, granted, fence, canceled, &pid_fired, err);
        if (pid_fired) { /* judge again; watch its partner if it has one */
                close(ow->pid_fd);
                ow->pid_fd = -1;
                ow->pid = 0;
        }
        return rc;
}

/* Take every lock of hs[0..n-1] (one space, one token: hs[0]'s, distinct
 * names) by the deadline, all or none. */
static int acquire_set(dirlock **hs, size_t n, const dl_time *deadline, dirlock_error *err)
{
        dirlock *h = hs[0];
        struct dl_redis *r = dl_redis_of(h);
        const dirlock_options *o = &h->opts;
        const char **keys = calloc(n + 1, sizeof *keys);
        if (keys == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        for (size_t i = 0; i < n; i++)
                keys[i] = dl_redis_of(hs[i])->base;
        keys[n] = r->space;
        char record[DL_RECORD_MAX];
        int rc = dl_redis_format_record(h, o->mode, record, sizeof record, err);
        char mode[8], policy[8], stale[24], qttl[24], seq[24], wake_key[sizeof r->space + 48];
        snprintf(mode, sizeof mode, "%d", o->mode);
        snprintf(policy, sizeof policy, "%d", o->policy);
        snprintf(stale, sizeof stale, "%lld", dl_redis_stale_ms(h));
        long long ttl = dl_redis_queue_ttl_ms(h);
        snprintf(qttl, sizeof qttl, "%lld", ttl);
        snprintf(wake_key, sizeof wake_key, "%s:wake:%s", r->space, h->token);
        bool may_queue = o->timeout != 0, canceled = false, resynced = false;
        double backoff = BACKOFF_START_MS;
        unsigned long long jitter =
            0x9E3779B97F4A7C15ULL ^ ((unsigned long long)h->token[0] * 31 + (unsigned)dl_self_pid());
        struct dl_redis_owner_watch ow = {-1, 0};
        struct dl_redis_blocker b;
        r->seq = 0;
        while (rc == DIRLOCK_OK) {
                bool last = canceled || dl_deadline_passed(deadline);
                snprintf(seq, sizeof seq, "%lld", r->seq);
                char not_after[24];
                const char *args[10] = {
                    h->token,         mode,      policy, stale, record, may_queue ? "1" : "0", seq,
                    last ? "1" : "0", not_after, qttl};
                dl_time io = dl_redis_io_deadline(deadline);
                redisReply *rep = NULL;
                rc = dl_redis_not_after(&r->url, deadline, &io, not_after, err);
                if (rc == DIRLOCK_OK)
                        rc = dl_redis_run_script(&r->url, DL_RS_ACQUIRE, (int)n + 1, keys, 10, args, &io,
                                                 n == 1 ? "the lock" : "the locks", true, NULL, &rep, err);
                if (rc == DIRLOCK_ESERVER) {
                        if (!may_queue || last)
                                break;
                        /* Unreachable: try again, with backoff, until the deadline. */
                        jitter = jitter * 6364136223846793005ULL + 1442695040888963407ULL;
                        double step = backoff * (0.5 + (double)(jitter >> 11) / 9007199254740992.0);
                        backoff = backoff * 2 > BACKOFF_CAP_MS ? BACKOFF_CAP_MS : backoff * 2;
                        canceled = dl_redis_nap(step, deadline, o->cancel_fd) == 1;
                        rc = DIRLOCK_OK;
                        continue;
                }
                if (rc != DIRLOCK_OK)
                        break;
                backoff = BACKOFF_START_MS;
                if (!dl_redis_reply_is(rep, REDIS_REPLY_ARRAY) || rep->elements < 1) {
                        rc = dl_redis_bad_reply(err, "an acquire");
                } else if (dl_redis_reply_int(rep->element[0]) == 1) {
                        if (rep->elements != n + 1) {
                                rc = dl_redis_bad_reply(err, "an acquire");
                        } else {
                                for (size_t i = 0; i < n; i++)
                                        dl_redis_of(hs[i])->fence =
                                            dl_fence_of_text(dl_redis_reply_str(rep->element[i + 1]));
                                r->seq = 0;
                                freeReplyObject(rep);
                                break; /* rc == DIRLOCK_OK */
                        }
                } else {
                        rc = dl_redis_parse_busy(rep, n, &r->seq, &b, err);
                }
                freeReplyObject(rep);
                if (rc != DIRLOCK_OK)
                        break;
                if (dl_redis_late(&b, &r->url, &resynced, o->timeout, h->name, &rc, err)) {
                        if (rc == DIRLOCK_OK)
                                continue;
                        break;
                }
                const char *busy_name = hs[b.index]->name;
                if (!may_queue || last) {
                        rc = dl_redis_gave_up(err,
                                              !may_queue ? DIRLOCK_EBUSY
                                              : canceled ? DIRLOCK_ECANCELED
                                                         : DIRLOCK_ETIMEDOUT,
                                              o->timeout, busy_name, &b);
                        break;
                }
                bool broke, granted;
                unsigned long long fence = 0;
                rc = dl_redis_wait_blocker(hs[b.index], &b, &ow, wake_key, ttl, deadline, o->cancel_fd,
                                           &broke, &canceled, &granted, &fence, err);
                if (broke)
                        continue;
                if (rc == DIRLOCK_ESERVER) {
                        rc = DIRLOCK_OK; /* the next attempt tries to reconnect */
                        continue;
                }
                if (rc == DIRLOCK_OK && granted && n == 1 && fence > 0) {
                        r->fence = fence;
                        r->seq = 0;
                        break;
                }
        }
        if (ow.pid_fd >= 0)
                close(ow.pid_fd);
        free(keys);
        if (rc == DIRLOCK_ESERVER && canceled)
                return dl_fail(err, DIRLOCK_ECANCELED, 0,
                               "canceled waiting for lock '%s' while the Redis server could not be reached",
                               h->name);
        if (rc == DIRLOCK_ESERVER && may_queue && err != NULL) {
                size_t len = strlen(err->message);
                snprintf(err->message + len, sizeof err->message - len, " (gave up at the timeout, %.3g s)",
                         o->timeout);
        }
        if (rc != DIRLOCK_OK && rc != DIRLOCK_EBUSY && rc != DIRLOCK_ETIMEDOUT && rc != DIRLOCK_ECANCELED)
                dl_redis_about(err, rc, h->name);
        return rc;
}

static int redis_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        if (h->ranged)
                return dl_redis_range_acquire(h, deadline, err);
        return acquire_set(&h, 1, deadline, err);
}

static int redis_acquire_many(dirlock **hs, size_t n, const dl_time *deadline, dirlock_error *err)
{
        /* One token for the set: one queue identity, one wake list. */
        for (size_t i = 1; i < n; i++)
                memcpy(hs[i]->token, hs[0]->token, sizeof hs[0]->token);
        return acquire_set(hs, n, deadline, err);
}

/* ---- holding ------------------------------------------------------------- */

static int redis_release(dirlock *h, dirlock_error *err)
{
        if (h->ranged)
                return dl_redis_range_release(h, err);
        struct dl_redis *r = dl_redis_of(h);
        const char *args[1] = {h->token};
        redisReply *rep;
        bool resent;
        int rc = dl_redis_run_on(h, DL_RS_RELEASE, 1, args, true, &resent, &rep, err);
        /* No answer: the hold may be in place still, found by this token
         * alone; redis_release_kept tries again before a new token. */
        r->release_pending = rc == DIRLOCK_ESERVER;
        if (rc != DIRLOCK_OK)
                return dl_redis_about(err, rc, h->name);
        long long held = dl_redis_reply_int(rep);
        freeReplyObject(rep);
        if (held == 1)
                return DIRLOCK_OK;
        if (resent)
                return dl_fail(
                    err, DIRLOCK_ESERVER, 0,
                    "lock '%s': the connection to the Redis server broke during the release; the lock "
                    "is not held any more, but whether it was released or had been lost cannot be told",
                    h->name);
        return dl_redis_lost(err, h, held);
}

/* A release that got no answer (the server unreachable) may have left
 * the hold on the server: release it now, by the token that names it.
 * Gone meanwhile (expired, broken, released after all) is no error:
 * nothing is left.  Still no answer: DIRLOCK_ESERVER, and it stays
 * pending (the hold expires after its stale age in any case). */
static int redis_release_kept(dirlock *h, dirlock_error *err)
{
        struct dl_redis *r = dl_redis_of(h);
        if (h->ranged || !r->release_pending)
                return DIRLOCK_OK;
        const char *args[1] = {h->token};
        redisReply *rep;
        int rc = dl_redis_run_on(h, DL_RS_RELEASE, 1, args, true, NULL, &rep, err);
        if (rc != DIRLOCK_OK)
                return dl_redis_about(err, rc, h->name);
        freeReplyObject(rep);
        r->release_pending = false;
        return DIRLOCK_OK;
}

int dl_redis_lost(dirlock_error *err, const dirlock *h, long long answer)
{
        char what[DIRLOCK_NAME_MAX + 96];
        if (h->ranged)
                snprintf(what, sizeof what, "range [%g, %g) of lock '%s'", h->lo, h->hi, h->name);
        else
                snprintf(what, sizeof what, "lock '%s'", h->name);
        if (answer == DL_REDIS_GONE)
                return dl_fail(err, DIRLOCK_ELOST, 0,
                               "%s was lost: the Redis server no longer has it (the server was restarted "
                               "without its data, flushed, or evicted the lock's keys)",
                               what);
        return dl_fail(err, DIRLOCK_ELOST, 0,
                       "%s was lost: its entry on the Redis server expired (it was broken as stale) or was "
                       "broken, or the server lost it and it has been taken again since",
                       what);
}

/* Run a script that answers 1 while h's token still holds the lock:
 * DIRLOCK_OK, DIRLOCK_ELOST, or the server's error. */
static int run_while_held(const dirlock *h, dl_redis_script_id id, int nargs, const char **args,
                          dirlock_error *err)
{
        redisReply *rep;
        int rc = dl_redis_run_on(h, id, nargs, args, true, NULL, &rep, err);
        if (rc != DIRLOCK_OK)
                return dl_redis_about(err, rc, h->name);
        long long held = dl_redis_reply_int(rep);
        freeReplyObject(rep);
        return held == 1 ? DIRLOCK_OK : dl_redis_lost(err, h, held);
}

static int redis_refresh(dirlock *h, dirlock_error *err)
{
        if (h->ranged)
                return dl_redis_range_refresh(h, err);
        char stale[24];
        snprintf(stale, sizeof stale, "%lld", dl_redis_stale_ms(h));
        const char *args[2] = {h->token, stale};
        return run_while_held(h, DL_RS_REFRESH, 2, args, err);
}

static int redis_check(const dirlock *h, dirlock_error *err)
{
        if (h->ranged)
                return dl_redis_range_check(h, err);
        const char *args[1] = {h->token};
        return run_while_held(h, DL_RS_CHECK, 1, args, err);
}

#ifdef DIRLOCK_TEST_HOOKS
/* Test builds only: a fence drawn when asked for, with a plain GET and
 * SET and no check that the lock is held -- what the fence tests must
 * catch (a paused holder then gets a number above its successor's). */
static int lazy_fence(dirlock *h, unsigned long long *fence, dirlock_error *err)
{
        struct dl_redis *r = dl_redis_of(h);
        dl_time io = dl_redis_io_deadline(&(dl_time){-1, 0});
        dl_redis_conn *c;
        int rc = dl_redis_connect(&r->url, &io, false, &c, err);
        char key[sizeof r->base + 4];
        snprintf(key, sizeof key, "%s:f", r->base);
        const char *get[2] = {"GET", key};
        redisReply *rep = NULL;
        if (rc == DIRLOCK_OK)
                rc = dl_redis_command(c, 2, get, NULL, &io, &rep, err);
        if (rc != DIRLOCK_OK)
                return rc;
        unsigned long long next = strtoull(dl_redis_reply_str(rep), NULL, 10) + 1;
        freeReplyObject(rep);
        char v[24];
        snprintf(v, sizeof v, "%llu", next);
        const char *set[3] = {"SET", key, v};
        rc = dl_redis_command(c, 3, set, NULL, &io, &rep, err);
        if (rc == DIRLOCK_OK)
                freeReplyObject(rep);
        *fence = next;
        return rc;
}
#endif

static int redis_fence(dirlock *h, unsigned long long *fence, dirlock_error *err)
{
#ifdef DIRLOCK_TEST_HOOKS
        if (getenv("DIRLOCK_TEST_REDIS_LAZY_FENCE") != NULL)
                return lazy_fence(h, fence, err);
#endif
        int rc = redis_check(h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (dl_redis_of(h)->fence == 0)
                return dl_fail(err, DIRLOCK_EDATA, 0,
                               "lock '%s': the Redis server gave no fence (none, or not one of 1..%llu)",
                               h->name, DIRLOCK_FENCE_MAX);
        *fence = dl_redis_of(h)->fence;
        return DIRLOCK_OK;
}

/* Intent -> exclusive: set U, wait for the readers already in. */
static int redis_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err)
{
        if (h->mode == DIRLOCK_EXCLUSIVE)
                return DIRLOCK_OK;
        if (h->mode == DIRLOCK_SHARED)
                return dl_fail(
                    err, DIRLOCK_EUPGRADE, 0,
                    "read lock '%s' cannot be upgraded: two readers upgrading at once would wait for "
                    "each other forever; take it in intent mode (DIRLOCK_INTENT) to upgrade",
                    h->name);
        if (h->ranged)
                return dl_redis_range_upgrade(h, opts, err);
        static const struct dl_redis_upgrade whole = {.script = DL_RS_UPGRADE,
                                                      .policy_arg = true,
                                                      .blocker_kind = 'r',
                                                      .running = "the upgrade",
                                                      .reply = "an upgrade"};
        return dl_redis_upgrade_wait(h, opts, &whole, err);
}

int dl_redis_upgrade_wait(dirlock *h, const dirlock_options *opts, const struct dl_redis_upgrade *u,
                          dirlock_error *err)
{
        struct dl_redis *r = dl_redis_of(h);
        dirlock_options o = opts != NULL ? *opts : h->opts;
        int cancel_fd = (o.flags & DIRLOCK_CANCEL_FD) ? o.cancel_fd : -1;
        dl_time deadline = dl_deadline(o.timeout);
        char stale[24], wake_key[sizeof r->space + 48];
        snprintf(stale, sizeof stale, "%lld", dl_redis_stale_ms(h));
        snprintf(wake_key, sizeof wake_key, "%s:wake:%s", r->space, h->token);
        const char *keys[2] = {r->base, r->space};
        bool canceled = false;
        int pid_fd = -1, rc;
        for (;;) {
                bool last = canceled || o.timeout == 0 || dl_deadline_passed(&deadline);
                const char *args[4] = {h->token, stale, last ? "1" : "0",
                                       h->opts.policy == DIRLOCK_POLICY_SIMPLE ? "1" : "0"};
                dl_time io = dl_redis_io_deadline(&deadline);
                redisReply *rep;
                rc = dl_redis_run_script(&r->url, u->script, 2, keys, u->policy_arg ? 4 : 3, args, &io,
                                         u->running, true, NULL, &rep, err);
                if (rc != DIRLOCK_OK)
                        break;
                if (!dl_redis_reply_is(rep, REDIS_REPLY_ARRAY) || rep->elements < 1) {
                        freeReplyObject(rep);
                        rc = dl_redis_bad_reply(err, u->reply);
                        break;
                }
                long long state = dl_redis_reply_int(rep->element[0]);
                struct dl_redis_blocker b = {.kind = {u->blocker_kind, '\0'}};
                if (state == 0 && rep->elements == 4) {
                        snprintf(b.token, sizeof b.token, "%s", dl_redis_reply_str(rep->element[1]));
                        snprintf(b.record, sizeof b.record, "%s", dl_redis_reply_str(rep->element[2]));
                        b.left_ms = dl_redis_reply_int(rep->element[3]);
                }
                freeReplyObject(rep);
                if (state == 1) {
                        h->mode = DIRLOCK_EXCLUSIVE;
                        break;
                }
                if (state < 0) {
                        rc = dl_redis_lost(err, h, state);
                        break;
                }
                if (last) {
                        rc = dl_redis_gave_up(err,
                                              o.timeout == 0 ? DIRLOCK_EBUSY
                                              : canceled     ? DIRLOCK_ECANCELED
                                                             : DIRLOCK_ETIMEDOUT,
                                              o.timeout, h->name, &b);
                        break;
                }
                dl_record rec;
                bool readable = b.record[0] != '\0' && dl_record_parse(b.record, strlen(b.record), &rec) == 0;
                if (readable && dl_record_owner_alive(&rec) == 0) {
                        rc = dl_redis_break_token(h, b.token, err);
                        if (rc != DIRLOCK_OK && rc != DIRLOCK_ESERVER)
                                break;
                        continue;
                }
                if (pid_fd >= 0)
                        close(pid_fd);
                pid_fd = readable && dl_record_same_host(&rec) ? dl_redis_open_pidfd(&rec) : -1;
                double wait_ms = dl_remaining(&deadline);
                if (wait_ms > (double)b.left_ms + 2)
                        wait_ms = (double)b.left_ms + 2;
                if (wait_ms > (double)dl_redis_stale_ms(h) / 3)
                        wait_ms = (double)dl_redis_stale_ms(h) / 3;
                bool granted, pid_fired;
                unsigned long long ignored;
                rc = dl_redis_await_wake(&r->url, wake_key, wait_ms, &deadline, cancel_fd, pid_fd, &granted,
                                         &ignored, &canceled, &pid_fired, err);
                if (rc != DIRLOCK_OK && rc != DIRLOCK_ESERVER)
                        break;
                if (rc == DIRLOCK_ESERVER && dl_deadline_passed(&deadline))
                        break;
                rc = DIRLOCK_OK; /* granted or not: the next attempt confirms */
        }
        if (pid_fd >= 0)
                close(pid_fd);
        return rc == DIRLOCK_OK || rc == DIRLOCK_EBUSY || rc == DIRLOCK_ETIMEDOUT || rc == DIRLOCK_ECANCELED
                   ? rc
                   : dl_redis_about(err, rc, h->name);
}

static int redis_downgrade(dirlock *h, dirlock_error *err)
{
        if (h->mode == DIRLOCK_SHARED)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "lock '%s' is already a read lock", h->name);
        if (h->ranged)
                return dl_redis_range_downgrade(h, err);
        char record[DL_RECORD_MAX], stale[24], policy[8];
        int rc = dl_redis_format_record(h, DIRLOCK_SHARED, record, sizeof record, err);
        if (rc != DIRLOCK_OK)
                return rc;
        snprintf(stale, sizeof stale, "%lld", dl_redis_stale_ms(h));
        snprintf(policy, sizeof policy, "%d", h->opts.policy);
        const char *args[4] = {h->token, stale, record, policy};
        rc = run_while_held(h, DL_RS_DOWNGRADE, 4, args, err);
        if (rc == DIRLOCK_OK)
                h->mode = DIRLOCK_SHARED;
        return rc;
}

/* The caller (handle.c) checked that this is an upgraded intent lock. */
static int redis_downgrade_intent(dirlock *h, dirlock_error *err)
{
        if (h->ranged)
                return dl_redis_range_downgrade_intent(h, err);
        char policy[8];
        snprintf(policy, sizeof policy, "%d", h->opts.policy);
        const char *args[2] = {h->token, policy};
        int rc = run_while_held(h, DL_RS_DOWNGRADE_INTENT, 2, args, err);
        if (rc == DIRLOCK_OK)
                h->mode = DIRLOCK_INTENT;
        return rc;
}

/* ---- the space, from outside its holders ---------------------------------- */

/* Run a script on lock `name` of space `spec` with the admin time budget. */
int dl_redis_admin_script(const dl_redis_url *u, const char *name, dl_redis_script_id id, int nargs,
                          const char **args, redisReply **reply, dirlock_error *err)
{
        char base[DL_REDIS_PREFIX_MAX + DIRLOCK_NAME_MAX + 4], space[DL_REDIS_PREFIX_MAX + 3];
        make_keys(u, name, base, sizeof base, space, sizeof space);
        const char *keys[2] = {base, space};
        dl_time never = dl_deadline(-1);
        dl_time io = dl_redis_io_deadline(&never);
        char what[DIRLOCK_NAME_MAX + 16];
        snprintf(what, sizeof what, "lock '%s'", name);
        return dl_redis_about(
            err, dl_redis_run_script(u, id, 2, keys, nargs, args, &io, what, true, NULL, reply, err), name);
}

/* W's holder of lock `name`: its token and record, ms left; readers. */
struct view {
        char token[64];
        char record[DL_RECORD_MAX];
        long long left_ms;
        bool upgraded;
        long long readers, waiters, ranges;
};

static int look(const dl_redis_url *u, const char *name, struct view *v, dirlock_error *err)
{
        memset(v, 0, sizeof *v);
        redisReply *rep;
        int rc = dl_redis_admin_script(u, name, DL_RS_INSPECT, 0, NULL, &rep, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (!dl_redis_reply_is(rep, REDIS_REPLY_ARRAY) || rep->elements != 7) {
                freeReplyObject(rep);
                return dl_redis_bad_reply(err, "an inspect");
        }
        snprintf(v->token, sizeof v->token, "%s", dl_redis_reply_str(rep->element[0]));
        snprintf(v->record, sizeof v->record, "%s", dl_redis_reply_str(rep->element[1]));
        v->left_ms = dl_redis_reply_int(rep->element[2]);
        v->upgraded = dl_redis_reply_int(rep->element[3]) == 1;
        v->readers = dl_redis_reply_int(rep->element[4]);
        v->waiters = dl_redis_reply_int(rep->element[5]);
        v->ranges = dl_redis_reply_int(rep->element[6]);
        freeReplyObject(rep);
        return DIRLOCK_OK;
}

static int redis_inspect(const char *spec, const char *name, double stale_age, dirlock_owner *owner,
                         dirlock_error *err)
{
        (void)stale_age; /* an entry older than its holder's stale age is gone already */
        dl_redis_url u;
        int rc = dl_redis_parse_space(spec, &u, err);
        struct view v;
        if (rc == DIRLOCK_OK)
                rc = look(&u, name, &v, err);
        if (rc != DIRLOCK_OK)
                return rc;
        owner->readers = (unsigned)v.readers;
        owner->ranges = (unsigned)v.ranges;
        if (v.token[0] == '\0') {
                if (v.readers == 0 && v.ranges == 0)
                        return dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
                owner->mode = DIRLOCK_SHARED;
                return DIRLOCK_OK;
        }
        dl_record rec;
        snprintf(owner->token, sizeof owner->token, "%.32s", v.token);
        if (v.record[0] == '\0' || dl_record_parse(v.record, strlen(v.record), &rec) != 0) {
                owner->mode = DIRLOCK_EXCLUSIVE;
                owner->owner_alive = -1;
                snprintf(owner->host, sizeof owner->host, "%s", "(no owner record)");
                return DIRLOCK_OK;
        }
        owner->pid = rec.pid;
        owner->start_time = rec.start_time;
        snprintf(owner->host, sizeof owner->host, "%s", rec.host);
        owner->acquired = (double)rec.acquired_ns / 1e9;
        double age = ((double)rec.stale_ms - (double)v.left_ms) / 1e3;
        owner->age = age > 0 ? age : 0;
        owner->same_host = dl_record_same_host(&rec);
        owner->owner_alive = dl_record_owner_alive(&rec);
        owner->stale = owner->owner_alive == 0;
        owner->mode = rec.mode;
        owner->partner = rec.partner;
        return DIRLOCK_OK;
}

static int redis_break(const char *spec, const char *name, double stale_age, int force, dirlock_error *err)
{
        (void)stale_age;
        dl_redis_url u;
        int rc = dl_redis_parse_space(spec, &u, err);
        struct view v;
        if (rc == DIRLOCK_OK && !dirlock_name_valid(name))
                rc = dl_fail(err, DIRLOCK_ENAME, 0, "invalid lock name '%.80s'", name ? name : "(null)");
        if (rc == DIRLOCK_OK)
                rc = look(&u, name, &v, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (v.token[0] == '\0')
                return dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
        dl_record rec;
        bool readable = v.record[0] != '\0' && dl_record_parse(v.record, strlen(v.record), &rec) == 0;
        if (!force && !(readable && dl_record_owner_alive(&rec) == 0))
                return dl_fail(err, DIRLOCK_ELIVE, 0,
                               "lock '%s' is held by %s pid %ld on %s (its entry expires in %.1f s unless "
                               "refreshed); not broken",
                               name, readable && dl_record_owner_alive(&rec) == 1 ? "live" : "possibly live",
                               readable ? (long)rec.pid : 0L, readable ? rec.host : "an unknown host",
                               (double)v.left_ms / 1e3);
        const char *args[1] = {v.token};
        redisReply *rep;
        rc = dl_redis_admin_script(&u, name, DL_RS_BREAK, 1, args, &rep, err);
        if (rc != DIRLOCK_OK)
                return rc;
        long long removed = dl_redis_reply_int(rep);
        freeReplyObject(rep);
        return removed == 1 ? DIRLOCK_OK : dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
}

/* The names in {P}:names (valid ones only). */
static int names_of(const dl_redis_url *u, char ***names_out, size_t *count, dirlock_error *err)
{
        char space[DL_REDIS_PREFIX_MAX + 3], key[DL_REDIS_PREFIX_MAX + 16];
        make_keys(u, NULL, NULL, 0, space, sizeof space);
        snprintf(key, sizeof key, "%s:names", space);
        dl_time never = dl_deadline(-1);
        dl_time io = dl_redis_io_deadline(&never);
        dl_redis_conn *c;
        int rc = dl_redis_connect(u, &io, false, &c, err);
        const char *argv[2] = {"SMEMBERS", key};
        redisReply *rep = NULL;
        if (rc == DIRLOCK_OK)
                rc = dl_redis_command(c, 2, argv, NULL, &io, &rep, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (dl_redis_reply_is(rep, REDIS_REPLY_ERROR)) {
                rc = dl_redis_reply_error(c, rep, "list of lock names", err);
                freeReplyObject(rep);
                return rc;
        }
        if (!dl_redis_reply_is(rep, REDIS_REPLY_ARRAY)) {
                freeReplyObject(rep);
                return dl_redis_bad_reply(err, "SMEMBERS");
        }
        char **names = calloc(rep->elements ? rep->elements : 1, sizeof *names);
        size_t n = 0;
        bool oom = names == NULL;
        for (size_t i = 0; !oom && i < rep->elements; i++) {
                const char *s = dl_redis_reply_str(rep->element[i]);
                if (!dirlock_name_valid(s))
                        continue; /* not ours */
                if ((names[n] = strdup(s)) == NULL)
                        oom = true;
                else
                        n++;
        }
        freeReplyObject(rep);
        if (oom) {
                while (n > 0)
                        free(names[--n]);
                free(names);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        *names_out = names;
        *count = n;
        return DIRLOCK_OK;
}

static int redis_list(const char *spec, char ***names, size_t *count, dirlock_error *err)
{
        dl_redis_url u;
        int rc = dl_redis_parse_space(spec, &u, err);
        return rc != DIRLOCK_OK ? rc : names_of(&u, names, count, err);
}

/* Every name: purge; same-host owners (holders, waiters) provably dead are
 * broken; names left without state are forgotten. */
static int redis_cleanup(const char *spec, dirlock_error *err)
{
        dl_redis_url u;
        int rc = dl_redis_parse_space(spec, &u, err);
        char **names = NULL;
        size_t n = 0;
        if (rc == DIRLOCK_OK)
                rc = names_of(&u, &names, &n, err);
        for (size_t i = 0; i < n; i++) {
                redisReply *rep = NULL;
                if (rc == DIRLOCK_OK)
                        rc = dl_redis_admin_script(&u, names[i], DL_RS_TIDY, 0, NULL, &rep, err);
                bool broke = false;
                for (size_t j = 0;
                     rc == DIRLOCK_OK && dl_redis_reply_is(rep, REDIS_REPLY_ARRAY) && j + 1 < rep->elements;
                     j += 2) {
                        const char *t = dl_redis_reply_str(rep->element[j]),
                                   *text = dl_redis_reply_str(rep->element[j + 1]);
                        dl_record rec;
                        if (dl_record_parse(text, strlen(text), &rec) != 0 ||
                            dl_record_owner_alive(&rec) != 0)
                                continue;
                        const char *args[1] = {t};
                        redisReply *b;
                        rc = dl_redis_admin_script(&u, names[i], DL_RS_BREAK, 1, args, &b, err);
                        if (rc == DIRLOCK_OK)
                                freeReplyObject(b);
                        broke = true;
                }
                if (rep != NULL)
                        freeReplyObject(rep);
                if (rc == DIRLOCK_OK && broke &&
                    dl_redis_admin_script(&u, names[i], DL_RS_TIDY, 0, NULL, &rep, err) == 0)
                        freeReplyObject(rep);
                free(names[i]);
        }
        free(names);
        return rc;
}

static const char *const redis_forms[] = {DL_REDIS_SPACE_FORMS, NULL};

const dl_backend dl_redis_backend = {
    .name = "Redis",
    .forms = redis_forms,
    .spec_has_scheme = true,
    .open = redis_open,
    .close = redis_close,
    .retoken = redis_retoken,
    .acquire = redis_acquire,
    .acquire_many = redis_acquire_many,
    .release = redis_release,
    .release_kept = redis_release_kept,
    .refresh = redis_refresh,
    .check = redis_check,
    .fence = redis_fence,
    .range = dl_redis_range_open,
    .shrink = dl_redis_range_shrink,
    .upgrade = redis_upgrade,
    .downgrade = redis_downgrade,
    .downgrade_intent = redis_downgrade_intent,
    .inspect = redis_inspect,
    .break_lock = redis_break,
    .cleanup = redis_cleanup,
    .ranges = dl_redis_ranges,
    .list = redis_list,
};
