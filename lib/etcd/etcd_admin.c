/* etcd_admin.c - an etcd space from outside its holders (backend.h):
 * inspect (the holder's owner record and age), break (revoke the
 * holder's lease), list (the names with holders or waiters), cleanup
 * (revoke the leases of owners provably dead on this host) and the range
 * holders and waiters of a name.  Every change is a lease revoked: the
 * cluster removes that acquisition's keys, and nobody else's. */
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
        if (v.holder < 0) {
                dl_etcd_queue_free(&v.q);
                if (v.readers == 0 && v.ranges == 0)
                        return dl_fail(err, DIRLOCK_ENOLOCK, 0, "lock '%s' is free", name);
                owner->mode = DIRLOCK_SHARED;
                return DIRLOCK_OK;
        }
        const dl_etcd_entry *e = &v.q.e[v.holder];
        snprintf(owner->token, sizeof owner->token, "%s", e->token);
        owner->mode = e->mode == 's' ? DIRLOCK_SHARED : e->mode == 'x' ? DIRLOCK_EXCLUSIVE : DIRLOCK_INTENT;
        dl_record rec;
        if (dl_record_parse(e->record, strlen(e->record), &rec) != 0) {
                owner->owner_alive = -1;
                snprintf(owner->host, sizeof owner->host, "%s", "(no owner record)");
                dl_etcd_queue_free(&v.q);
                return DIRLOCK_OK;
        }
        dl_record_to_owner(&rec, owner);
        long long granted = -1, left = -1;
        dl_time io = admin_io();
        if (dl_etcd_lease_ttl(&u, e->lease, &io, &granted, &left, NULL) == DIRLOCK_OK && granted > 0)
                owner->age = (double)(granted - left);
        owner->stale = owner->owner_alive == 0;
        dl_etcd_queue_free(&v.q);
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
