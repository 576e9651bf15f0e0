/* redis_handle.c - what every Redis lock's code shares (redis.h): the
 * handle's state, its space's server and keys, its stale age and queue
 * ttl, running a script on its name with the time budget of its timeout
 * (or the admin budget), reading the server's replies, and messages. */
#include "redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE_TTL_MAX_MS 6000.0

struct dl_redis *dl_redis_of(const dirlock *h)
{
        return (struct dl_redis *)h->impl;
}

int dl_redis_parse_space(const char *space, dl_redis_server *srv, dirlock_error *err)
{
        char why[200];
        if (dl_redis_url_parse(space, strlen(space), &srv->url, why, sizeof why) == 0) {
                if (dl_redis_url_format(&srv->url, false, srv->key, sizeof srv->key) >= 0)
                        return DIRLOCK_OK;
                snprintf(why, sizeof why, "%s", "the address is too long");
        }
        char shown[300];
        dl_url_shown(space, shown, sizeof shown);
        return dl_fail(err, DIRLOCK_EINVAL, 0, "lock space '%s': %s", shown, why);
}

void dl_redis_make_keys(const dl_redis_server *srv, const char *name, char *base, size_t bsize,
                        char *space_key, size_t ssize)
{
        snprintf(space_key, ssize, "{%s}:names", srv->url.prefix);
        if (base != NULL)
                snprintf(base, bsize, "{%s}:%s", srv->url.prefix, name);
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

/* Run one script on the space of `srv`, by `deadline`.  With `retry`, a
 * failure after the request was sent (reply lost) is tried once more on
 * a new connection; *resent tells whether that happened. */
int dl_redis_run_script(const dl_redis_server *srv, dl_redis_script_id id, int nkeys, const char **keys,
                        int nargs, const char **args, const dl_time *deadline, const char *what, bool retry,
                        bool *resent, redisReply **reply, dirlock_error *err)
{
        bool checked = resent != NULL; /* RELEASE must know whether a lost reply was its own */
        if (resent != NULL)
                *resent = false;
        for (int attempt = 0;; attempt++) {
                dl_redis_conn *c;
                int rc = dl_redis_connect(srv, deadline, checked, &c, err);
                if (rc != DIRLOCK_OK)
                        return rc;
                rc = dl_redis_eval(c, id, nkeys, keys, nargs, args, deadline, what, reply, err);
                bool unsent = dl_redis_unsent(c);
                dl_redis_done(c);
                if (rc != DIRLOCK_ESERVER || !retry || attempt > 0 || dl_deadline_passed(deadline))
                        return rc;
                if (resent != NULL && !unsent)
                        *resent = true; /* it may have run: the retry cannot tell */
        }
}

/* A script on one name of handle h; op deadline from its own timeout. */
int dl_redis_run_on(const dirlock *h, dl_redis_script_id id, int nargs, const char **args, bool retry,
                    bool *resent, redisReply **reply, dirlock_error *err)
{
        const struct dl_redis *r = dl_redis_of(h);
        const char *keys[2] = {r->base, r->space_key};
        dl_time call = dl_deadline(h->opts.timeout);
        dl_time io = dl_redis_io_deadline(&call);
        char what[DIRLOCK_NAME_MAX + 16];
        snprintf(what, sizeof what, "lock '%s'", h->name);
        return dl_redis_run_script(&r->server, id, 2, keys, nargs, args, &io, what, retry, resent, reply,
                                   err);
}

int dl_redis_format_record(const dirlock *h, int mode, char *buf, size_t size, dirlock_error *err)
{
        dl_record rec;
        dl_record_self(&rec, h->token, mode, h->opts.stale_age, h->opts.partner_pid, h->partner_start);
        /* Held, or waited for, by no thread deadlock detection may follow
         * (owner.c): a lock another thread may let go, a pending acquire's. */
        if ((h->opts.flags & DIRLOCK_NO_DEADLOCK) || dl_task_current() != NULL)
                rec.tid = 0;
        if (dl_record_format(&rec, buf, size) < 0)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "owner record of lock '%s' too long", h->name);
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

int dl_redis_while_held(const dirlock *h, dl_redis_script_id id, int nargs, const char **args,
                        dirlock_error *err)
{
        redisReply *rep;
        int rc = dl_redis_run_on(h, id, nargs, args, true, NULL, &rep, err);
        if (rc != DIRLOCK_OK)
                return dl_about(err, rc, h->name);
        long long held = dl_redis_reply_int(rep);
        freeReplyObject(rep);
        return held == 1 ? DIRLOCK_OK : dl_redis_lost(err, h, held);
}

int dl_redis_release_entry(const dirlock *h, dl_redis_script_id id, const char *entry, bool *unanswered,
                           dirlock_error *err)
{
        const char *args[1] = {h->token};
        redisReply *rep;
        bool resent;
        int rc = dl_redis_run_on(h, id, 1, args, true, &resent, &rep, err);
        if (unanswered != NULL)
                *unanswered = rc == DIRLOCK_ESERVER;
        if (rc != DIRLOCK_OK)
                return dl_about(err, rc, h->name);
        long long held = dl_redis_reply_int(rep);
        freeReplyObject(rep);
        if (held == 1)
                return DIRLOCK_OK;
        if (resent)
                return dl_fail(
                    err, DIRLOCK_ESERVER, 0,
                    "lock '%s': the connection to the Redis server broke during the release of %s; "
                    "it is not held any more, but whether it was released or had been lost cannot "
                    "be told",
                    h->name, entry);
        return dl_redis_lost(err, h, held);
}

/* Run a script on lock `name` of space `spec` with the admin time budget. */
int dl_redis_admin_script(const dl_redis_server *srv, const char *name, dl_redis_script_id id, int nargs,
                          const char **args, redisReply **reply, dirlock_error *err)
{
        char base[DL_REDIS_PREFIX_MAX + DIRLOCK_NAME_MAX + 4], space_key[DL_REDIS_SPACE_KEY_MAX];
        dl_redis_make_keys(srv, name, base, sizeof base, space_key, sizeof space_key);
        const char *keys[2] = {base, space_key};
        dl_time never = dl_deadline(-1);
        dl_time io = dl_redis_io_deadline(&never);
        char what[DIRLOCK_NAME_MAX + 16];
        snprintf(what, sizeof what, "lock '%s'", name);
        return dl_about(
            err, dl_redis_run_script(srv, id, 2, keys, nargs, args, &io, what, true, NULL, reply, err), name);
}
