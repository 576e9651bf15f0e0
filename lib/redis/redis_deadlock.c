/* redis_deadlock.c - deadlock detection in a Redis space: a thread that
 * waits for a lock finds out whether its wait is part of a knot of waits
 * that can never end -- a cycle, or a knot through counting locks and
 * readers, across processes and hosts -- and, if it is the knot's one
 * victim, gets DIRLOCK_EDEADLK naming it instead of waiting out its
 * timeout.  The search is one Lua script (scripts/deadlock.lua);
 * here: when a waiter runs it (redis_wait.c calls), and what its answer
 * means.  The graph and the knot are those of a directory space
 * (lib/dir/deadlock.c: THE GRAPH, KNOTS, ONE VICTIM), read by the server.
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
 * every reader for an exclusive request, every held range (R2) -- any one
 * of which keeps it out -- and for a permit the permits held (P), N of
 * which must stay: unexpired all.  A hold belongs to the thread its record
 * names and, for a lock held with a partner (the command bin/dirlock
 * runs, which it lets go only once the command has exited), also to the
 * partner's main thread.  Records without a thread -- DIRLOCK_NO_DEADLOCK
 * handles, whose lock another thread may let go, and pending acquires
 * (redis_format_record) -- are never followed, nor are multi-lock and
 * range waits, upgrades, or a wait's turn behind a queued waiter (Q): a
 * knot through one of them is not reported (its waits end at their
 * timeouts, as without detection).
 *
 * KNOTS.  The script reads the graph breadth first from the asker X, at
 * most DL_REDIS_DEADLOCK_NODES threads, and takes the largest closed,
 * strongly connected set of waits around X's (KNOTS in
 * lib/dir/deadlock.c): none, no report.
 *
 * NEVER A FALSE REPORT.  INVARIANT D: X reports a knot only when, at one
 * moment, every thread of it was queued in the wait the proof names and
 * could not be let in while `need` holds of threads of the knot stayed,
 * and those threads, being blocked, could not let their holds go -- a
 * knot of waits existed then.  The server runs a script at one moment
 * (nothing else runs meanwhile), so everything the search reads -- the
 * queues, the holds, their expiries by the server's clock -- is of one
 * state; a hold let go while the search looks (the hard case of a
 * detector that reads twice) cannot happen.  The waits are those the
 * server records: to the server a thread waits from the script that
 * queues it to the one that grants it, or that it leaves by, or its
 * entry's expiry.  Two gaps between that and the thread itself are
 * closed here and there:
 *   - a thread of this host that died while queued: every thread of the
 *     knot, and every hold's thread of the cycle told, on this host is
 *     checked alive after the script (alive after means alive at the
 *     script's moment); one that is not, no report (its holds are broken
 *     by the waiters behind, its entries expire);
 *   - a thread of another host that died, or left its wait while the
 *     server could not be reached, counts as waiting until its queue
 *     entry expires (queue ttl, at most 6 s): the holds it left keep
 *     their locks until their stale age all the same.
 * A verdict of the script is acted on only after the check of the host;
 * the waiter then makes its last attempt, which leaves the queue (and
 * lets in whoever it held back) -- or takes the lock, should it have
 * come free meanwhile: then no report.
 *
 * ONE VICTIM.  The victim of a knot is its youngest wait: the highest
 * arrival number (drawn once per queueing, so no two waits share one).
 * The script decides for the whole knot at one moment of the server:
 *   - the asker is the victim: the script marks its index entry told
 *     (kind 'x', which wait_of follows no more) and answers the knot;
 *   - another thread is: the script pushes "d" to that thread's wake
 *     list (redis_wait.c: it checks at once), unless a message waits for
 *     it already, and answers {2}; the asker waits on.
 * INVARIANT V: of two reports, the later one's knot holds no wait of the
 * earlier one's thread but later ones.  The later one's script ran after
 * the earlier one's, which marked its wait told: to the later one it is
 * no node, so its knot is one that existed without it (closed: each of
 * its waits kept out by holds of its own blocked threads) and that the
 * earlier report leaves whole.  A victim told but that finds a thread of
 * its host dead does not report; its told mark stays until its next
 * check writes its entry again -- meanwhile the others find no knot
 * through it, and it is no knot: one of its threads is gone.  A victim
 * that is stopped keeps its knot until it runs again (the others, woken
 * to no avail, wait on); one that dies leaves its queue entries to expire
 * (at most 6 s), its holds to be broken: the knot goes.
 *
 * PROMPTNESS.  A knot closes when its last edge appears.  A thread
 * blocked in a wait takes no lock and changes no hold's mode (a grant
 * ends its wait; a pending acquire's record has no thread), so the holds
 * of every thread of a knot are in place before its wait starts, and the
 * knot is complete when its last thread starts to wait.  Each queued
 * waiter first checks DL_REDIS_DEADLOCK_FIRST_MS after its first busy
 * answer (most waits for a lock in use end sooner, and never pay for a
 * check: the cost of detection on a contended lock, bench/README.md), its
 * wait waking for it; the check that comes last, after every other thread
 * of the knot ran its own and wrote its index entry, finds the knot: it
 * reports, or wakes the victim, which checks at once.  So a knot is
 * reported DL_REDIS_DEADLOCK_FIRST_MS and a few round trips after it
 * closes -- but a server wakes a blocked client at its own pace (10 times
 * a second at its default hz), so the first check comes up to that much
 * later.  Waiters check again every DL_REDIS_DEADLOCK_RECHECK_MS (their
 * waits wake for it): that keeps their index entries fresh, and finds a
 * knot whose checks proved nothing (the server could not be reached, the
 * search outgrew its bounds, a thread of this host was gone) within a
 * recheck. */
#include "redis.h"
#include "test_hooks.h"

#include <signal.h>
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

/* The script's answer {1, asker's record, threads in the knot, steps,
 * (name, hold's record, via) per step, wait record of every other thread
 * of the knot}: DIRLOCK_EDEADLK naming the knot's cycle through the
 * asker, or DIRLOCK_OK when a thread of it on this host is gone (or the
 * answer is not understood). */
static int report(const redisReply *rep, dirlock_error *err)
{
        dl_record self, rec;
        const char *text = dl_redis_reply_str(rep->element[1]);
        long long members = dl_redis_reply_int(rep->element[2]), steps = dl_redis_reply_int(rep->element[3]);
        if (dl_record_parse(text, strlen(text), &self) != 0 || steps < 1 || members < 1 ||
            rep->elements != (size_t)(4 + 3 * steps + members - 1))
                return DIRLOCK_OK;
        for (size_t i = (size_t)(4 + 3 * steps); i < rep->elements; i++) {
                text = dl_redis_reply_str(rep->element[i]);
                if (dl_record_parse(text, strlen(text), &rec) != 0 || !step_alive(&rec, 't'))
                        return DIRLOCK_OK;
        }
        char story[480];
        size_t len = 0;
        for (size_t i = 0; i < (size_t)steps; i++) {
                const char *name = dl_redis_reply_str(rep->element[4 + 3 * i]);
                text = dl_redis_reply_str(rep->element[5 + 3 * i]);
                char via = dl_redis_reply_str(rep->element[6 + 3 * i])[0];
                if (dl_record_parse(text, strlen(text), &rec) != 0 || !step_alive(&rec, via))
                        return DIRLOCK_OK;
                if (via == 't' && dl_record_same_host(&rec) && rec.pid == dl_self_pid() &&
                    rec.tid == dl_self_tid() && dl_handle_thread_holds(rec.token) == 0)
                        return DIRLOCK_OK; /* a hold of this thread's that no handle has: it expires */
                if (i == 0)
                        tell(story, sizeof story, &len, "this thread (pid %ld on %s) would wait for '%s'",
                             (long)self.pid, self.host, name);
                else
                        tell(story, sizeof story, &len, ", which waits for '%s'", name);
                if (i + 1 < (size_t)steps && via == 'p')
                        tell(story, sizeof story, &len, " held by pid %ld on %s for its command, pid %ld",
                             (long)rec.pid, rec.host, (long)rec.partner);
                else if (i + 1 < (size_t)steps)
                        tell(story, sizeof story, &len, " held by pid %ld (thread %ld) on %s", (long)rec.pid,
                             (long)rec.tid, rec.host);
                else if (via == 'p')
                        tell(story, sizeof story, &len,
                             " held for this process by pid %ld on %s, which runs it", (long)rec.pid,
                             rec.host);
                else
                        tell(story, sizeof story, &len, " held by this thread");
        }
        if (members > steps)
                tell(story, sizeof story, &len, "; %lld threads in all wait for locks only they hold",
                     members);
        return dl_fail(err, DIRLOCK_EDEADLK, 0, "deadlock: %s: %s, which would never end", story,
                       members > steps ? "a knot of waits" : "a cycle of waits");
}

int dl_redis_deadlock_check(dirlock *h, char kind, long long seq, const dl_time *deadline, dirlock_error *err)
{
        struct dl_redis *r = dl_redis_of(h);
        const char *keys[2] = {r->base, r->space_key};
        char k[2] = {kind, '\0'}, s[24], ttl[24], nodes[24];
        snprintf(s, sizeof s, "%lld", seq);
        snprintf(ttl, sizeof ttl, "%lld", 2 * dl_redis_queue_ttl_ms(h));
        snprintf(nodes, sizeof nodes, "%d", DL_REDIS_DEADLOCK_NODES);
        const char *args[5] = {k, h->token, s, ttl, nodes};
        dl_time io = dl_redis_io_deadline(deadline);
        redisReply *rep;
        dirlock_error ignored; /* a check that fails proves nothing: the wait goes on */
        if (dl_redis_run_script(&r->server, DL_RS_DEADLOCK, 2, keys, 5, args, &io, "deadlock detection",
                                false, NULL, &rep, &ignored) != DIRLOCK_OK)
                return DIRLOCK_OK;
        int rc = DIRLOCK_OK;
        if (dl_redis_reply_is(rep, REDIS_REPLY_ARRAY) && rep->elements >= 7 &&
            dl_redis_reply_int(rep->element[0]) == 1) {
                if (dl_test_hook(STOP_VICTIM) != NULL)
                        raise(SIGSTOP);
                rc = report(rep, err);
        }
        freeReplyObject(rep);
        return rc;
}
