/* store_sqlite.h - the SQLite store (store.h): messages in
 * data_dir/board.db, WAL journal, one connection with prepared statements
 * per process, writers in BEGIN IMMEDIATE transactions inside the
 * library's exclusive "messages" lock (whatever the lock mode), posts
 * stored in groups through the pending queue (groupcommit.h). */
#ifndef BOARD_STORE_SQLITE_H
#define BOARD_STORE_SQLITE_H

#include "store.h"

extern const struct store_ops store_sqlite_ops;

#endif
