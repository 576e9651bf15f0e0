/* redis_backend.c - the Redis backend (backend.h): a lock space on a Redis
 * server (redis://..., redis+unix://..., redis_url.h), shared by the
 * processes of every host that can reach it.  Here: the data model, the
 * handle's entry points, which hand whole locks to redis_whole.c and
 * ranges to redis_range.c, the views from outside the holders, and the
 * table.  The waits both kinds share are in redis_wait.c, what every
 * lock's code uses in redis_handle.c, the scripts that change the
 * server's state (each with the invariant it keeps) in scripts/,
 * the connections in redis_conn.c.  docs/library.md says how it differs
 * from a directory space.
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
 *   K:p   zset: the tokens holding a permit of counting lock NAME, scored
 *         by when each expires (server ms); K:pn string: the N they asked
 *   K:po  hash: permit holder or waiter token -> owner record
 *   K:pq  zset: permit waiters by arrival number; K:pqe by expiry; K:pqm
 *         hash: waiter -> "N stale_ms queue_ttl_ms" (redis_permits.c)
 *   {P}:seq         the arrival counter (INCR), one number per waiter,
 *                   kept across its attempts and the same in every queue
 *   {P}:names       set of the names that have or had state (list, cleanup)
 *   {P}:wake:<T>    list waiter T blocks on (BLPOP): "g<fence>" when the
 *                   lock was granted to it, "g" when its upgrade is done,
 *                   "w" when it should try again; PEXPIRE = its queue ttl
 *
 * The server's clock (TIME in the scripts) decides every expiry, so the
 * clocks of the hosts do not matter. */
#include "backend.h"
#include "redis.h"
#include "test_hooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a handle -------------------------------------------------------------- */

static int redis_open(dirlock *h, const char *spec, dirlock_error *err)
{
        struct dl_redis *r = calloc(1, sizeof *r);
        if (r == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        int rc = dl_redis_parse_space(spec, &r->server, err);
        if (rc != DIRLOCK_OK) {
                free(r);
                return rc;
        }
        dl_redis_make_keys(&r->server, h->name, r->base, sizeof r->base, r->space_key, sizeof r->space_key);
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

/* ---- acquiring: whole locks or ranges -------------------------------------- */

static int redis_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        if (h->permits > 0)
                return dl_redis_permit_acquire(h, deadline, err);
        if (h->ranged)
                return dl_redis_range_acquire(h, deadline, err);
        return dl_redis_whole_acquire(&h, 1, deadline, err);
}

static int redis_acquire_many(dirlock **hs, size_t n, const dl_time *deadline, dirlock_error *err)
{
        /* One token for the set: one queue identity, one wake list. */
        for (size_t i = 1; i < n; i++)
                memcpy(hs[i]->token, hs[0]->token, sizeof hs[0]->token);
        return dl_redis_whole_acquire(hs, n, deadline, err);
}

/* ---- holding: whole locks or ranges ---------------------------------------- */

static int redis_release(dirlock *h, dirlock_error *err)
{
        if (h->permits > 0)
                return dl_redis_permit_release(h, err);
        return h->ranged ? dl_redis_range_release(h, err) : dl_redis_whole_release(h, err);
}

static int redis_release_kept(dirlock *h, dirlock_error *err)
{
        return h->ranged || h->permits > 0 ? DIRLOCK_OK : dl_redis_whole_release_kept(h, err);
}

static int redis_refresh(dirlock *h, dirlock_error *err)
{
        if (h->permits > 0)
                return dl_redis_permit_refresh(h, err);
        return h->ranged ? dl_redis_range_refresh(h, err) : dl_redis_whole_refresh(h, err);
}

static int redis_check(const dirlock *h, dirlock_error *err)
{
        if (h->permits > 0)
                return dl_redis_permit_check(h, err);
        return h->ranged ? dl_redis_range_check(h, err) : dl_redis_whole_check(h, err);
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
        int rc = dl_redis_connect(&r->server, &io, false, &c, err);
        char key[sizeof r->base + 4];
        snprintf(key, sizeof key, "%s:f", r->base);
        const char *get[2] = {"GET", key};
        redisReply *rep = NULL;
        if (rc != DIRLOCK_OK)
                return rc;
        rc = dl_redis_command(c, 2, get, NULL, &io, &rep, err);
        if (rc != DIRLOCK_OK) {
                dl_redis_done(c);
                return rc;
        }
        unsigned long long next = strtoull(dl_redis_reply_str(rep), NULL, 10) + 1;
        freeReplyObject(rep);
        char v[24];
        snprintf(v, sizeof v, "%llu", next);
        const char *set[3] = {"SET", key, v};
        rc = dl_redis_command(c, 3, set, NULL, &io, &rep, err);
        if (rc == DIRLOCK_OK)
                freeReplyObject(rep);
        dl_redis_done(c);
        *fence = next;
        return rc;
}
#endif

static int redis_fence(dirlock *h, unsigned long long *fence, dirlock_error *err)
{
#ifdef DIRLOCK_TEST_HOOKS
        if (dl_test_hook(REDIS_LAZY_FENCE) != NULL)
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

/* Intent -> exclusive: wait for the readers already in. */
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
        return h->ranged ? dl_redis_range_upgrade(h, opts, err) : dl_redis_whole_upgrade(h, opts, err);
}

static int redis_downgrade(dirlock *h, dirlock_error *err)
{
        if (h->mode == DIRLOCK_SHARED)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "lock '%s' is already a read lock", h->name);
        return h->ranged ? dl_redis_range_downgrade(h, err) : dl_redis_whole_downgrade(h, err);
}

/* The caller (handle.c) checked that this is an upgraded intent lock. */
static int redis_downgrade_intent(dirlock *h, dirlock_error *err)
{
        return h->ranged ? dl_redis_range_downgrade_intent(h, err) : dl_redis_whole_downgrade_intent(h, err);
}

/* ---- the space, from outside its holders ---------------------------------- */

/* W's holder of lock `name`: its token and record, ms left; readers. */
struct view {
        char token[64];
        char record[DL_RECORD_MAX];
        long long left_ms;
        bool upgraded;
        long long readers, waiters, ranges;
};

static int look(const dl_redis_server *srv, const char *name, struct view *v, dirlock_error *err)
{
        memset(v, 0, sizeof *v);
        redisReply *rep;
        int rc = dl_redis_admin_script(srv, name, DL_RS_INSPECT, 0, NULL, &rep, err);
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

/* ---- who holds, who waits (HOLDERS, WAITERS) -------------------------------- */

/* Fill o from owner record `text` of an entry with `left_ms` to live. */
static void describe(const char *token, const char *text, long long left_ms, dirlock_owner *o)
{
        memset(o, 0, sizeof *o);
        snprintf(o->token, sizeof o->token, "%.32s", token);
        dl_record rec;
        if (text[0] == '\0' || dl_record_parse(text, strlen(text), &rec) != 0) {
                o->owner_alive = -1;
                snprintf(o->host, sizeof o->host, "%s", "(no owner record)");
                return;
        }
        dl_record_to_owner(&rec, o);
        double age = ((double)rec.stale_ms - (double)left_ms) / 1e3;
        o->age = age > 0 ? age : 0;
        o->stale = o->owner_alive == 0;
        o->mode = rec.mode;
}

/* HOLDERS of `name`: *out (malloc'd, *count of them) and the last fence. */
static int holders_of(const dl_redis_server *srv, const char *name, dirlock_owner **out, size_t *count,
                      unsigned long long *fence, dirlock_error *err)
{
        *out = NULL;
        *count = 0;
        redisReply *rep;
        int rc = dl_redis_admin_script(srv, name, DL_RS_HOLDERS, 0, NULL, &rep, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (!dl_redis_reply_is(rep, REDIS_REPLY_ARRAY) || rep->elements < 1 || (rep->elements - 1) % 5 != 0) {
                freeReplyObject(rep);
                return dl_redis_bad_reply(err, "a holders list");
        }
        if (fence != NULL)
                *fence = dl_fence_of_text(dl_redis_reply_str(rep->element[0]));
        size_t n = (rep->elements - 1) / 5;
        dirlock_owner *v = calloc(n ? n : 1, sizeof *v);
        if (v == NULL) {
                freeReplyObject(rep);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        for (size_t i = 0; i < n; i++) {
                redisReply **e = rep->element + 1 + 5 * i;
                const char *kind = dl_redis_reply_str(e[0]);
                describe(dl_redis_reply_str(e[1]), dl_redis_reply_str(e[2]), dl_redis_reply_int(e[3]), &v[i]);
                snprintf(v[i].name, sizeof v[i].name, "%s", name);
                if (kind[0] == 'r')
                        v[i].mode = DIRLOCK_SHARED;
                if (kind[0] == 'p') {
                        v[i].mode = DIRLOCK_EXCLUSIVE;
                        v[i].permits = (unsigned)dl_redis_reply_int(e[4]);
                }
        }
        freeReplyObject(rep);
        *out = v;
        *count = n;
        return DIRLOCK_OK;
}

static int redis_holders(const char *spec, const char *name, double stale_age, dirlock_owner **out,
                         size_t *count, dirlock_error *err)
{
        (void)stale_age; /* an entry older than its holder's stale age is gone already */
        dl_redis_server srv;
        int rc = dl_redis_parse_space(spec, &srv, err);
        return rc != DIRLOCK_OK ? rc : holders_of(&srv, name, out, count, NULL, err);
}

/* The mode a waiter asks for, from the WAITERS field: a number, or a
 * range's letter. */
static int waiter_mode(const char *m)
{
        switch (m[0]) {
        case 's':
                return DIRLOCK_SHARED;
        case 'i':
                return DIRLOCK_INTENT;
        case 'x':
        case 'u':
                return DIRLOCK_EXCLUSIVE;
        default:
                return atoi(m);
        }
}

/* Append the WAITERS of `name` to *v (*n of them, room for *cap). */
static int waiters_of(const dl_redis_server *srv, const char *name, dirlock_waiter **v, size_t *n,
                      size_t *cap, dirlock_error *err)
{
        redisReply *rep;
        int rc = dl_redis_admin_script(srv, name, DL_RS_WAITERS, 0, NULL, &rep, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (!dl_redis_reply_is(rep, REDIS_REPLY_ARRAY) || rep->elements % 8 != 0) {
                freeReplyObject(rep);
                return dl_redis_bad_reply(err, "a waiters list");
        }
        double now = (double)dl_wall_ns() / 1e9;
        for (size_t i = 0; i + 8 <= rep->elements && rc == DIRLOCK_OK; i += 8) {
                redisReply **e = rep->element + i;
                if (*n == *cap) {
                        size_t grown_cap = *cap ? *cap * 2 : 8;
                        dirlock_waiter *grown = realloc(*v, grown_cap * sizeof *grown);
                        if (grown == NULL) {
                                rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                                break;
                        }
                        *v = grown;
                        *cap = grown_cap;
                }
                const char *text0 = dl_redis_reply_str(e[2]);
                dl_record dead;
                if (text0[0] != '\0' && dl_record_parse(text0, strlen(text0), &dead) == 0 &&
                    dl_record_owner_alive(&dead) == 0)
                        continue; /* died waiting: its entry expires on the server */
                dirlock_waiter *w = &(*v)[(*n)++];
                memset(w, 0, sizeof *w);
                snprintf(w->name, sizeof w->name, "%s", name);
                const char *kind = dl_redis_reply_str(e[0]), *text = dl_redis_reply_str(e[2]);
                w->kind = kind[0] == 'u' || kind[0] == 'G' ? DIRLOCK_WAIT_UPGRADE
                          : kind[0] == 'g'                 ? DIRLOCK_WAIT_RANGE
                          : kind[0] == 'P'                 ? DIRLOCK_WAIT_PERMIT
                                                           : DIRLOCK_WAIT_LOCK;
                w->mode = waiter_mode(dl_redis_reply_str(e[3]));
                if (kind[0] == 'g' || kind[0] == 'G') {
                        w->lo = strtod(dl_redis_reply_str(e[5]), NULL);
                        w->hi = strtod(dl_redis_reply_str(e[6]), NULL);
                }
                w->permits = (unsigned)dl_redis_reply_int(e[7]);
                dl_record rec;
                if (text[0] != '\0' && dl_record_parse(text, strlen(text), &rec) == 0) {
                        w->pid = rec.pid;
                        w->tid = rec.tid;
                        w->start_time = rec.start_time;
                        snprintf(w->host, sizeof w->host, "%s", rec.host);
                        w->since = (double)rec.acquired_ns / 1e9;
                        w->owner_alive = dl_record_owner_alive(&rec);
                } else {
                        w->owner_alive = -1;
                        w->since = now;
                }
                /* The server renews and expires the entry; how long ago
                 * it was renewed is not kept: the time waited stands in. */
                w->age = now > w->since ? now - w->since : 0;
        }
        freeReplyObject(rep);
        return rc;
}

static int names_of(const dl_redis_server *srv, char ***names_out, size_t *count, dirlock_error *err);

static int redis_waiters(const char *spec, const char *name, dirlock_waiter **out, size_t *count,
                         dirlock_error *err)
{
        *out = NULL;
        *count = 0;
        dl_redis_server srv;
        int rc = dl_redis_parse_space(spec, &srv, err);
        if (rc != DIRLOCK_OK)
                return rc;
        char **names = NULL;
        size_t nn = 0;
        if (name == NULL)
                rc = names_of(&srv, &names, &nn, err);
        dirlock_waiter *v = NULL;
        size_t n = 0, cap = 0;
        if (name != NULL)
                rc = waiters_of(&srv, name, &v, &n, &cap, err);
        for (size_t i = 0; i < nn; i++) {
                if (rc == DIRLOCK_OK)
                        rc = waiters_of(&srv, names[i], &v, &n, &cap, err);
                free(names[i]);
        }
        free(names);
        if (rc != DIRLOCK_OK) {
                free(v);
                return rc;
        }
        *out = v; /* dirlock_waiters puts them in order */
        *count = n;
        return DIRLOCK_OK;
}

/* inspect's counts beyond INSPECT's: a counting lock's permits and
 * holders, the waiters, the last fence. */
static int counts(const dl_redis_server *srv, const char *name, dirlock_owner *owner, dirlock_error *err)
{
        dirlock_owner *hs;
        size_t nh;
        int rc = holders_of(srv, name, &hs, &nh, &owner->fence, err);
        if (rc != DIRLOCK_OK)
                return rc;
        for (size_t i = 0; i < nh; i++)
                if (hs[i].permits > 0) {
                        owner->permits = hs[i].permits;
                        owner->permit_holders++;
                }
        free(hs);
        dirlock_waiter *ws = NULL;
        size_t nw = 0, cap = 0;
        rc = waiters_of(srv, name, &ws, &nw, &cap, err);
        free(ws);
        owner->waiters = (unsigned)nw;
        return rc;
}

static int redis_inspect(const char *spec, const char *name, double stale_age, dirlock_owner *owner,
                         dirlock_error *err)
{
        (void)stale_age; /* an entry older than its holder's stale age is gone already */
        dl_redis_server srv;
        int rc = dl_redis_parse_space(spec, &srv, err);
        struct view v;
        if (rc == DIRLOCK_OK)
                rc = look(&srv, name, &v, err);
        if (rc == DIRLOCK_OK)
                rc = counts(&srv, name, owner, err);
        if (rc != DIRLOCK_OK)
                return rc;
        owner->readers = (unsigned)v.readers;
        owner->ranges = (unsigned)v.ranges;
        if (v.token[0] == '\0') {
                if (v.readers == 0 && v.ranges == 0 && owner->permit_holders == 0 && owner->waiters == 0)
                        return dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
                /* As in a directory space: shared only when read or ranged;
                 * a name with only permits or waiters has no whole lock to
                 * show. */
                if (v.readers > 0 || v.ranges > 0)
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
        dl_record_to_owner(&rec, owner);
        double age = ((double)rec.stale_ms - (double)v.left_ms) / 1e3;
        owner->age = age > 0 ? age : 0;
        owner->stale = owner->owner_alive == 0;
        owner->mode = rec.mode;
        return DIRLOCK_OK;
}

static int redis_break(const char *spec, const char *name, double stale_age, int force, dirlock_error *err)
{
        (void)stale_age;
        dl_redis_server srv;
        int rc = dl_redis_parse_space(spec, &srv, err);
        struct view v;
        if (rc == DIRLOCK_OK && !dirlock_name_valid(name))
                rc = dl_fail(err, DIRLOCK_ENAME, 0, "invalid lock name '%.80s'", name ? name : "(null)");
        if (rc == DIRLOCK_OK)
                rc = look(&srv, name, &v, err);
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
        rc = dl_redis_admin_script(&srv, name, DL_RS_BREAK, 1, args, &rep, err);
        if (rc != DIRLOCK_OK)
                return rc;
        long long removed = dl_redis_reply_int(rep);
        freeReplyObject(rep);
        return removed == 1 ? DIRLOCK_OK : dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
}

/* The names in {P}:names (valid ones only). */
static int names_of(const dl_redis_server *srv, char ***names_out, size_t *count, dirlock_error *err)
{
        *names_out = NULL;
        *count = 0;
        char key[DL_REDIS_SPACE_KEY_MAX];
        dl_redis_make_keys(srv, NULL, NULL, 0, key, sizeof key);
        dl_time never = dl_deadline(-1);
        dl_time io = dl_redis_io_deadline(&never);
        dl_redis_conn *c;
        int rc = dl_redis_connect(srv, &io, false, &c, err);
        if (rc != DIRLOCK_OK)
                return rc;
        const char *argv[2] = {"SMEMBERS", key};
        redisReply *rep = NULL;
        rc = dl_redis_command(c, 2, argv, NULL, &io, &rep, err);
        if (rc == DIRLOCK_OK && dl_redis_reply_is(rep, REDIS_REPLY_ERROR)) {
                rc = dl_redis_reply_error(c, rep, "list of lock names", err);
                freeReplyObject(rep);
        }
        dl_redis_done(c);
        if (rc != DIRLOCK_OK)
                return rc;
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
        dl_redis_server srv;
        int rc = dl_redis_parse_space(spec, &srv, err);
        return rc != DIRLOCK_OK ? rc : names_of(&srv, names, count, err);
}

/* Every name: purge; same-host owners (holders, waiters) provably dead are
 * broken; names left without state are forgotten. */
static int redis_cleanup(const char *spec, dirlock_error *err)
{
        dl_redis_server srv;
        int rc = dl_redis_parse_space(spec, &srv, err);
        char **names = NULL;
        size_t n = 0;
        if (rc == DIRLOCK_OK)
                rc = names_of(&srv, &names, &n, err);
        for (size_t i = 0; i < n; i++) {
                redisReply *rep = NULL;
                if (rc == DIRLOCK_OK)
                        rc = dl_redis_admin_script(&srv, names[i], DL_RS_TIDY, 0, NULL, &rep, err);
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
                        rc = dl_redis_admin_script(&srv, names[i], DL_RS_BREAK, 1, args, &b, err);
                        if (rc == DIRLOCK_OK)
                                freeReplyObject(b);
                        broke = true;
                }
                if (rep != NULL)
                        freeReplyObject(rep);
                if (rc == DIRLOCK_OK && broke &&
                    dl_redis_admin_script(&srv, names[i], DL_RS_TIDY, 0, NULL, &rep, err) == 0)
                        freeReplyObject(rep);
                free(names[i]);
        }
        free(names);
        return rc;
}

/* The same-thread check's key (held.c): the server, credentials,
 * database and prefix -- one space. */
static const char *redis_space_key(const dirlock *h)
{
        return dl_redis_of(h)->server.key;
}

static const char *const redis_forms[] = {DL_REDIS_SPACE_FORMS, NULL};

static const char *const redis_prefixes[] = {"redis://", "rediss://", "redis+unix://", NULL};

static const dl_backend dl_redis_backend = {
    .name = "Redis",
    .prefixes = redis_prefixes,
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
    .permit = dl_redis_permit_open,
    .holders = redis_holders,
    .waiters = redis_waiters,
    .space_key = redis_space_key,
    .list = redis_list,
};
DL_BACKEND(dl_redis_backend)
