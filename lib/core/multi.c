/* multi.c - all-or-nothing multi-locks.
 *
 * Protocol: the names are validated, sorted (strcmp order) and duplicates
 * dropped; the locks are then taken in that order, all under one deadline.
 * Every caller takes any two names in the same order, so no cycle of
 * waiters can form and no deadlock is possible whatever order callers list
 * the names in (the P->Q / Q->P deadlock of hand-ordered locking cannot
 * happen).  If any lock cannot be had by the deadline, those already taken
 * are released in reverse order and nothing stays held.
 *
 * A backend that can take several names in one atomic step (its
 * acquire_many entry, backend.h: the Redis backend) gets them all at once
 * instead: one handle per name, opened here, taken together or not at
 * all. */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

struct dirlock_set {
        size_t count;
        dirlock **locks;
};

static int compare_names(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Open a handle per name and let the backend take them all in one step. */
static int acquire_atomically(const dl_backend *be, const char *spec, const char **names, size_t n,
                              const dirlock_options *o, const dl_time *deadline, dirlock **locks,
                              dirlock_error *err)
{
        int rc = DIRLOCK_OK;
        size_t opened = 0;
        for (; opened < n && rc == DIRLOCK_OK; opened++)
                rc = dl_handle_open(be, spec, names[opened], o, &locks[opened], err);
        if (rc == DIRLOCK_OK)
                rc = be->acquire_many(locks, n, deadline, err);
        for (size_t i = 0; i < opened; i++) {
                if (locks[i] == NULL)
                        continue;
                if (rc != DIRLOCK_OK) {
                        dl_handle_free(locks[i]);
                        locks[i] = NULL;
                } else {
                        dl_handle_forget_cancel(locks[i]);
                        locks[i]->holds = 1;
                        dl_handle_note_held(locks[i], true);
                }
        }
        if (rc == DIRLOCK_OK)
                dl_ok(err);
        return rc;
}

int dirlock_acquire_many(const char *lockdir, const char *const names[], size_t n,
                         const dirlock_options *opts, dirlock_set **out, dirlock_error *err)
{
        if (out == NULL || (names == NULL && n > 0))
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no names or no place to return the set");
        *out = NULL;
        if (n == 0)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no lock names given");
        for (size_t i = 0; i < n; i++)
                if (!dirlock_name_valid(names[i]))
                        return dl_fail(err, DIRLOCK_ENAME, 0, "invalid lock name '%.80s'",
                                       names[i] ? names[i] : "(null)");

        const char **sorted = malloc(n * sizeof *sorted);
        dirlock_set *set = calloc(1, sizeof *set);
        dirlock **locks = calloc(n, sizeof *locks);
        if (sorted == NULL || set == NULL || locks == NULL) {
                free(sorted);
                free(set);
                free(locks);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        memcpy(sorted, names, n * sizeof *sorted);
        qsort(sorted, n, sizeof *sorted, compare_names);
        size_t unique = 0;
        for (size_t i = 0; i < n; i++)
                if (unique == 0 || strcmp(sorted[unique - 1], sorted[i]) != 0)
                        sorted[unique++] = sorted[i];

        dirlock_options o;
        if (opts)
                o = *opts;
        else
                dirlock_options_init(&o);
        dl_time deadline = dl_deadline(o.timeout);
        const dl_backend *be = NULL;
        const char *spec = NULL;
        int rc = dl_space_resolve(lockdir, &be, &spec, err);
        size_t got = 0; /* taken one by one, to give back on failure */
        if (rc == DIRLOCK_OK && be->acquire_many != NULL) {
                rc = acquire_atomically(be, spec, sorted, unique, &o, &deadline, locks, err);
        } else if (rc == DIRLOCK_OK) {
                for (; got < unique; got++) {
                        /* The remaining time for this name: one deadline for all. */
                        if (o.timeout > 0) {
                                o.timeout = dl_remaining(&deadline) / 1e3;
                                if (o.timeout <= 0)
                                        o.timeout = 1e-9;
                        }
                        rc = dirlock_acquire(lockdir, sorted[got], &o, &locks[got], err);
                        if (rc != DIRLOCK_OK)
                                break;
                }
        }
        free(sorted);
        if (rc != DIRLOCK_OK) {
                while (got-- > 0)
                        dirlock_free(locks[got], NULL);
                free(locks);
                free(set);
                return rc;
        }
        set->count = unique;
        set->locks = locks;
        *out = set;
        return DIRLOCK_OK;
}

int dirlock_release_many(dirlock_set *set, dirlock_error *err)
{
        if (set == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no lock set");
        int first = DIRLOCK_OK;
        dirlock_error scratch;
        for (size_t i = set->count; i-- > 0;) {
                int rc = dirlock_free(set->locks[i], first == DIRLOCK_OK ? err : &scratch);
                if (rc != DIRLOCK_OK && first == DIRLOCK_OK)
                        first = rc;
        }
        free(set->locks);
        free(set);
        return first;
}

int dirlock_refresh_many(dirlock_set *set, dirlock_error *err)
{
        if (set == NULL)
                return dl_fail(err, DIRLOCK_EINVAL, 0, "no lock set");
        for (size_t i = 0; i < set->count; i++) {
                int rc = dirlock_refresh(set->locks[i], err);
                if (rc != DIRLOCK_OK)
                        return rc;
        }
        return DIRLOCK_OK;
}

size_t dirlock_set_count(const dirlock_set *set)
{
        return set ? set->count : 0;
}

dirlock *dirlock_set_lock(const dirlock_set *set, size_t i)
{
        return set != NULL && i < set->count ? set->locks[i] : NULL;
}
