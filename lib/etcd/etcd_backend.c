/* etcd_backend.c - the etcd backend (backend.h): a lock space on an etcd
 * cluster (etcd://HOST:PORT[,HOST:PORT...][/PREFIX], etcd.h), reached
 * through its v3 JSON gateway, shared by the processes of every host that
 * can reach a majority of its members.  Here: the protocol, the handle's
 * state, the wait loop and the table of entry points; the rules of who
 * may hold are in etcd_queue.c, the requests in etcd_kv.c and
 * etcd_http.c, the administration (inspect, break, list, cleanup,
 * ranges) in etcd_admin.c.  docs/library.md says how it differs from a
 * directory space.
 *
 * ======================================================================
 * DATA.  Lock NAME of a space with prefix P is
 *   P/q/NAME/<token>  one key per holder or waiter of this acquisition
 *                     (the text in etcd.h: state, mode, policy, the set's
 *                     size, the range, the fence, the owner record),
 *                     bound to the acquisition's own lease; its
 *                     create_revision is its place in the queue
 *   P/f/NAME          the last fence drawn for NAME, 20 decimal digits
 *                     (so that comparing the text compares the numbers);
 *                     no lease, never removed
 * Ranges and whole locks of a name share one queue (a whole lock overlaps
 * every range).
 *
 * LEASES.  Each acquisition grants its own lease, with an id it draws
 * itself (a grant whose answer was lost is asked again under the same id)
 * and TTL = the stale age rounded up to whole seconds; a stale age below
 * 1 s, or below the cluster's smallest lease (its answer grants more than
 * asked), is refused with DIRLOCK_EINVAL.  The lease is kept alive by the
 * waiter while it waits (every third of the TTL) and by the holder's
 * dirlock_refresh() (one keep-alive request), and revoked on release, on
 * timeout, on cancel and on any other failure: the cluster deletes every
 * key of an acquisition with its lease, at once, so nothing of a holder
 * or waiter that died or gave up stays longer than its TTL, and a
 * request of a gone acquisition can never take the lock later (a put
 * under a revoked lease fails, and every take compares the entry's
 * create_revision).  etcd's own server-side Lock is not used: a Lock
 * request that timed out could still take the lock afterwards.
 *
 * ======================================================================
 * INVARIANTS.
 *   M  (mutual exclusion) Only a transaction that compares the fence key's
 *      mod_revision with the one the taker read takes anything, and every
 *      change that can put a new holder in the way of a held one -- a
 *      waiter marked held, an intent holder marked upgrading -- writes
 *      the fence key in that transaction.  So between the read a take was
 *      decided on and its commit, no holder came and none grew; holders
 *      may only have gone or shrunk (release, expiry, downgrade, shrink),
 *      which lets in no less.  The taker decided from that read that it
 *      conflicts with no holder (etcd_queue.c): it conflicts with none at
 *      its commit.  Sets compare every name's fence key: all or nothing.
 *   U  (upgrade) An intent holder marks itself upgrading (mode u) in such
 *      a transaction; from that commit on no read shows a new reader in
 *      (u lets nobody in, and a take decided on an older read fails its
 *      compare), so the readers only drain, and the upgrader is exclusive
 *      once a read shows none.
 *   E  (expiry) every entry lives only as long as its lease; the lease
 *      lives its TTL after its last keep-alive, by the cluster's clock
 *      (the leader's; a new leader gives every lease its whole TTL
 *      again).  Keys go only with their lease: release, expiry, and a
 *      break, which revokes the holder's lease.
 *   F  (fences) every take draws max(last + 1, the taker's wall clock in
 *      microseconds) for each name it takes, writes it to P/f/NAME and
 *      into the holder's entry, in the taking transaction.  The compare
 *      of M serialises the takes of a name, so its fences grow strictly
 *      in commit order, whoever takes, across leader changes and member
 *      restarts.  A cluster restored from an old snapshot goes back with
 *      its revisions and its fence keys alike (nothing inside it
 *      remembers the lost history); the clock term keeps the next fence
 *      above every one drawn before, as long as the clocks of the hosts
 *      that take locks are not behind the latest fence by more than the
 *      restore took (docs/fencing.md).
 *   Q  (queue) waiters are served by the rules of etcd_queue.c in order of
 *      their entries' create_revision; "waits for" has no cycle.
 *
 * ACQUIRE.
 *   1. Grant the lease (one per name of a set).
 *   2. One transaction: if the name's queue is empty and its fence key
 *      holds a number below the clock, write our entry held and the fence
 *      (the uncontended lock: two requests in all with the grant).
 *      Otherwise, in the same transaction, enqueue our entry waiting
 *      (unless timeout 0: then nothing is written) and read the queue and
 *      the fence key.
 *   3. Decide from the read: may we hold (etcd_queue.c)?  Yes: take --
 *      a transaction comparing the fence key's mod_revision and our
 *      entry's create_revision that writes us held with our fence, and
 *      also every other single-name waiter that may hold beside us
 *      (readers behind a writer go in together, one transaction); it
 *      fails when anything was taken meanwhile, and then reads the queue
 *      again in the same round trip: back to 3.
 *   4. No: watch the one entry in our way (etcd_queue.c, WATCHING), from
 *      the revision after our read, so a change between the read and the
 *      watch is not missed; meanwhile keep our lease alive, and watch the
 *      entry's owner with a pidfd when it is on this host.  Its owner
 *      provably dead on this host: revoke its lease at once.  Woken: read
 *      our own entry and the queue again (our lease may have expired: then
 *      enqueue anew) and go to 3.
 *   5. At the deadline or when canceled: one last read and decision; out,
 *      revoke our lease.  A cluster that cannot be reached: a timed
 *      acquire retries with backoff until its deadline and then fails
 *      with DIRLOCK_ESERVER (the lock's state is unknown, not busy); an
 *      infinite wait keeps trying; the cancel descriptor still ends it.
 * RELEASE revokes the lease: DIRLOCK_ELOST when there was none any more
 * (expired or broken).  A revoke whose answer was lost and whose retry
 * finds no lease cannot tell released from lost: DIRLOCK_ESERVER says so.
 * REFRESH is one keep-alive; CHECK reads our entry (held: ours still).
 * DOWNGRADE, SHRINK and back-to-intent rewrite our entry, comparing its
 * create_revision.  UPGRADE marks us upgrading (U), then waits as in 4
 * for the readers in our way (and for a cluster it cannot reach as in
 * 5); at its deadline it marks us intent again. */
#include "backend.h"
#include "etcd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* While the cluster cannot be reached: the first and the longest pause
 * of the backoff (backoff.c) between attempts. */
#define RETRY_FIRST_MS 10.0
#define RETRY_MAX_MS   500.0
#define LEASE_TTL_MAX  9000000000LL /* etcd's longest lease */

struct dl_etcd {
        dl_etcd_url url;
        char key[DL_ETCD_KEY_MAX];   /* our entry: P/q/NAME/TOKEN */
        char queue[DL_ETCD_KEY_MAX]; /* P/q/NAME/ and the end of its range */
        char queue_end[DL_ETCD_KEY_MAX];
        char fence_key[DL_ETCD_KEY_MAX]; /* P/f/NAME */
        long long lease;                 /* this acquisition's, 0: none */
        long long ttl;                   /* seconds */
        long long rev;                   /* our entry's create_revision, 0: none */
        long long seq;                   /* a set's arrival (its first entry's revision), 0: not yet */
        unsigned long long fence;
        int names;           /* of the set it was taken with */
        bool revoke_pending; /* a revoke that got no answer */
        char *space_key;     /* the same-thread check's (etcd_space_key), malloc'd */
};

static struct dl_etcd *E(const dirlock *h)
{
        return (struct dl_etcd *)h->impl;
}

/* ---- helpers ----------------------------------------------------------------- */

int dl_etcd_parse_space(const char *spec, dl_etcd_url *u, dirlock_error *err)
{
        char why[200];
        if (dl_etcd_url_parse(spec, strlen(spec), u, why, sizeof why) == 0)
                return DIRLOCK_OK;
        char shown[300];
        dl_url_shown(spec, shown, sizeof shown);
        return dl_fail(err, DIRLOCK_EINVAL, 0, "lock space '%s': %s", shown, why);
}

/* Who holds or waits as entry e, for messages: "pid 812 on www1" after
 * its role (a range, a waiter ahead, a reader). */
static void describe(const dl_etcd_entry *e, char *out, size_t size)
{
        const char *role = e->ranged         ? "a range, "
                           : e->state == 'w' ? "a waiter ahead, "
                           : e->mode == 's'  ? "a reader, "
                                             : "";
        dl_record rec;
        bool readable = dl_record_parse(e->record, strlen(e->record), &rec) == 0;
        dl_record_describe(readable ? &rec : NULL, role, out, size);
}

static char mode_letter(int mode)
{
        return mode == DIRLOCK_SHARED ? 's' : mode == DIRLOCK_INTENT ? 'i' : 'x';
}

static long long wall_us(void)
{
        return dl_wall_ns() / 1000;
}

static void padded(unsigned long long v, char out[24])
{
        snprintf(out, 24, "%020llu", v);
}

/* Our entry as it is stored, in `state` and `mode` (a letter). */
static int entry_text(const dirlock *h, char state, char mode, unsigned long long fence, char *buf,
                      size_t size, dirlock_error *err)
{
        dl_etcd_entry e = {.state = state,
                           .mode = mode,
                           .policy = h->opts.policy,
                           .names = E(h)->names,
                           .ranged = h->ranged,
                           .lo = h->lo,
                           .hi = h->hi,
                           .fence = fence,
                           .seq = E(h)->seq};
        int rmode = mode == 's' ? DIRLOCK_SHARED : mode == 'x' ? DIRLOCK_EXCLUSIVE : DIRLOCK_INTENT;
        dl_record rec;
        dl_record_self(&rec, h->token, rmode, h->opts.stale_age, h->opts.partner_pid, h->partner_start);
        if (dl_record_format(&rec, e.record, sizeof e.record) < 0 || dl_etcd_entry_format(&e, buf, size) < 0)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "owner record of lock '%s' too long", h->name);
        return DIRLOCK_OK;
}

/* Our entry as a request, for the rules. */
static void self_entry(const dirlock *h, dl_etcd_entry *e)
{
        memset(e, 0, sizeof *e);
        memcpy(e->token, h->token, sizeof e->token);
        e->rev = E(h)->rev;
        e->state = 'w';
        e->mode = mode_letter(h->opts.mode);
        e->policy = h->opts.policy;
        e->names = E(h)->names;
        e->seq = E(h)->seq;
        e->ranged = h->ranged;
        e->lo = h->lo;
        e->hi = h->hi;
}

/* The read of every name of a set at one revision: its queue, then its
 * fence key, per name, in one transaction's success branch. */
static void add_reads(dl_etcd_txn *t, bool then, dirlock **hs, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                dl_etcd_op_range(t, then, E(hs[i])->queue, E(hs[i])->queue_end);
                dl_etcd_op_range(t, then, E(hs[i])->fence_key, NULL);
        }
}

static int load_reads(const dl_etcd_reply *r, dirlock **hs, size_t n, long long revision, dl_etcd_queue *qs,
                      dirlock_error *err)
{
        int rc = DIRLOCK_OK;
        for (size_t i = 0; i < n && rc == DIRLOCK_OK; i++) {
                dl_etcd_kv *kq = NULL, *kf = NULL;
                size_t nq = 0, nf = 0;
                rc = dl_etcd_txn_range(r, 2 * i, &kq, &nq, err);
                if (rc == DIRLOCK_OK)
                        rc = dl_etcd_txn_range(r, 2 * i + 1, &kf, &nf, err);
                if (rc == DIRLOCK_OK)
                        rc = dl_etcd_queue_load(&qs[i], kq, nq, kf, nf, revision, err);
                free(kq);
                free(kf);
        }
        (void)hs;
        return rc;
}

static int read_set(dirlock **hs, size_t n, const dl_time *deadline, dl_etcd_queue *qs, dirlock_error *err)
{
        dl_etcd_txn t;
        dl_etcd_txn_init(&t);
        add_reads(&t, true, hs, n);
        dl_etcd_reply r;
        bool ok;
        long long rev;
        dl_time io = dl_etcd_io_deadline(deadline);
        int rc = dl_etcd_txn_run(&E(hs[0])->url, &t, &io, &ok, &rev, &r, err);
        dl_etcd_txn_free(&t);
        if (rc == DIRLOCK_OK)
                rc = load_reads(&r, hs, n, rev, qs, err);
        dl_etcd_reply_free(&r);
        return rc;
}

int dl_etcd_read_queue(const dl_etcd_url *u, const char *name, const dl_time *deadline, dl_etcd_queue *q,
                       dirlock_error *err)
{
        struct dl_etcd e = {.url = *u};
        dirlock h = {.impl = &e};
        dirlock *hs[1] = {&h};
        dl_etcd_queue_key(u, name, e.queue, sizeof e.queue);
        dl_etcd_prefix_end(e.queue, e.queue_end, sizeof e.queue_end);
        dl_etcd_fence_key(u, name, e.fence_key, sizeof e.fence_key);
        return read_set(hs, 1, deadline, q, err);
}

/* Revoke the lease of h (if any) by `deadline` (NULL: as long as one
 * request may take): DIRLOCK_OK whether it was there or not; no answer
 * leaves it pending (it expires after its TTL). */
static int revoke_quietly(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        struct dl_etcd *e = E(h);
        if (e->lease == 0)
                return DIRLOCK_OK;
        dl_time never = dl_deadline(-1), io = dl_etcd_io_deadline(deadline != NULL ? deadline : &never);
        bool found, resent;
        int rc = dl_etcd_lease_revoke(&e->url, e->lease, &io, &found, &resent, err);
        e->revoke_pending = rc == DIRLOCK_ESERVER;
        if (!e->revoke_pending) {
                e->lease = 0;
                e->rev = 0;
        }
        return rc;
}

/* ---- a handle ---------------------------------------------------------------- */

/* The same-thread check's key (lib/deadlock/held.c): the members as the
 * space names them, its user and its prefix -- one space.  A cluster
 * named by two lists of its members counts as two spaces: a second
 * handle there waits out its timeout rather than be told at once.
 * malloc'd; NULL when out of memory. */
static char *space_key_of(const dl_etcd_url *u)
{
        size_t size = u->n * (DL_ETCD_HOST_MAX + 16) + DL_ETCD_PREFIX_MAX + DL_ETCD_USER_MAX + 32, len = 0;
        char *key = malloc(size);
        if (key == NULL)
                return NULL;
        len += (size_t)snprintf(key, size, "%s://%s@", u->tls ? "etcds" : "etcd", u->user);
        for (size_t i = 0; i < u->n && len < size; i++)
                len += (size_t)snprintf(key + len, size - len, "%s%s:%d", i ? "," : "", u->ep[i].host,
                                        u->ep[i].port);
        if (len < size)
                snprintf(key + len, size - len, "/%s", u->prefix);
        return key;
}

static const char *etcd_space_key(const dirlock *h)
{
        return E(h)->space_key;
}

static int etcd_open(dirlock *h, const char *spec, dirlock_error *err)
{
        if (h->opts.stale_age < 1.0)
                return dl_fail(
                    err, DIRLOCK_EINVAL, 0,
                    "stale age %.3g s is too short for an etcd space: leases are whole seconds, at "
                    "least 1 s",
                    h->opts.stale_age);
        struct dl_etcd *e = calloc(1, sizeof *e);
        if (e == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        int rc = dl_etcd_parse_space(spec, &e->url, err);
        if (rc != DIRLOCK_OK) {
                free(e);
                return rc;
        }
        dl_etcd_entry_key(&e->url, h->name, h->token, e->key, sizeof e->key);
        dl_etcd_queue_key(&e->url, h->name, e->queue, sizeof e->queue);
        dl_etcd_prefix_end(e->queue, e->queue_end, sizeof e->queue_end);
        dl_etcd_fence_key(&e->url, h->name, e->fence_key, sizeof e->fence_key);
        e->space_key = space_key_of(&e->url);
        if (e->space_key == NULL) {
                free(e);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        double s = h->opts.stale_age;
        e->ttl = s >= (double)LEASE_TTL_MAX ? LEASE_TTL_MAX : (long long)s + ((double)(long long)s < s);
        e->names = 1;
        h->impl = e;
        return DIRLOCK_OK;
}

static void etcd_close(dirlock *h)
{
        if (h->impl != NULL)
                free(E(h)->space_key);
        free(h->impl);
        h->impl = NULL;
}

static int etcd_retoken(dirlock *h, dirlock_error *err)
{
        (void)err;
        struct dl_etcd *e = E(h);
        dl_etcd_entry_key(&e->url, h->name, h->token, e->key, sizeof e->key);
        e->lease = 0;
        e->rev = 0;
        e->fence = 0;
        return DIRLOCK_OK;
}

static int etcd_range(dirlock *h, dirlock_error *err)
{
        (void)h;
        (void)err;
        return DIRLOCK_OK; /* the range is in every entry written */
}

/* ---- acquiring ----------------------------------------------------------------- */

/* Grant h's lease, checking that the cluster gave the TTL asked. */
static int grant_lease(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        struct dl_etcd *e = E(h);
        e->lease = dl_etcd_new_lease_id();
        e->rev = 0;
        long long granted;
        dl_time io = dl_etcd_io_deadline(deadline);
        int rc = dl_etcd_lease_grant(&e->url, e->lease, e->ttl, &io, &granted, err);
        if (rc != DIRLOCK_OK) {
                e->lease = 0;
                return rc;
        }
        if (granted > e->ttl) {
                (void)revoke_quietly(h, NULL, NULL);
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "stale age %.3g s is below the smallest lease of this etcd cluster, %lld s "
                               "(its election timeout decides it)",
                               h->opts.stale_age, granted);
        }
        return DIRLOCK_OK;
}

/* The state of one acquire of a set. */
struct attempt {
        dirlock **hs;
        size_t n;
        const dl_time *deadline;
        bool may_queue;
        dl_etcd_queue *qs;
        bool *blocked; /* per name, by the last decision */
        dl_time keepalive_due;
};

/* Run t, a take of the set (its compares and success branch written,
 * unless rc says building it failed), with the read of every name in its
 * failure branch: *taken whether it took, *rev the store's revision
 * after it; not taken, a->qs holds that read. */
static int run_take(struct attempt *a, dl_etcd_txn *t, int rc, bool *taken, long long *rev,
                    dirlock_error *err)
{
        add_reads(t, false, a->hs, a->n);
        dl_etcd_reply r = {0};
        dl_time io = dl_etcd_io_deadline(a->deadline);
        if (rc == DIRLOCK_OK)
                rc = dl_etcd_txn_run(&E(a->hs[0])->url, t, &io, taken, rev, &r, err);
        dl_etcd_txn_free(t);
        if (rc == DIRLOCK_OK && !*taken)
                rc = load_reads(&r, a->hs, a->n, *rev, a->qs, err);
        dl_etcd_reply_free(&r);
        return rc;
}

/* Step 2: take at once if every name is free, else (maybe) enqueue and read. */
static int first_try(struct attempt *a, bool *taken, dirlock_error *err)
{
        dirlock **hs = a->hs;
        char now[24], text[DL_RECORD_MAX + 160];
        unsigned long long fence = (unsigned long long)wall_us();
        padded(fence, now);
        dl_etcd_txn t;
        dl_etcd_txn_init(&t);
        int rc = DIRLOCK_OK;
        for (size_t i = 0; i < a->n && rc == DIRLOCK_OK; i++) {
                struct dl_etcd *e = E(hs[i]);
                dl_etcd_cmp_rev(&t, e->queue, e->queue_end, "CREATE", "EQUAL", 0);
                dl_etcd_cmp_value(&t, e->fence_key, "LESS", now);
                rc = entry_text(hs[i], 'h', mode_letter(hs[i]->opts.mode), fence, text, sizeof text, err);
                dl_etcd_op_put(&t, true, e->fence_key, now, 0);
                dl_etcd_op_put(&t, true, e->key, text, e->lease);
                /* A set waits only where it is kept out (decide, join). */
                if (rc == DIRLOCK_OK && a->may_queue && a->n == 1) {
                        rc = entry_text(hs[i], 'w', mode_letter(hs[i]->opts.mode), 0, text, sizeof text, err);
                        dl_etcd_op_put(&t, false, e->key, text, e->lease);
                }
        }
        long long rev = 0;
        rc = run_take(a, &t, rc, taken, &rev, err);
        if (rc == DIRLOCK_OK && *taken) {
                for (size_t i = 0; i < a->n; i++) {
                        E(hs[i])->fence = fence;
                        E(hs[i])->rev = rev;
                }
        } else if (rc == DIRLOCK_OK) {
                for (size_t i = 0; i < a->n; i++) {
                        long k = dl_etcd_queue_find(&a->qs[i], hs[i]->token);
                        E(hs[i])->rev = k >= 0 ? a->qs[i].e[k].rev : 0;
                }
        }
        return rc;
}

/* Step 3: every name may be held: take them (and let in beside us who
 * may).  *taken false: something changed, qs holds the new read. */
static int take(struct attempt *a, bool *taken, dirlock_error *err)
{
        dirlock **hs = a->hs;
        dl_etcd_txn t;
        dl_etcd_txn_init(&t);
        int rc = DIRLOCK_OK;
        unsigned long long fences[a->n > 0 ? a->n : 1];
        size_t *idx = NULL;
        for (size_t i = 0; i < a->n && rc == DIRLOCK_OK; i++) {
                struct dl_etcd *e = E(hs[i]);
                dl_etcd_queue *q = &a->qs[i];
                char text[DL_RECORD_MAX + 160], f[24];
                unsigned long long next = q->last + 1, clock = (unsigned long long)wall_us();
                if (clock > next)
                        next = clock;
                if (q->f_bad || next > DIRLOCK_FENCE_MAX) {
                        rc =
                            dl_fail(err, DIRLOCK_EDATA, 0,
                                    "lock '%s': its fence key %s holds no fence below %llu (not what dirlock "
                                    "writes); nothing was taken",
                                    hs[i]->name, e->fence_key, DIRLOCK_FENCE_MAX);
                        break;
                }
                dl_etcd_cmp_rev(&t, e->fence_key, NULL, "MOD", "EQUAL", q->f_mod);
                dl_etcd_cmp_rev(&t, e->key, NULL, "CREATE", "EQUAL", e->rev);
                DL_ASSERT(next > q->last); /* F: each take draws above the last fence */
                fences[i] = next;
                rc = entry_text(hs[i], 'h', mode_letter(hs[i]->opts.mode), next, text, sizeof text, err);
                dl_etcd_op_put(&t, true, e->key, text, e->lease);
                /* Who else may hold beside us: only when we are queued
                 * (a newcomer lets nobody in) and take one name. */
                long me = dl_etcd_queue_find(q, hs[i]->token);
                size_t count = 0;
                if (me >= 0 && a->n == 1 && q->n > 1) {
                        idx = malloc(q->n * sizeof *idx);
                        if (idx == NULL) {
                                rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                                break;
                        }
                        dl_etcd_grant_pass(q, me, idx, &count);
                }
                for (size_t k = 0; k < count; k++) {
                        dl_etcd_entry *o = &q->e[idx[k]];
                        char key[DL_ETCD_KEY_MAX], otext[DL_RECORD_MAX + 160];
                        dl_etcd_entry_key(&e->url, hs[i]->name, o->token, key, sizeof key);
                        o->fence = ++next;
                        if (dl_etcd_entry_format(o, otext, sizeof otext) < 0)
                                continue;
                        dl_etcd_cmp_rev(&t, key, NULL, "CREATE", "EQUAL", o->rev);
                        dl_etcd_op_put(&t, true, key, otext, o->lease);
                }
                free(idx);
                idx = NULL;
                padded(next, f);
                dl_etcd_op_put(&t, true, e->fence_key, f, 0);
        }
        long long rev = 0;
        rc = run_take(a, &t, rc, taken, &rev, err);
        if (rc == DIRLOCK_OK && *taken) {
                for (size_t i = 0; i < a->n; i++) {
                        E(hs[i])->fence = fences[i];
                        if (E(hs[i])->rev == 0)
                                E(hs[i])->rev = rev;
                }
        }
        return rc;
}

/* Keep every lease of the set alive; *lost when one is gone. */
static int keep_alive(struct attempt *a, bool *lost, dirlock_error *err)
{
        *lost = false;
        for (size_t i = 0; i < a->n; i++) {
                long long left;
                dl_time io = dl_etcd_io_deadline(a->deadline);
                int rc = dl_etcd_lease_keepalive(&E(a->hs[i])->url, E(a->hs[i])->lease, &io, &left, err);
                if (rc != DIRLOCK_OK)
                        return rc;
                if (left <= 0)
                        *lost = true;
        }
        double third = (double)E(a->hs[0])->ttl / 3;
        a->keepalive_due = dl_deadline(third);
        return DIRLOCK_OK;
}

/* Our entries are gone (our leases expired while we could not keep them
 * alive: paused, or cut off): revoke what is left and start again. */
static int renew(struct attempt *a, dirlock_error *err)
{
        for (size_t i = 0; i < a->n; i++) {
                (void)revoke_quietly(a->hs[i], NULL, NULL);
                E(a->hs[i])->revoke_pending = false;
                E(a->hs[i])->seq = 0;
        }
        for (size_t i = 0; i < a->n; i++) {
                int rc = grant_lease(a->hs[i], a->deadline, err);
                if (rc != DIRLOCK_OK)
                        return rc;
        }
        a->keepalive_due = dl_deadline((double)E(a->hs[0])->ttl / 3);
        return DIRLOCK_OK;
}

/* dl_gave_up for lock `name`, kept out by entry b. */
static int gave_up(dirlock_error *err, double timeout, bool canceled, const char *name,
                   const dl_etcd_entry *b)
{
        char what[DIRLOCK_NAME_MAX + 16], who[300];
        snprintf(what, sizeof what, "lock '%s'", name);
        describe(b, who, sizeof who);
        return dl_gave_up(err, timeout, canceled, what, who);
}

/* The same for request `me` of queue q kept out by entry b: when b is a
 * waiter ahead, the message names the holder (never the waiter as one),
 * and the waiter as the one that goes first. */
static int gave_up_in(dirlock_error *err, double timeout, bool canceled, const char *name,
                      const dl_etcd_queue *q, const dl_etcd_entry *me, const dl_etcd_entry *b)
{
        if (b->state != 'w')
                return gave_up(err, timeout, canceled, name, b);
        char what[DIRLOCK_NAME_MAX + 16], ahead[300], who[700];
        snprintf(what, sizeof what, "lock '%s'", name);
        dl_record rec;
        bool readable = dl_record_parse(b->record, strlen(b->record), &rec) == 0;
        dl_record_describe(readable ? &rec : NULL, "", ahead, sizeof ahead);
        bool conflicts;
        long k = dl_etcd_holder_of(q, me, &conflicts);
        if (k < 0)
                return dl_gave_up_ahead(err, timeout, canceled, what, ahead);
        describe(&q->e[k], who, sizeof who);
        if (!conflicts) {
                size_t used = strlen(who);
                snprintf(who + used, sizeof who - used, ", and a waiter ahead goes first (%s)", ahead);
        }
        return dl_gave_up(err, timeout, canceled, what, who);
}

/* A watch of a key read at revision from - 1, made at `made` (struct
 * since: dl_etcd_made_fn).  When the store changed since the read
 * (made >= from), the key itself is read once: changed or gone since
 * then is a wake-up.  Errors count as a change (the caller looks). */
struct since {
        const dl_etcd_url *u;
        const char *key;
        long long from;
        const dl_time *until;
};

static bool changed_since(void *arg, long long made)
{
        const struct since *s = arg;
        if (made < s->from)
                return false;
        dl_time io = dl_etcd_io_deadline(s->until);
        dl_etcd_kv *kv = NULL;
        size_t n = 0;
        if (dl_etcd_range(s->u, s->key, NULL, true, &kv, &n, NULL, &io, NULL) != DIRLOCK_OK)
                return true;
        bool changed = n == 0 || kv[0].mod_revision >= s->from;
        free(kv);
        return changed;
}

/* Step 4: wait for entry b of name i (in our way).  *again: look at once
 * (its owner was dead and is revoked). */
static int wait_for(struct attempt *a, size_t i, const dl_etcd_entry *b, int *pid_fd, pid_t *pid_watched,
                    bool *canceled, bool *again, dirlock_error *err)
{
        dirlock *h = a->hs[i];
        struct dl_etcd *e = E(h);
        *again = false;
        dl_record rec;
        bool readable = dl_record_parse(b->record, strlen(b->record), &rec) == 0;
        if (readable && !(rec.pid == *pid_watched && *pid_fd >= 0) && dl_record_owner_alive(&rec) == 0) {
                dl_time io = dl_etcd_io_deadline(a->deadline);
                bool found, resent;
                int rc = dl_etcd_lease_revoke(&e->url, b->lease, &io, &found, &resent, err);
                *again = true;
                return rc == DIRLOCK_ESERVER ? DIRLOCK_OK : rc;
        }
        if (readable && rec.pid != *pid_watched) {
                if (*pid_fd >= 0)
                        close(*pid_fd);
                *pid_fd = dl_owner_pidfd(&rec, NULL);
                *pid_watched = rec.pid;
        }
        dl_time until = a->keepalive_due;
        if (!dl_deadline_never(a->deadline) && dl_remaining(a->deadline) < dl_remaining(&until))
                until = *a->deadline;
        char key[DL_ETCD_KEY_MAX];
        dl_etcd_entry_key(&e->url, h->name, b->token, key, sizeof key);
        dl_etcd_woken woken;
        struct since since = {&e->url, key, a->qs[i].revision + 1, &until};
        json_object *watch = dl_etcd_watch_request(key);
        int rc = dl_etcd_watch_wait(&e->url, watch, &until, h->opts.cancel_fd, *pid_fd, changed_since, &since,
                                    &woken, err);
        json_object_put(watch);
        if (rc == DIRLOCK_OK && woken == DL_ETCD_CANCELED)
                *canceled = true;
        if (rc == DIRLOCK_OK && woken == DL_ETCD_PID) {
                close(*pid_fd); /* judge again: its partner may hold on */
                *pid_fd = -1;
                *pid_watched = 0;
        }
        return rc;
}

/* Step 3 on the read in a.qs: taken (by us, or for us by a taker who let
 * us in beside it), taken now, or the entry in our way (*which: of which
 * name).  *gone: our entry went with our lease meanwhile. */
static int decide(struct attempt *a, bool *taken, bool *gone, size_t *which, dl_etcd_entry *blocker,
                  dirlock_error *err)
{
        *taken = *gone = false;
        for (;;) {
                bool may = true, granted = true;
                size_t bi = 0;
                for (size_t i = 0; i < a->n; i++) {
                        dl_etcd_entry me;
                        self_entry(a->hs[i], &me);
                        long k = dl_etcd_queue_find(&a->qs[i], a->hs[i]->token);
                        if (me.rev > 0 && k < 0)
                                *gone = true;
                        granted = granted && k >= 0 && a->qs[i].e[k].state == 'h';
                        size_t b;
                        a->blocked[i] = !dl_etcd_may_hold(&a->qs[i], &me, &b);
                        if (may && a->blocked[i]) {
                                may = false;
                                *which = i;
                                bi = b;
                        }
                }
                if (*gone)
                        return DIRLOCK_OK;
                if (granted && a->n == 1) {
                        long k = dl_etcd_queue_find(&a->qs[0], a->hs[0]->token);
                        E(a->hs[0])->fence = a->qs[0].e[k].fence;
                        *taken = true;
                        return DIRLOCK_OK;
                }
                if (!may) {
                        *blocker = a->qs[*which].e[bi];
                        return DIRLOCK_OK;
                }
                int rc = take(a, taken, err);
                if (rc != DIRLOCK_OK || *taken)
                        return rc;
                /* Something was taken meanwhile: decide on the new read. */
        }
}

/* A set kept out: join the queues of the names that keep it out and that
 * it is not in yet, keeping its arrival (the revision of its first
 * entries) in every one.  *joined: it did. */
static int join(struct attempt *a, bool *joined, dirlock_error *err)
{
        *joined = false;
        dl_etcd_txn t;
        dl_etcd_txn_init(&t);
        int rc = DIRLOCK_OK;
        for (size_t i = 0; i < a->n && rc == DIRLOCK_OK; i++) {
                struct dl_etcd *e = E(a->hs[i]);
                if (!a->blocked[i] || e->rev > 0)
                        continue;
                char text[DL_RECORD_MAX + 160];
                rc = entry_text(a->hs[i], 'w', mode_letter(a->hs[i]->opts.mode), 0, text, sizeof text, err);
                dl_etcd_cmp_rev(&t, e->key, NULL, "CREATE", "EQUAL", 0);
                dl_etcd_op_put(&t, true, e->key, text, e->lease);
                *joined = true;
        }
        dl_etcd_reply r = {0};
        bool ok = false;
        long long rev = 0;
        dl_time io = dl_etcd_io_deadline(a->deadline);
        if (rc == DIRLOCK_OK && *joined)
                rc = dl_etcd_txn_run(&E(a->hs[0])->url, &t, &io, &ok, &rev, &r, err);
        dl_etcd_txn_free(&t);
        dl_etcd_reply_free(&r);
        if (rc == DIRLOCK_OK && ok) {
                for (size_t i = 0; i < a->n; i++) {
                        struct dl_etcd *e = E(a->hs[i]);
                        if (a->blocked[i] && e->rev == 0)
                                e->rev = rev;
                }
                for (size_t i = 0; i < a->n; i++)
                        if (E(a->hs[i])->seq == 0)
                                E(a->hs[i])->seq = rev;
        }
        return rc;
}

/* The calls of the set's handles serve wait w (NULL: none, as after the
 * wait: the caller owns its cancel descriptor). */
static void serve(dirlock **hs, size_t n, const struct dl_etcd_wait *w)
{
        for (size_t i = 0; i < n; i++)
                E(hs[i])->url.wait = w;
}

/* A wait that was canceled gives its last try, and the revoke on the
 * way out, the least one request is given: a cluster that does not
 * answer (no majority) must not hold up the caller that gave up. */
static void cut_short(dl_time *until)
{
        dl_time grace = dl_deadline(DL_ETCD_GRACE_MS / 1e3);
        if (dl_deadline_never(until) || dl_remaining(until) > dl_remaining(&grace))
                *until = grace;
}

/* One acquire of a set, across its tries (acquire_set). */
struct run {
        struct attempt a;
        dl_time until; /* the deadline; after a cancel, the last try's (cut_short) */
        dl_time began; /* dl_now() at the start */
        bool canceled, taken, fresh, cut;
        dl_backoff retry;
        dl_silence silence; /* the caller is told of a cluster that does not answer */
        struct dl_etcd_wait wait;
        int pid_fd; /* the process of the entry in our way, watched */
        pid_t pid_watched;
};

static int run_begin(struct run *r, dirlock **hs, size_t n, const dl_time *wait_deadline, dirlock_error *err)
{
        const dirlock_options *o = &hs[0]->opts;
        *r = (struct run){.until = *wait_deadline, .began = dl_now(), .fresh = true, .pid_fd = -1};
        r->a = (struct attempt){.hs = hs,
                                .n = n,
                                .deadline = &r->until,
                                .may_queue = o->timeout != 0,
                                .qs = calloc(n, sizeof *r->a.qs),
                                .blocked = calloc(n, sizeof *r->a.blocked)};
        if (r->a.qs == NULL || r->a.blocked == NULL) {
                free(r->a.qs);
                free(r->a.blocked);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        for (size_t i = 0; i < n; i++) {
                E(hs[i])->names = (int)n;
                E(hs[i])->seq = 0;
        }
        dl_backoff_init(&r->retry, RETRY_FIRST_MS, RETRY_MAX_MS, hs[0]->token);
        dl_silence_begin(&r->silence);
        r->wait = (struct dl_etcd_wait){.cancel_fd = o->cancel_fd, .silence = &r->silence, .h = hs[0]};
        serve(hs, n, &r->wait);
        return DIRLOCK_OK;
}

/* Our entries went with our lease: a new lease, and start over (*again). */
static int renewed(struct run *r, bool *again, dirlock_error *err)
{
        int rc = renew(&r->a, err);
        r->fresh = true;
        *again = rc == DIRLOCK_OK;
        return rc;
}

/* Steps 1 and 2 (fresh: a lease, the first try), or a new read, the
 * lease kept alive when due (*again: it was gone, and renewed). */
static int look(struct run *r, bool *again, dirlock_error *err)
{
        struct attempt *a = &r->a;
        *again = false;
        int rc = DIRLOCK_OK;
        if (r->fresh) {
                for (size_t i = 0; i < a->n && rc == DIRLOCK_OK; i++)
                        if (E(a->hs[i])->lease == 0)
                                rc = grant_lease(a->hs[i], a->deadline, err);
                a->keepalive_due = dl_deadline((double)E(a->hs[0])->ttl / 3);
                if (rc == DIRLOCK_OK)
                        rc = first_try(a, &r->taken, err);
                r->fresh = rc != DIRLOCK_OK;
                return rc;
        }
        bool gone = false;
        if (dl_deadline_passed(&a->keepalive_due))
                rc = keep_alive(a, &gone, err);
        if (rc == DIRLOCK_OK && gone)
                return renewed(r, again, err);
        return rc == DIRLOCK_OK ? read_set(a->hs, a->n, a->deadline, a->qs, err) : rc;
}

/* Step 3, 4 or 5 on the read: taken (r->taken), given up on the last
 * try (the error says why), a set that joined the queues that keep it
 * out (*again: read again, with its new entries), or a wait for the
 * entry in the way.  Our entries gone: renewed (*again). */
static int judge(struct run *r, bool last, bool *again, dirlock_error *err)
{
        struct attempt *a = &r->a;
        bool gone, joined = false;
        size_t which = 0;
        dl_etcd_entry blocker;
        *again = false;
        int rc = decide(a, &r->taken, &gone, &which, &blocker, err);
        if (rc != DIRLOCK_OK || r->taken)
                return rc;
        if (gone)
                return renewed(r, again, err);
        if (last) {
                dl_etcd_entry me;
                self_entry(a->hs[which], &me);
                return gave_up_in(err, a->hs[0]->opts.timeout, r->canceled, a->hs[which]->name, &a->qs[which],
                                  &me, &blocker);
        }
        if (a->n > 1) {
                rc = join(a, &joined, err);
                if (rc != DIRLOCK_OK || joined) {
                        *again = rc == DIRLOCK_OK;
                        return rc;
                }
        }
        bool at_once;
        return wait_for(a, which, &blocker, &r->pid_fd, &r->pid_watched, &r->canceled, &at_once, err);
}

/* A wait whose last request got no answer by the deadline, when the
 * cluster was there (it answered the revoke of our lease, or this
 * thread, during the wait) and no lease of ours is in doubt: nothing is
 * held (every key of ours hangs on a lease we know) and the cluster
 * answers, so the wait timed out -- the state is known, which
 * DIRLOCK_ESERVER would deny.  (Many waits of one process, each a
 * request at a time, make each request wait its turn: 300 pending
 * acquires of one event loop met this at a busy lock.)  The request's
 * own words stay in the message. */
static int timed_out_slowly(const dirlock *h, dirlock_error *err)
{
        char last[sizeof err->message];
        snprintf(last, sizeof last, "%s", err != NULL ? err->message : "");
        return dl_fail(err, DIRLOCK_ETIMEDOUT, 0,
                       "timed out waiting for lock '%s'; the cluster answered too slowly for the time left "
                       "(%.200s)",
                       h->name, last);
}

/* The end of an acquire: held, or out -- our leases go, and with them
 * every key we made -- with the error that says why. */
static int run_end(struct run *r, int rc, dirlock_error *err)
{
        dirlock **hs = r->a.hs, *h = hs[0];
        size_t n = r->a.n;
        serve(hs, n, NULL);
        if (r->pid_fd >= 0)
                close(r->pid_fd);
        for (size_t i = 0; i < n; i++)
                dl_etcd_queue_free(&r->a.qs[i]);
        free(r->a.qs);
        free(r->a.blocked);
        if (r->taken && rc == DIRLOCK_OK) {
                for (size_t i = 0; i < n; i++)
                        DL_ASSERT(E(hs[i])->fence > 0 && E(hs[i])->lease != 0); /* held: a fence, a lease */
                return DIRLOCK_OK;
        }
        if (r->canceled)
                cut_short(&r->until);
        /* Whether the cluster was there: a lease of ours revoked at the
         * end, or an answer to this thread during the wait; and no lease
         * of ours left in doubt. */
        bool answered = dl_etcd_answered_since(&E(h)->url, &r->began), cleared = true;
        for (size_t i = 0; i < n; i++) {
                bool had = E(hs[i])->lease != 0;
                bool ok = revoke_quietly(hs[i], r->canceled ? &r->until : NULL, NULL) == DIRLOCK_OK;
                answered |= had && ok;
                cleared &= ok;
        }
        if (rc == DIRLOCK_ESERVER && answered && cleared && !r->canceled && h->opts.timeout != 0 &&
            dl_remaining(&r->until) <= 0)
                return timed_out_slowly(h, err);
        if (rc == DIRLOCK_ESERVER) {
                char what[DIRLOCK_NAME_MAX + 16];
                snprintf(what, sizeof what, "lock '%s'", h->name);
                rc = dl_gave_up_unreachable(err, h->opts.timeout, r->canceled, what, "the etcd cluster");
        }
        if (rc != DIRLOCK_OK && rc != DIRLOCK_EBUSY && rc != DIRLOCK_ETIMEDOUT && rc != DIRLOCK_ECANCELED)
                dl_about(err, rc, h->name);
        return rc;
}

/* Take every lock of hs[0..n-1] (one space, distinct names) by the
 * deadline, all or none: the steps at the top of this file, tried again
 * with backoff while the cluster cannot be reached. */
static int acquire_set(dirlock **hs, size_t n, const dl_time *wait_deadline, dirlock_error *err)
{
        struct run r;
        int rc = run_begin(&r, hs, n, wait_deadline, err);
        if (rc != DIRLOCK_OK)
                return rc;
        for (;;) {
                if (r.canceled && !r.cut) {
                        r.wait.cancel_fd = -1; /* the last try is not cut */
                        cut_short(&r.until);
                        r.cut = true;
                }
                bool last = r.canceled || dl_deadline_passed(&r.until) || !r.a.may_queue, again;
                rc = look(&r, &again, err);
                if (rc == DIRLOCK_OK && !again && !r.taken && !r.fresh)
                        rc = judge(&r, last, &again, err);
                if (rc == DIRLOCK_OK && again)
                        continue;
                if (rc == DIRLOCK_OK)
                        dl_silence_answered(&r.silence, hs[0]);
                if (r.taken && rc == DIRLOCK_OK)
                        break;
                if (rc == DIRLOCK_ESERVER && !last) {
                        /* Unreachable: try again, with backoff, until the deadline. */
                        dl_silence_failed(&r.silence, hs[0], err);
                        if (dl_nap_ms(dl_backoff_next(&r.retry), &r.until, hs[0]->opts.cancel_fd) == 1)
                                r.canceled = true;
                        continue;
                }
                if (rc != DIRLOCK_OK)
                        break;
                dl_backoff_reset(&r.retry);
        }
        return run_end(&r, rc, err);
}

static int etcd_acquire(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        return acquire_set(&h, 1, deadline, err);
}

static int etcd_acquire_many(dirlock **hs, size_t n, const dl_time *deadline, dirlock_error *err)
{
        /* One token for the set: one identity in every queue. */
        for (size_t i = 1; i < n; i++) {
                memcpy(hs[i]->token, hs[0]->token, sizeof hs[0]->token);
                etcd_retoken(hs[i], NULL);
        }
        return acquire_set(hs, n, deadline, err);
}

/* ---- holding ----------------------------------------------------------------- */

static int lost(dirlock_error *err, const dirlock *h)
{
        return dl_fail(err, DIRLOCK_ELOST, 0,
                       "lock '%s' is not held any more: its lease on the etcd cluster expired or was revoked "
                       "(broken)",
                       h->name);
}

/* The budget of one request of a holder: its acquire timeout. */
static dl_time holder_io(const dirlock *h)
{
        dl_time call = dl_deadline(h->opts.timeout);
        return dl_etcd_io_deadline(&call);
}

static int etcd_release(dirlock *h, dirlock_error *err)
{
        struct dl_etcd *e = E(h);
        dl_time io = holder_io(h);
        bool found, resent;
        int rc = dl_etcd_lease_revoke(&e->url, e->lease, &io, &found, &resent, err);
        e->revoke_pending = rc == DIRLOCK_ESERVER;
        if (rc != DIRLOCK_OK)
                return dl_about(err, rc, h->name);
        e->lease = 0;
        e->rev = 0;
        if (found)
                return DIRLOCK_OK;
        if (resent)
                return dl_fail(err, DIRLOCK_ESERVER, 0,
                               "lock '%s': a member did not answer the release, and the lease is gone now; "
                               "whether it was released or had been lost cannot be told",
                               h->name);
        return dl_fail(
            err, DIRLOCK_ELOST, 0,
            "lock '%s' was lost: its lease on the etcd cluster had expired or been revoked (broken)",
            h->name);
}

/* A release that got no answer: revoke again.  Gone is no error. */
static int etcd_release_kept(dirlock *h, dirlock_error *err)
{
        struct dl_etcd *e = E(h);
        if (!e->revoke_pending)
                return DIRLOCK_OK;
        dl_time io = holder_io(h);
        bool found, resent;
        int rc = dl_etcd_lease_revoke(&e->url, e->lease, &io, &found, &resent, err);
        if (rc != DIRLOCK_OK)
                return dl_about(err, rc, h->name);
        e->revoke_pending = false;
        e->lease = 0;
        return DIRLOCK_OK;
}

static int etcd_refresh(dirlock *h, dirlock_error *err)
{
        struct dl_etcd *e = E(h);
        dl_time io = holder_io(h);
        long long left;
        int rc = dl_etcd_lease_keepalive(&e->url, e->lease, &io, &left, err);
        if (rc != DIRLOCK_OK)
                return dl_about(err, rc, h->name);
        return left > 0 ? DIRLOCK_OK : lost(err, h);
}

/* Our entry as the cluster has it now, *held when it is there and held. */
static int read_own(const dirlock *h, dl_etcd_entry *own, bool *held, long long *revision, dirlock_error *err)
{
        struct dl_etcd *e = E(h);
        dl_time io = holder_io(h);
        dl_etcd_kv *kv = NULL;
        size_t n = 0;
        int rc = dl_etcd_range(&e->url, e->key, NULL, false, &kv, &n, revision, &io, err);
        if (rc != DIRLOCK_OK)
                return dl_about(err, rc, h->name);
        *held = n == 1 && kv[0].create_revision == e->rev && dl_etcd_entry_parse(kv[0].value, own) == 0 &&
                own->state == 'h';
        free(kv);
        return DIRLOCK_OK;
}

static int etcd_check(const dirlock *h, dirlock_error *err)
{
        dl_etcd_entry own;
        bool held = false;
        long long rev;
        int rc = read_own(h, &own, &held, &rev, err);
        if (rc != DIRLOCK_OK)
                return rc;
        return held ? DIRLOCK_OK : lost(err, h);
}

static int etcd_fence(dirlock *h, unsigned long long *fence, dirlock_error *err)
{
        int rc = etcd_check(h, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (E(h)->fence == 0)
                return dl_fail(err, DIRLOCK_EDATA, 0, "lock '%s': no fence was drawn", h->name);
        *fence = E(h)->fence;
        return DIRLOCK_OK;
}

/* Rewrite our held entry in `mode` (and h's range), if it is still ours. */
static int rewrite(dirlock *h, char mode, dirlock_error *err)
{
        struct dl_etcd *e = E(h);
        char text[DL_RECORD_MAX + 160];
        int rc = entry_text(h, 'h', mode, e->fence, text, sizeof text, err);
        if (rc != DIRLOCK_OK)
                return rc;
        dl_etcd_txn t;
        dl_etcd_txn_init(&t);
        dl_etcd_cmp_rev(&t, e->key, NULL, "CREATE", "EQUAL", e->rev);
        dl_etcd_op_put(&t, true, e->key, text, e->lease);
        dl_etcd_reply r;
        bool ok;
        long long rev;
        dl_time io = holder_io(h);
        rc = dl_etcd_txn_run(&e->url, &t, &io, &ok, &rev, &r, err);
        dl_etcd_txn_free(&t);
        dl_etcd_reply_free(&r);
        if (rc == DIRLOCK_ELOST || (rc == DIRLOCK_OK && !ok))
                return lost(err, h);
        return dl_about(err, rc, h->name);
}

static int etcd_downgrade(dirlock *h, dirlock_error *err)
{
        if (h->mode == DIRLOCK_SHARED)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "lock '%s' is already a read lock", h->name);
        int rc = rewrite(h, 's', err);
        if (rc == DIRLOCK_OK)
                h->mode = DIRLOCK_SHARED;
        return rc;
}

static int etcd_downgrade_intent(dirlock *h, dirlock_error *err)
{
        int rc = h->opts.policy == DIRLOCK_POLICY_SIMPLE ? DIRLOCK_OK : rewrite(h, 'i', err);
        if (rc == DIRLOCK_OK)
                h->mode = DIRLOCK_INTENT;
        return rc;
}

static int etcd_shrink(dirlock *h, double lo, double hi, dirlock_error *err)
{
        double old_lo = h->lo, old_hi = h->hi;
        h->lo = lo;
        h->hi = hi;
        char mode =
            h->mode == DIRLOCK_EXCLUSIVE && h->opts.mode == DIRLOCK_INTENT ? 'u' : mode_letter(h->mode);
        int rc = rewrite(h, mode, err);
        if (rc != DIRLOCK_OK && rc != DIRLOCK_ELOST) {
                h->lo = old_lo;
                h->hi = old_hi;
        }
        return rc;
}

/* Mark our intent entry upgrading (U): a take-like transaction that
 * writes the fence key, so no take decided before it commits after it. */
static int mark_upgrading(dirlock *h, const dl_time *deadline, dirlock_error *err)
{
        struct dl_etcd *e = E(h);
        dirlock *hs[1] = {h};
        dl_etcd_queue q = {0};
        int rc = read_set(hs, 1, deadline, &q, err);
        for (int tries = 0; rc == DIRLOCK_OK; tries++) {
                long me = dl_etcd_queue_find(&q, h->token);
                if (me < 0 || q.e[me].state != 'h') {
                        rc = lost(err, h);
                        break;
                }
                char text[DL_RECORD_MAX + 160], f[24];
                rc = entry_text(h, 'h', 'u', e->fence, text, sizeof text, err);
                if (rc != DIRLOCK_OK)
                        break;
                padded(q.last, f);
                dl_etcd_txn t;
                dl_etcd_txn_init(&t);
                dl_etcd_cmp_rev(&t, e->fence_key, NULL, "MOD", "EQUAL", q.f_mod);
                dl_etcd_cmp_rev(&t, e->key, NULL, "CREATE", "EQUAL", e->rev);
                dl_etcd_op_put(&t, true, e->key, text, e->lease);
                dl_etcd_op_put(&t, true, e->fence_key, f, 0);
                add_reads(&t, false, hs, 1);
                dl_etcd_reply r = {0};
                bool ok;
                long long rev;
                dl_time io = dl_etcd_io_deadline(deadline);
                rc = dl_etcd_txn_run(&e->url, &t, &io, &ok, &rev, &r, err);
                dl_etcd_txn_free(&t);
                if (rc == DIRLOCK_OK && ok) {
                        dl_etcd_reply_free(&r);
                        break;
                }
                if (rc == DIRLOCK_OK)
                        rc = load_reads(&r, hs, 1, rev, &q, err);
                dl_etcd_reply_free(&r);
        }
        dl_etcd_queue_free(&q);
        return rc == DIRLOCK_ELOST ? lost(err, h) : rc;
}

/* An upgrade's wait for a reader in its way (a->hs[0] upgrades, with
 * its own cancel descriptor): its lease kept alive, the reader's wait
 * is watched as an acquire does. */
static int wait_for_reader(struct attempt *a, int cancel_fd, const dl_etcd_entry *reader, int *pid_fd,
                           pid_t *pid_watched, bool *canceled, dirlock_error *err)
{
        dirlock **hs = a->hs, *h = hs[0];
        if (dl_deadline_passed(&a->keepalive_due)) {
                bool gone;
                int rc = keep_alive(a, &gone, err);
                if (rc == DIRLOCK_OK && gone)
                        rc = lost(err, h);
                if (rc != DIRLOCK_OK && rc != DIRLOCK_ESERVER)
                        return rc;
        }
        dirlock view = *h;
        view.opts.cancel_fd = cancel_fd;
        dirlock *vs[1] = {&view};
        a->hs = vs;
        bool at_once;
        int rc = wait_for(a, 0, reader, pid_fd, pid_watched, canceled, &at_once, err);
        a->hs = hs;
        return rc;
}

static int etcd_upgrade(dirlock *h, const dirlock_options *opts, dirlock_error *err)
{
        if (h->mode == DIRLOCK_EXCLUSIVE)
                return DIRLOCK_OK;
        if (h->mode == DIRLOCK_SHARED)
                return dl_fail(
                    err, DIRLOCK_EUPGRADE, 0,
                    "read lock '%s' cannot be upgraded: two readers upgrading at once would wait for "
                    "each other forever; take it in intent mode (DIRLOCK_INTENT) to upgrade",
                    h->name);
        if (h->opts.policy == DIRLOCK_POLICY_SIMPLE) {
                h->mode = DIRLOCK_EXCLUSIVE; /* intent under `simple` excludes everyone already */
                return DIRLOCK_OK;
        }
        dirlock_options o = opts != NULL ? *opts : h->opts;
        int cancel_fd = (o.flags & DIRLOCK_CANCEL_FD) ? o.cancel_fd : -1;
        dl_time deadline = dl_deadline(o.timeout);
        struct dl_etcd *e = E(h);
        int rc = mark_upgrading(h, &deadline, err);
        if (rc != DIRLOCK_OK)
                return dl_about(err, rc, h->name);
        dirlock *hs[1] = {h};
        dl_etcd_queue q = {0};
        bool canceled = false;
        int pid_fd = -1;
        pid_t pid_watched = 0;
        struct attempt a = {.hs = hs, .n = 1, .deadline = &deadline, .may_queue = true, .qs = &q};
        a.keepalive_due = dl_deadline((double)e->ttl / 3);
        dl_backoff retry;
        dl_backoff_init(&retry, RETRY_FIRST_MS, RETRY_MAX_MS, h->token);
        bool cut = false;
        struct dl_etcd_wait wait = {.cancel_fd = cancel_fd, .silence = NULL, .h = h};
        serve(hs, 1, &wait);
        for (;;) {
                if (canceled && !cut) {
                        wait.cancel_fd = -1; /* the last try is not cut */
                        cut_short(&deadline);
                        cut = true;
                }
                bool last = canceled || o.timeout == 0 || dl_deadline_passed(&deadline);
                rc = read_set(hs, 1, &deadline, &q, err);
                if (rc == DIRLOCK_ESERVER && !last) {
                        if (dl_nap_ms(dl_backoff_next(&retry), &deadline, cancel_fd) == 1)
                                canceled = true;
                        continue;
                }
                if (rc != DIRLOCK_OK)
                        break;
                dl_backoff_reset(&retry);
                long me = dl_etcd_queue_find(&q, h->token);
                if (me < 0 || q.e[me].state != 'h') {
                        rc = lost(err, h);
                        break;
                }
                long r = dl_etcd_reader_in_way(&q, &q.e[me]);
                if (r < 0) {
                        h->mode = DIRLOCK_EXCLUSIVE;
                        break;
                }
                dl_etcd_entry reader = q.e[r];
                if (last) {
                        (void)rewrite(h, 'i', NULL); /* readers in again */
                        rc = gave_up(err, o.timeout, canceled, h->name, &reader);
                        break;
                }
                rc = wait_for_reader(&a, cancel_fd, &reader, &pid_fd, &pid_watched, &canceled, err);
                if (rc != DIRLOCK_OK && rc != DIRLOCK_ESERVER)
                        break;
        }
        serve(hs, 1, NULL);
        if (pid_fd >= 0)
                close(pid_fd);
        dl_etcd_queue_free(&q);
        return rc == DIRLOCK_OK || rc == DIRLOCK_EBUSY || rc == DIRLOCK_ETIMEDOUT || rc == DIRLOCK_ECANCELED
                   ? rc
                   : dl_about(err, rc, h->name);
}

static const char *const etcd_forms[] = {DL_ETCD_SPACE_FORMS, NULL};

static const char *const etcd_prefixes[] = {"etcd://", "etcds://", NULL};

static const dl_backend dl_etcd_backend = {
    .name = "etcd",
    .prefixes = etcd_prefixes,
    .forms = etcd_forms,
    .spec_has_scheme = true,
    .open = etcd_open,
    .close = etcd_close,
    .retoken = etcd_retoken,
    .acquire = etcd_acquire,
    .acquire_many = etcd_acquire_many,
    .release = etcd_release,
    .release_kept = etcd_release_kept,
    .refresh = etcd_refresh,
    .check = etcd_check,
    .space_key = etcd_space_key,
    .fence = etcd_fence,
    .range = etcd_range,
    .shrink = etcd_shrink,
    .upgrade = etcd_upgrade,
    .downgrade = etcd_downgrade,
    .downgrade_intent = etcd_downgrade_intent,
    .inspect = dl_etcd_inspect,
    .break_lock = dl_etcd_break,
    .cleanup = dl_etcd_cleanup,
    .ranges = dl_etcd_ranges,
    .holders = dl_etcd_holders,
    .waiters = dl_etcd_waiters,
    .list = dl_etcd_list,
};
DL_BACKEND(dl_etcd_backend)
