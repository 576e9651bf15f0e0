/* hold.h - the locks a command runs under, and keeping them (hold.c):
 * refreshing them every third of the stale age, and telling when they
 * are lost.  Both dirlock and its keeper (keeper.c) keep the same hold,
 * each through its own copy of the handles.
 *
 * LOST.  A hold is lost when a refresh says so (DIRLOCK_ELOST: broken,
 * expired, gone from its server), and also when no refresh has got
 * through for a whole stale age (the server unreachable, the disk
 * failing): by then a judge, or the server's expiry, may have let
 * another holder in, and the command must not go on as if it held.  A
 * refresh that gets through after a gap proves the hold was never lost
 * (it renews the entry under our token, which nobody else has): it is
 * always tried before a gap counts. */
#ifndef DIRLOCK_BIN_HOLD_H
#define DIRLOCK_BIN_HOLD_H

#include "dirlock.h"

#include <stdbool.h>
#include <stddef.h>

struct hold {
        dirlock_set *set;  /* a set of whole locks, or            */
        dirlock *one;      /* one range lock or permit            */
        double stale;      /* the stale age, seconds              */
        double ok_at;      /* monotonic time the last refresh that got through began */
        double due_at;     /* when the next refresh is due        */
        bool warned;       /* a failed refresh was reported       */
        bool lost;         /* see LOST above                      */
        dirlock_error why; /* the loss's reason                  */
};

/* Monotonic seconds. */
double hold_now(void);
/* Start keeping locks just taken (set or one). */
void hold_init(struct hold *h, dirlock_set *set, dirlock *one, double stale);
size_t hold_count(const struct hold *h);
dirlock *hold_lock(const struct hold *h, size_t i);
/* Seconds until the next refresh is due (0: now); never called once lost. */
double hold_due_in(const struct hold *h);
/* Refresh if due.  True when this call found the hold lost (h->why says
 * why).  A refresh that fails without losing the hold is said once on
 * stderr as a warning, unless `quiet`. */
bool hold_tend(struct hold *h, bool quiet);
/* Whether every lock is held now (dirlock_check, which renews nothing):
 * false when one is lost (and h->lost, h->why) or cannot be looked at. */
bool hold_verify(struct hold *h);
/* Release it; DIRLOCK_ELOST (and h->lost, h->why) when it had been lost. */
int hold_release(struct hold *h, dirlock_error *e);
/* The copies of the handles a forked keeper inherited become its own
 * (dirlock_adopt). */
int hold_adopt(struct hold *h, dirlock_error *e);

#endif
