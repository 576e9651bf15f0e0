/* redis_deadlock.c - deadlock detection in a Redis space: a thread that
 * starts to wait for a lock finds out whether its wait closes a cycle of
 * waits -- across processes and hosts -- and gets DIRLOCK_EDEADLK naming
 * the cycle instead of waiting out its timeout.  The search is one Lua
 * script (DEADLOCK in redis_scripts.c); here: when a waiter runs it
 * (redis_wait.c calls), and what its answer means.
 *
 * THE GRAPH.  Its nodes are threads blocked in a wait the server has on
 * record: a token queued for one name (a whole lock: K:q; a permit: K:pq)
 * under its arrival number, its queue entry unexpired (E), its owner
 * record naming the thread (host, boot id, pid namespace, pid, tid).
 * The wait index {P}:dw maps a thread to its current wait ("<kind>
 * <arrival number> <token> <name>"): the DEADLOCK script writes it for
 * the waiter that runs it, after checking that the waiter is queued so.
 * The index is only a pointer: an entry is followed only while the queue
 * it names still has that token under that arrival number, unexpired,
 * for that thread -- arrival numbers are drawn once per queueing
 * ({P}:seq), so a wait that was granted, given up, expired or replaced
 * is never followed, and an entry left behind does no harm (it expires,
 * {P}:dwe, after twice the queue ttl).  A wait is kept out by holds
 * (`blockers` in the script): W's holder when its mode conflicts (M),
 * every reader for an exclusive request, every held range (R2), and for
 * a permit the N permits held (P) -- unexpired all.  A hold belongs to
 * the thread its record names and, for a lock held with a partner (the
 * command bin/dirlock runs, which it lets go only once the command has
 * exited), also to the partner's main thread.  Records without a thread
 * -- DIRLOCK_NO_DEADLOCK handles, whose lock another thread may let go,
 * and pending acquires (redis_format_record) -- are never followed, nor
 * are multi-lock and range waits, upgrades, or a wait's turn behind a
 * queued waiter (Q): a cycle through one of them is not reported (its
 * waits end at their timeouts, as without detection).
 *
 * STUCK.  The asker X is stuck when its wait is kept out by holds of
 * stuck threads (one is enough for a lock; a permit wait needs N); a
 * hold of X itself is stuck (X keeps its holds while it waits), and so is
 * a hold of a thread whose recorded wait is stuck -- searched depth
 * first, DL_REDIS_DEADLOCK_DEPTH threads deep and _VISITS waits in all, a
 * thread never twice on one path (a cycle that does not go through X is
 * its own threads' to report).
 *
 * NEVER A FALSE REPORT.  INVARIANT D: X reports a cycle only when, at
 * one moment, every thread of the cycle was queued in the wait the proof
 * names and could not be let in while the hold of the next thread
 * stayed, and that thread, being blocked, could not let its hold go --
 * a cycle of waits existed then.  The server runs a script at one moment
 * (nothing else runs meanwhile), so everything the search reads -- the
 * queues, the holds, their expiries by the server's clock -- is of one
 * state; a hold let go while the search looks (the hard case of a
 * detector that reads twice) cannot happen.  The waits are those the
 * server records: to the server a thread waits from the script that
 * queues it to the one that grants it, or that it leaves by, or its
 * entry's expiry.  Two gaps between that and the thread itself are
 * closed here and there:
 *   - a thread of this host that died while queued: every thread of the
 *     proof on this host is checked alive after the script (alive after
 *     means alive at the script's moment); one that is not, no report
 *     (its holds are broken by the waiters behind, its entries expire);
 *   - a thread of another host that died, or left its wait while the
 *     server could not be reached, counts as waiting until its queue
 *     entry expires (queue ttl, at most 6 s): the holds it left keep
 *     their locks until their stale age all the same.
 * A verdict of the script is acted on only after the check of the host;
 * the waiter then makes its last attempt, which leaves the queue (and
 * lets in whoever it held back) -- or takes the lock, should it have
 * come free meanwhile: then no report.
 *
 * PROMPTNESS.  A cycle closes when its last edge appears.  A thread
 * blocked in a wait takes no lock and changes no hold's mode (a grant
 * ends its wait; a pending acquire's record has no thread), so the holds
 * of every thread of a cycle are in place before its wait starts, and
 * the cycle is complete when its last thread starts to wait.  Each queued
 * waiter first checks DL_REDIS_DEADLOCK_FIRST_MS after its first busy
 * answer (most waits for a lock in use end sooner, and never pay for a
 * check: what detection costs a contended lock, bench/README.md), its
 * wait waking for it; the check that comes last, after every other
 * thread of the cycle ran its own and wrote its index entry, finds the
 * cycle.  Waiters check again every DL_REDIS_DEADLOCK_RECHECK_MS (their
 * waits wake for it): that keeps their index entries fresh, and finds a
 * cycle whose first check proved nothing (the server could not be
 * reached, the search outgrew its bounds, a thread of this host was
 * gone) within a recheck.  A server wakes a blocked client at its own
 * pace (10 times a second at its default hz), so the checks come that
 * much later.  Two waits that close a cycle at once may both report it:
 * each saw the whole cycle, which did exist. */
#include "redis.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether the thread a step's hold belongs to (`via`: 't' the record's
 * thread, 'p' its partner's main thread), when it is of this host, is
 * still there; threads of other hosts are taken as the server has them. */
static bool step_alive(const dl_record *rec, char via)
{
        if (!dl_record_same_host(rec))
                return true;
        if (via == 'p')
                return dl_process_alive(rec->partner, rec->partner_start) == 1;
        if (dl_process_alive(rec->pid, rec->start_time) != 1)
                return false;
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/task/%ld", (long)rec->pid, (long)rec->tid);
        struct stat st;
        return stat(path, &st) == 0;
}

/* Append to the story (cut short when it is long). */
static void tell(char *story, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void tell(char *story, size_t size, size_t *len, const char *fmt, ...)
{
        if (*len + 1 >= size)
                return;
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(story + *len, size - *len, fmt, ap);
        va_end(ap);
        if (k > 0)
                *len += (size_t)k;
        if (*len >= size)
                *len = size - 1;
}

/* The script's proof {1, asker's record, (name, hold's record, via)...}:
 * DIRLOCK_EDEADLK naming the cycle, or DIRLOCK_OK when a thread of it on
 * this host is gone (or the answer is not understood). */
static int report(const redisReply *rep, dirlock_error *err)
{
        dl_record self, rec;
        const char *text = dl_redis_reply_str(rep->element[1]);
        if (dl_record_parse(text, strlen(text), &self) != 0)
                return DIRLOCK_OK;
        char story[480];
        size_t len = 0;
        size_t steps = (rep->elements - 2) / 3;
        for (size_t i = 0; i < steps; i++) {
                const char *name = dl_redis_reply_str(rep->element[2 + 3 * i]);
                text = dl_redis_reply_str(rep->element[3 + 3 * i]);
                char via = dl_redis_reply_str(rep->element[4 + 3 * i])[0];
                if (dl_record_parse(text, strlen(text), &rec) != 0 || !step_alive(&rec, via))
                        return DIRLOCK_OK;
                if (i == 0)
                        tell(story, sizeof story, &len, "this thread (pid %ld on %s) would wait for '%s'",
                             (long)self.pid, self.host, name);
                else
                        tell(story, sizeof story, &len, ", which waits for '%s'", name);
                if (i + 1 < steps && via == 'p')
                        tell(story, sizeof story, &len, " held by pid %ld on %s for its command, pid %ld",
                             (long)rec.pid, rec.host, (long)rec.partner);
                else if (i + 1 < steps)
                        tell(story, sizeof story, &len, " held by pid %ld (thread %ld) on %s", (long)rec.pid,
                             (long)rec.tid, rec.host);
                else if (via == 'p')
                        tell(story, sizeof story, &len,
                             " held for this process by pid %ld on %s, which runs it", (long)rec.pid,
                             rec.host);
                else
                        tell(story, sizeof story, &len, " held by this thread");
        }
        return dl_fail(err, DIRLOCK_EDEADLK, 0, "deadlock: %s: a cycle of waits, which would never end",
                       story);
}

int dl_redis_deadlock_check(dirlock *h, char kind, long long seq, const dl_time *deadline, dirlock_error *err)
{
        struct dl_redis *r = dl_redis_of(h);
        const char *keys[2] = {r->base, r->space};
        char k[2] = {kind, '\0'}, s[24], ttl[24];
        snprintf(s, sizeof s, "%lld", seq);
        snprintf(ttl, sizeof ttl, "%lld", 2 * dl_redis_queue_ttl_ms(h));
        const char *args[4] = {k, h->token, s, ttl};
        dl_time io = dl_redis_io_deadline(deadline);
        redisReply *rep;
        dirlock_error ignored; /* a check that fails proves nothing: the wait goes on */
        if (dl_redis_run_script(&r->server, DL_RS_DEADLOCK, 2, keys, 4, args, &io, "deadlock detection",
                                false, NULL, &rep, &ignored) != DIRLOCK_OK)
                return DIRLOCK_OK;
        int rc = DIRLOCK_OK;
        if (dl_redis_reply_is(rep, REDIS_REPLY_ARRAY) && rep->elements >= 5 && (rep->elements - 2) % 3 == 0 &&
            dl_redis_reply_int(rep->element[0]) == 1)
                rc = report(rep, err);
        freeReplyObject(rep);
        return rc;
}
