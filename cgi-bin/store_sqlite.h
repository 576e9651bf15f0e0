/* store_sqlite.h - messages in SQLite (data_dir/board.db, WAL journal,
 * BEGIN IMMEDIATE for writers, busy_timeout from lock_timeout).  SQLite
 * does its own locking. */
#ifndef BOARD_STORE_SQLITE_H
#define BOARD_STORE_SQLITE_H

#include "board_error.h"
#include "config.h"
#include "msglist.h"

struct sqlite3;

/* Open (creating the schema when new).  Busy -> 503, else 500. */
int store_sqlite_open(const struct board_config *cfg, struct sqlite3 **out, struct board_error *err);
void store_sqlite_close(struct sqlite3 *db);

int store_sqlite_begin(struct sqlite3 *db, struct board_error *err); /* BEGIN IMMEDIATE */
int store_sqlite_commit(struct sqlite3 *db, struct board_error *err);
void store_sqlite_rollback(struct sqlite3 *db);

/* All messages, oldest first (appended to *out). */
int store_sqlite_list(struct sqlite3 *db, struct msglist *out, struct board_error *err);
/* Highest number ever given (the high-water mark; 0 for a new board). */
int store_sqlite_max_no(struct sqlite3 *db, long long *out, struct board_error *err);
/* Message `no` into *out: 0 found, 1 absent, -1 error. */
int store_sqlite_get(struct sqlite3 *db, long long no, struct logrecord *out, struct board_error *err);
/* Insert and raise the high-water mark to rec->no (same transaction). */
int store_sqlite_insert(struct sqlite3 *db, const struct logrecord *rec, struct board_error *err);
int store_sqlite_delete(struct sqlite3 *db, long long no, struct board_error *err);
/* Keep only the newest `cap` messages. */
int store_sqlite_cap(struct sqlite3 *db, long cap, struct board_error *err);

#endif
