/* deadlock.pml - a Promela model of the deadlock detection of
 * lib/dir/deadlock.c: threads that take one lock and then wait for
 * another, making their wait register entry (waits.c) before they look;
 * detectors that follow the waits from their own, one entry at a time,
 * report only what a second reading confirms, and only when their own
 * wait is the cycle's victim (the youngest: the highest wait id, ids
 * being drawn in order), after marking their entry told and advancing the
 * verdict counter they read before they looked (a compare-and-swap);
 * waits given up (a timeout) and waited again while the first lock is
 * kept (a retry), and locks released while a detector looks.
 *
 * verify-config: -DCONFIG_SAFETY
 * verify-config: -DCONFIG_VICTIM -DRING=2
 * verify-config: -DCONFIG_VICTIM -DRING=3
 * verify-config: -DCONFIG_LIVE
 * verify-expect-error: -DCONFIG_SAFETY -DBUG_ONE_PASS
 * verify-expect-error: -DCONFIG_VICTIM -DRING=2 -DBUG_EVERY_MEMBER
 * verify-expect-error: -DCONFIG_VICTIM -DRING=3 -DBUG_NO_CLAIM
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
 *   -DCONFIG_VICTIM -DRING=N  N threads (2 or 3) taking N locks, thread
 *                    p lock p and then lock p + 1 (mod N): the cycle of
 *                    all N, every one of them checking (at its first
 *                    check, with RING=2 one recheck more), each able to
 *                    give up at any moment, thread 0 then waiting again
 *                    once with its first lock kept (a retry: its new wait
 *                    is the youngest): NO_FALSE_REPORT and ONE_VICTIM in
 *                    every report.
 *   -DCONFIG_LIVE    2 threads taking 2 locks in opposite orders forever,
 *                    never giving up: under weak fairness every cycle of
 *                    waits is broken (LTL cycles_broken) -- a cycle is
 *                    always reported, by its victim -- and no thread is
 *                    stuck for good (no invalid end state).
 *   -DCONFIG_SAFETY -DBUG_ONE_PASS  the detector that reports what its
 *                    first reading found: a lock released while it looked
 *                    makes it report a cycle that never was (refuted:
 *                    NO_FALSE_REPORT).
 *   -DCONFIG_VICTIM -DRING=2 -DBUG_EVERY_MEMBER  every member that sees
 *                    the cycle reports it (the detector before issue 44):
 *                    two checks at about the same moment both report, and
 *                    the cycle is broken twice over (refuted: ONE_VICTIM).
 *   -DCONFIG_VICTIM -DRING=3 -DBUG_NO_CLAIM  the victim rule without the
 *                    mark and the verdict counter: a victim whose check
 *                    is slow reports a cycle whose other member meanwhile
 *                    gave up, waited again -- its new wait now the
 *                    youngest -- and reported the new cycle, which the
 *                    slow one is also in (refuted: ONE_VICTIM).
 *
 * Property NO_FALSE_REPORT (INVARIANT D of deadlock.c): a thread reports
 * only when a cycle of waits through it existed at the end of its first
 * reading (the ghost cycle_then, set in that reading's last step from the
 * true state of every lock and wait).
 * Property ONE_VICTIM (INVARIANT V of deadlock.c): two threads are never
 * both told of cycles that one of their told waits was in: when p is
 * told in wait w, no other member of p's cycle at the end of p's first
 * reading was told in the wait it was in then (the ghost told_in), and w
 * was in no earlier report's cycle (the ghost in_told_cycle).  The truth
 * ignores marks: a thread marked told still waits until it leaves.
 *
 * Abstractions: exclusive locks only (a hold is its holder's token, fresh
 * for each acquisition, never reused: INVARIANT B of exclusive.c), so a
 * knot is a cycle and every member sees the same one; a wait register
 * entry is wait_lock[], wait_id[] and wait_told[] (the id fresh per wait:
 * INVARIANT W of waits.c); the verdict counter (a file renamed from N to
 * N + 1, dir_fence.c's COUNTER) is one variable, its rename one atomic
 * compare-and-swap (the code reads it only once a first reading found
 * the checker a victim, and then reads the graph again: that first
 * reading, a guard that can only end a check, is left out); each other
 * atomic step is one read or one write of the file system; threads are
 * alive (deadlock.c checks that last, after the second reading); the
 * asker's own hold is the end of the chain.  A lock is taken only when
 * free (the rename onto an absent W).  Not
 * modelled: shared, range and permit locks -- waits blocked by several
 * holds, whose knots deadlock.c finds as the largest closed and strongly
 * connected set of waits around the asker -- and the entries their waits
 * make only to look (deadlock.c skips them, transient()): the stress
 * tests run them against the library's own checkers (tests/rw-range.t,
 * the mixed modes of tests/core-stale.t, tests/permits.t's knots), where
 * a false report shows as an error, and tests/deadlock.t runs exclusive
 * locks against the truth. */

#ifdef CONFIG_LIVE
#define NP 2
#define NL 2
#define CHECKS(p) true
#define RETRIES(p) 0
#elif defined(CONFIG_VICTIM)
#ifndef RING
#define RING 3
#endif
#define NP RING
#define NL RING
#define ROUNDS(p) 1
/* Every thread checks; thread 0 may give up once and wait again. */
#define CHECKS(p) true
#define RETRIES(p) (p == 0 -> 1 : 0)
#define RECHECKS (RING == 2 -> 1 : 0)
#else
#define NP 3
#define NL 3
#define ROUNDS(p) (p == 1 -> 2 : 1)
/* Only thread 0 checks (the property is about one checker's reports; the
 * others make and break holds and waits around it, thread 1 twice). */
#define CHECKS(p) (p == 0)
#define RETRIES(p) 0
#define RECHECKS 2 /* the code re-checks every 200 ms; two of them here */
#endif
#define MAXT 15 /* tokens */

/* A fresh token (and wait id).  CONFIG_LIVE, which runs forever, draws
 * them from a ring of two per thread; it checks liveness only (its ids
 * still order the waits totally, so the victim rule picks one). */
#ifdef CONFIG_LIVE
#define NEW_TOKEN(t) t = 1 + p * 2 + k; k = 1 - k
#define NEW_ID(v) v = 1 + p * 2 + m; m = 1 - m
#define ADVANCE(v) v = 1 - v
#else
#define NEW_TOKEN(t) t = next_tok; next_tok++
#define NEW_ID(v) v = next_id; next_id++
#define ADVANCE(v) v++
#endif

byte holder[NL];     /* token of the holder, 0: free             */
byte owner_of[MAXT]; /* the thread that drew token t            */
byte wait_lock[NP];  /* 1 + the lock thread p waits for; 0: none */
byte wait_id[NP];    /* the id of p's wait entry                */
bool wait_told[NP];  /* its entry marked told                   */
byte verdicts;       /* the verdict counter                     */
byte next_tok = 1;
byte next_id = 1;
#ifndef CONFIG_LIVE
byte told_in[NP];       /* ghost: the wait p was told in             */
byte in_told_cycle[NP]; /* ghost: p's wait that was in a told cycle  */
#endif

/* Thread p waits for a lock held by thread q; for a held lock, whose
 * holder is NEXT(p). */
#define EDGE(p, q) (wait_lock[p] != 0 && holder[wait_lock[p] - 1] != 0 && owner_of[holder[wait_lock[p] - 1]] == q)
#define BLOCKED(p) (wait_lock[p] != 0 && holder[wait_lock[p] - 1] != 0)
#define NEXT(p) owner_of[holder[wait_lock[p] - 1]]

#ifdef CONFIG_LIVE
#define ANY_CYCLE (EDGE(0, 1) && EDGE(1, 0))
ltl cycles_broken { [] (ANY_CYCLE -> <> !ANY_CYCLE) }
#endif

proctype T(byte p)
{
        byte x, y, t, e;
        byte c, q, l, n, i, ht, g;
        byte hl[NP], htok[NP], wq[NP], wid[NP];
        bool found, ok, victim, cycle_then;
#ifdef CONFIG_LIVE
        bit k = 0, m = 0;
#else
        byte gid[NP]; /* ghost: the cycle's members' waits at the end of pass 1 */
        byte looks = 0, r = 0, tries = 0;
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
#ifdef CONFIG_VICTIM
                y = (x + 1) % NL; /* the ring */
#else
                if
                :: y = (x + 1) % NL :: y = (x + 2) % NL
                fi;
#endif
#endif
                /* take x (it waits for a free x without a check: no hold) */
                atomic {
                        holder[x] == 0 -> NEW_TOKEN(t);
                        owner_of[t] = p;
                        holder[x] = t
                };
again:
                /* y is busy: its wait entry first (waits.c), then the check */
                atomic {
                        wait_lock[p] = y + 1;
                        NEW_ID(wait_id[p])
                };
check:
                if
                :: !CHECKS(p) -> goto wait
                :: else -> skip
                fi;
                /* the verdict counter, before anything else is read */
                e = verdicts;
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
                                        /* the ghost: the truth now, marks ignored */
#ifndef CONFIG_LIVE
                                        g = p;
                                        i = 0;
                                        do
                                        :: i < NP && BLOCKED(g) ->
                                                g = NEXT(g);
                                                if
                                                :: g == p -> cycle_then = true; break
                                                :: else -> gid[g] = wait_id[g]; i++
                                                fi
                                        :: else -> break
                                        od;
                                        if
                                        :: !cycle_then -> gid[0] = 0; gid[1] = 0; gid[2 % NP] = 0
                                        :: else -> skip
                                        fi;
                                        i = 0
#endif
                                :: else -> skip
                                fi
                        };
                        if
                        :: ht == 0 || found -> break
                        :: else -> skip
                        fi;
                        /* its holder's wait entry, found by the thread: a
                         * waiter marked told is leaving, no node */
                        atomic {
                                q = owner_of[ht];
                                if
                                :: wait_lock[q] != 0 && !wait_told[q] ->
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
                /* the victim: the youngest wait of the cycle */
                victim = found;
#ifndef BUG_EVERY_MEMBER
                i = 0;
                do
                :: victim && i < n -> victim = wid[i] < wait_id[p]; i++
                :: else -> break
                od;
#endif
                ok = victim;
#ifndef BUG_ONE_PASS
                /* ---- pass 2: every hold again, then every wait entry ---- */
                i = 0;
                do
                :: ok && i <= n -> atomic { ok = holder[hl[i]] == htok[i]; i++ }
                :: else -> break
                od;
                i = 0;
                do
                :: ok && i < n ->
                        atomic {
                                ok = wait_lock[wq[i]] != 0 && wait_id[wq[i]] == wid[i] && !wait_told[wq[i]];
                                i++
                        }
                :: else -> break
                od;
#endif
#if !defined(BUG_EVERY_MEMBER) && !defined(BUG_NO_CLAIM)
                /* the mark, then the claim: the counter still at e? */
                if
                :: ok ->
                        wait_told[p] = true;
                        atomic {
                                if
                                :: verdicts == e -> ADVANCE(verdicts)
                                :: else -> ok = false
                                fi
                        };
                        if
                        :: !ok -> wait_told[p] = false /* another report came first */
                        :: else -> skip
                        fi
                :: else -> skip
                fi;
#endif
                if
                :: ok ->
                        /* DIRLOCK_EDEADLK */
                        atomic {
#ifndef CONFIG_LIVE
                                assert(cycle_then); /* NO_FALSE_REPORT */
                                /* ONE_VICTIM */
                                assert(in_told_cycle[p] != wait_id[p]);
                                i = 0;
                                do
                                :: i < NP ->
                                        assert(i == p || gid[i] == 0 || told_in[i] != gid[i]);
                                        if
                                        :: i != p && gid[i] != 0 -> in_told_cycle[i] = gid[i]
                                        :: else -> skip
                                        fi;
                                        i++
                                :: else -> break
                                od;
                                told_in[p] = wait_id[p];
#endif
                                wait_lock[p] = 0;
                                wait_id[p] = 0;
                                wait_told[p] = false
                        };
                        goto let_go
                :: else -> skip
                fi;
                /* the check found nothing: forget what it read */
                atomic {
                        n = 0; c = 0; q = 0; l = 0; ht = 0; i = 0; g = 0; e = 0;
                        hl[0] = 0; hl[1] = 0; hl[2 % NP] = 0;
                        htok[0] = 0; htok[1] = 0; htok[2 % NP] = 0;
                        wq[0] = 0; wq[1] = 0; wq[2 % NP] = 0;
                        wid[0] = 0; wid[1] = 0; wid[2 % NP] = 0;
#ifndef CONFIG_LIVE
                        gid[0] = 0; gid[1] = 0; gid[2 % NP] = 0;
#endif
                        found = false; ok = false; victim = false; cycle_then = false
                };
                /* wait: get y, give up (and maybe wait again), or look again */
#ifndef CONFIG_LIVE
                looks++;
#endif
wait:
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
                :: atomic { wait_lock[p] = 0; wait_id[p] = 0 }; /* timed out */
                        if
                        :: tries < RETRIES(p) -> tries++; looks = 0; goto again
                        :: else -> skip
                        fi
                :: CHECKS(p) && looks <= RECHECKS -> goto check
#else
                :: goto check
#endif
                fi;
let_go:
                holder[x] = 0; /* release x */
                atomic {
                        n = 0; c = 0; q = 0; l = 0; ht = 0; i = 0; t = 0; g = 0; e = 0;
                        hl[0] = 0; hl[1] = 0; hl[2 % NP] = 0;
                        htok[0] = 0; htok[1] = 0; htok[2 % NP] = 0;
                        wq[0] = 0; wq[1] = 0; wq[2 % NP] = 0;
                        wid[0] = 0; wid[1] = 0; wid[2 % NP] = 0;
                        found = false; ok = false; victim = false; cycle_then = false
#ifndef CONFIG_LIVE
                        ; gid[0] = 0; gid[1] = 0; gid[2 % NP] = 0; looks = 0; tries = 0
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
