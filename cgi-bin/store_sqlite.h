/* store_sqlite.h - the SQLite store (store.h): messages in
 * data_dir/board.db, WAL journal, BEGIN IMMEDIATE for writers,
 * busy_timeout from lock_timeout.  SQLite does its own locking; the lock
 * mode is not used. */
#ifndef BOARD_STORE_SQLITE_H
#define BOARD_STORE_SQLITE_H

#include "store.h"

extern const struct store_ops store_sqlite_ops;

#endif
