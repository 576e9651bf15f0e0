/* backoff.c - a jittered exponential backoff, for whoever must try again
 * with nothing to wake it: a waiter without notification (wait.c), a busy
 * range meta-lock (dir/range_entries.c), a lock server that cannot be
 * reached (redis/, etcd/).  Each user names its own first and longest step.
 *
 * Each step is the base scaled by a random factor in [0.5, 1.5), never
 * more than the cap; the base starts at the first step and doubles after
 * each step up to the cap.  The factor spreads out processes that back
 * off from the same event.  It comes from xorshift64*, seeded from a
 * string unique to the caller (a lock's token): jitter needs no secrecy,
 * and a system call per backoff would cost more than the step. */
#include "core.h"

void dl_backoff_init(dl_backoff *b, double first_ms, double cap_ms, const char *seed)
{
        b->first_ms = first_ms;
        b->base_ms = first_ms;
        b->cap_ms = cap_ms;
        b->rng = 0x9E3779B97F4A7C15ULL;
        for (const char *c = seed; c && *c; c++)
                b->rng = (b->rng ^ (unsigned char)*c) * 0x100000001B3ULL;
        if (b->rng == 0)
                b->rng = 1;
}

/* A uniform double in [0, 1). */
static double next_unit(dl_backoff *b)
{
        b->rng ^= b->rng >> 12;
        b->rng ^= b->rng << 25;
        b->rng ^= b->rng >> 27;
        return (double)((b->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

double dl_backoff_next(dl_backoff *b)
{
        double step = b->base_ms * (0.5 + next_unit(b));
        if (step > b->cap_ms)
                step = b->cap_ms;
        b->base_ms = b->base_ms * 2 > b->cap_ms ? b->cap_ms : b->base_ms * 2;
        return step;
}

void dl_backoff_reset(dl_backoff *b)
{
        b->base_ms = b->first_ms;
}
