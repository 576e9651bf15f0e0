/* redis_wait.c - the waits of the Redis backend that whole locks
 * (redis_whole.c) and ranges (redis_range.c) share: the acquire loop,
 * given what differs by a struct dl_redis_acquire, and the upgrade's
 * wait for the readers in its way.  The scripts they run are in
 * redis_scripts.c, the data model at the top of redis_backend.c.
 *
 * ======================================================================
 * ACQUIRE (dl_redis_acquire).  One script per attempt (ACQUIRE, or
 * RANGE_ACQUIRE for a range), over all the names of a multi-lock at once
 * (all or nothing).  Busy: the script
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
 *     Anything else: attempt again ("d", from another waiter's deadlock
 *     check, also checks for deadlock at once: redis_deadlock.c).  A
 *     waiter that redis_deadlock.c follows also wakes when its next
 *     deadlock check falls due.  A wait abandoned while BLPOP is in
 *     flight (cancel, pidfd, a dead owner) closes the connection, so no
 *     reply is left unread on a reused one (a grant popped that way is
 *     found by the next attempt: a token that already holds the lock
 *     simply takes it again, with a new fence).  A range waiter is never
 *     granted anything: it is woken to attempt again (R3, redis_range.c).
 *   - at the deadline, or when canceled, one last attempt that leaves
 *     the queues if it fails (and lets in whoever we held back).
 * timeout 0 is one attempt that never queues.  A try, and a last
 * attempt, judge the entry in their way as a waiter does: an owner
 * provably dead on this host is broken by token and the same attempt is
 * made again, so a crashed holder does not keep `dirlock -n` out for its
 * stale age.  A permit's answer also names its PEERS (redis_permits.c):
 * the holders of this host, any of which may be the one that died; each
 * attempt breaks those provably dead and is made again at once, and the
 * wait watches the pidfds of the live ones as well.  A server that cannot be
 * reached: a timed acquire tries again with backoff until its deadline
 * and then fails with DIRLOCK_ESERVER (not DIRLOCK_ETIMEDOUT: the lock's
 * state is unknown, not busy); an infinite wait keeps trying.  No round
 * trip waits longer than DL_REDIS_IO_MS, nor past the deadline by more
 * than DL_REDIS_GRACE_MS.
 *
 * UPGRADE (dl_redis_upgrade_wait).  One script per attempt (UPGRADE or
 * RANGE_UPGRADE): it holds new readers off and names a reader still in
 * the way; the upgrader waits for that reader exactly as an acquire waits
 * for its blocker (its owner judged, the last reader's release pushing
 * "g"), and its last attempt (a try: timeout 0), when it fails, lets the
 * readers it held back in -- unless the reader in the way is provably
 * dead on this host: that one is broken and the attempt made again.
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
 * scripts stop taking for it: that half is the margin for the error. */
#include "redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What an acquire attempt found in the way (kind w: W's holder, r: a
 * reader, q: a waiter ahead, g: a range holder or waiter, l: none, the
 * attempt came late). */
struct dl_redis_blocker {
        char token[64];
        char record[DL_RECORD_MAX];
        long long left_ms;
        size_t index; /* which name */
        char kind[2];
};

/* The owner of the entry in an acquire's way that a waiter watches. */
struct dl_redis_owner_watch {
        int pid_fd; /* a pidfd on it, or -1 */
        pid_t pid;  /* its pid, 0: none */
};

/* The holders of a counting lock on this host that the last answer named
 * (PEERS in redis_permits.c), each with the pidfd a waiter keeps on its
 * owner meanwhile. */
struct peer_watch {
        char token[DIRLOCK_TOKEN_LEN + 1];
        int pid_fd; /* or -1: not watched, judged again at the next answer */
};
struct peers {
        struct peer_watch w[DL_REDIS_PEERS_MAX];
        size_t n;
};

/* Who the blocker of an acquire is, for messages: "a reader, pid 812 on
 * www1" and the like. */
static void describe_blocker(const struct dl_redis_blocker *b, char *out, size_t size)
{
        dl_record rec;
        const char *role = b->kind[0] == 'r'   ? "a reader, "
                           : b->kind[0] == 'q' ? "a waiter ahead, "
                           : b->kind[0] == 'g' ? "a range, "
                                               : "";
        bool readable = b->record[0] != '\0' && dl_record_parse(b->record, strlen(b->record), &rec) == 0;
        dl_record_describe(readable ? &rec : NULL, role, out, size);
}

/* Parse a busy answer {0, seq, token, record, left, index, kind} (a
 * permit's has its peers after them: judge_peers). */
static int parse_busy(const redisReply *rep, size_t n, long long *seq, struct dl_redis_blocker *b,
                      dirlock_error *err)
{
        if (rep->elements != 7 && rep->elements != 8)
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

/* A busy answer of kind 'l': the server ran the attempt after its
 * deadline.  The first time, the clock offset may be what is wrong
 * (dl_redis_clock_stale): *rc = DIRLOCK_OK, try again.  The second,
 * *rc = DIRLOCK_ESERVER (it did not answer in time; the lock may well be
 * free, so not DIRLOCK_EBUSY or DIRLOCK_ETIMEDOUT), saying so.  False for
 * any other answer. */
static bool late(const struct dl_redis_blocker *b, bool *resynced, double timeout, const char *name, int *rc,
                 dirlock_error *err)
{
        if (strcmp(b->kind, "l") != 0)
                return false;
        /* Run after our deadline: really so (the server was stopped), or
         * by a stale clock offset: read the server's clock again and try
         * once more. */
        if (!*resynced) {
                *resynced = true;
                dl_redis_clock_stale();
                *rc = DIRLOCK_OK;
                return true;
        }
        *rc = dl_fail(err, DIRLOCK_ESERVER, 0,
                      "the Redis server ran the request for lock '%s' only after its deadline (%.3g s; "
                      "it was stopped or overloaded meanwhile): nothing was taken",
                      name, timeout);
        return true;
}

/* BREAK token `t` of lock h->name (a same-host owner found dead). */
static int break_token(const dirlock *h, const char *t, dirlock_error *err)
{
        const char *args[1] = {t};
        redisReply *rep;
        int rc = dl_redis_run_on(h, DL_RS_BREAK, 1, args, true, NULL, &rep, err);
        if (rc == DIRLOCK_OK)
                freeReplyObject(rep);
        return rc;
}

/* A try or a last attempt found b in the way: when its owner is provably
 * dead on this host, break it by token through `breaker` (whose name it
 * blocks), exactly as a waiting acquire does (wait_blocker), and say so:
 * the caller attempts again, as a try or a last attempt still.  *rc is
 * then the break's result (DIRLOCK_ESERVER counts as done: the next
 * attempt says more). */
static bool break_dead(dirlock *breaker, const struct dl_redis_blocker *b, int *rc, dirlock_error *err)
{
        dl_record rec;
        if (b->record[0] == '\0' || dl_record_parse(b->record, strlen(b->record), &rec) != 0 ||
            dl_record_owner_alive(&rec) != 0)
                return false;
        *rc = break_token(breaker, b->token, err);
        if (*rc == DIRLOCK_ESERVER)
                *rc = DIRLOCK_OK;
        return true;
}

/* dl_gave_up for lock `name`, held by blocker b. */
static int gave_up(dirlock_error *err, double timeout, bool canceled, const char *name,
                   const struct dl_redis_blocker *b)
{
        char what[DIRLOCK_NAME_MAX + 16], who[300];
        snprintf(what, sizeof what, "lock '%s'", name);
        describe_blocker(b, who, sizeof who);
        return dl_gave_up(err, timeout, canceled, what, who);
}

/* Ask for the next message of our wake list (BLPOP, at most *wait_ms, at
 * least 1 ms); *c is the connection it is then in flight on, which
 * wake_receive() reads (or the caller drops).  On failure *c is NULL. */
static int wake_send(const dl_redis_server *srv, const char *wake_key, double *wait_ms,
                     const dl_time *deadline, dl_redis_conn **c, dirlock_error *err)
{
        if (*wait_ms < 1)
                *wait_ms = 1;
        dl_time io = dl_redis_io_deadline(deadline);
        int rc = dl_redis_connect(srv, &io, false, c, err);
        if (rc != DIRLOCK_OK)
                return rc;
        char secs[32];
        snprintf(secs, sizeof secs, "%.3f", *wait_ms / 1e3);
        const char *argv[3] = {"BLPOP", wake_key, secs};
        rc = dl_redis_send(*c, 3, argv, NULL, &io, err);
        if (rc != DIRLOCK_OK) {
                dl_redis_done(*c);
                *c = NULL;
        }
        return rc;
}

/* The answer to wake_send on c, watching cancel_fd, pid_fd and the
 * peers' pidfds (peers, or NULL) meanwhile: *pid_fired when pid_fd
 * fired, and a peer's that fired is closed (-1: judged again); *check on
 * a "d" (ONE VICTIM in redis_deadlock.c: check for deadlock now); done
 * with c after it. */
static int wake_receive(dl_redis_conn *c, double wait_ms, int cancel_fd, int pid_fd, struct peers *peers,
                        bool *granted, unsigned long long *fence, bool *canceled, bool *pid_fired,
                        bool *check, dirlock_error *err)
{
        *granted = *canceled = *pid_fired = *check = false;
        /* The server answers by wait_ms (never past our deadline); a server
         * that does not (stopped) is given DL_REDIS_GRACE_MS more, then
         * counts as unreachable. */
        dl_time until = dl_deadline((wait_ms + DL_REDIS_GRACE_MS) / 1e3);
        int fds[DL_REDIS_AWAIT_FDS_MAX] = {cancel_fd, pid_fd};
        int nfds = 2;
        for (size_t i = 0; peers != NULL && i < peers->n; i++)
                fds[nfds++] = peers->w[i].pid_fd;
        int which;
        redisReply *rep;
        int rc = dl_redis_await_reply(c, &until, fds, nfds, &which, &rep, err);
        if (rc != DIRLOCK_OK) {
                dl_redis_done(c);
                return rc;
        }
        if (which >= 0) {
                dl_redis_drop(c); /* BLPOP still in flight: never reuse this connection */
                dl_redis_done(c);
                *canceled = which == 0;
                *pid_fired = which == 1;
                if (which >= 2) { /* a peer's owner ended: the next answer judges it */
                        close(peers->w[which - 2].pid_fd);
                        peers->w[which - 2].pid_fd = -1;
                }
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
                *check = msg[0] == 'd'; /* another waiter's check named us its knot's victim */
        }
        freeReplyObject(rep);
        dl_redis_done(c);
        return rc;
}

/* One wait for the entry in the way, b, of an acquire or an upgrade: when
 * b's owner is provably dead on this host, break it by token through
 * `breaker` (whose name it blocks), set *broke and return (attempt again
 * at once); otherwise watch b's owner (ow) and wait on `wake_key` for a
 * grant or a wake-up, b's expiry, a third of ttl_ms, the deadline,
 * `wake_by` (a deadlock check due; NULL: none), the cancel descriptor,
 * the owner's death or that of a peer (peers: a permit's other holders
 * on this host, or NULL) -- or, where the system has no pidfds,
 * DL_RECHECK_MS, after which the owners are judged again.  DIRLOCK_OK
 * (with *granted, *fence, *check), DIRLOCK_ESERVER (attempt again), or
 * another error.
 *
 * The BLPOP goes out first and the blocker's owner is judged while it is
 * in flight: a release that comes meanwhile hands the lock over at once
 * instead of waiting for our look at /proc (two reads of its stat file
 * and a pidfd_open, about as long as a round trip).  A dead owner found
 * then costs the connection (its BLPOP is in flight: a grant it pops is
 * found by the next attempt, which takes again what is already ours). */
static int wait_blocker(dirlock *breaker, const struct dl_redis_blocker *b, struct dl_redis_owner_watch *ow,
                        struct peers *peers, const char *wake_key, long long ttl_ms, const dl_time *deadline,
                        const dl_time *wake_by, int cancel_fd, bool *broke, bool *canceled, bool *granted,
                        unsigned long long *fence, bool *check, dirlock_error *err)
{
        *broke = *granted = *check = false;
        DL_ASSERT(ow->pid_fd < 0 || ow->pid > 0); /* a watched owner has its pid */
        dl_record rec;
        bool readable = b->record[0] != '\0' && dl_record_parse(b->record, strlen(b->record), &rec) == 0;
        double wait_ms = dl_remaining(deadline);
        if (wait_ms > (double)b->left_ms + 2)
                wait_ms = (double)b->left_ms + 2;
        if (wait_ms > (double)ttl_ms / 3)
                wait_ms = (double)ttl_ms / 3;
        if (wake_by != NULL && wait_ms > dl_remaining(wake_by))
                wait_ms = dl_remaining(wake_by);
        /* Without pidfds a same-host owner's death wakes nobody: judge the
         * owners again every DL_RECHECK_MS instead. */
        bool unwatchable = (readable && dl_record_same_host(&rec)) || (peers != NULL && peers->n > 0);
        if (unwatchable && wait_ms > DL_RECHECK_MS && !dl_pidfd_supported())
                wait_ms = DL_RECHECK_MS;
        const struct dl_redis *r = dl_redis_of(breaker);
        dl_redis_conn *c;
        int rc = wake_send(&r->server, wake_key, &wait_ms, deadline, &c, err);
        if (rc != DIRLOCK_OK)
                return rc;
        /* A pidfd already on this very process would have fired had it
         * died: only a new owner, or one not watched, is judged. */
        bool watched = readable && rec.pid == ow->pid && ow->pid_fd >= 0;
        if (readable && !watched && dl_record_owner_alive(&rec) == 0) {
                dl_redis_drop(c);
                dl_redis_done(c);
                rc = break_token(breaker, b->token, err);
                *broke = rc == DIRLOCK_OK || rc == DIRLOCK_ESERVER; /* the next attempt says more */
                return *broke ? DIRLOCK_OK : rc;
        }
        if (readable && rec.pid != ow->pid) {
                if (ow->pid_fd >= 0)
                        close(ow->pid_fd);
                ow->pid_fd = dl_owner_pidfd(&rec, NULL);
                ow->pid = rec.pid;
        }
        bool pid_fired;
        rc = wake_receive(c, wait_ms, cancel_fd, ow->pid_fd, peers, granted, fence, canceled, &pid_fired,
                          check, err);
        if (pid_fired) { /* judge again; watch its partner if it has one */
                close(ow->pid_fd);
                ow->pid_fd = -1;
                ow->pid = 0;
        }
        return rc;
}

/* ---- the acquire loop ---------------------------------------------------- */

/* One acquire's state across its attempts. */
struct acquire {
        dirlock **hs; /* the names' handles; hs[0]'s token, options, wake list */
        size_t n;
        const struct dl_redis_acquire *a;
        const dl_time *deadline;
        dirlock *h; /* hs[0] */
        struct dl_redis *r;
        const char **keys; /* the names' bases, then the space's */
        char record[DL_RECORD_MAX], mode[8], policy[8], stale[24], qttl[24], seq[24];
        char wake_key[DL_REDIS_PREFIX_MAX + 3 + 48];
        long long ttl;      /* the queue ttl, ms */
        bool may_queue;     /* not a try (timeout 0) */
        bool canceled;      /* the cancel descriptor fired: the next attempt is the last */
        bool resynced;      /* an attempt came late once, and the clock was read again */
        dl_backoff retry;   /* while the server cannot be reached */
        dl_silence silence; /* ... which the caller is told of (server_notice.c) */
        struct dl_redis_owner_watch ow;
        struct peers peers;        /* a permit's holders on this host (PEERS) */
        struct dl_redis_blocker b; /* what the last attempt found in the way */
        /* Deadlock detection (redis_deadlock.c): whether this wait is one
         * it follows, whether a check is due (`checking`: at `recheck`;
         * `check_now`: at once, a "d" came), and the knot found, which the
         * last attempt reports. */
        bool follow, deadlocked, checking, check_now;
        dl_time recheck;
        dirlock_error cycle;
};

/* Everything the attempts share, made once; q->keys NULL: out of memory. */
static int acquire_begin(struct acquire *q, dirlock **hs, size_t n, const struct dl_redis_acquire *a,
                         const dl_time *deadline, dirlock_error *err)
{
        /* The caller's side of dl_redis_acquire (redis.h): one space, one
         * token, distinct names in strcmp order (multi.c sorts them); a
         * range alone; only a single name may be granted by a releaser (W
         * in redis_scripts.c). */
        DL_ASSERT(n >= 1 && (n == 1 || !a->grants));
        DL_ASSERT(hs[0]->ranged == (a->script == DL_RS_RANGE_ACQUIRE) && (n == 1 || !hs[0]->ranged));
        for (size_t i = 1; i < n; i++) {
                DL_ASSERT(strcmp(hs[i]->token, hs[0]->token) == 0);
                DL_ASSERT(strcmp(hs[i - 1]->name, hs[i]->name) < 0);
                DL_ASSERT(strcmp(dl_redis_of(hs[i])->server.key, dl_redis_of(hs[0])->server.key) == 0);
        }
        memset(q, 0, sizeof *q);
        q->hs = hs;
        q->n = n;
        q->a = a;
        q->deadline = deadline;
        q->h = hs[0];
        q->r = dl_redis_of(q->h);
        q->ow = (struct dl_redis_owner_watch){-1, 0};
        q->keys = calloc(n + 1, sizeof *q->keys);
        if (q->keys == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        for (size_t i = 0; i < n; i++)
                q->keys[i] = dl_redis_of(hs[i])->base;
        q->keys[n] = q->r->space_key;
        const dirlock_options *o = &q->h->opts;
        snprintf(q->mode, sizeof q->mode, "%d", o->mode);
        snprintf(q->policy, sizeof q->policy, "%d", o->policy);
        snprintf(q->stale, sizeof q->stale, "%lld", dl_redis_stale_ms(q->h));
        q->ttl = dl_redis_queue_ttl_ms(q->h);
        snprintf(q->qttl, sizeof q->qttl, "%lld", q->ttl);
        snprintf(q->wake_key, sizeof q->wake_key, "{%s}:wake:%s", q->r->server.url.prefix, q->h->token);
        q->may_queue = o->timeout != 0;
        dl_backoff_init(&q->retry, DL_REDIS_RETRY_FIRST_MS, DL_REDIS_RETRY_MAX_MS, q->h->token);
        dl_silence_begin(&q->silence);
        q->r->seq = 0;
        /* A thread's wait, for one name (not a pending acquire's, nor one
         * with DIRLOCK_NO_DEADLOCK: their records name no thread). */
        q->follow =
            a->deadlock != 0 && n == 1 && !(o->flags & DIRLOCK_NO_DEADLOCK) && dl_task_current() == NULL;
        return dl_redis_format_record(q->h, o->mode, q->record, sizeof q->record, err);
}

/* The pidfd kept on peer `token`, taken out of q->peers (-1: none). */
static int take_peer_fd(struct acquire *q, const char *token)
{
        for (size_t i = 0; i < q->peers.n; i++)
                if (q->peers.w[i].pid_fd >= 0 && strcmp(q->peers.w[i].token, token) == 0) {
                        int fd = q->peers.w[i].pid_fd;
                        q->peers.w[i].pid_fd = -1;
                        return fd;
                }
        return -1;
}

static void close_peers(struct peers *p)
{
        for (size_t i = 0; i < p->n; i++)
                if (p->w[i].pid_fd >= 0)
                        close(p->w[i].pid_fd);
        p->n = 0;
}

/* PEERS (redis_permits.c): the holders on this host that a permit's
 * answer named (`list`: {token, record, ...}).  Break every one whose
 * owner is provably dead, by token, and say so (the caller attempts
 * again at once; *rc is the breaks' result, DIRLOCK_ESERVER counting as
 * done: the next attempt says more).  Keep a pidfd on every live one for
 * the wait -- one watched already is not judged again: its pidfd would
 * have fired had it died -- and close those on holders no longer named. */
static bool judge_peers(struct acquire *q, const redisReply *list, int *rc, dirlock_error *err)
{
        if (!dl_redis_reply_is(list, REDIS_REPLY_ARRAY)) {
                *rc = dl_redis_bad_reply(err, q->a->reply);
                return false;
        }
        struct peers next = {.n = 0};
        bool broke = false;
        for (size_t i = 0; i + 1 < list->elements && next.n < DL_REDIS_PEERS_MAX; i += 2) {
                const char *token = dl_redis_reply_str(list->element[i]);
                const char *text = dl_redis_reply_str(list->element[i + 1]);
                int fd = take_peer_fd(q, token);
                dl_record rec;
                if (fd < 0 && (text[0] == '\0' || dl_record_parse(text, strlen(text), &rec) != 0))
                        continue;
                if (fd < 0 && dl_record_owner_alive(&rec) == 0) {
                        int r = break_token(q->h, token, err);
                        broke = true;
                        if (r != DIRLOCK_OK && r != DIRLOCK_ESERVER) {
                                *rc = r;
                                break;
                        }
                        continue;
                }
                if (fd < 0)
                        fd = dl_owner_pidfd(&rec, NULL);
                struct peer_watch *w = &next.w[next.n++];
                snprintf(w->token, sizeof w->token, "%s", token);
                w->pid_fd = fd;
        }
        close_peers(&q->peers);
        q->peers = next;
        return broke;
}

/* One attempt (the last one never queues): the script's answer in *rep. */
static int attempt(struct acquire *q, bool last, redisReply **rep, dirlock_error *err)
{
        *rep = NULL;
        snprintf(q->seq, sizeof q->seq, "%lld", q->r->seq);
        char not_after[24];
        const struct dl_redis_attempt t = {.token = q->h->token,
                                           .mode = q->mode,
                                           .policy = q->policy,
                                           .stale = q->stale,
                                           .record = q->record,
                                           .may_queue = q->may_queue ? "1" : "0",
                                           .seq = q->seq,
                                           .last = last ? "1" : "0",
                                           .not_after = not_after,
                                           .qttl = q->qttl};
        const char *args[DL_REDIS_ATTEMPT_ARGS];
        int nargs = q->a->args(&t, q->a->arg, args);
        dl_time io = dl_redis_io_deadline(q->deadline);
        int rc = dl_redis_not_after(&q->r->server, q->deadline, &io, not_after, err);
        if (rc == DIRLOCK_OK)
                rc = dl_redis_run_script(&q->r->server, q->a->script, (int)q->n + 1, q->keys, nargs, args,
                                         &io, q->a->what, true, NULL, rep, err);
        return rc;
}

/* The answer to an attempt: {1, fence...}, every name taken (the fences
 * kept, *taken), or busy (what is in the way in q->b, our arrival number
 * in q->r->seq) -- or, for a permit, a provably dead holder on this host
 * named and broken (*again: attempt again at once). */
static int read_answer(struct acquire *q, redisReply *rep, bool *taken, bool *again, dirlock_error *err)
{
        *taken = *again = false;
        int rc = DIRLOCK_OK;
        if (!dl_redis_reply_is(rep, REDIS_REPLY_ARRAY) || rep->elements < 1) {
                rc = dl_redis_bad_reply(err, q->a->reply);
        } else if (dl_redis_reply_int(rep->element[0]) == -3 && q->a->refused != NULL) {
                /* Q: refused for the holders' N -- unless dead ones of
                 * this host were among them (PEERS). */
                *again = rep->elements == 4 && judge_peers(q, rep->element[3], &rc, err);
                if (!*again)
                        rc = q->a->refused(q->h, rep, err);
        } else if (dl_redis_reply_int(rep->element[0]) == 1) {
                if (rep->elements != q->n + 1) {
                        rc = dl_redis_bad_reply(err, q->a->reply);
                } else {
                        for (size_t i = 0; i < q->n; i++)
                                dl_redis_of(q->hs[i])->fence =
                                    dl_fence_of_text(dl_redis_reply_str(rep->element[i + 1]));
                        *taken = true;
                }
        } else {
                rc = parse_busy(rep, q->n, &q->r->seq, &q->b, err);
                if (rc == DIRLOCK_OK && rep->elements == 8)
                        *again = judge_peers(q, rep->element[7], &rc, err);
        }
        freeReplyObject(rep);
        return rc;
}

/* Deadlock detection, when due: a queued waiter checks
 * DL_REDIS_DEADLOCK_FIRST_MS after its first busy answer (its wait wakes
 * for it), then every DL_REDIS_DEADLOCK_RECHECK_MS, and at once when
 * another's check named it a knot's victim (PROMPTNESS and ONE VICTIM in
 * redis_deadlock.c); a knot found sets q->deadlocked, and the next
 * attempt is the last. */
static void check_deadlock(struct acquire *q)
{
        if (!q->follow || q->r->seq <= 0)
                return;
        if (!q->checking) {
                q->checking = true;
                q->recheck = dl_deadline(DL_REDIS_DEADLOCK_FIRST_MS / 1e3);
                return;
        }
        if (!q->check_now && !dl_deadline_passed(&q->recheck))
                return;
        q->check_now = false;
        q->recheck = dl_deadline(DL_REDIS_DEADLOCK_RECHECK_MS / 1e3);
        q->deadlocked = dl_redis_deadlock_check(q->h, q->a->deadlock, q->r->seq, q->deadline, &q->cycle) ==
                        DIRLOCK_EDEADLK;
}

/* Wait for the entry in the way, q->b: DIRLOCK_OK to attempt again --
 * its owner was dead and is broken, a wake-up, its expiry, a third of
 * the queue ttl, the cancel descriptor, a server that could not be
 * reached -- with *taken when a releaser took the lock for us; or an
 * error. */
static int await_turn(struct acquire *q, bool *taken, dirlock_error *err)
{
        *taken = false;
        bool broke, granted;
        unsigned long long fence = 0;
        bool check;
        int rc = wait_blocker(q->hs[q->b.index], &q->b, &q->ow, &q->peers, q->wake_key, q->ttl, q->deadline,
                              q->checking ? &q->recheck : NULL, q->h->opts.cancel_fd, &broke, &q->canceled,
                              &granted, &fence, &check, err);
        q->check_now = q->check_now || check;
        if (broke || rc == DIRLOCK_ESERVER)
                return DIRLOCK_OK; /* at once; or the next attempt tries to reconnect */
        /* W, R3: a releaser takes the lock (and pushes its fence) only for
         * a single-name whole waiter; an upgrader's "g" has no fence. */
        DL_ASSERT(!granted || fence == 0 || q->a->grants);
        if (rc == DIRLOCK_OK && granted && q->a->grants && fence > 0) {
                q->r->fence = fence; /* the releaser took it for us */
                *taken = true;
        }
        return rc;
}

/* What is left when the loop ends with rc: the owner watch, the keys, the
 * arrival number (the last attempt left the queues); the message. */
static int acquire_end(struct acquire *q, int rc, dirlock_error *err)
{
        if (q->ow.pid_fd >= 0)
                close(q->ow.pid_fd);
        close_peers(&q->peers);
        free(q->keys);
        q->r->seq = 0;
        if (rc == DIRLOCK_ESERVER) {
                char what[DIRLOCK_NAME_MAX + 32];
                snprintf(what, sizeof what, "%s '%s'", q->a->subject, q->h->name);
                rc = dl_gave_up_unreachable(err, q->h->opts.timeout, q->canceled, what, "the Redis server");
        }
        if (rc != DIRLOCK_OK && rc != DIRLOCK_EBUSY && rc != DIRLOCK_ETIMEDOUT && rc != DIRLOCK_ECANCELED)
                dl_about(err, rc, q->h->name);
        return rc;
}

/* Take every lock of hs[0..n-1] (one space, one token: hs[0]'s, distinct
 * names; one handle for a range) by the deadline, all or none, with the
 * attempts `a` describes: ACQUIRE at the top of this file. */
int dl_redis_acquire(dirlock **hs, size_t n, const struct dl_redis_acquire *a, const dl_time *deadline,
                     dirlock_error *err)
{
        struct acquire q;
        int rc = acquire_begin(&q, hs, n, a, deadline, err);
        if (q.keys == NULL)
                return rc;
        const dirlock_options *o = &q.h->opts;
        bool taken = false;
        while (rc == DIRLOCK_OK && !taken) {
                bool last = q.canceled || q.deadlocked || dl_deadline_passed(deadline);
                redisReply *rep;
                rc = attempt(&q, last, &rep, err);
                if (rc == DIRLOCK_ESERVER && q.may_queue && !last) {
                        /* Unreachable: try again, with backoff, until the deadline. */
                        dl_silence_failed(&q.silence, q.h, err);
                        q.canceled = dl_nap_ms(dl_backoff_next(&q.retry), deadline, o->cancel_fd) == 1;
                        rc = DIRLOCK_OK;
                        continue;
                }
                if (rc != DIRLOCK_OK)
                        break;
                dl_backoff_reset(&q.retry);
                dl_silence_answered(&q.silence, q.h);
                bool again;
                rc = read_answer(&q, rep, &taken, &again, err);
                if (rc != DIRLOCK_OK || taken)
                        break;
                if (again)
                        continue; /* a dead holder of this host was broken: the same attempt */
                if (late(&q.b, &q.resynced, o->timeout, q.h->name, &rc, err))
                        continue; /* rc: attempt again, or give up */
                if (!q.may_queue || last) {
                        if (break_dead(hs[q.b.index], &q.b, &rc, err))
                                continue; /* the same try, or last attempt, again */
                        if (q.deadlocked) {
                                if (err != NULL)
                                        *err = q.cycle;
                                rc = DIRLOCK_EDEADLK;
                        } else {
                                rc = gave_up(err, o->timeout, q.canceled, hs[q.b.index]->name, &q.b);
                        }
                        break;
                }
                DL_ASSERT(q.may_queue && !last); /* only a queued waiter waits */
                check_deadlock(&q);
                if (q.deadlocked)
                        continue; /* the last attempt: it leaves the queue */
                rc = await_turn(&q, &taken, err);
        }
        return acquire_end(&q, rc, err);
}

/* ---- the upgrade's wait ------------------------------------------------------ */

/* One upgrade's state across its attempts. */
struct upgrade {
        dirlock *h;
        const struct dl_redis_upgrade *u;
        double timeout;
        int cancel_fd;
        dl_time deadline;
        char stale[24], wake_key[DL_REDIS_PREFIX_MAX + 3 + 48];
        bool canceled;
        struct dl_redis_owner_watch ow;
};

/* One attempt of the upgrade's script (a last one that fails lets in the
 * readers it held back): *state 1 when done, < 0 when the lock is lost,
 * 0 when a reader is in the way (*b). */
static int upgrade_attempt(struct upgrade *q, bool last, long long *state, struct dl_redis_blocker *b,
                           dirlock_error *err)
{
        struct dl_redis *r = dl_redis_of(q->h);
        const char *keys[2] = {r->base, r->space_key};
        const char *args[4] = {q->h->token, q->stale, last ? "1" : "0",
                               q->h->opts.policy == DIRLOCK_POLICY_SIMPLE ? "1" : "0"};
        dl_time io = dl_redis_io_deadline(&q->deadline);
        redisReply *rep;
        int rc = dl_redis_run_script(&r->server, q->u->script, 2, keys, q->u->policy_arg ? 4 : 3, args, &io,
                                     q->u->running, true, NULL, &rep, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (!dl_redis_reply_is(rep, REDIS_REPLY_ARRAY) || rep->elements < 1) {
                freeReplyObject(rep);
                return dl_redis_bad_reply(err, q->u->reply);
        }
        *state = dl_redis_reply_int(rep->element[0]);
        *b = (struct dl_redis_blocker){.kind = {q->u->blocker_kind, '\0'}};
        if (*state == 0 && rep->elements == 4) {
                snprintf(b->token, sizeof b->token, "%s", dl_redis_reply_str(rep->element[1]));
                snprintf(b->record, sizeof b->record, "%s", dl_redis_reply_str(rep->element[2]));
                b->left_ms = dl_redis_reply_int(rep->element[3]);
        }
        freeReplyObject(rep);
        return DIRLOCK_OK;
}

/* Wait for the reader in the way as an acquire waits for its blocker
 * (wait_blocker): DIRLOCK_OK to attempt again -- granted ("g") or not,
 * the next attempt confirms -- or an error.  A server that cannot be
 * reached ends the upgrade only at its deadline. */
static int await_readers(struct upgrade *q, const struct dl_redis_blocker *b, dirlock_error *err)
{
        bool broke, granted;
        unsigned long long ignored;
        bool check; /* no upgrade is followed by deadlock detection: a "d" never comes */
        int rc = wait_blocker(q->h, b, &q->ow, NULL, q->wake_key, dl_redis_stale_ms(q->h), &q->deadline, NULL,
                              q->cancel_fd, &broke, &q->canceled, &granted, &ignored, &check, err);
        if (rc == DIRLOCK_ESERVER && !dl_deadline_passed(&q->deadline))
                return DIRLOCK_OK;
        return rc;
}

int dl_redis_upgrade_wait(dirlock *h, const dirlock_options *opts, const struct dl_redis_upgrade *u,
                          dirlock_error *err)
{
        DL_ASSERT(h->mode == DIRLOCK_INTENT); /* the caller checked the modes */
        dirlock_options o = opts != NULL ? *opts : h->opts;
        struct upgrade q = {.h = h,
                            .u = u,
                            .timeout = o.timeout,
                            .cancel_fd = (o.flags & DIRLOCK_CANCEL_FD) ? o.cancel_fd : -1,
                            .deadline = dl_deadline(o.timeout),
                            .ow = {-1, 0}};
        snprintf(q.stale, sizeof q.stale, "%lld", dl_redis_stale_ms(h));
        snprintf(q.wake_key, sizeof q.wake_key, "{%s}:wake:%s", dl_redis_of(h)->server.url.prefix, h->token);
        int rc;
        for (;;) {
                bool last = q.canceled || q.timeout == 0 || dl_deadline_passed(&q.deadline);
                long long state = 0;
                struct dl_redis_blocker b;
                rc = upgrade_attempt(&q, last, &state, &b, err);
                if (rc != DIRLOCK_OK)
                        break;
                if (state == 1) {
                        h->mode = DIRLOCK_EXCLUSIVE;
                        break;
                }
                if (state < 0) {
                        rc = dl_redis_lost(err, h, state);
                        break;
                }
                if (last) {
                        if (break_dead(h, &b, &rc, err)) {
                                if (rc != DIRLOCK_OK)
                                        break;
                                continue; /* the same last attempt again */
                        }
                        rc = gave_up(err, q.timeout, q.canceled, h->name, &b);
                        break;
                }
                rc = await_readers(&q, &b, err);
                if (rc != DIRLOCK_OK)
                        break;
        }
        if (q.ow.pid_fd >= 0)
                close(q.ow.pid_fd);
        return rc == DIRLOCK_OK || rc == DIRLOCK_EBUSY || rc == DIRLOCK_ETIMEDOUT || rc == DIRLOCK_ECANCELED
                   ? rc
                   : dl_about(err, rc, h->name);
}
