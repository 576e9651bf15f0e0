/* stale.pml - a Promela model of the exclusive lock of lib/dir/exclusive.c:
 * take (rename of a prepared directory onto an empty or absent lock),
 * release (unlink our owner entry, then rmdir), stale judgement and break
 * (unlink of the judged token's entry, then rmdir), with crashes at every
 * step, holders paused past the stale age, breakers paused between their
 * judgement and their unlink, prepared records that age while their
 * waiters wait, and a cleaner (dirlock_cleanup) running beside them.
 *
 * verify-config: -DCONFIG_SAFETY -DWITH_CLEANUP
 * verify-config: -DCONFIG_LIVE
 * verify-expect-error: -DCONFIG_SAFETY -DBUG_BREAK_CURRENT
 * verify-expect-error: -DCONFIG_SAFETY -DBUG_PREP_AGE
 * verify-expect-error: -DCONFIG_SAFETY -DWITH_CLEANUP -DBUG_CLEANUP
 *
 * Checked by `make verify` (tests/model/model.mk; the lines above):
 *   -DCONFIG_SAFETY  3 processes (2, 2 and 1 acquisitions), at most 1 crash,
 *                    pauses: assertions and invalid end states (pan -DSAFETY).
 *   -DCONFIG_LIVE    2 processes that acquire forever, one may crash while
 *                    holding: under weak fairness (pan -a -f) the lock of
 *                    a dead holder is always broken (LTL dead_freed) and
 *                    some live process keeps getting the lock (progress).
 *   -DCONFIG_SAFETY -DWITH_CLEANUP  the same with a cleaner (the
 *                    dirlock_cleanup loop) running beside them, and waiters
 *                    that may be killed while they wait.  The cleaner may
 *                    also never act, so this covers -DCONFIG_SAFETY alone
 *                    (about 3.4e7 states, 1.5 GB, a minute and a half).
 *   -DCONFIG_SAFETY -DBUG_BREAK_CURRENT  a wrong breaker that re-reads the
 *                    lock and unlinks whatever entry is there: the model
 *                    must find the violation (make verify expects errors).
 *   -DCONFIG_SAFETY -DBUG_PREP_AGE  the earlier age rule: a lock's age was
 *                    its owner entry's mtime, written when the prepared
 *                    record was (renewed only after 0.5 s of waiting) and
 *                    renewed by a separate utimensat after the rename: a
 *                    short stale age lets judges break the new lock in
 *                    between (refuted: LIVE_KEEPS, OK_HELD).
 *   -DCONFIG_SAFETY -DWITH_CLEANUP -DBUG_CLEANUP  the earlier cleanup: a
 *                    prepared directory was garbage once its record was
 *                    older than its stale age, so a live waiter's was moved
 *                    aside and its rewrite failed (refuted: WAITER_OK).
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
 *   OK_HELD        an acquire that returns OK still holds the lock: it was
 *                  not broken before it returned.
 *   WAITER_OK      a live waiter's acquire never fails with an error
 *                  because a cleaner took its prepared directory.
 *
 * Time and age (INVARIANT C of exclusive.c): "older than the stale age"
 * is a flag.  A waiter's prepared record can grow old while it waits
 * (prep_old: time passes at every wait); the lock itself is old (lock_old)
 * only by the rule under test: the fixed rule makes the rename itself set
 * the lock's age to zero (the renamed directory's ctime); BUG_PREP_AGE
 * gives the new lock its prepared record's age until the holder's separate
 * utimensat step.  A running holder refreshes within the stale age, so
 * otherwise only a paused or crashed holder's lock is stale.
 * Cleanup: the cleaner moves a prepared directory aside (rename, atomic)
 * when it judges it garbage: its owner crashed (the fix; same host), or
 * its record is old (BUG_CLEANUP).  A waiter that finds its prepared
 * directory gone makes it again (the fix); with BUG_CLEANUP its rewrite of
 * an old record fails (the EIO that was seen).
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
bool prep[NP];       /* i's prepared directory D/.NAME.<T>.new is in place */
bool prep_old[NP];   /* its record is older than the stale age             */
bool lock_old = false; /* the current lock's age exceeds the stale age     */

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
        bool peeked;   /* this attempt looked (lstat) before its rename    */
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
                cur[i] = t;
                prep[i] = true;
                prep_old[i] = false
        };
#else
        atomic {
                t = 2 * i + g + 1;
                g = 1 - g;
                owner[t] = i;
                broken[t] = false;
                cur[i] = t;
                prep[i] = true;
                prep_old[i] = false
        };
#endif
        waspaused = false;
        peeked = false;

try:
        /* prep_make before every attempt: an old record is rewritten
         * (unlink + symlink inside the prepared directory) -- or not yet
         * (the rewrite interval has not passed). */
        if
        :: prep_old[i] ->
                atomic {
                        if
                        :: prep[i] -> prep_old[i] = false
                        :: else ->
#ifdef BUG_CLEANUP
                                /* the directory was moved aside: EIO */
                                assert(false) /* WAITER_OK */
#else
                                prep[i] = true; /* made again */
                                prep_old[i] = false
#endif
                        fi
                }
        :: true -> skip
        fi;
        /* take_once: the first round of an attempt looks (lstat) and, when
         * D/NAME.lock is there -- held or empty -- judges without renaming;
         * otherwise rename(D/.NAME.<T>.new, D/NAME.lock): succeeds onto an
         * absent or empty directory, else ENOTEMPTY/EEXIST */
        atomic {
                if
                :: !prep[i] ->
                        /* ENOENT: a cleaner moved it aside: make it again */
                        prep[i] = true;
                        prep_old[i] = false;
                        goto try
                :: prep[i] && !peeked && dir ->
                        peeked = true /* no rename: judge */
                :: prep[i] && (peeked || !dir) && (!dir || entry == 0) ->
                        dir = true;
                        entry = t;
                        incs[i] = true;
                        prep[i] = false; /* it is the lock now */
#ifdef BUG_PREP_AGE
                        lock_old = prep_old[i]; /* the entry's old mtime */
#else
                        lock_old = false; /* the rename set its age to 0 */
#endif
#ifndef CONFIG_LIVE
                        assert(HOLDERS <= 1); /* ONE_HOLDER */
#endif
                        goto taken
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
                :: jt != 0 && (crashed[owner[jt]] || paused[owner[jt]] || lock_old) ->
                        seen = next_tok - 1 /* stale: break it */
                :: jt != 0 && !crashed[owner[jt]] ->
                        jt = 0;
                        /* J_HELD: wait (dl_waiter_wait), during which time
                         * passes: our prepared record may grow old */
                        if
                        :: prep_old[i] = true
                        :: true -> skip
                        fi;
                        goto waiting
                fi
        };

        goto judged;
waiting:
        peeked = false; /* the next attempt looks first again */
#ifdef WITH_CLEANUP
        /* killed while waiting: its prepared directory stays behind */
        CRASH_POINT;
#endif
        goto try;
judged:
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

taken:
#ifdef BUG_PREP_AGE
        /* the separate utimensat that renewed the new lock's age */
        atomic {
                if
                :: entry == t -> lock_old = false
                :: else -> skip
                fi
        };
#endif
        /* dirlock_acquire returns DIRLOCK_OK */
        assert(entry == t || crashed[i]); /* OK_HELD */

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

#ifdef WITH_CLEANUP
/* dirlock_cleanup in a loop: a prepared directory it judges garbage is
 * renamed aside (atomic: it fails if its owner renamed it onto the lock
 * first). */
#ifdef BUG_CLEANUP
#define GARBAGE(k) (prep[k] && prep_old[k])
#else
#define GARBAGE(k) (prep[k] && crashed[k])
#endif
proctype Cleaner()
{
end_clean:
        do
        :: atomic { GARBAGE(0) -> prep[0] = false }
        :: atomic { GARBAGE(1) -> prep[1] = false }
        :: atomic { NP > 2 && GARBAGE(NP - 1) -> prep[NP - 1] = false }
        od
}
#endif

init
{
        atomic {
                byte k;
                for (k : 0 .. NP - 1) {
                        run P(k)
                }
#ifdef WITH_CLEANUP
                run Cleaner()
#endif
        }
}
