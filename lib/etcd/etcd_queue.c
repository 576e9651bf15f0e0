/* etcd_queue.c - a lock's queue on etcd, as one read sees it: the entries
 * (one key per holder or waiter, their text in etcd.h), and the rules
 * that say which of them may hold.  Pure functions of what was read: the
 * protocol (etcd_backend.c) makes them safe by taking only in a
 * transaction that fails if a holder came or grew since that read.
 *
 * CLASSES.  An entry's class is its mode as its policy makes it: X
 * (exclusive, or any mode under the `simple` policy), S (shared), I
 * (intent) or U (an intent holder that upgrades).  Two ranges conflict
 * only when they overlap; a whole lock and a range of the same name always
 * conflict, whatever their modes (dirlock.h).
 *
 * HOLDERS.  A holder lets a request in when they do not conflict: of the
 * same kind (both whole, or overlapping ranges), when the mode table
 * (lib/modes.c) says the holder's class keeps the request's out: S with
 * S, S with I do not; X, I with I, and a U holder with anything do.
 *
 * WAITERS (the Redis backend's queue rules, the same words): waiter A
 * holds request B back when A is ahead of B and their classes conflict,
 * unless A gives way -- a `writer` reader to writers, a `reader` writer to
 * everyone -- or B passes A -- a `reader` reader passes every waiter, a
 * `writer` writer passes readers.  Besides, a `writer` reader waits for
 * every queued writer that does not give way, and a `reader` writer for
 * every queued reader that is not a `writer` reader, ahead of it or not.
 * Between a whole lock and ranges, whole locks go first, as in the other
 * spaces: a waiting whole lock holds every range request back, ahead of
 * it or not, and a waiting range holds no whole request back (only held
 * ranges keep a whole lock out).  So "waits for" runs from range waiters
 * to whole waiters, never back.
 * "Waits for" between waiters only ever points ahead, or out of a waiter
 * that nobody waits for: no cycle, so no deadlock.  Multi-locks included:
 * a set waits only in the queues of the names that keep it out (it holds
 * none, and reserves none, while it waits), and it keeps the arrival of
 * its first entry (seq) in every queue it joins later, so every queue
 * sees the sets in one order.
 *
 * WATCHING.  A request that may not hold watches one entry that keeps it
 * out -- the nearest ahead of it, else the first behind -- and looks again
 * only when that entry changes or goes: every rule above is between two
 * entries, so while that one is unchanged the request stays out.  A
 * queue of exclusive waiters is so a chain: each watches the one just
 * ahead of it, and a release wakes one waiter. */
#include "etcd.h"
#include "modes.h"
#include "test_hooks.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dl_etcd_entry_format(const dl_etcd_entry *e, char *buf, size_t size)
{
        char lo[40] = "-", hi[40] = "-";
        if (e->ranged) {
                snprintf(lo, sizeof lo, "%a", e->lo);
                snprintf(hi, sizeof hi, "%a", e->hi);
        }
        int n = snprintf(buf, size, "dl1 %c%c %d %d %lld %s %s %llu %s", e->state, e->mode, e->policy,
                         e->names, e->seq, lo, hi, e->fence, e->record);
        return n < 0 || (size_t)n >= size ? -1 : n;
}

int dl_etcd_entry_parse(const char *value, dl_etcd_entry *e)
{
        char lo[40], hi[40];
        int at = 0;
        memset(e, 0, sizeof *e);
        if (sscanf(value, "dl1 %c%c %d %d %lld %39s %39s %llu %n", &e->state, &e->mode, &e->policy, &e->names,
                   &e->seq, lo, hi, &e->fence, &at) != 8 ||
            at == 0 || e->seq < 0)
                return -1;
        if ((e->state != 'w' && e->state != 'h') || dl_mode_of_letter(e->mode) < 0 ||
            e->policy < DIRLOCK_POLICY_FAIR || e->policy > DIRLOCK_POLICY_SIMPLE || e->names < 1)
                return -1;
        e->ranged = strcmp(lo, "-") != 0;
        if (e->ranged) {
                char *end1, *end2;
                e->lo = strtod(lo, &end1);
                e->hi = strtod(hi, &end2);
                if (*end1 != '\0' || *end2 != '\0' || !(e->lo < e->hi))
                        return -1;
        }
        snprintf(e->record, sizeof e->record, "%s", value + at);
        return 0;
}

/* An entry's place in the queue: its arrival, a newcomer after everyone. */
static long long place(const dl_etcd_entry *e)
{
        return e->seq > 0 ? e->seq : e->rev > 0 ? e->rev : LLONG_MAX;
}

static int by_place(const void *a, const void *b)
{
        const dl_etcd_entry *x = a, *y = b;
        long long px = place(x), py = place(y);
        if (px != py)
                return px < py ? -1 : 1;
        return x->rev < y->rev ? -1 : x->rev > y->rev;
}

int dl_etcd_queue_load(dl_etcd_queue *q, const dl_etcd_kv *kvs, size_t n, const dl_etcd_kv *f, size_t nf,
                       long long revision, dirlock_error *err)
{
        q->n = 0;
        q->revision = revision;
        q->f_mod = nf > 0 ? f[0].mod_revision : 0;
        q->last = 0;
        q->f_bad = nf > 0 && dl_fence_parse(f[0].value, strlen(f[0].value), &q->last) != 1;
        if (n > q->cap) {
                dl_etcd_entry *e = realloc(q->e, n * sizeof *e);
                if (e == NULL)
                        return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                q->e = e;
                q->cap = n;
        }
        for (size_t i = 0; i < n; i++) {
                const char *slash = strrchr(kvs[i].key, '/');
                dl_etcd_entry *e = &q->e[q->n];
                if (slash == NULL || strlen(slash + 1) != DIRLOCK_TOKEN_LEN ||
                    dl_etcd_entry_parse(kvs[i].value, e) != 0)
                        continue; /* not an entry of ours */
                memcpy(e->token, slash + 1, sizeof e->token);
                e->rev = kvs[i].create_revision;
                e->lease = kvs[i].lease;
                q->n++;
        }
        if (q->n > 1)
                qsort(q->e, q->n, sizeof *q->e, by_place);
        return DIRLOCK_OK;
}

void dl_etcd_queue_free(dl_etcd_queue *q)
{
        free(q->e);
        q->e = NULL;
        q->n = q->cap = 0;
}

long dl_etcd_queue_find(const dl_etcd_queue *q, const char *t)
{
        for (size_t i = 0; i < q->n; i++)
                if (strcmp(q->e[i].token, t) == 0)
                        return (long)i;
        return -1;
}

/* ---- the rules ------------------------------------------------------------------- */

static int cls(const dl_etcd_entry *e)
{
        return dl_mode_under_policy(dl_mode_of_letter(e->mode), e->policy);
}

static bool overlap(const dl_etcd_entry *a, const dl_etcd_entry *b)
{
        return !a->ranged || !b->ranged || (a->lo < b->hi && b->lo < a->hi);
}

/* Holder h lets request r in. */
static bool admits(const dl_etcd_entry *h, const dl_etcd_entry *r)
{
        return h->ranged == r->ranged && !dl_modes_conflict(cls(h), cls(r));
}

static bool gives_way(const dl_etcd_entry *a, const dl_etcd_entry *b)
{
        return (cls(a) == DL_MODE_SHARED && a->policy == DIRLOCK_POLICY_WRITER &&
                cls(b) == DL_MODE_EXCLUSIVE) ||
               (a->mode == 'x' && a->policy == DIRLOCK_POLICY_READER);
}

static bool passes(const dl_etcd_entry *b, const dl_etcd_entry *a)
{
        return (cls(b) == DL_MODE_SHARED && b->policy == DIRLOCK_POLICY_READER) ||
               (b->mode == 'x' && b->policy == DIRLOCK_POLICY_WRITER && cls(a) == DL_MODE_SHARED);
}

/* Waiter a holds request b back (a ahead of b or not). */
static bool blocks(const dl_etcd_entry *a, const dl_etcd_entry *b, bool ahead)
{
        if (a->ranged != b->ranged)
                return !a->ranged; /* whole locks go first */
        if (ahead && dl_modes_conflict(cls(a), cls(b)) && !gives_way(a, b) && !passes(b, a))
                return true;
        if (cls(b) == DL_MODE_SHARED && b->policy == DIRLOCK_POLICY_WRITER && cls(a) == DL_MODE_EXCLUSIVE &&
            !(a->mode == 'x' && a->policy == DIRLOCK_POLICY_READER))
                return true;
        return b->mode == 'x' && b->policy == DIRLOCK_POLICY_READER && cls(a) == DL_MODE_SHARED &&
               a->policy != DIRLOCK_POLICY_WRITER;
}

long dl_etcd_holder_of(const dl_etcd_queue *q, const dl_etcd_entry *me, bool *conflicts)
{
        long any = -1;
        for (size_t i = 0; i < q->n; i++) {
                const dl_etcd_entry *o = &q->e[i];
                if (o->state != 'h' || strcmp(o->token, me->token) == 0 || !overlap(o, me))
                        continue;
                if (!admits(o, me)) {
                        *conflicts = true;
                        return (long)i;
                }
                if (any < 0)
                        any = (long)i;
        }
        *conflicts = false;
        return any;
}

bool dl_etcd_may_hold(const dl_etcd_queue *q, const dl_etcd_entry *me, size_t *blocker)
{
        if (dl_test_hook(ETCD_NO_LOCK) != NULL)
                return true;
        long long mine = place(me);
        long ahead = -1, behind = -1;
        for (size_t i = 0; i < q->n; i++) {
                const dl_etcd_entry *o = &q->e[i];
                if (strcmp(o->token, me->token) == 0 || !overlap(o, me))
                        continue;
                bool in_way = o->state == 'h' ? !admits(o, me) : blocks(o, me, place(o) < mine);
                if (!in_way)
                        continue;
                if (place(o) < mine)
                        ahead = (long)i; /* entries are in arrival order: the last one is the nearest */
                else if (behind < 0)
                        behind = (long)i;
        }
        if (ahead < 0 && behind < 0)
                return true;
        if (blocker != NULL)
                *blocker = (size_t)(ahead >= 0 ? ahead : behind);
        return false;
}

long dl_etcd_reader_in_way(const dl_etcd_queue *q, const dl_etcd_entry *me)
{
        for (size_t i = q->n; i-- > 0;) {
                const dl_etcd_entry *o = &q->e[i];
                if (o->state == 'h' && cls(o) == DL_MODE_SHARED && strcmp(o->token, me->token) != 0 &&
                    overlap(o, me))
                        return (long)i;
        }
        return -1;
}

void dl_etcd_grant_pass(dl_etcd_queue *q, long me, size_t *idx, size_t *count)
{
        *count = 0;
        q->e[me].state = 'h';
        if (dl_test_hook(ETCD_NO_LOCK) != NULL)
                return;
        for (size_t i = 0; i < q->n; i++) {
                dl_etcd_entry *e = &q->e[i];
                if ((long)i == me || e->state != 'w' || e->names != 1 || !dl_etcd_may_hold(q, e, NULL))
                        continue;
                e->state = 'h';
                DL_ASSERT(dl_etcd_may_hold(q, &q->e[me], NULL)); /* M: nobody let in conflicts with us */
                idx[(*count)++] = i;
        }
}
