/* redis_whole.c - whole locks in a Redis space (redis_backend.c): taking
 * one name or several at once (the wait loop of redis_wait.c, with the
 * ACQUIRE script), releasing, refreshing and checking them, upgrading an
 * intent lock and downgrading.  The scripts, each with the invariant it
 * keeps, are in scripts/.
 *
 * ======================================================================
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
#include "redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ACQUIRE's arguments (scripts/acquire.lua). */
static int whole_args(const struct dl_redis_attempt *t, const void *arg, const char **args)
{
        (void)arg;
        const char *v[] = {t->token,     t->mode, t->policy, t->stale,     t->record,
                           t->may_queue, t->seq,  t->last,   t->not_after, t->qttl};
        _Static_assert(sizeof v / sizeof v[0] <= DL_REDIS_ATTEMPT_ARGS, "room for ACQUIRE's arguments");
        memcpy(args, v, sizeof v);
        return (int)(sizeof v / sizeof v[0]);
}

int dl_redis_whole_acquire(dirlock **hs, size_t n, const dl_time *deadline, dirlock_error *err)
{
        /* A release that never reached the server is tried again before a
         * new token is drawn, and the acquire refused while it fails
         * (release_kept, backend.h): none is left pending here. */
        DL_ASSERT(!dl_redis_of(hs[0])->release_pending);
        /* Only a single-name waiter is granted the lock by a releaser (W
         * in scripts/common.lua); a set is woken to try again. */
        const struct dl_redis_acquire whole = {.script = DL_RS_ACQUIRE,
                                               .what = n == 1 ? "the lock" : "the locks",
                                               .reply = "an acquire",
                                               .subject = "lock",
                                               .grants = n == 1,
                                               .args = whole_args,
                                               .deadlock = n == 1 ? 'q' : 0};
        return dl_redis_acquire(hs, n, &whole, deadline, err);
}

/* ---- holding ------------------------------------------------------------- */

int dl_redis_whole_release(dirlock *h, dirlock_error *err)
{
        /* No answer: the hold may be in place still, found by this token
         * alone; dl_redis_whole_release_kept tries again before a new token. */
        return dl_redis_release_entry(h, DL_RS_RELEASE, "the lock", &dl_redis_of(h)->release_pending, err);
}

/* A release that got no answer (the server unreachable) may have left
 * the hold on the server: release it now, by the token that names it.
 * Gone meanwhile (expired, broken, released after all) is no error:
 * nothing is left.  Still no answer: DIRLOCK_ESERVER, and it stays
 * pending (the hold expires after its stale age in any case). */
int dl_redis_whole_release_kept(dirlock *h, dirlock_error *err)
{
        struct dl_redis *r = dl_redis_of(h);
        if (!r->release_pending)
                return DIRLOCK_OK;
        const char *args[1] = {h->token};
        redisReply *rep;
        int rc = dl_redis_run_on(h, DL_RS_RELEASE, 1, args, true, NULL, &rep, err);
        if (rc != DIRLOCK_OK)
                return dl_about(err, rc, h->name);
        freeReplyObject(rep);
        r->release_pending = false;
        return DIRLOCK_OK;
}

int dl_redis_whole_refresh(dirlock *h, dirlock_error *err)
{
        char stale[24];
        snprintf(stale, sizeof stale, "%lld", dl_redis_stale_ms(h));
        const char *args[2] = {h->token, stale};
        return dl_redis_while_held(h, DL_RS_REFRESH, 2, args, err);
}

int dl_redis_whole_check(const dirlock *h, dirlock_error *err)
{
        const char *args[1] = {h->token};
        return dl_redis_while_held(h, DL_RS_CHECK, 1, args, err);
}

/* Intent -> exclusive: set U, wait for the readers already in (the
 * caller checked the modes). */
int dl_redis_whole_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err)
{
        DL_ASSERT(!h->ranged && h->mode == DIRLOCK_INTENT);
        static const struct dl_redis_upgrade whole = {.script = DL_RS_UPGRADE,
                                                      .policy_arg = true,
                                                      .blocker_kind = 'r',
                                                      .running = "the upgrade",
                                                      .reply = "an upgrade"};
        return dl_redis_upgrade_wait(h, opts, &whole, err);
}

/* Exclusive or intent -> shared (the caller checked the mode). */
int dl_redis_whole_downgrade(dirlock *h, dirlock_error *err)
{
        DL_ASSERT(!h->ranged && h->mode != DIRLOCK_SHARED);
        char record[DL_RECORD_MAX], stale[24], policy[8];
        int rc = dl_redis_format_record(h, DIRLOCK_SHARED, record, sizeof record, err);
        if (rc != DIRLOCK_OK)
                return rc;
        snprintf(stale, sizeof stale, "%lld", dl_redis_stale_ms(h));
        snprintf(policy, sizeof policy, "%d", h->opts.policy);
        const char *args[4] = {h->token, stale, record, policy};
        rc = dl_redis_while_held(h, DL_RS_DOWNGRADE, 4, args, err);
        if (rc == DIRLOCK_OK)
                h->mode = DIRLOCK_SHARED;
        return rc;
}

/* The caller (handle.c) checked that this is an upgraded intent lock. */
int dl_redis_whole_downgrade_intent(dirlock *h, dirlock_error *err)
{
        DL_ASSERT(!h->ranged && h->mode == DIRLOCK_EXCLUSIVE && h->opts.mode == DIRLOCK_INTENT);
        char policy[8];
        snprintf(policy, sizeof policy, "%d", h->opts.policy);
        const char *args[2] = {h->token, policy};
        int rc = dl_redis_while_held(h, DL_RS_DOWNGRADE_INTENT, 2, args, err);
        if (rc == DIRLOCK_OK)
                h->mode = DIRLOCK_INTENT;
        return rc;
}
