/* store.c - picking a board's store, and what every store's delete checks
 * (see store.h). */
#include "store.h"

#include <string.h>

#include "store_log.h"
#include "store_sqlite.h"

const struct store_ops *store_for(const struct board_config *cfg)
{
        return cfg->store == BOARD_STORE_SQLITE ? &store_sqlite_ops : &store_log_ops;
}

int store_recheck_delete(const struct logrecord *m, const char *verified_hash, struct board_error *err)
{
        if (!m)
                return board_fail(err, 404, "There is no such message");
        if (m->pwhash.len == 0 || strcmp(m->pwhash.ptr, verified_hash) != 0)
                return board_fail(err, 403, "Wrong password");
        return 0;
}
