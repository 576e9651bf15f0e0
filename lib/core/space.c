/* space.c - the registry of backends, which backend a lock space string
 * names (backend.h), and what the library says of lock spaces to its
 * callers (dirlock_space_query, dirlock_space_form):
 *
 *   /var/lib/board/locks, ./locks, locks     a directory (dir_backend.c)
 *   PREFIX...                                the registered backend whose
 *                                            prefix it starts with
 *                                            (flock:DIR, redis://...)
 *   scheme://...                             a backend not loaded yet:
 *                                            the loader's to find (lib/loader)
 *
 * A string is a backend's only when it starts with one of a registered
 * backend's prefixes, or with letters, digits, '+', '-' or '.' (a letter
 * first) followed by "://"; anything else is a directory path (write
 * ./flock:x for a directory of that name).  Every list of the kinds of
 * space the library shows (messages, usage texts) is made from the
 * registered backends and the forms each gives.
 *
 * THE REGISTRY is a list that only grows, in the order messages list the
 * kinds: registrations come one at a time, readers walk it without a
 * lock, and nodes are never removed (a loaded backend stays loaded). */
#include "backend.h"

#include <stdio.h>
#include <string.h>

/* ---- the registry -------------------------------------------------------- */

static dl_backend_node *registered;
static const dl_backend_loader *loader;

/* The order of lists of kinds: local backends first, then by prefix. */
static bool goes_before(const dl_backend *a, const dl_backend *b)
{
        if (a->local != b->local)
                return a->local;
        return strcmp(a->prefixes[0], b->prefixes[0]) < 0;
}

void dl_backend_register(dl_backend_node *node)
{
        /* Registrations come one at a time (at load: before main, or
         * inside the loader's dlopen, which it serialises); readers walk
         * the list meanwhile, and see it before or after the insertion. */
        dl_backend_node **at = &registered;
        while (*at != NULL && goes_before((*at)->be, node->be))
                at = &(*at)->next;
        node->next = *at;
        __atomic_store_n(at, node, __ATOMIC_RELEASE);
}

void dl_backend_loader_set(const dl_backend_loader *l)
{
        loader = l;
}

static const dl_backend_node *first_backend(void)
{
        return __atomic_load_n(&registered, __ATOMIC_ACQUIRE);
}

static const dl_backend_node *next_backend(const dl_backend_node *b)
{
        return __atomic_load_n(&b->next, __ATOMIC_ACQUIRE);
}

/* The registered backend `space` starts with a prefix of (its length in
 * *n), or NULL. */
static const dl_backend *backend_of(const char *space, size_t *n)
{
        for (const dl_backend_node *b = first_backend(); b != NULL; b = next_backend(b))
                for (const char *const *p = b->be->prefixes; *p != NULL; p++)
                        if (strncmp(space, *p, (*n = strlen(*p))) == 0)
                                return b->be;
        return NULL;
}

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
 * messages (every backend that can be loaded, loaded first): a local
 * backend's prefix is followed by DIR. */
static const char *known_kinds(char *buf, size_t size)
{
        if (loader != NULL)
                loader->load_all();
        size_t used = (size_t)snprintf(buf, size, "a directory path");
        for (const dl_backend_node *b = first_backend(); b != NULL; b = next_backend(b))
                for (const char *const *p = b->be->prefixes; *p != NULL && used < size; p++)
                        used += (size_t)snprintf(buf + used, size - used, ", %s%s", *p,
                                                 b->be->local ? "DIR" : "");
        return buf;
}

/* The backend of a space that no registered prefix claims but that names
 * a scheme (its length n): loaded now, if it can be. */
static int load_backend(const char *space, size_t n, const dl_backend **be, size_t *prefix,
                        dirlock_error *err)
{
        char scheme[64], kinds[300];
        snprintf(scheme, sizeof scheme, "%.*s", (int)n, space);
        dirlock_error why;
        dl_fail(&why, DIRLOCK_EINVAL, 0, "no backend module claims it");
        int loaded = loader != NULL ? loader->load(scheme, &why) : 0;
        if (loaded < 0)
                return dl_fail(err, why.code, 0, "lock space '%s://...': %s", scheme, why.message);
        if (loaded > 0 && (*be = backend_of(space, prefix)) != NULL)
                return DIRLOCK_OK;
        /* The rest of the address may hold a password: never shown. */
        return dl_fail(err, DIRLOCK_EINVAL, 0, "lock space '%s://...': unknown kind '%.40s' (known: %s; %s)",
                       scheme, scheme, known_kinds(kinds, sizeof kinds),
                       loader != NULL ? why.message
                                      : "this program loads no backends: link the backend's object, or "
                                        "the shared library, libdirlock.so");
}

int dl_space_resolve(const char *space, const dl_backend **be, const char **spec, dirlock_error *err)
{
        char kinds[300];
        if (space == NULL || space[0] == '\0')
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no lock space given (%s)",
                               known_kinds(kinds, sizeof kinds));
        size_t n = 0;
        const dl_backend *found = backend_of(space, &n);
        if (found == NULL) {
                size_t scheme = scheme_length(space);
                if (scheme == 0) {
                        *be = &dl_dir_backend;
                        *spec = space;
                        return DIRLOCK_OK;
                }
                int rc = load_backend(space, scheme, &found, &n, err);
                if (rc != DIRLOCK_OK)
                        return rc;
        }
        if (space[n] == '\0')
                return dl_fail(err, DIRLOCK_EINVAL, 0, "lock space '%s' names no %s", space,
                               found->local ? "directory" : "server");
        *be = found;
        *spec = found->spec_has_scheme ? space : space + n;
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
        if (built != NULL)
                *built = 1;
        if (i == 0)
                return dl_dir_backend.forms[0];
        if (loader != NULL)
                loader->load_all();
        size_t k = 0;
        for (const dl_backend_node *b = first_backend(); b != NULL; b = next_backend(b))
                for (const char *const *f = b->be->forms; f != NULL && *f != NULL; f++)
                        if (++k == i)
                                return *f;
        /* Then the kinds this build knows of but cannot load. */
        const char *why, *scheme;
        for (size_t a = 0; loader != NULL && (scheme = loader->absent(a, &why)) != NULL; a++)
                if (++k == i) {
                        if (built != NULL)
                                *built = 0;
                        return scheme;
                }
        return NULL;
}
