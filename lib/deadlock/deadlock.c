/* deadlock.c - the deadlock module (lib/deadlock): its call,
 * dirlock_waiters (in any kind of space whose backend lists its waiters,
 * backend.h), and what it adds to the directory backend: the wait
 * register on every wait, the list of waiters, their number and names
 * from outside the holders, and the clean-up of dead waiters' entries.
 * The held table of held.c registers itself. */
#include "deadlock.h"

#include <stdlib.h>

static int by_since(const void *a, const void *b)
{
        double x = ((const dirlock_waiter *)a)->since, y = ((const dirlock_waiter *)b)->since;
        return x < y ? -1 : x > y;
}

int dirlock_waiters(const char *space, const char *name, dirlock_waiter **out, size_t *count,
                    dirlock_error *err)
{
        if (out == NULL || count == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no place to return the waiters");
        *out = NULL;
        *count = 0;
        const dl_backend *be;
        const char *spec;
        int rc = dl_space_resolve(space, &be, &spec, err);
        if (rc == DIRLOCK_OK && be->waiters == NULL)
                rc = dl_fail(err, DIRLOCK_EINVAL, 0, "%s spaces do not list their waiters", be->name);
        if (rc == DIRLOCK_OK && name != NULL && !dirlock_name_valid(name))
                rc = dl_fail(err, DIRLOCK_ENAME, 0, "invalid lock name '%.80s'", name);
        if (rc == DIRLOCK_OK)
                rc = be->waiters(spec, name, out, count, err);
        if (rc == DIRLOCK_OK) {
                if (*count > 1) /* none: *out may be NULL, which qsort may not be given */
                        qsort(*out, *count, sizeof **out, by_since);
                dl_ok(err);
        }
        return rc;
}

/* ---- the directory backend's part --------------------------------------------- */

static int dir_waiters(const char *lockdir, const char *name, dirlock_waiter **out, size_t *count,
                       dirlock_error *err)
{
        char *abs;
        int rc = dl_lockdir_prepare(lockdir, false, &abs, NULL, err);
        if (rc != DIRLOCK_OK)
                return rc;
        rc = dl_waits_list(abs, name, out, count, err);
        free(abs);
        return rc;
}

static void waiters_inspect(const char *lockdir, const char *name, double stale_age, dirlock_owner *owner)
{
        (void)stale_age;
        owner->waiters = dl_waits_count(lockdir, name);
}

static const dl_backend register_entries = {.waiters = dir_waiters};

static struct dl_dir_module deadlock_module = {
    .name = "the deadlock module (lib/deadlock)",
    .offers = &register_entries,
    .waits = &dl_register_waits,
    .inspect = waiters_inspect,
    .names = dl_waits_names,
    .cleanup_space = dl_waits_cleanup,
};
DL_DIR_MODULE(deadlock_module)
