/* space.c - which backend a lock space string names (backend.h):
 *
 *   /var/lib/board/locks, ./locks, locks     a directory (dir_backend.c)
 *   flock:/var/lib/board/locks               flock(2) on files there (flock.c)
 *   redis://host:6379/0?prefix=board         a Redis server (redis_backend.c;
 *   redis+unix:///run/redis.sock?db=1        redis_url.h has the grammar)
 *   scheme://...                             another backend's space
 *
 * A string is a scheme's only when it starts with "flock:" or with
 * letters, digits, '+', '-' or '.' (a letter first) followed by "://";
 * anything else is a directory path (write ./flock:x for a directory of
 * that name).  A build without hiredis (lib.mk) knows the Redis schemes
 * only to say so. */
#include "backend.h"

#include <string.h>

/* The backend of each prefix; `whole`: its spec is the whole string. */
static const struct {
        const char *prefix;
        const dl_backend *be;
        bool whole;
} schemes[] = {
    {"flock:", &dl_flock_backend, false},
#ifdef DIRLOCK_WITH_REDIS
    {"redis://", &dl_redis_backend, true},
    {"redis+unix://", &dl_redis_backend, true},
#else
    {"redis://", NULL, true},
    {"redis+unix://", NULL, true},
#endif
};

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

int dl_space_resolve(const char *space, const dl_backend **be, const char **spec, dirlock_error *err)
{
        if (space == NULL || space[0] == '\0')
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "no lock space given (a lock directory, flock:DIR, or a redis:// address)");
        for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
                size_t n = strlen(schemes[i].prefix);
                if (strncmp(space, schemes[i].prefix, n) != 0)
                        continue;
                if (schemes[i].be == NULL)
                        return dl_fail(err, DIRLOCK_EINVAL, 0,
                                       "lock space '%.*s...': this build of dirlock has no Redis support "
                                       "(install libhiredis-dev and rebuild)",
                                       (int)n, space);
                if (space[n] == '\0')
                        return dl_fail(err, DIRLOCK_EINVAL, 0, "lock space '%s' names no %s", space,
                                       schemes[i].whole ? "server" : "directory");
                *be = schemes[i].be;
                *spec = schemes[i].whole ? space : space + n;
                return DIRLOCK_OK;
        }
        size_t n = scheme_length(space);
        if (n > 0)
                return dl_fail(
                    err, DIRLOCK_EINVAL, 0,
                    "lock space '%.200s': unknown kind '%.*s' (known: a directory path, flock:DIR, redis://, "
                    "redis+unix://)",
                    space, (int)(n < 40 ? n : 40), space);
        *be = &dl_dir_backend;
        *spec = space;
        return DIRLOCK_OK;
}
