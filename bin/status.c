/* status.c - `dirlock status`: what the locks of a space are doing, for a
 * person (one line per lock, then a line per range, permit holder and
 * waiter under it) or, with --json, for monitoring: one JSON document,
 * made with json-c (opened then: json_c.h), whose fields are listed in
 * man/dirlock.1 (STATUS AS JSON) -- the one place they are described; a
 * field is never renamed or given another meaning, only added.  Both show the same holders and
 * waiters, read through the same calls; a list that cannot be read is an
 * error (status 2), never an empty list, and the document is printed only
 * whole. */
#include "status.h"
#include "json_c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dirlock_deadlock.h"
#include "dirlock_range.h"
#include "run.h"

static const char *progname = DIRLOCK_COMMAND_NAME;

static const char *mode_name(int mode)
{
        static const char *const modes[] = {"exclusive", "shared", "intent"};
        return mode >= 0 && mode <= 2 ? modes[mode] : "?";
}

static const char *wait_kind_name(int kind)
{
        static const char *const kinds[] = {"lock", "range", "permit", "upgrade"};
        return kind >= DIRLOCK_WAIT_LOCK && kind <= DIRLOCK_WAIT_UPGRADE ? kinds[kind] : "?";
}

static double wall_now(void)
{
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void utc(double when, char out[32])
{
        strcpy(out, "?");
        time_t t = (time_t)when;
        struct tm tm;
        if (when > 0 && gmtime_r(&t, &tm) != NULL)
                strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- for a person ------------------------------------------------------------ */

/* An owner's process, age, liveness and record: the token, process start
 * time and acquire time (UTC) last. */
static void print_record(const dirlock_owner *o)
{
        const char *alive = o->owner_alive == 1 ? "alive" : o->owner_alive == 0 ? "dead" : "unknown";
        printf("pid=%ld host=%s age=%.1fs mode=%s owner=%s %s", (long)o->pid, o->host, o->age,
               mode_name(o->mode), alive, o->stale ? "STALE" : "fresh");
        if (o->partner)
                printf(" command=%ld", (long)o->partner);
        if (o->readers)
                printf(" readers=%u", o->readers);
        char when[32];
        utc(o->acquired, when);
        printf(" token=%s start=%llu acquired=%s\n", o->token[0] ? o->token : "?", o->start_time, when);
}

/* The lock's own line: its exclusive lock's holder, or its readers or
 * ranges; nothing for a name with only permits or waiters. */
static void print_owner(const dirlock_owner *o)
{
        if (o->pid == 0 && o->mode != DIRLOCK_SHARED && o->host[0] == '\0')
                return;
        if (o->pid == 0 && o->mode == DIRLOCK_SHARED) {
                if (o->ranges && !o->readers)
                        printf("%-24s ranges=%u\n", o->name, o->ranges);
                else
                        printf("%-24s shared readers=%u\n", o->name, o->readers);
                return;
        }
        if (o->pid == 0) {
                printf("%-24s held, no readable owner record (break --force to clear)\n", o->name);
                return;
        }
        printf("%-24s ", o->name);
        print_record(o);
}

/* A list that could not be read: said on stderr; the status ends 2. */
static int list_failed(const dirlock_error *e)
{
        fprintf(stderr, "%s: %s\n", progname, e->message);
        return EXIT_ERROR;
}

/* Seconds waited by a waiter that began at `since`, at `now` (both wall
 * clock): never negative, though a waiter of another host whose clock is
 * ahead of ours may seem to have begun after now. */
static double waited(double now, double since)
{
        return now > since ? now - since : 0;
}

static int print_ranges(const char *space, const char *name)
{
        dirlock_range_info *r;
        size_t n;
        dirlock_error e;
        if (dirlock_ranges(space, name, &r, &n, &e) != DIRLOCK_OK)
                return list_failed(&e);
        for (size_t i = 0; i < n; i++)
                printf("  range [%g, %g) %s%s pid=%ld host=%s age=%.1fs%s\n", r[i].lo, r[i].hi,
                       mode_name(r[i].mode), r[i].upgrading ? " (upgrading)" : "", (long)r[i].pid, r[i].host,
                       r[i].age, r[i].waiting ? " waiting" : "");
        free(r);
        return 0;
}

static int print_permits(const char *space, const dirlock_owner *o, double stale)
{
        printf("%-24s permits=%u held=%u\n", o->name, o->permits, o->permit_holders);
        dirlock_owner *h;
        size_t n;
        dirlock_error e;
        if (dirlock_holders(space, o->name, stale, &h, &n, &e) != DIRLOCK_OK)
                return list_failed(&e);
        for (size_t i = 0; i < n; i++)
                if (h[i].permits > 0) {
                        printf("  permit ");
                        print_record(&h[i]);
                }
        free(h);
        return 0;
}

static int print_waiters(const char *space, const dirlock_owner *o)
{
        dirlock_waiter *w;
        size_t n;
        dirlock_error e;
        if (dirlock_waiters(space, o->name, &w, &n, &e) != DIRLOCK_OK)
                return list_failed(&e);
        /* Taken after the list was read: no waiter began after it. */
        double now = wall_now();
        if (n > 0 && o->pid == 0 && !o->readers && !o->ranges && !o->permit_holders)
                printf("%-24s free, %zu waiting\n", o->name, n);
        for (size_t i = 0; i < n; i++) {
                char when[32];
                utc(w[i].since, when);
                printf("  waiter pid=%ld", (long)w[i].pid);
                if (w[i].tid > 0 && w[i].tid != w[i].pid)
                        printf(" tid=%ld", (long)w[i].tid);
                printf(" host=%s %s %s", w[i].host, wait_kind_name(w[i].kind), mode_name(w[i].mode));
                if (w[i].kind == DIRLOCK_WAIT_RANGE)
                        printf(" [%g, %g)", w[i].lo, w[i].hi);
                if (w[i].kind == DIRLOCK_WAIT_PERMIT)
                        printf(" of %u", w[i].permits);
                printf(" waiting=%.1fs since=%s%s%s\n", waited(now, w[i].since), when,
                       w[i].pending ? " pending" : "", w[i].owner_alive == 0 ? " dead" : "");
        }
        free(w);
        return 0;
}

/* A lock's lines: 0, or EXIT_ERROR when a list could not be read. */
static int print_lock(const char *space, const dirlock_owner *o, double stale)
{
        int status = 0;
        print_owner(o);
        if (o->ranges && print_ranges(space, o->name) != 0)
                status = EXIT_ERROR;
        if (o->permit_holders && print_permits(space, o, stale) != 0)
                status = EXIT_ERROR;
        if (o->waiters && print_waiters(space, o) != 0)
                status = EXIT_ERROR;
        return status;
}

/* ---- for monitoring (--json) -------------------------------------------------- */

/* json-c's calls, once status_json opened it. */
static const struct json_c *J;

/* A space as it may be shown: a server's password replaced by ***. */
static json_object *space_shown(const char *space)
{
        const char *scheme = strstr(space, "://");
        const char *at = scheme ? strchr(scheme + 3, '@') : NULL;
        const char *slash = scheme ? strchr(scheme + 3, '/') : NULL;
        if (at == NULL || (slash != NULL && slash < at))
                return J->new_string(space);
        const char *colon = memchr(scheme + 3, ':', (size_t)(at - (scheme + 3)));
        size_t keep = (size_t)((colon ? colon + 1 : scheme + 3) - space);
        size_t len = keep + 3 + strlen(at) + 1;
        char *shown = malloc(len);
        if (shown == NULL)
                return NULL;
        snprintf(shown, len, "%.*s***%s", (int)keep, space, at);
        json_object *j = J->new_string(shown);
        free(shown);
        return j;
}

static json_object *alive_json(int alive)
{
        return alive < 0 ? NULL : J->new_boolean(alive);
}

static void add(json_object *o, const char *key, json_object *v)
{
        J->object_add(o, key, v);
}

static json_object *holder_json(const dirlock_owner *h, const char *kind)
{
        json_object *j = J->new_object();
        add(j, "kind", J->new_string(kind));
        add(j, "mode", J->new_string(mode_name(h->mode)));
        add(j, "pid", J->new_int64(h->pid));
        add(j, "start_time", J->new_uint64(h->start_time));
        add(j, "host", J->new_string(h->host));
        add(j, "token", h->token[0] ? J->new_string(h->token) : NULL);
        add(j, "acquired", J->new_double(h->acquired));
        add(j, "age", J->new_double(h->age));
        add(j, "alive", alive_json(h->owner_alive));
        add(j, "stale", J->new_boolean(h->stale));
        add(j, "command", h->partner > 0 ? J->new_int64(h->partner) : NULL);
        add(j, "permits", h->permits > 0 ? J->new_int64(h->permits) : NULL);
        return j;
}

static json_object *range_json(const dirlock_range_info *r)
{
        json_object *j = J->new_object();
        add(j, "lo", J->new_double(r->lo));
        add(j, "hi", J->new_double(r->hi));
        add(j, "mode", J->new_string(mode_name(r->mode)));
        add(j, "waiting", J->new_boolean(r->waiting));
        add(j, "upgrading", J->new_boolean(r->upgrading));
        add(j, "pid", J->new_int64(r->pid));
        add(j, "host", J->new_string(r->host));
        add(j, "age", J->new_double(r->age));
        return j;
}

static json_object *waiter_json(const dirlock_waiter *w)
{
        json_object *j = J->new_object();
        add(j, "kind", J->new_string(wait_kind_name(w->kind)));
        add(j, "mode", J->new_string(mode_name(w->mode)));
        add(j, "pid", J->new_int64(w->pid));
        add(j, "tid", w->tid > 0 ? J->new_int64(w->tid) : NULL);
        add(j, "start_time", J->new_uint64(w->start_time));
        add(j, "host", J->new_string(w->host));
        add(j, "since", J->new_double(w->since));
        add(j, "waited", NULL); /* filled in once the document's time is known (fill_waited) */
        add(j, "age", J->new_double(w->age));
        add(j, "alive", alive_json(w->owner_alive));
        add(j, "pending", J->new_boolean(w->pending));
        json_object *range = NULL;
        if (w->kind == DIRLOCK_WAIT_RANGE || (w->kind == DIRLOCK_WAIT_UPGRADE && w->lo < w->hi)) {
                range = J->new_array();
                J->array_add(range, J->new_double(w->lo));
                J->array_add(range, J->new_double(w->hi));
        }
        add(j, "range", range);
        add(j, "permits", w->permits > 0 ? J->new_int64(w->permits) : NULL);
        return j;
}

/* One lock: its inspect record `o` (NULL: free), its holders, ranges and
 * waiters; NULL when one of those lists could not be read (said on
 * stderr). */
static json_object *lock_json(const char *space, const char *name, const dirlock_owner *o, double stale)
{
        dirlock_error e;
        json_object *j = J->new_object();
        add(j, "name", J->new_string(name));
        add(j, "fence", o != NULL && o->fence > 0 ? J->new_uint64(o->fence) : NULL);
        add(j, "readers", J->new_int64(o != NULL ? o->readers : 0));
        add(j, "permits", o != NULL && o->permits > 0 ? J->new_int64(o->permits) : NULL);
        json_object *holders = J->new_array();
        add(j, "holders", holders);
        dirlock_owner *h;
        size_t n;
        if (o != NULL) {
                if (dirlock_holders(space, name, stale, &h, &n, &e) != DIRLOCK_OK)
                        goto failed;
                for (size_t i = 0; i < n; i++) {
                        const char *kind = h[i].permits > 0 ? "permit"
                                           : h[i].pid == o->pid && strcmp(h[i].token, o->token) == 0
                                               ? "lock"
                                               : "reader";
                        J->array_add(holders, holder_json(&h[i], kind));
                }
                free(h);
        }
        json_object *ranges = J->new_array();
        add(j, "ranges", ranges);
        dirlock_range_info *r;
        if (o != NULL && o->ranges > 0) {
                if (dirlock_ranges(space, name, &r, &n, &e) != DIRLOCK_OK)
                        goto failed;
                for (size_t i = 0; i < n; i++)
                        J->array_add(ranges, range_json(&r[i]));
                free(r);
        }
        json_object *waiters = J->new_array();
        add(j, "waiters", waiters);
        dirlock_waiter *w;
        size_t nw = 0;
        if (dirlock_waiters(space, name, &w, &nw, &e) != DIRLOCK_OK)
                goto failed;
        for (size_t i = 0; i < nw; i++)
                J->array_add(waiters, waiter_json(&w[i]));
        free(w);
        add(j, "queue_length", J->new_int64((int64_t)nw));
        return j;
failed:
        fprintf(stderr, "%s: %s\n", progname, e.message);
        J->put(j);
        return NULL;
}

/* Each waiter's "waited", until the document's time `now`, taken once
 * every list was read: no waiter of this host began after it. */
static void fill_waited(json_object *locks, double now)
{
        for (size_t i = 0; i < J->array_length(locks); i++) {
                json_object *waiters;
                if (!J->object_get_ex(J->array_get_idx(locks, i), "waiters", &waiters))
                        continue;
                for (size_t k = 0; k < J->array_length(waiters); k++) {
                        json_object *w = J->array_get_idx(waiters, k), *since;
                        if (J->object_get_ex(w, "since", &since))
                                add(w, "waited", J->new_double(waited(now, J->get_double(since))));
                }
        }
}

/* The document, printed only when it is whole: any lock that cannot be
 * read (a bad name, a server that does not answer) prints nothing on
 * stdout, the error on stderr, and ends with status 2. */
static int status_json(int argc, char **argv, const char *space, double stale)
{
        dirlock_space_info info;
        dirlock_error e;
        if ((J = json_c_open(e.message, sizeof e.message)) == NULL ||
            dirlock_space_query(space, &info, &e) != DIRLOCK_OK) {
                fprintf(stderr, "%s: %s\n", progname, e.message);
                return EXIT_ERROR;
        }
        /* Seconds to the microsecond: no 0.71160111299999995. */
        J->set_serialization_double_format("%.6f", JSON_C_OPTION_THREAD);
        json_object *doc = J->new_object();
        add(doc, "format", J->new_string("dirlock-status/1"));
        add(doc, "space", space_shown(space));
        add(doc, "backend", J->new_string(info.backend));
        add(doc, "time", NULL); /* once every list was read */
        json_object *locks = J->new_array();
        add(doc, "locks", locks);
        int status = 0;
        if (argc == 0) {
                dirlock_owner *owners;
                size_t n;
                if (dirlock_list(space, stale, &owners, &n, &e) != DIRLOCK_OK) {
                        fprintf(stderr, "%s: %s\n", progname, e.message);
                        status = EXIT_ERROR;
                        n = 0;
                        owners = NULL;
                }
                for (size_t i = 0; i < n && status == 0; i++) {
                        json_object *l = lock_json(space, owners[i].name, &owners[i], stale);
                        if (l == NULL)
                                status = EXIT_ERROR;
                        else
                                J->array_add(locks, l);
                }
                free(owners);
        }
        for (int i = 0; i < argc && status == 0; i++) {
                dirlock_owner o;
                int rc = dirlock_inspect(space, argv[i], stale, &o, &e);
                json_object *l = NULL;
                if (rc == DIRLOCK_OK || rc == DIRLOCK_ENOLOCK)
                        l = lock_json(space, argv[i], rc == DIRLOCK_OK ? &o : NULL, stale);
                else
                        fprintf(stderr, "%s: %s\n", progname, e.message);
                if (l == NULL)
                        status = EXIT_ERROR;
                else
                        J->array_add(locks, l);
        }
        if (status == 0) {
                double now = wall_now();
                add(doc, "time", J->new_double(now));
                fill_waited(locks, now);
                puts(J->to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        }
        J->put(doc);
        return status;
}

int status_run(int argc, char **argv, const char *space, double stale, bool json)
{
        if (json)
                return status_json(argc, argv, space, stale);
        dirlock_error e;
        if (argc == 0) {
                dirlock_owner *owners;
                size_t n;
                if (dirlock_list(space, stale, &owners, &n, &e) != DIRLOCK_OK) {
                        fprintf(stderr, "%s: %s\n", progname, e.message);
                        return EXIT_ERROR;
                }
                int status = 0;
                for (size_t i = 0; i < n; i++)
                        if (print_lock(space, &owners[i], stale) != 0)
                                status = EXIT_ERROR;
                free(owners);
                return status;
        }
        int status = 0;
        for (int i = 0; i < argc; i++) {
                dirlock_owner o;
                int rc = dirlock_inspect(space, argv[i], stale, &o, &e);
                if (rc == DIRLOCK_OK) {
                        if (print_lock(space, &o, stale) != 0)
                                status = EXIT_ERROR;
                } else if (rc == DIRLOCK_ENOLOCK) {
                        printf("%-24s free\n", argv[i]);
                } else {
                        fprintf(stderr, "%s: %s\n", progname, e.message);
                        status = EXIT_ERROR;
                }
        }
        return status;
}
