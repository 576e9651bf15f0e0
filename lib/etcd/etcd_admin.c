/* etcd_admin.c - an etcd space from outside its holders (backend.h):
 * inspect (the holder's owner record and age, the counts, the last
 * fence), break (revoke the holder's lease), list (the names with holders
 * or waiters), cleanup (revoke the leases of owners provably dead on this
 * host), and who holds and who waits: every holder of a name, its range
 * holders and waiters, and its waiters.  Every change is a lease revoked:
 * the cluster removes that acquisition's keys, and nobody else's. */
#include "etcd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dl_time admin_io(void)
{
        dl_time never = dl_deadline(-1);
        return dl_etcd_io_deadline(&never);
}

/* What inspect and break look at: the holder of the write side (an
 * exclusive or intent holder of the whole lock, or any whole holder under
 * `simple`), and how many whole readers and held ranges there are. */
struct view {
        dl_etcd_queue q;
        long holder; /* index, or -1 */
        unsigned readers, ranges;
};

static int look(const dl_etcd_url *u, const char *name, struct view *v, dirlock_error *err)
{
        memset(v, 0, sizeof *v);
        v->holder = -1;
        dl_time io = admin_io();
        int rc = dl_etcd_read_queue(u, name, &io, &v->q, err);
        if (rc != DIRLOCK_OK)
                return dl_about(err, rc, name);
        for (size_t i = 0; i < v->q.n; i++) {
                const dl_etcd_entry *e = &v->q.e[i];
                if (e->state != 'h')
                        continue;
                if (e->ranged)
                        v->ranges++;
                else if (e->mode == 's' && e->policy != DIRLOCK_POLICY_SIMPLE)
                        v->readers++;
                else if (v->holder < 0)
                        v->holder = (long)i;
        }
        return DIRLOCK_OK;
}

static int mode_of(char letter)
{
        return letter == 's' ? DIRLOCK_SHARED : letter == 'x' ? DIRLOCK_EXCLUSIVE : DIRLOCK_INTENT;
}

/* Seconds since the lease of an entry was granted or last kept alive:
 * its age; 0 when the cluster does not say (a lease gone meanwhile). */
static double lease_age(const dl_etcd_url *u, long long lease)
{
        long long granted = -1, left = -1;
        dl_time io = admin_io();
        if (dl_etcd_lease_ttl(u, lease, &io, &granted, &left, NULL) == DIRLOCK_OK && granted > 0 && left >= 0)
                return (double)(granted - left);
        return 0;
}

/* An intent holder upgrading (mode u) while a reader is still in its
 * way: it waits for the readers to leave. */
static bool upgrading(const dl_etcd_queue *q, const dl_etcd_entry *e)
{
        return e->state == 'h' && e->mode == 'u' && dl_etcd_reader_in_way(q, e) >= 0;
}

/* The waiters of q (name `name`) appended to *v (*n of them, room for
 * *cap): entries still waiting, and upgrades waiting for readers; those
 * provably dead on this host are left out (their leases expire).  With
 * `ages` false the cluster is not asked how old each entry is. */
static int queue_waiters(const dl_etcd_url *u, const char *name, const dl_etcd_queue *q, bool ages,
                         dirlock_waiter **v, size_t *n, size_t *cap, dirlock_error *err)
{
        for (size_t i = 0; i < q->n; i++) {
                const dl_etcd_entry *e = &q->e[i];
                bool up = upgrading(q, e);
                if (e->state != 'w' && !up)
                        continue;
                dl_record rec;
                bool readable = dl_record_parse(e->record, strlen(e->record), &rec) == 0;
                if (readable && dl_record_owner_alive(&rec) == 0)
                        continue;
                if (*n == *cap) {
                        size_t grown_cap = *cap ? *cap * 2 : 8;
                        dirlock_waiter *grown = realloc(*v, grown_cap * sizeof *grown);
                        if (grown == NULL)
                                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                        *v = grown;
                        *cap = grown_cap;
                }
                dirlock_waiter *w = &(*v)[(*n)++];
                memset(w, 0, sizeof *w);
                snprintf(w->name, sizeof w->name, "%s", name);
                w->kind = up ? DIRLOCK_WAIT_UPGRADE : e->ranged ? DIRLOCK_WAIT_RANGE : DIRLOCK_WAIT_LOCK;
                w->mode = up ? DIRLOCK_EXCLUSIVE : mode_of(e->mode);
                if (e->ranged) {
                        w->lo = e->lo;
                        w->hi = e->hi;
                }
                double now = (double)dl_wall_ns() / 1e9;
                if (readable) {
                        w->pid = rec.pid;
                        w->tid = rec.tid;
                        w->start_time = rec.start_time;
                        snprintf(w->host, sizeof w->host, "%s", rec.host);
                        w->since = (double)rec.acquired_ns / 1e9;
                        w->owner_alive = dl_record_owner_alive(&rec);
                } else {
                        w->owner_alive = -1;
                        w->since = now;
                }
                w->age = ages ? lease_age(u, e->lease) : 0;
        }
        return DIRLOCK_OK;
}

int dl_etcd_inspect(const char *spec, const char *name, double stale_age, dirlock_owner *owner,
                    dirlock_error *err)
{
        (void)stale_age; /* an entry older than its holder's lease is gone already */
        dl_etcd_url u;
        int rc = dl_etcd_parse_space(spec, &u, err);
        struct view v;
        if (rc == DIRLOCK_OK)
                rc = look(&u, name, &v, err);
        if (rc != DIRLOCK_OK)
                return rc;
        owner->readers = v.readers;
        owner->ranges = v.ranges;
        owner->fence = v.q.last;
        dirlock_waiter *ws = NULL;
        size_t nw = 0, cap = 0;
        rc = queue_waiters(&u, name, &v.q, false, &ws, &nw, &cap, err);
        free(ws);
        if (rc != DIRLOCK_OK) {
                dl_etcd_queue_free(&v.q);
                return rc;
        }
        owner->waiters = (unsigned)nw;
        if (v.holder < 0) {
                dl_etcd_queue_free(&v.q);
                /* As in the other spaces: shared only when read or
                 * ranged; a name with only waiters has nobody to show. */
                if (v.readers == 0 && v.ranges == 0 && nw == 0)
                        return dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
                if (v.readers > 0 || v.ranges > 0)
                        owner->mode = DIRLOCK_SHARED;
                return DIRLOCK_OK;
        }
        const dl_etcd_entry *e = &v.q.e[v.holder];
        snprintf(owner->token, sizeof owner->token, "%s", e->token);
        owner->mode = mode_of(e->mode);
        dl_record rec;
        if (dl_record_parse(e->record, strlen(e->record), &rec) != 0) {
                owner->owner_alive = -1;
                snprintf(owner->host, sizeof owner->host, "%s", "(no owner record)");
                dl_etcd_queue_free(&v.q);
                return DIRLOCK_OK;
        }
        dl_record_to_owner(&rec, owner);
        owner->age = lease_age(&u, e->lease);
        owner->stale = owner->owner_alive == 0;
        dl_etcd_queue_free(&v.q);
        return DIRLOCK_OK;
}

int dl_etcd_holders(const char *spec, const char *name, double stale_age, dirlock_owner **out, size_t *count,
                    dirlock_error *err)
{
        (void)stale_age; /* an entry older than its holder's lease is gone already */
        *out = NULL;
        *count = 0;
        dl_etcd_url u;
        int rc = dl_etcd_parse_space(spec, &u, err);
        dl_etcd_queue q = {0};
        dl_time io = admin_io();
        if (rc == DIRLOCK_OK)
                rc = dl_etcd_read_queue(&u, name, &io, &q, err);
        if (rc != DIRLOCK_OK)
                return dl_about(err, rc, name);
        dirlock_owner *v = calloc(q.n ? q.n : 1, sizeof *v);
        if (v == NULL) {
                dl_etcd_queue_free(&q);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        size_t n = 0;
        for (size_t i = 0; i < q.n; i++) {
                const dl_etcd_entry *e = &q.e[i];
                if (e->state != 'h' || e->ranged) /* ranges: dirlock_ranges */
                        continue;
                dirlock_owner *o = &v[n++];
                snprintf(o->token, sizeof o->token, "%s", e->token);
                dl_record rec;
                if (dl_record_parse(e->record, strlen(e->record), &rec) != 0) {
                        o->owner_alive = -1;
                        snprintf(o->host, sizeof o->host, "%s", "(no owner record)");
                } else {
                        dl_record_to_owner(&rec, o);
                        o->age = lease_age(&u, e->lease);
                        o->stale = o->owner_alive == 0;
                }
                o->mode = mode_of(e->mode);
                o->fence = e->fence;
        }
        dl_etcd_queue_free(&q);
        *out = v;
        *count = n;
        return DIRLOCK_OK;
}

int dl_etcd_waiters(const char *spec, const char *name, dirlock_waiter **out, size_t *count,
                    dirlock_error *err)
{
        *out = NULL;
        *count = 0;
        dl_etcd_url u;
        int rc = dl_etcd_parse_space(spec, &u, err);
        if (rc != DIRLOCK_OK)
                return rc;
        char **names = NULL;
        size_t nn = 0;
        if (name == NULL)
                rc = dl_etcd_list(spec, &names, &nn, err);
        dirlock_waiter *v = NULL;
        size_t n = 0, cap = 0;
        for (size_t i = 0; i < (name != NULL ? 1 : nn) && rc == DIRLOCK_OK; i++) {
                const char *nm = name != NULL ? name : names[i];
                dl_etcd_queue q = {0};
                dl_time io = admin_io();
                rc = dl_etcd_read_queue(&u, nm, &io, &q, err);
                if (rc == DIRLOCK_OK)
                        rc = queue_waiters(&u, nm, &q, true, &v, &n, &cap, err);
                else
                        dl_about(err, rc, nm);
                dl_etcd_queue_free(&q);
        }
        for (size_t i = 0; i < nn; i++)
                free(names[i]);
        free(names);
        if (rc != DIRLOCK_OK) {
                free(v);
                return rc;
        }
        *out = v; /* dirlock_waiters puts them in order */
        *count = n;
        return DIRLOCK_OK;
}

int dl_etcd_break(const char *spec, const char *name, double stale_age, int force, dirlock_error *err)
{
        (void)stale_age;
        dl_etcd_url u;
        int rc = dl_etcd_parse_space(spec, &u, err);
        struct view v;
        if (rc == DIRLOCK_OK && !dirlock_name_valid(name))
                rc = dl_fail(err, DIRLOCK_ENAME, 0, "invalid lock name '%.80s'", name ? name : "(null)");
        if (rc == DIRLOCK_OK)
                rc = look(&u, name, &v, err);
        if (rc != DIRLOCK_OK)
                return rc;
        if (v.holder < 0) {
                dl_etcd_queue_free(&v.q);
                return dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
        }
        dl_etcd_entry e = v.q.e[v.holder];
        dl_etcd_queue_free(&v.q);
        dl_record rec;
        bool readable = dl_record_parse(e.record, strlen(e.record), &rec) == 0;
        int alive = readable ? dl_record_owner_alive(&rec) : -1;
        if (!force && alive != 0)
                return dl_fail(err, DIRLOCK_ELIVE, 0,
                               "lock '%s' is held by %s pid %ld on %s (its lease expires unless kept alive); "
                               "not broken",
                               name, alive == 1 ? "live" : "possibly live", readable ? (long)rec.pid : 0L,
                               readable ? rec.host : "an unknown host");
        dl_time io = admin_io();
        bool found, resent;
        rc = dl_etcd_lease_revoke(&u, e.lease, &io, &found, &resent, err);
        if (rc != DIRLOCK_OK)
                return dl_about(err, rc, name);
        return found ? DIRLOCK_OK : dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
}

int dl_etcd_list(const char *spec, char ***names_out, size_t *count, dirlock_error *err)
{
        *names_out = NULL;
        *count = 0;
        dl_etcd_url u;
        int rc = dl_etcd_parse_space(spec, &u, err);
        if (rc != DIRLOCK_OK)
                return rc;
        char from[DL_ETCD_KEY_MAX], to[DL_ETCD_KEY_MAX];
        dl_etcd_queue_key(&u, NULL, from, sizeof from);
        dl_etcd_prefix_end(from, to, sizeof to);
        dl_etcd_kv *kvs = NULL;
        size_t n = 0;
        dl_time io = admin_io();
        rc = dl_etcd_range(&u, from, to, true, &kvs, &n, NULL, &io, err);
        if (rc != DIRLOCK_OK)
                return rc;
        char **names = calloc(n ? n : 1, sizeof *names);
        size_t got = 0;
        size_t fl = strlen(from);
        for (size_t i = 0; names != NULL && i < n; i++) {
                const char *nm = kvs[i].key + fl, *slash = strchr(nm, '/');
                if (slash == NULL || (size_t)(slash - nm) > DIRLOCK_NAME_MAX)
                        continue;
                char name[DIRLOCK_NAME_MAX + 1];
                memcpy(name, nm, (size_t)(slash - nm));
                name[slash - nm] = '\0';
                if (!dirlock_name_valid(name) || (got > 0 && strcmp(names[got - 1], name) == 0))
                        continue; /* keys come sorted: a name's entries are together */
                if ((names[got] = strdup(name)) == NULL)
                        break;
                got++;
        }
        free(kvs);
        if (names == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        *names_out = names;
        *count = got;
        return DIRLOCK_OK;
}

int dl_etcd_cleanup(const char *spec, dirlock_error *err)
{
        char **names = NULL;
        size_t n = 0;
        int rc = dl_etcd_list(spec, &names, &n, err);
        dl_etcd_url u;
        if (rc == DIRLOCK_OK)
                rc = dl_etcd_parse_space(spec, &u, err);
        for (size_t i = 0; i < n; i++) {
                dl_etcd_queue q = {0};
                dl_time io = admin_io();
                if (rc == DIRLOCK_OK)
                        rc = dl_etcd_read_queue(&u, names[i], &io, &q, err);
                for (size_t k = 0; rc == DIRLOCK_OK && k < q.n; k++) {
                        dl_record rec;
                        if (dl_record_parse(q.e[k].record, strlen(q.e[k].record), &rec) != 0 ||
                            dl_record_owner_alive(&rec) != 0)
                                continue;
                        bool found, resent;
                        io = admin_io();
                        rc = dl_etcd_lease_revoke(&u, q.e[k].lease, &io, &found, &resent, err);
                }
                dl_etcd_queue_free(&q);
                free(names[i]);
        }
        free(names);
        return rc;
}

int dl_etcd_ranges(const char *spec, const char *name, dirlock_range_info **out, size_t *count,
                   dirlock_error *err)
{
        *out = NULL;
        *count = 0;
        dl_etcd_url u;
        int rc = dl_etcd_parse_space(spec, &u, err);
        dl_etcd_queue q = {0};
        dl_time io = admin_io();
        if (rc == DIRLOCK_OK)
                rc = dl_etcd_read_queue(&u, name, &io, &q, err);
        if (rc != DIRLOCK_OK)
                return dl_about(err, rc, name);
        if ((*out = calloc(q.n ? q.n : 1, sizeof **out)) == NULL) {
                dl_etcd_queue_free(&q);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        long long now = dl_wall_ns();
        size_t got = 0;
        for (size_t i = 0; i < q.n; i++) {
                const dl_etcd_entry *e = &q.e[i];
                if (!e->ranged)
                        continue;
                dirlock_range_info *ri = &(*out)[got++];
                ri->lo = e->lo;
                ri->hi = e->hi;
                ri->waiting = e->state == 'w';
                ri->mode = e->mode == 's'   ? DIRLOCK_SHARED
                           : e->mode == 'x' ? DIRLOCK_EXCLUSIVE
                                            : DIRLOCK_INTENT;
                ri->upgrading = e->mode == 'u';
                dl_record rec;
                if (dl_record_parse(e->record, strlen(e->record), &rec) == 0)
                        dl_record_to_range(&rec, now, ri);
        }
        dl_etcd_queue_free(&q);
        *count = got;
        return DIRLOCK_OK;
}
