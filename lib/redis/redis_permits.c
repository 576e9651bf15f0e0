/* redis_permits.c - counting locks in a Redis space (dirlock_acquire_permit):
 * lock NAME admits at most N holders at once.  The scripts are in
 * scripts/permit_*.lua, the keys at the top of redis_backend.c.
 *
 * ======================================================================
 * PROTOCOL.  The permits of NAME are the zset K:p of their holders'
 * tokens, scored by when each expires (server ms), with each holder's
 * record in K:po and the N they asked in K:pn.  An acquire is the wait
 * loop of whole locks (redis_wait.c) with the PERMIT_ACQUIRE script: one
 * script per attempt takes a permit when fewer than N are held --
 * counting the waiters that arrived before it, so that nobody passes a
 * waiter -- or queues the waiter (K:pq by arrival number, K:pqe by
 * expiry, K:pqm) and names what it waits for: the holder whose permit
 * expires first, or the first waiter ahead; and its PEERS.  A release (PERMIT_RELEASE),
 * a break, and an expiry found by any script's purge give the permit
 * freed to the first waiter, taking it for it with its fence and pushing
 * "g<fence>" to its wake list, as a whole lock's release does (W in
 * scripts/common.lua); the wait loop then returns without another round
 * trip.  Refresh, check and fence are those of a whole lock, on K:p.
 *
 * PEERS.  Any holder may be the one that died, not only the one named:
 * every busy answer, and the refusal of INVARIANT Q, also names the
 * holders whose records give the waiter's own host, boot id and pid
 * namespace (the only owners it can judge), first to expire first, at
 * most DL_REDIS_PEERS_MAX of them.  The waiter (redis_wait.c) breaks, by
 * token, every one whose owner is provably dead, and attempts again at
 * once -- a try and a last attempt too, so `dirlock -n` is not kept out
 * -- and, while it waits, watches a pidfd on each live one besides its
 * blocker's owner: a death wakes it to attempt, and judge, again.
 *
 * INVARIANT P (never more than N): every script that adds a token to
 * K:p first counts K:p after its purge, in the same script, and adds only
 * while the count is below N (PERMIT_ACQUIRE) or below the N the holders
 * agree on (the grant).  Scripts run one at a time on the server, so the
 * count is never stale: at most N tokens are in K:p at any moment.  An
 * entry leaves K:p by release, break, or expiry (E): a holder that died
 * without releasing frees its permit at once when it was on the waiter's
 * host (its owner provably dead: BREAK by token, whichever holder it was,
 * as long as it is among the first DL_REDIS_PEERS_MAX of that host: PEERS)
 * and otherwise after its stale age, so no permit is leaked; and an entry is only ever removed by
 * its own token's release or break or by its expiry, so no live holder
 * loses its permit while it refreshes in time (nothing is lost).
 *
 * INVARIANT Q (one N at a time): K:pn is set with every take and removed
 * when K:p empties; a request for another N while K:p holds anyone is
 * refused ({-3, N, a holder's record, PEERS}: DIRLOCK_EINVAL, once the
 * dead holders of the asker's host are broken -- a dead holder fixes no
 * number), so "at most N" holds for every holder.  A waiter for another N is woken by the grant
 * to hear so, and nobody passes it.
 *
 * A lost reply to a release leaves the permit in place until its stale
 * age (the release says DIRLOCK_ESERVER): the whole lock's pending
 * release is not repeated for permits. */
#include "redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dl_redis_permit_open(dirlock *h, dirlock_error *err)
{
        (void)h;
        (void)err;
        return DIRLOCK_OK; /* the keys are the name's (redis_open) */
}

/* PERMIT_ACQUIRE's arguments; `arg` is N as text. */
static int permit_args(const struct dl_redis_attempt *t, const void *arg, const char **args)
{
        const char *v[] = {t->token, t->stale, t->record,    t->may_queue,
                           t->seq,   t->last,  t->not_after, t->qttl};
        args[0] = v[0];
        args[1] = arg;
        memcpy(args + 2, v + 1, sizeof v - sizeof v[0]);
        _Static_assert(sizeof v / sizeof v[0] + 1 <= DL_REDIS_ATTEMPT_ARGS, "room for the arguments");
        return (int)(sizeof v / sizeof v[0]) + 1;
}

/* INVARIANT Q: {-3, their N, a holder's record, peers} (its dead
 * holders of this host broken first: redis_wait.c). */
static int permit_refused(const dirlock *h, const redisReply *rep, dirlock_error *err)
{
        if (rep->elements != 4)
                return dl_redis_bad_reply(err, "a permit acquire");
        const char *text = dl_redis_reply_str(rep->element[2]);
        dl_record rec;
        bool readable = text[0] != '\0' && dl_record_parse(text, strlen(text), &rec) == 0;
        long long held = dl_redis_reply_int(rep->element[1]);
        return dl_fail(
            err, DIRLOCK_EINVAL, 0,
            "counting lock '%s' is held with %lld permit%s (by pid %ld on %s), not %u: its holders "
            "must agree on the number",
            h->name, held, held == 1 ? "" : "s", readable ? (long)rec.pid : 0L,
            readable ? rec.host : "an unknown host", h->permits);
}

int dl_redis_permit_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        char n[16];
        snprintf(n, sizeof n, "%u", h->permits);
        const struct dl_redis_acquire permit = {.script = DL_RS_PERMIT_ACQUIRE,
                                                .what = "a permit",
                                                .reply = "a permit acquire",
                                                .subject = "a permit of counting lock",
                                                .grants = true,
                                                .args = permit_args,
                                                .arg = n,
                                                .refused = permit_refused,
                                                .deadlock = 'p'};
        return dl_redis_acquire(&h, 1, &permit, deadline, err);
}

int dl_redis_permit_release(dirlock *h, dirlock_error *err)
{
        return dl_redis_release_entry(h, DL_RS_PERMIT_RELEASE, "a permit", NULL, err);
}

int dl_redis_permit_refresh(dirlock *h, dirlock_error *err)
{
        char stale[24];
        snprintf(stale, sizeof stale, "%lld", dl_redis_stale_ms(h));
        const char *args[2] = {h->token, stale};
        return dl_redis_while_held(h, DL_RS_PERMIT_REFRESH, 2, args, err);
}

int dl_redis_permit_check(const dirlock *h, dirlock_error *err)
{
        const char *args[1] = {h->token};
        return dl_redis_while_held(h, DL_RS_PERMIT_CHECK, 1, args, err);
}
