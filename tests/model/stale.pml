/* stale.pml - a Promela model of the exclusive lock of lib/exclusive.c:
 * take (rename of a prepared directory onto an empty or absent lock),
 * release (unlink our owner entry, then rmdir), stale judgement and break
 * (unlink of the judged token's entry, then rmdir), with crashes at every
 * step, holders paused past the stale age, and breakers paused between
 * their judgement and their unlink.
 *
 * verify-config: -DCONFIG_SAFETY
 * verify-config: -DCONFIG_LIVE
 * verify-expect-error: -DCONFIG_SAFETY -DBUG_BREAK_CURRENT
 *
 * Checked by `make verify` (tests/model/model.mk; the lines above):
 *   -DCONFIG_SAFETY  3 processes (2, 2 and 1 acquisitions), at most 1 crash,
 *                    pauses: assertions and invalid end states (pan -DSAFETY).
 *   -DCONFIG_LIVE    2 processes that acquire forever, one may crash while
 *                    holding: under weak fairness (pan -a -f) the lock of
 *                    a dead holder is always broken (LTL dead_freed) and
 *                    some live process keeps getting the lock (progress).
 *   -DCONFIG_SAFETY -DBUG_BREAK_CURRENT  a wrong breaker that re-reads the
 *                    lock and unlinks whatever entry is there: the model
 *                    must find the violation (make verify expects errors).
 *
 * Properties (CONFIG_SAFETY):
 *   ONE_HOLDER     never two holders: at most one process holds the lock,
 *                  where a process holds it from its successful rename
 *                  until its release, unless a breaker removed its entry
 *                  (a crashed holder still holds it until broken).
 *   JUDGED_ONLY    a breaker removes only the entry of the token it judged,
 *                  and that token was drawn before the judgement: a lock
 *                  taken after a judgement is never removed by it.
 *   LIVE_KEEPS     a holder that was never paused (and is alive) is never
 *                  broken: only crashed or paused holders lose the lock.
 *   LOST_KNOWN     a holder whose entry is gone finds out (check/release
 *                  see ENOENT, DIRLOCK_ELOST) and it was broken, not lost
 *                  otherwise; rmdir never removes a held lock.
 *
 * Abstractions: tokens are fresh small integers (128 random bits in C;
 * never reused).  The lock directory is `dir` (exists) and `entry` (token
 * of its one owner entry, 0 = empty): by invariant A it never holds two.
 * Each statement in an atomic block is one system call, which the
 * kernel performs atomically on a local file system (and the NFS server
 * for rename/unlink/rmdir).  Stale judgement: "owner provably dead" is
 * crashed[]; "age over stale_age" is only possible while the holder is
 * paused (a running holder refreshes or finishes well within the stale
 * age: the documented assumption), so a judgement may say stale exactly
 * when the owner is crashed or paused at that moment.  A paused holder,
 * when it resumes, calls dirlock_check before it commits (the board does
 * so right before its rename), so resume and check are one step.  Not
 * modelled: directories left by other programs (judged by the directory's
 * age), the prepared directory's life (it is private), waiting (a waiter
 * simply tries again), FIFO tickets, reader-writer layers.
 */

#define NP 3

#ifdef CONFIG_LIVE
#undef NP
#define NP 2
#define MAXCRASH 1
#define MAXTOK 4 /* token of process i, generation g: 2*i + g + 1 */
#else
/* acquisitions of process i: two for P(0) and P(1), one for P(2) */
#define ROUNDS(i) (i < 2 -> 2 : 1)
#define MAXCRASH 1
#define MAXTOK 5 /* 5 fresh tokens, 1.. */
#endif

bool dir = false;       /* D/NAME.lock exists                              */
byte entry = 0;         /* token T of D/NAME.lock/owner.<T>, 0: empty      */
byte next_tok = 1;      /* next fresh token (CONFIG_SAFETY)                */
byte owner[MAXTOK + 1]; /* process that drew token t                       */
bool broken[MAXTOK + 1];/* t's entry was removed by a breaker              */
byte cur[NP];           /* token of process i's current acquisition        */
bool incs[NP];          /* i believes it holds the lock (renamed, not yet released) */
bool crashed[NP];
bool paused[NP];
byte crashes = 0;

/* i holds the lock: it took it and no breaker removed its entry. */
#define HOLDS(i) (incs[i] && !broken[cur[i]])
#define HOLDERS ((HOLDS(0) -> 1 : 0) + (HOLDS(1) -> 1 : 0) + (NP > 2 && HOLDS(NP - 1) -> 1 : 0))

/* A crash (SIGKILL): the process stops, its entries stay where they are.
 * Only a crash while holding the lock changes what others may do (its
 * lock becomes stale at once: owner provably dead).  A crash anywhere
 * else is a process that takes no more steps, which the search already
 * covers (every prefix of every interleaving is explored), including a
 * crash between unlink and rmdir, which leaves an empty, i.e. free,
 * directory. */
#define CRASH_POINT                                            \
        if                                                     \
        :: crashes < MAXCRASH -> atomic {                      \
                crashes++;                                     \
                crashed[i] = true                              \
        };                                                     \
                goto dead                                      \
        :: true -> skip                                        \
        fi

#ifdef CONFIG_LIVE
#define dead_holds (entry != 0 && crashed[owner[entry]])
#define live_in_cs ((incs[0] && !crashed[0]) || (incs[1] && !crashed[1]))
ltl dead_freed { [] (dead_holds -> <> !dead_holds) }
ltl progress { [] <> live_in_cs }
#endif

proctype P(byte i)
{
        byte t;        /* our token                                       */
        byte jt;       /* the token we judged stale                       */
        byte seen;     /* the newest token drawn when we judged           */
        bool unlinked; /* our unlink succeeded                            */
        bool waspaused;
#ifndef CONFIG_LIVE
        byte r = 0;
#else
        bit g = 0;
#endif

acquire:
#ifndef CONFIG_LIVE
        if
        :: r == ROUNDS(i) -> goto finished
        :: else -> skip
        fi;
        /* dl_handle_new -> dl_random_token: a fresh token;
         * prep_make: mkdir D/.NAME.<T>.new + owner.<T> (private) */
        atomic {
                t = next_tok;
                next_tok++;
                owner[t] = i;
                cur[i] = t
        };
#else
        atomic {
                t = 2 * i + g + 1;
                g = 1 - g;
                owner[t] = i;
                broken[t] = false;
                cur[i] = t
        };
#endif
        waspaused = false;

try:
        /* take_once: rename(D/.NAME.<T>.new, D/NAME.lock): succeeds onto
         * an absent or empty directory, else ENOTEMPTY/EEXIST */
        atomic {
                if
                :: !dir || entry == 0 ->
                        dir = true;
                        entry = t;
                        incs[i] = true;
#ifndef CONFIG_LIVE
                        assert(HOLDERS <= 1); /* ONE_HOLDER */
#endif
                        goto held
                :: else -> skip
                fi
        };

        /* judge_holder: opendir/readdir D/NAME.lock -> owner.<jt>, then
         * dl_entry_read (readlink + lstat of owner.<jt>) and dl_entry_stale
         * (age > stale_age, or owner provably dead).  One step: between
         * readdir and readlink the entry can only vanish (ENOENT, J_FREE),
         * as tokens are never reused, so the outcome is that of the
         * readlink alone. */
        atomic {
                jt = entry;
                if
                :: jt == 0 -> goto try /* empty or gone: J_FREE, take again */
                :: jt != 0 && (crashed[owner[jt]] || paused[owner[jt]]) ->
                        seen = next_tok - 1 /* stale: break it */
                :: jt != 0 && !crashed[owner[jt]] ->
                        jt = 0;
                        goto try /* J_HELD: wait (dl_waiter_wait), try again */
                fi
        };

        /* Here the breaker may be paused for any length of time
         * (DIRLOCK_TEST_STOP_BEFORE_BREAK in tests/core-breakrace.t):
         * every interleaving of the others' steps is explored. */

        /* judge_holder, BREAK: unlink(D/NAME.lock/owner.<jt>) */
        atomic {
#ifdef BUG_BREAK_CURRENT
                /* wrong: remove whatever entry is there now */
                jt = entry;
#endif
                if
                :: entry == jt && jt != 0 ->
#ifndef CONFIG_LIVE
                        assert(jt <= seen); /* JUDGED_ONLY */
#endif
                        entry = 0;
                        broken[jt] = true;
                        unlinked = true
                :: else -> unlinked = false /* ENOENT: someone broke it first */
                fi;
                jt = 0;
                seen = 0
        };
        if
        :: unlinked ->
                /* ... then rmdir(D/NAME.lock): only an empty (free) lock */
                atomic {
                        if
                        :: dir && entry == 0 -> dir = false
                        :: else -> skip /* ENOTEMPTY (re-taken) or ENOENT */
                        fi;
                        unlinked = false
                }
        :: else -> skip
        fi;
        goto try; /* J_FREE: dl_excl_try takes again at once */

held:
        /* The critical section (the board: read, delay_ms, write the temp
         * file).  The holder may be stopped here past the stale age. */
#ifndef CONFIG_LIVE
        if
        :: paused[i] = true;
                waspaused = true;
                /* ... SIGCONT: resumes, then dirlock_check before its commit */
                paused[i] = false
        :: true -> skip
        fi;
#endif
        CRASH_POINT;
        /* dl_excl_check: lstat(D/NAME.lock/owner.<T>) right before the
         * commit (the board's rename of its temp file) */
        atomic {
                if
                :: entry == t ->
#ifndef CONFIG_LIVE
                        /* commit: we are the only holder */
                        assert(HOLDERS == 1 && HOLDS(i)); /* ONE_HOLDER */
#endif
                        skip
                :: else ->
                        /* ENOENT: DIRLOCK_ELOST, the board answers 503 and
                         * leaves the log alone */
                        assert(broken[t] && (waspaused || crashed[i])); /* LOST_KNOWN, LIVE_KEEPS */
                        incs[i] = false;
                        goto next
                fi
        };
        /* dl_excl_release: unlink(D/NAME.lock/owner.<T>) */
        atomic {
                incs[i] = false;
                if
                :: entry == t ->
                        entry = 0;
                        unlinked = true
                :: else ->
                        assert(broken[t] && waspaused); /* LOST_KNOWN, LIVE_KEEPS */
                        unlinked = false /* ENOENT: DIRLOCK_ELOST */
                fi
        };
        if
        :: unlinked ->
                /* ... then rmdir(D/NAME.lock); ENOTEMPTY when re-taken */
                atomic {
                        if
                        :: dir && entry == 0 -> dir = false
                        :: else -> skip
                        fi;
                        unlinked = false
                }
        :: else -> skip
        fi;
next:
#ifndef CONFIG_LIVE
        r++;
#endif
        goto acquire;

dead:
        /* killed: nothing more happens; its entries stay */
        skip;
finished:
        skip
}

init
{
        atomic {
                byte k;
                for (k : 0 .. NP - 1) {
                        run P(k)
                }
        }
}
