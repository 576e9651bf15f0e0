/* deadlock.pml - a Promela model of the deadlock detection of
 * lib/dir/deadlock.c: threads that take one lock and then wait for
 * another, making their wait register entry (waits.c) before they look;
 * a detector that follows the waits from its own, one entry at a time,
 * and reports only what a second reading confirms; waits given up (a
 * timeout) and locks released while a detector looks.
 *
 * verify-config: -DCONFIG_SAFETY
 * verify-config: -DCONFIG_LIVE
 * verify-expect-error: -DCONFIG_SAFETY -DBUG_ONE_PASS
 *
 * Checked by `make verify` (tests/model/model.mk; the lines above):
 *   -DCONFIG_SAFETY  3 threads, 3 locks (cycles of 2 and 3): each takes a
 *                    lock and waits for another (or gives up at any
 *                    moment); thread 0 checks at any moments while it
 *                    waits (the library's first check, 10 ms in, and
 *                    its rechecks: the model leaves when to the
 *                    scheduler); thread 1 takes a lock and waits twice
 *                    (a lock let go and taken again while the checker
 *                    looks); NO_FALSE_REPORT in every report.
 *   -DCONFIG_LIVE    2 threads taking 2 locks in opposite orders forever,
 *                    never giving up: under weak fairness every cycle of
 *                    waits is broken (LTL cycles_broken) -- a cycle is
 *                    always reported -- and no thread is stuck for good
 *                    (no invalid end state).
 *   -DCONFIG_SAFETY -DBUG_ONE_PASS  the detector that reports what its
 *                    first reading found: a lock released while it looked
 *                    makes it report a cycle that never was (refuted:
 *                    NO_FALSE_REPORT).
 *
 * Property NO_FALSE_REPORT (INVARIANT D of deadlock.c): a thread reports
 * only when a cycle of waits through it existed at the end of its first
 * reading (the ghost cycle_then, set in that reading's last step from the
 * true state of every lock and wait).
 *
 * Abstractions: exclusive locks only (a hold is its holder's token, fresh
 * for each acquisition, never reused: INVARIANT B of exclusive.c); a
 * wait register entry is wait_lock[] and wait_id[] (fresh per wait:
 * INVARIANT W of waits.c); each atomic step is one read or one write of
 * the file system; threads are alive (deadlock.c checks that last, after
 * the second reading); the asker's own hold is the end of the chain.  A
 * lock is taken only when free (the rename onto an absent W).  Not
 * modelled: shared, range and permit locks, and the entries their waits
 * make only to look (deadlock.c skips them, transient()): the stress
 * tests run them against the library's own checkers (tests/rw-range.t,
 * the mixed modes of tests/core-stale.t), where a false report shows as
 * an error, and tests/deadlock.t runs exclusive locks against the truth. */

#ifdef CONFIG_LIVE
#define NP 2
#define NL 2
#else
#define NP 3
#define NL 3
#define ROUNDS(p) (p == 1 -> 2 : 1)
/* Only thread 0 checks (the property is about one checker's reports; the
 * others make and break holds and waits around it, thread 1 twice). */
#define CHECKS(p) (p == 0)
#define RECHECKS 2 /* the code re-checks every 200 ms; two of them here */
#endif
#define MAXT 15 /* tokens */

/* A fresh token (and wait id).  CONFIG_LIVE, which runs forever, draws
 * them from a ring of two per thread; it checks liveness only. */
#ifdef CONFIG_LIVE
#define NEW_TOKEN(t) t = 1 + p * 2 + k; k = 1 - k
#define NEW_ID(v) v = 1 + p * 2 + m; m = 1 - m
#else
#define NEW_TOKEN(t) t = next_tok; next_tok++
#define NEW_ID(v) v = next_id; next_id++
#endif

byte holder[NL];     /* token of the holder, 0: free             */
byte owner_of[MAXT]; /* the thread that drew token t            */
byte wait_lock[NP];  /* 1 + the lock thread p waits for; 0: none */
byte wait_id[NP];    /* the id of p's wait entry                */
byte next_tok = 1;
byte next_id = 1;

/* Thread p waits for a lock held by thread q. */
#define EDGE(p, q) (wait_lock[p] != 0 && holder[wait_lock[p] - 1] != 0 && owner_of[holder[wait_lock[p] - 1]] == q)
#if NP == 2
#define CYCLE_THROUGH(p) (EDGE(p, 1 - p) && EDGE(1 - p, p))
#else
#define CYCLE_THROUGH(p)                                                                     \
        ((EDGE(p, (p + 1) % 3) && EDGE((p + 1) % 3, p)) || (EDGE(p, (p + 2) % 3) && EDGE((p + 2) % 3, p)) || \
         (EDGE(p, (p + 1) % 3) && EDGE((p + 1) % 3, (p + 2) % 3) && EDGE((p + 2) % 3, p)) ||          \
         (EDGE(p, (p + 2) % 3) && EDGE((p + 2) % 3, (p + 1) % 3) && EDGE((p + 1) % 3, p)))
#endif

#ifdef CONFIG_LIVE
#define ANY_CYCLE (CYCLE_THROUGH(0) || CYCLE_THROUGH(1))
ltl cycles_broken { [] (ANY_CYCLE -> <> !ANY_CYCLE) }
#endif

proctype T(byte p)
{
        byte x, y, t;
        byte c, q, l, n, i, ht;
        byte hl[NP], htok[NP], wq[NP], wid[NP];
        bool found, ok, cycle_then;
#ifdef CONFIG_LIVE
        bit k = 0, m = 0;
#endif
#ifndef CONFIG_LIVE
        byte looks = 0; /* checks of this wait (at most RECHECKS more) */
#endif
#ifndef CONFIG_LIVE
        byte r = 0;
#endif
        do
#ifndef CONFIG_LIVE
        :: r == ROUNDS(p) -> break
#endif
        :: else ->
                /* the locks, in an order of its own */
#ifdef CONFIG_LIVE
                x = p;
                y = 1 - p;
#else
                /* thread p first takes lock p (a thread that takes another
                 * first is the same, the locks renamed), then either other */
                x = p;
                if
                :: y = (x + 1) % NL :: y = (x + 2) % NL
                fi;
#endif
                /* take x (it waits for a free x without a check: no hold) */
                atomic {
                        holder[x] == 0 -> NEW_TOKEN(t);
                        owner_of[t] = p;
                        holder[x] = t
                };
                /* y is busy: its wait entry first (waits.c), then the check */
                atomic {
                        wait_lock[p] = y + 1;
                        NEW_ID(wait_id[p])
                };
check:
#ifndef CONFIG_LIVE
                if
                :: !CHECKS(p) -> goto wait
                :: else -> skip
                fi;
#endif
                /* ---- pass 1: from its own wait, one entry at a time ---- */
                c = p;
                l = y;
                n = 0;
                found = false;
                cycle_then = false;
                do
                :: n < NP ->
                        /* the hold in the way: W's owner entry */
                        atomic {
                                ht = holder[l];
                                hl[n] = l;
                                htok[n] = ht;
                                if
                                :: ht != 0 && owner_of[ht] == p ->
                                        found = true;
                                        cycle_then = CYCLE_THROUGH(p) /* the ghost: true now? */
                                :: else -> skip
                                fi
                        };
                        if
                        :: ht == 0 || found -> break
                        :: else -> skip
                        fi;
                        /* its holder's wait entry, found by the thread */
                        atomic {
                                q = owner_of[ht];
                                if
                                :: wait_lock[q] != 0 ->
                                        wq[n] = q;
                                        wid[n] = wait_id[q];
                                        l = wait_lock[q] - 1
                                :: else -> q = NP /* not waiting: no proof */
                                fi
                        };
                        if
                        :: q == NP -> break
                        :: else -> n++
                        fi
                :: else -> break
                od;
                ok = found;
#ifndef BUG_ONE_PASS
                /* ---- pass 2: every hold again, then every wait entry ---- */
                i = 0;
                do
                :: ok && i <= n -> atomic { ok = holder[hl[i]] == htok[i]; i++ }
                :: else -> break
                od;
                i = 0;
                do
                :: ok && i < n -> atomic { ok = wait_lock[wq[i]] != 0 && wait_id[wq[i]] == wid[i]; i++ }
                :: else -> break
                od;
#endif
                if
                :: ok ->
                        /* DIRLOCK_EDEADLK */
#ifndef CONFIG_LIVE
                        assert(cycle_then); /* NO_FALSE_REPORT */
#endif
                        atomic {
                                wait_lock[p] = 0;
                                wait_id[p] = 0
                        };
                        goto let_go
                :: else -> skip
                fi;
                /* the check found nothing: forget what it read */
                atomic {
                        n = 0; c = 0; q = 0; l = 0; ht = 0; i = 0;
                        hl[0] = 0; hl[1] = 0; hl[2 % NP] = 0;
                        htok[0] = 0; htok[1] = 0; htok[2 % NP] = 0;
                        wq[0] = 0; wq[1] = 0; wq[2 % NP] = 0;
                        wid[0] = 0; wid[1] = 0; wid[2 % NP] = 0;
                        found = false; ok = false; cycle_then = false
                };
                /* wait: get y, give up, or look again (a re-check) */
#ifndef CONFIG_LIVE
                looks++;
wait:
#endif
                if
                :: atomic {
                        holder[y] == 0 -> NEW_TOKEN(t);
                        owner_of[t] = p;
                        holder[y] = t;
                        wait_lock[p] = 0;
                        wait_id[p] = 0
                };
                        holder[y] = 0 /* release y */
#ifndef CONFIG_LIVE
                :: atomic { wait_lock[p] = 0; wait_id[p] = 0 } /* timed out */
#endif
#ifndef CONFIG_LIVE
                :: CHECKS(p) && looks <= RECHECKS -> goto check
#else
                :: goto check
#endif
                fi;
let_go:
                holder[x] = 0; /* release x */
                atomic {
                        n = 0; c = 0; q = 0; l = 0; ht = 0; i = 0; t = 0;
                        hl[0] = 0; hl[1] = 0; hl[2 % NP] = 0;
                        htok[0] = 0; htok[1] = 0; htok[2 % NP] = 0;
                        wq[0] = 0; wq[1] = 0; wq[2 % NP] = 0;
                        wid[0] = 0; wid[1] = 0; wid[2 % NP] = 0;
                        found = false; ok = false; cycle_then = false
#ifndef CONFIG_LIVE
                        ; looks = 0
#endif
                };
#ifndef CONFIG_LIVE
                r++
#else
                skip
#endif
        od
}

init
{
        atomic {
                byte k;
                for (k : 0 .. NP - 1) {
                        run T(k)
                }
        }
}
