/* hold.c - keeping the locks a command runs under (hold.h): the refresh
 * schedule and the two ways a hold is lost. */
#include "hold.h"
#include "run.h"

#include <stdio.h>
#include <time.h>

double hold_now(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void hold_init(struct hold *h, dirlock_set *set, dirlock *one, double stale)
{
        *h = (struct hold){.set = set, .one = one, .stale = stale};
        h->ok_at = hold_now();
        h->due_at = h->ok_at + stale / 3.0;
}

size_t hold_count(const struct hold *h)
{
        return h->one ? 1 : dirlock_set_count(h->set);
}

dirlock *hold_lock(const struct hold *h, size_t i)
{
        return h->one ? h->one : dirlock_set_lock(h->set, i);
}

double hold_due_in(const struct hold *h)
{
        double left = h->due_at - hold_now();
        return left > 0 ? left : 0;
}

bool hold_tend(struct hold *h, bool quiet)
{
        if (h->lost || hold_now() < h->due_at)
                return false;
        double began = hold_now();
        dirlock_error e;
        int rc = h->one ? dirlock_refresh(h->one, &e) : dirlock_refresh_many(h->set, &e);
        double now = hold_now();
        h->due_at = now + h->stale / 3.0;
        if (rc == DIRLOCK_OK) {
                h->ok_at = began;
                h->warned = false;
                return false;
        }
        if (rc == DIRLOCK_ELOST) {
                h->lost = true;
                h->why = e;
                return true;
        }
        if (now - h->ok_at >= h->stale) {
                h->lost = true;
                h->why = e;
                snprintf(h->why.message, sizeof h->why.message,
                         "no refresh got through for %.3g s, past the stale age (%.3g s), so the locks may "
                         "have been taken by another meanwhile (the last try: %.400s)",
                         now - h->ok_at, h->stale, e.message);
                return true;
        }
        if (!quiet && !h->warned)
                fprintf(stderr,
                        "%s: warning: %s (trying again every %.3g s; the locks count as lost after "
                        "%.3g s without a refresh)\n",
                        DIRLOCK_COMMAND_NAME, e.message, h->stale / 3.0, h->stale);
        h->warned = true;
        return false;
}

bool hold_verify(struct hold *h)
{
        if (h->lost)
                return false;
        for (size_t i = 0; i < hold_count(h); i++) {
                dirlock_error e;
                int rc = dirlock_check(hold_lock(h, i), &e);
                if (rc == DIRLOCK_ELOST) {
                        h->lost = true;
                        h->why = e;
                }
                if (rc != DIRLOCK_OK)
                        return false;
        }
        return true;
}

int hold_release(struct hold *h, dirlock_error *e)
{
        dirlock_error scratch;
        if (e == NULL)
                e = &scratch;
        int rc = h->one ? dirlock_release(h->one, e) : dirlock_release_many(h->set, e);
        h->one = NULL;
        h->set = NULL;
        if (rc == DIRLOCK_ELOST && !h->lost) {
                h->lost = true;
                h->why = *e;
        }
        return rc;
}

int hold_adopt(struct hold *h, dirlock_error *e)
{
        for (size_t i = 0; i < hold_count(h); i++) {
                int rc = dirlock_adopt(hold_lock(h, i), e);
                if (rc != DIRLOCK_OK)
                        return rc;
        }
        return DIRLOCK_OK;
}
