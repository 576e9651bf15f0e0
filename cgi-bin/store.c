/* store.c - the table of the board's stores and picking one, and what
 * every store's delete checks (see store.h). */
#include "store.h"

#include <string.h>

#include "store_log.h"
#include "store_sqlite.h"

/* Indexed by kind: the one place a kind meets its store and its name. */
static const struct store_ops *const stores[] = {
    [BOARD_STORE_LOG] = &store_log_ops,
    [BOARD_STORE_SQLITE] = &store_sqlite_ops,
};

_Static_assert(sizeof stores / sizeof stores[0] == BOARD_STORES, "one store per enum board_store_kind value");

const struct store_ops *store_of(enum board_store_kind kind)
{
        return (unsigned)kind < BOARD_STORES ? stores[kind] : NULL;
}

const struct store_ops *store_for(const struct board_config *cfg)
{
        return store_of(cfg->store);
}

int store_parse(const char *name, enum board_store_kind *out)
{
        for (int k = 0; k < BOARD_STORES; k++)
                if (stores[k] != NULL && strcmp(name, stores[k]->name) == 0) {
                        *out = (enum board_store_kind)k;
                        return 0;
                }
        return -1;
}

int store_recheck_delete(const struct logrecord *m, const char *verified_hash, struct board_error *err)
{
        if (!m)
                return board_fail(err, 404, "There is no such message");
        if (m->pwhash.len == 0 || strcmp(m->pwhash.ptr, verified_hash) != 0)
                return board_fail(err, 403, "Wrong password");
        return 0;
}
