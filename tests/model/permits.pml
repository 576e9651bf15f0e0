/* permits.pml - a Promela model of the counting locks of lib/dir/permits.c:
 * permits that are exclusive locks of their own (rename of a prepared
 * directory onto an absent or empty permit, release by unlink and rmdir,
 * judgement and break of a dead or paused holder's entry), takers that
 * ask different numbers N and look at the other groups after taking
 * (INVARIANT Q), crashes, holders paused past the stale age, and breakers
 * paused between their judgement and their unlink.
 *
 * verify-config: -DCONFIG_SAFETY
 * verify-config: -DCONFIG_MIXED
 * verify-config: -DCONFIG_LIVE
 * verify-expect-error: -DCONFIG_SAFETY -DBUG_COUNT
 * verify-expect-error: -DCONFIG_SAFETY -DBUG_MKDIR
 * verify-expect-error: -DCONFIG_MIXED -DBUG_NO_LOOK
 *
 * Checked by `make verify` (tests/model/model.mk; the lines above):
 *   -DCONFIG_SAFETY  N = 2: two processes that take a permit, hold it and
 *                    release it (two rounds each), and one that holds two
 *                    permits at once (the only way it gets on: a permit
 *                    lost or leaked leaves it waiting forever, an invalid
 *                    end state); at most one crash, pauses.
 *   -DCONFIG_MIXED   one process asks N = 1, two ask N = 2: never two
 *                    holders that asked different N (ONE_N).
 *   -DCONFIG_LIVE    N = 2: a process that may crash while holding, and one
 *                    that holds two permits at once, forever: under weak
 *                    fairness a dead holder's permit is always given back
 *                    (LTL dead_freed) and the second keeps getting both
 *                    (LTL both_permits).
 *   -DCONFIG_SAFETY -DBUG_COUNT  the counting semaphore written the usual
 *                    way with files: count the holders' entries, and add
 *                    one's own when fewer than N -- a count read and then
 *                    acted on (refuted: AT_MOST_N).
 *   -DCONFIG_SAFETY -DBUG_MKDIR  a permit taken by mkdir and its owner
 *                    record written after (seed 001's lock, one per
 *                    permit): between the two the permit is held without
 *                    a record, so a crash there leaves it held by nobody
 *                    that can be judged, and the rmdir of a releaser or
 *                    breaker that just emptied it removes it under its new
 *                    holder, whom a second taker then joins (refuted:
 *                    LOST_KNOWN, a holder finds its permit gone though it
 *                    was never paused).
 *   -DCONFIG_MIXED -DBUG_NO_LOOK  takers that do not look at the other
 *                    groups after taking (refuted: ONE_N).
 *
 * Properties (the monitor asserts them in every reachable state):
 *   AT_MOST_N    at most N processes hold permits asked with N, where a
 *                process holds from its rename until its release, unless a
 *                breaker removed its entry.
 *   ONE_N        no two acquires that asked different N have returned OK
 *                and not yet released.
 *   NO_STRAY     every owner entry in a permit is that of a holder (in its
 *                critical section), of a crashed process, or of a taker
 *                that is still looking at the other groups: nobody leaves
 *                one behind.
 * and, in the processes' steps: OK_HELD (an acquire that returns OK still
 * holds its permit), JUDGED_ONLY (a breaker removes only the entry it
 * judged), LIVE_KEEPS (a holder never paused is never broken), LOST_KNOWN
 * (a holder whose entry is gone was broken while paused or dead).
 *
 * Abstractions, as in stale.pml: tokens are fresh small integers (128
 * random bits in C, never reused); permit s is dir[s] (exists) and
 * entry[s] (the token of its one owner entry, 0: empty -- INVARIANT A of
 * exclusive.c); each atomic block is one system call.  A taker may try
 * the permits in any order (the C code tries them in order, the absent
 * ones first unless judging); "stale" is "owner crashed or paused"; a
 * paused holder checks (dirlock_check) when it resumes.  Waiting is a
 * guard: a taker that found nothing waits until some permit of its group
 * is absent, empty, or held by a crashed or paused process (the code's
 * re-check every 100 ms finds such a one); the FIFO queue and wake-ups
 * are not modelled (they decide who tries, never who holds). */

#define NP 3

#ifdef CONFIG_MIXED
#define NS 3 /* N = 1: permit 0; N = 2: permits 1 and 2 */
#define FIRST(n) (n == 1 -> 0 : 1)
#define LAST(n) (n == 1 -> 0 : 2)
#define ASKS(i) (i == 0 -> 1 : 2)
#define ROUNDS(i) (i == 0 -> 2 : 1)
#define WANTS(i) 1
#else
#ifdef BUG_COUNT
#define NS 3 /* the entries a directory of holders has room for */
#else
#define NS 2
#endif
#define FIRST(n) 0
#define LAST(n) (NS - 1)
#define ASKS(i) 2
#define ROUNDS(i) (i == 0 -> 2 : 1)
#define WANTS(i) (i < 2 -> 1 : 2) /* permits held at once */
#endif

#ifdef CONFIG_LIVE
#undef NP
#define NP 2
#undef WANTS
#define WANTS(i) (i + 1)
#define MAXTOK 12
#else
#define MAXTOK 10
#endif
#define MAXCRASH 1

bool dir[NS];
byte entry[NS];
byte next_tok = 1;
byte owner[MAXTOK + 1];  /* process that drew token t                */
byte asked[MAXTOK + 1];  /* the N its acquire asked                    */
bool broken[MAXTOK + 1]; /* t's entry was removed by a breaker         */
bool inside[MAXTOK + 1]; /* t renamed in and has not released          */
bool okay[MAXTOK + 1];   /* t's acquire returned OK, not yet released  */
bool crashed[NP];
bool paused[NP];
byte crashes = 0;
#ifdef CONFIG_LIVE
bool both = false; /* process 1 holds both permits */
#define CAN_CRASH(i) (i == 0)
#else
#define CAN_CRASH(i) true
#endif
/* Only process 0 is ever paused past the stale age (the others keep
 * their locks fresh): enough to break a live holder, fewer states. */
#define CAN_PAUSE(i) (i == 0)

/* What a waiting taker may try: an absent or empty permit, or a stale
 * holder's (with BUG_MKDIR an empty permit is taken: mkdir fails). */
#ifdef BUG_MKDIR
#define TRYABLE(s) (!dir[s] || (entry[s] != 0 && STALE(entry[s])))
#else
#define TRYABLE(s) (!dir[s] || entry[s] == 0 || STALE(entry[s]))
#endif

#define STALE(t) (crashed[owner[t]] || paused[owner[t]])
/* The newest token drawn when a breaker judges (JUDGED_ONLY). */
#ifdef CONFIG_LIVE
#define SEEN MAXTOK
#else
#define SEEN (next_tok - 1)
#endif
#define HOLDS(t) (inside[t] && !broken[t])

/* ---- the monitor: AT_MOST_N, ONE_N, NO_STRAY in every state ---------- */

#define HOLDING(n, t) (HOLDS(t) && asked[t] == n -> 1 : 0)
#define HOLDERS(n)                                                                                       \
        (HOLDING(n, 1) + HOLDING(n, 2) + HOLDING(n, 3) + HOLDING(n, 4) + HOLDING(n, 5) + HOLDING(n, 6) + \
         HOLDING(n, 7) + HOLDING(n, 8) + HOLDING(n, 9) + HOLDING(n, 10))
#define OKN(n, t) (okay[t] && !broken[t] && asked[t] == n)
#define ANY_OK(n) (OKN(n, 1) || OKN(n, 2) || OKN(n, 3) || OKN(n, 4) || OKN(n, 5) || OKN(n, 6) || OKN(n, 7) || \
                   OKN(n, 8) || OKN(n, 9) || OKN(n, 10))
#define SLOT_OK(s) (entry[s] == 0 || inside[entry[s]] || crashed[owner[entry[s]]])

#ifndef CONFIG_LIVE
active proctype monitor()
{
        byte holders_asking_1, holders_asking_2;
        bool one_n, no_stray;
        atomic {
                holders_asking_1 = HOLDERS(1);
                holders_asking_2 = HOLDERS(2);
                one_n = !(ANY_OK(1) && ANY_OK(2));
                no_stray = SLOT_OK(0) && SLOT_OK(1) && (NS < 3 || SLOT_OK(NS - 1));
                assert(holders_asking_1 <= 1 && holders_asking_2 <= 2); /* AT_MOST_N */
                assert(one_n);
                assert(no_stray)
        }
}
#endif

/* A crash (SIGKILL) at this point: the process stops; its entries stay. */
#define CRASH_POINT                                  \
        if                                           \
        :: crashes < MAXCRASH && CAN_CRASH(i) -> atomic { \
                crashes++;                           \
                crashed[i] = true                    \
        };                                           \
                goto dead                            \
        :: true -> skip                              \
        fi

/* ---- one acquisition ------------------------------------------------- */

/* Take one permit of group n for token t (dl_permit_try, dl_take_w,
 * other_groups).  Sets ok on success; the permit taken is in s. */
inline acquire(t, n, s, ok)
{
        ok = false;
        do
        :: true ->
                /* one attempt: try the permits in any order */
                s = FIRST(n);
                do
                :: s <= LAST(n) ->
#ifdef BUG_COUNT
                        /* count the holders' entries ... */
                        atomic {
                                c = (entry[0] != 0 -> 1 : 0) + (entry[1] != 0 -> 1 : 0) + (entry[2] != 0 -> 1 : 0)
                        };
                        /* ... and add ours when fewer than N */
                        atomic {
                                if
                                :: c < n && entry[s] == 0 ->
                                        dir[s] = true;
                                        entry[s] = t;
                                        inside[t] = true;
                                        ok = true
                                :: else -> skip
                                fi
                        };
#elif defined(BUG_MKDIR)
                        /* mkdir the permit: fails when present */
                        atomic {
                                if
                                :: !dir[s] ->
                                        dir[s] = true;
                                        inside[t] = true;
                                        ok = true
                                :: else -> skip
                                fi
                        };
                        if
                        :: ok ->
                                CRASH_POINT;
                                entry[s] = t /* ... then write the owner record */
                        :: else -> skip
                        fi;
#else
                        /* rename(D/.NAME.<T>.new, permit s): onto an
                         * absent or empty directory only */
                        atomic {
                                if
                                :: !dir[s] || entry[s] == 0 ->
                                        dir[s] = true;
                                        entry[s] = t;
                                        inside[t] = true;
                                        ok = true
                                :: else -> skip
                                fi
                        };
#endif
                        if
                        :: ok -> break
                        :: else -> skip
                        fi;
                        /* judge permit s (readdir, readlink, /proc) */
                        atomic {
                                jt = entry[s];
                                if
                                :: jt != 0 && STALE(jt) -> seen = SEEN
                                :: else -> jt = 0
                                fi
                        };
                        if
                        :: jt != 0 ->
                                /* a breaker may stay here for any time */
                                atomic {
                                        if
                                        :: entry[s] == jt ->
                                                assert(jt <= seen); /* JUDGED_ONLY */
                                                entry[s] = 0;
                                                broken[jt] = true
                                        :: else -> skip /* ENOENT: broken or released */
                                        fi;
                                        jt = 0;
                                        seen = 0
                                };
                                atomic {
                                        if
                                        :: dir[s] && entry[s] == 0 -> dir[s] = false /* rmdir */
                                        :: else -> skip
                                        fi
                                }
                                /* and the same permit again */
                        :: else -> s++
                        fi
                :: else -> break
                od;
                if
                :: ok -> break
                :: else ->
                        /* wait until there is something to try */
                        atomic {
                                (FIRST(n) == 0 && TRYABLE(0)) || (LAST(n) >= 1 && FIRST(n) <= 1 && TRYABLE(1)) ||
                                (NS > 2 && LAST(n) >= 2 && TRYABLE(NS - 1))
                        }
                fi
        od;
#ifdef CONFIG_MIXED
        /* INVARIANT Q: look at the other group, one permit at a time */
#ifndef BUG_NO_LOOK
        o = (n == 1 -> 1 : 0);
        do
        :: o <= (n == 1 -> 2 : 0) ->
                /* group_live(): a live holder is a conflict, a stale one
                 * is broken (judged, then its entry unlinked) */
                atomic {
                        jt = entry[o];
                        if
                        :: jt != 0 && !STALE(jt) -> conflict = true; jt = 0
                        :: jt != 0 && STALE(jt) -> seen = SEEN
                        :: else -> skip
                        fi
                };
                if
                :: jt != 0 ->
                        atomic {
                                if
                                :: entry[o] == jt ->
                                        assert(jt <= seen); /* JUDGED_ONLY */
                                        entry[o] = 0;
                                        broken[jt] = true
                                :: else -> skip
                                fi;
                                jt = 0;
                                seen = 0
                        }
                :: else -> skip
                fi;
                o++
        :: else -> o = 0; break
        od;
#endif
        if
        :: conflict ->
                /* give the permit back (dl_excl_release) and refuse */
                atomic {
                        inside[t] = false;
                        if
                        :: entry[s] == t -> entry[s] = 0
                        :: else -> skip
                        fi
                };
                atomic {
                        if
                        :: dir[s] && entry[s] == 0 -> dir[s] = false
                        :: else -> skip
                        fi
                };
                ok = false;
                conflict = false
        :: else -> skip
        fi;
#endif
        if
        :: ok ->
                atomic {
                        assert(entry[s] == t || crashed[i] || paused[i]); /* OK_HELD */
                        okay[t] = true
                }
        :: else -> skip
        fi
}

/* Release token t's permit s (dl_excl_release): check, unlink, rmdir. */
inline release(t, s)
{
        atomic {
                okay[t] = false;
                inside[t] = false;
                if
                :: entry[s] == t -> entry[s] = 0; unlinked = true
                :: else ->
                        assert(broken[t] && waspaused); /* LOST_KNOWN, LIVE_KEEPS */
                        unlinked = false
                fi
        };
        if
        :: unlinked ->
                atomic {
                        if
                        :: dir[s] && entry[s] == 0 -> dir[s] = false
                        :: else -> skip
                        fi;
                        unlinked = false
                }
        :: else -> skip
        fi
}

/* A fresh token for handle k of process i asking n.  CONFIG_LIVE, which
 * runs forever, gives each handle two tokens in turn (token 2 * (2 * i + k)
 * + g + 1, g its generation), as stale.pml does: only a crashed process's
 * entries are ever broken there, and it never draws again. */
#ifdef CONFIG_LIVE
inline draw(t, n, k)
{
        atomic {
                t = 2 * (2 * i + k) + g[k] + 1;
                g[k] = 1 - g[k];
                owner[t] = i;
                asked[t] = n;
                broken[t] = false
        }
}
#else
inline draw(t, n, k)
{
        atomic {
                t = next_tok;
                next_tok++;
                owner[t] = i;
                asked[t] = n
        }
}
#endif

proctype P(byte i)
{
        byte t1, t2, s1, s2, jt, seen, o, c;
        bool ok, conflict, unlinked, waspaused;
        bit g[2];
#ifndef CONFIG_LIVE
        byte r = 0;
#endif
        do
#ifndef CONFIG_LIVE
        :: r == ROUNDS(i) -> break
#endif
        :: else ->
                waspaused = false;
                draw(t1, ASKS(i), 0);
                acquire(t1, ASKS(i), s1, ok);
                if
                :: !ok -> goto next /* refused: another N is held */
                :: else -> skip
                fi;
                if
                :: WANTS(i) == 2 ->
                        draw(t2, ASKS(i), 1);
                        acquire(t2, ASKS(i), s2, ok);
                        assert(ok)
                :: else -> skip
                fi;
#ifdef CONFIG_LIVE
                if
                :: WANTS(i) == 2 -> both = true
                :: else -> skip
                fi;
#endif
                /* the critical section: maybe paused past the stale age */
#ifndef CONFIG_LIVE
                if
                :: CAN_PAUSE(i) ->
                        paused[i] = true;
                        waspaused = true;
                        paused[i] = false
                :: true -> skip
                fi;
#endif
                CRASH_POINT;
                /* dirlock_check before the commit */
                atomic {
                        if
                        :: entry[s1] == t1 -> skip
                        :: else -> assert(broken[t1] && waspaused) /* LOST_KNOWN, LIVE_KEEPS */
                        fi
                };
#ifdef CONFIG_LIVE
                both = false;
#endif
                release(t1, s1);
                if
                :: WANTS(i) == 2 -> release(t2, s2)
                :: else -> skip
                fi;
                atomic {
                        t1 = 0;
                        t2 = 0;
                        s1 = 0;
                        s2 = 0;
                        ok = false;
                        waspaused = false
                };
next:
#ifndef CONFIG_LIVE
                r++
#else
                skip
#endif
        od;
        goto finished;
dead:
        skip;
finished:
        skip
}

#ifdef CONFIG_LIVE
/* Process 0 may die holding its permit; process 1 needs both. */
#define dead_holds ((entry[0] != 0 && crashed[owner[entry[0]]]) || (entry[1] != 0 && crashed[owner[entry[1]]]))
ltl dead_freed { [] (dead_holds -> <> !dead_holds) }
ltl both_permits { [] (crashed[0] -> <> both) }
#endif

init
{
        atomic {
                byte k;
                for (k : 0 .. NP - 1) {
                        run P(k)
                }
        }
}
