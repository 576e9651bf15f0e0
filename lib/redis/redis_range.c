/* redis_range.c - range locks in a Redis space (redis_backend.c): shared,
 * intent and exclusive locks on half-open ranges [lo, hi) of lock NAME,
 * with the policies, shrinking, upgrade of an intent range and downgrade
 * -- what lib/dir/range.c gives a directory space, kept on the server.  Here:
 * the protocol and the entry points; the wait loop, which whole locks
 * share, is in redis_wait.c, and the scripts, one per operation, in
 * scripts/range_*.lua.
 *
 * ======================================================================
 * ENTRIES.  Every range holder and waiter of NAME is one entry, keyed by
 * its token, under K = {P}:NAME (the data model at the top of
 * redis_backend.c):
 *   K:g   hash: token -> "<state><mode> <seq> <lo> <hi> <policy> <qttl>"
 *         state h (holds) or w (waits: a reservation); mode s, i, x, or
 *         u (an intent holder upgrading); seq its arrival number, drawn
 *         from {P}:seq -- the counter the whole lock's waiters draw from
 *         too -- on its first wait and kept until it leaves; lo and hi as
 *         "%.17g" (a double's exact text); the queue ttl for its wake list
 *   K:ge  zset: token -> when the entry expires (server ms): a holder's
 *         at now + its stale age (REFRESH renews it), a waiter's at now +
 *         its queue ttl (renewed by every attempt)
 *   K:go  hash: token -> owner record, removed with the entry
 * Every script first purges: entries due by the server's clock go, with
 * their records, and the waiters they met are woken.  No meta-lock: each
 * operation is one script, which the server runs atomically.
 *
 * INVARIANTS the range scripts keep, with those of scripts/common.lua (M, E,
 * Q, W, F for the whole lock):
 *   R1 (ranges among themselves) two entries conflict when their ranges
 *      overlap (lo1 < hi2 and lo2 < hi1) and their modes conflict (the
 *      mode table, lib/modes.c, which the scripts get as CONFLICTS: s-s
 *      and s-i do not; i-i, x against anything, u against a new s or i
 *      do); an entry taken under `simple` conflicts with everything it
 *      overlaps.  An acquirer is kept out by every conflicting holder, and
 *      by conflicting waiters that arrived before it (a smaller seq; a new
 *      arrival is after everyone): all of them under fair and simple;
 *      under `writer` not by waiting readers if it writes, under `reader`
 *      not by waiting writers if it reads.  Waiters that arrived after it
 *      never keep it out: among ranges "waits for" points to a smaller seq
 *      only, so no two range waiters wait for each other, and under `fair` a waiting writer's
 *      reservation holds off new overlapping readers while readers that
 *      queued before it go first: neither side is locked out.
 *   R2 (ranges against the whole lock) a whole-lock holder of NAME (K:w or
 *      a reader in K:r) conflicts with every range, whatever the modes.  A
 *      range acquirer is kept out by W, a whole reader, and every whole
 *      waiter (K:q); a whole acquirer (the ACQUIRE script, and grant() for
 *      a queued one) by every held range, not by range waiters.  So whole
 *      waiters go before range acquirers, as in a directory space (where
 *      the whole side announces itself first and ranges withdraw): a whole
 *      waiter holds off new ranges until the held ones are gone, and is
 *      never locked out.  "Waits for" edges run from range waiters to
 *      whole holders and waiters, and from whole waiters to held ranges
 *      only -- never from a whole waiter to a range waiter -- so they
 *      close no cycle with the whole queue's own order (Q, whose policy
 *      rules let a waiter wait for one that arrived after it).  Both sides
 *      are judged in scripts on one server: no window in which each
 *      misses the other.
 *   R3 (wake-ups, no polling) a waiter blocks on its wake list
 *      {P}:wake:<token> (BLPOP).  A script that removes or narrows a range
 *      entry (release, shrink, downgrade, a withdrawn reservation, break,
 *      expiry) pushes "w" to the waiters -- and the upgrading holder --
 *      whose range met the old one (a shrink: those that do not meet the
 *      new one), and, when whole waiters queue, lets in those that may
 *      go now (grant).  A script that lets whole holders or waiters go
 *      (the whole lock's RELEASE, BREAK, a withdrawn whole waiter, expiry)
 *      wakes the range waiters once no whole holder nor waiter is left.
 *      A woken waiter tries again; nobody else is woken.  A
 *      waiter also looks again when the entry in its way would expire, and
 *      every third of its queue ttl (to renew its reservation), and at
 *      once when that entry's owner dies on this host (pidfd).
 *   R4 (crashes) an entry expires by the server's clock after its own
 *      stale age (a waiter's after its queue ttl, at most 6 s), so a
 *      killed holder's range frees itself; on the same host a waiter finds
 *      the owner dead by its record (pid and start time) and BREAKs
 *      exactly that token at once, as for the whole lock.
 *   R5 (fences) a range take draws its fence from K:f like the whole
 *      lock's (max(K:f + 1, server time in microseconds)), so fences of
 *      NAME only grow, whichever kind of lock drew them.
 *
 * LOST REPLIES: asking again is safe as for the whole lock.  A range
 * ACQUIRE by a token that already holds takes again (a new fence); SHRINK,
 * REFRESH, CHECK, UPGRADE and DOWNGRADE are idempotent; a RELEASE whose
 * reply was lost and whose retry finds nothing says so (DIRLOCK_ESERVER).
 * A grant is never handed over by another's script (unlike whole locks): a
 * woken range waiter always takes by its own attempt. */
#include "redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void end_text(char out[40], double v)
{
        snprintf(out, 40, "%.17g", v);
}

int dl_redis_range_open(dirlock *h, dirlock_error *err)
{
        (void)err;
        dl_redis_of(h)->seq = 0;
        return DIRLOCK_OK;
}

/* ---- acquiring (R3) ------------------------------------------------------------ */

struct range_ends {
        char lo[40], hi[40];
};

/* RANGE_ACQUIRE's arguments (scripts/range_acquire.lua): its reservation is found
 * by its token, so no arrival number. */
static int range_args(const struct dl_redis_attempt *t, const void *arg, const char **args)
{
        const struct range_ends *e = arg;
        const char *v[] = {t->token, t->mode, t->policy, t->stale, t->record,   t->may_queue,
                           t->last,  t->qttl, e->lo,     e->hi,    t->not_after};
        _Static_assert(sizeof v / sizeof v[0] <= DL_REDIS_ATTEMPT_ARGS, "room for RANGE_ACQUIRE's arguments");
        memcpy(args, v, sizeof v);
        return (int)(sizeof v / sizeof v[0]);
}

/* The wait loop of whole locks, with RANGE_ACQUIRE: a woken range waiter
 * always takes by its own attempt (R3), never by a grant. */
int dl_redis_range_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        struct range_ends e;
        end_text(e.lo, h->lo);
        end_text(e.hi, h->hi);
        const struct dl_redis_acquire range = {.script = DL_RS_RANGE_ACQUIRE,
                                               .what = "the range",
                                               .reply = "a range acquire",
                                               .subject = "a range of lock",
                                               .grants = false,
                                               .args = range_args,
                                               .arg = &e};
        return dl_redis_acquire(&h, 1, &range, deadline, err);
}

/* ---- holding ------------------------------------------------------------------ */

int dl_redis_range_release(dirlock *h, dirlock_error *err)
{
        return dl_redis_release_entry(h, DL_RS_RANGE_RELEASE, "a range", NULL, err);
}

int dl_redis_range_refresh(dirlock *h, dirlock_error *err)
{
        char stale[24];
        snprintf(stale, sizeof stale, "%lld", dl_redis_stale_ms(h));
        const char *args[2] = {h->token, stale};
        return dl_redis_while_held(h, DL_RS_RANGE_REFRESH, 2, args, err);
}

int dl_redis_range_check(const dirlock *h, dirlock_error *err)
{
        const char *args[1] = {h->token};
        return dl_redis_while_held(h, DL_RS_RANGE_CHECK, 1, args, err);
}

/* The caller (handle.c) checked that [lo, hi) is a part of the held range. */
int dl_redis_range_shrink(dirlock *h, double lo, double hi, dirlock_error *err)
{
        DL_ASSERT(h->ranged && h->lo <= lo && lo < hi && hi <= h->hi);
        char los[40], his[40], stale[24];
        end_text(los, lo);
        end_text(his, hi);
        snprintf(stale, sizeof stale, "%lld", dl_redis_stale_ms(h));
        const char *args[4] = {h->token, los, his, stale};
        int rc = dl_redis_while_held(h, DL_RS_RANGE_SHRINK, 4, args, err);
        if (rc == DIRLOCK_OK) {
                h->lo = lo;
                h->hi = hi;
        }
        return rc;
}

int dl_redis_range_downgrade(dirlock *h, dirlock_error *err)
{
        DL_ASSERT(h->ranged && h->mode != DIRLOCK_SHARED); /* the caller checked the mode */
        const char *args[1] = {h->token};
        int rc = dl_redis_while_held(h, DL_RS_RANGE_DOWNGRADE, 1, args, err);
        if (rc == DIRLOCK_OK)
                h->mode = DIRLOCK_SHARED;
        return rc;
}

/* The caller (handle.c) checked that this is an upgraded intent range. */
int dl_redis_range_downgrade_intent(dirlock *h, dirlock_error *err)
{
        DL_ASSERT(h->ranged && h->mode == DIRLOCK_EXCLUSIVE && h->opts.mode == DIRLOCK_INTENT);
        const char *args[1] = {h->token};
        int rc = dl_redis_while_held(h, DL_RS_RANGE_DOWNGRADE_INTENT, 1, args, err);
        if (rc == DIRLOCK_OK)
                h->mode = DIRLOCK_INTENT;
        return rc;
}

/* Intent -> exclusive: the entry becomes u, then x once no overlapping
 * read range is held; the last reader's release wakes us (R3). */
int dl_redis_range_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err)
{
        DL_ASSERT(h->ranged && h->mode == DIRLOCK_INTENT); /* the caller checked the modes */
        static const struct dl_redis_upgrade range = {.script = DL_RS_RANGE_UPGRADE,
                                                      .policy_arg = false,
                                                      .blocker_kind = 'g',
                                                      .running = "the range upgrade",
                                                      .reply = "a range upgrade"};
        return dl_redis_upgrade_wait(h, opts, &range, err);
}

/* ---- from outside the holders ---------------------------------------------------- */

static int mode_of_letter(char m)
{
        return m == 's' ? DIRLOCK_SHARED : m == 'x' ? DIRLOCK_EXCLUSIVE : DIRLOCK_INTENT;
}

int dl_redis_ranges(const char *spec, const char *name, dirlock_range_info **out, size_t *count,
                    dirlock_error *err)
{
        *out = NULL;
        *count = 0;
        dl_redis_server srv;
        int rc = dl_redis_parse_space(spec, &srv, err);
        redisReply *rep = NULL;
        if (rc == DIRLOCK_OK)
                rc = dl_redis_admin_script(&srv, name, DL_RS_RANGE_LIST, 0, NULL, &rep, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (!dl_redis_reply_is(rep, REDIS_REPLY_ARRAY) || rep->elements % 4 != 0) {
                freeReplyObject(rep);
                return dl_redis_bad_reply(err, "a range list");
        }
        size_t n = rep->elements / 4;
        if ((*out = calloc(n ? n : 1, sizeof **out)) == NULL) {
                freeReplyObject(rep);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        long long now = dl_wall_ns();
        size_t got = 0;
        for (size_t i = 0; i < n; i++) {
                const char *sm = dl_redis_reply_str(rep->element[4 * i]);
                const char *text = dl_redis_reply_str(rep->element[4 * i + 3]);
                if (strlen(sm) != 2)
                        continue;
                dirlock_range_info *ri = &(*out)[got++];
                ri->lo = strtod(dl_redis_reply_str(rep->element[4 * i + 1]), NULL);
                ri->hi = strtod(dl_redis_reply_str(rep->element[4 * i + 2]), NULL);
                ri->waiting = sm[0] == 'w';
                ri->mode = mode_of_letter(sm[1]);
                ri->upgrading = sm[1] == 'u';
                dl_record rec;
                if (dl_record_parse(text, strlen(text), &rec) == 0)
                        dl_record_to_range(&rec, now, ri);
        }
        freeReplyObject(rep);
        *count = got;
        return DIRLOCK_OK;
}
