/* space.c - which backend a lock space string names (backend.h), and what
 * the library says of lock spaces to its callers (dirlock_space_query,
 * dirlock_space_form):
 *
 *   /var/lib/board/locks, ./locks, locks     a directory (lib/dir/)
 *   flock:/var/lib/board/locks               flock(2) on files there (lib/flock/)
 *   redis://host:6379/0?prefix=board         a Redis server (lib/redis/;
 *   redis+unix:///run/redis.sock?db=1        redis_url.h has the grammar)
 *   etcd://10.0.0.1:2379,10.0.0.2:2379/board an etcd cluster (lib/etcd/;
 *                                            etcd_url.h has the grammar)
 *   scheme://...                             another backend's space
 *
 * A string is a scheme's only when it starts with one of the prefixes of
 * the scheme table below, or with letters, digits, '+', '-' or '.' (a
 * letter first) followed by "://"; anything else is a directory path
 * (write ./flock:x for a directory of that name).  Every list of the
 * kinds of space the library shows (messages, usage texts) is made from
 * the table, and the forms each backend gives. */
#include "backend.h"

#include <stdio.h>
#include <string.h>

/* ---- the scheme table ---------------------------------------------------- */

/* One row per prefix; a backend that is not built links a placeholder
 * table of the same name (backend.h, THE CONTRACT). */
extern const dl_backend dl_flock_backend, dl_redis_backend, dl_etcd_backend;
static const struct scheme {
        const char *prefix;
        const dl_backend *be;
} schemes[] = {
    {"flock:", &dl_flock_backend},
    {"redis://", &dl_redis_backend},
    {"redis+unix://", &dl_redis_backend},
    {"etcd://", &dl_etcd_backend},
};
#define SCHEME_COUNT (sizeof schemes / sizeof schemes[0])

/* Length of "scheme" in "scheme://...", or 0. */
static size_t scheme_length(const char *s)
{
        if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
                return 0;
        size_t n = 1;
        while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= '0' && s[n] <= '9') ||
               s[n] == '+' || s[n] == '-' || s[n] == '.')
                n++;
        return strncmp(s + n, "://", 3) == 0 ? n : 0;
}

/* "a directory path, flock:DIR, redis://, redis+unix://" into buf, for
 * messages: a local backend's prefix is followed by DIR. */
static const char *known_kinds(char *buf, size_t size)
{
        size_t used = (size_t)snprintf(buf, size, "a directory path");
        for (size_t i = 0; i < SCHEME_COUNT && used < size; i++)
                used += (size_t)snprintf(buf + used, size - used, ", %s%s", schemes[i].prefix,
                                         schemes[i].be->local ? "DIR" : "");
        return buf;
}

int dl_space_resolve(const char *space, const dl_backend **be, const char **spec, dirlock_error *err)
{
        char kinds[200];
        if (space == NULL || space[0] == '\0')
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no lock space given (%s)",
                               known_kinds(kinds, sizeof kinds));
        for (size_t i = 0; i < SCHEME_COUNT; i++) {
                size_t n = strlen(schemes[i].prefix);
                if (strncmp(space, schemes[i].prefix, n) != 0)
                        continue;
                const dl_backend *found = schemes[i].be;
                if (found->absent != NULL)
                        return dl_fail(err, DIRLOCK_EINVAL, 0, "lock space '%.*s...': %s", (int)n, space,
                                       found->absent);
                if (space[n] == '\0')
                        return dl_fail(err, DIRLOCK_EINVAL, 0, "lock space '%s' names no %s", space,
                                       found->local ? "directory" : "server");
                *be = found;
                *spec = found->spec_has_scheme ? space : space + n;
                return DIRLOCK_OK;
        }
        size_t n = scheme_length(space);
        if (n > 0)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "lock space '%.200s': unknown kind '%.*s' (known: %s)",
                               space, (int)(n < 40 ? n : 40), space, known_kinds(kinds, sizeof kinds));
        *be = &dl_dir_backend;
        *spec = space;
        return DIRLOCK_OK;
}

/* ---- what callers may ask ------------------------------------------------- */

int dirlock_space_query(const char *space, dirlock_space_info *info, dirlock_error *err)
{
        if (info == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return what the space is");
        memset(info, 0, sizeof *info);
        const dl_backend *be;
        const char *spec;
        int rc = dl_space_resolve(space, &be, &spec, err);
        if (rc != DIRLOCK_OK)
                return rc;
        info->backend = be->name;
        info->dir = be->local ? spec : NULL;
        info->ranges = be->range != NULL;
        info->fences = be->fence != NULL;
        info->upgrade = be->upgrade != NULL;
        info->owner_records = be->inspect != NULL;
        info->permits = be->permit != NULL;
        dl_ok(err);
        return DIRLOCK_OK;
}

const char *dirlock_space_form(size_t i, int *built)
{
        if (i == 0) {
                if (built != NULL)
                        *built = 1;
                return dl_dir_backend.forms[0];
        }
        /* The forms of each backend once (several prefixes may share one). */
        size_t k = 0;
        for (size_t s = 0; s < SCHEME_COUNT; s++) {
                const dl_backend *be = schemes[s].be;
                bool seen = false;
                for (size_t t = 0; t < s && !seen; t++)
                        seen = schemes[t].be == be;
                for (size_t f = 0; !seen && be->forms[f] != NULL; f++) {
                        if (++k < i)
                                continue;
                        if (built != NULL)
                                *built = be->absent == NULL;
                        return be->forms[f];
                }
        }
        return NULL;
}
