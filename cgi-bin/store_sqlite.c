/* store_sqlite.c - the SQLite store (see store_sqlite.h): the database and
 * its schema, and list, view, post and delete as SQL transactions. */
#include "store_sqlite.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "delay.h"
#include "ratelimit.h"

static int db_error(sqlite3 *db, int rc, const char *what, struct board_error *err)
{
        int base = rc & 0xFF;
        const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
        if (base == SQLITE_BUSY || base == SQLITE_LOCKED) {
                board_fail(err, 503, "busy, please try again (the database was locked: %s)", msg);
                err->retry_after = 1;
                return -1;
        }
        const char *hint = "";
        if (base == SQLITE_READONLY)
                hint = " (the data directory or database is read-only)";
        else if (base == SQLITE_FULL)
                hint = " (the disk is full)";
        else if (base == SQLITE_CANTOPEN || base == SQLITE_PERM)
                hint = " (cannot open the database; check the data directory)";
        return board_fail(err, 500, "database error while %s: %s%s", what, msg, hint);
}

static const char schema[] = "CREATE TABLE IF NOT EXISTS messages ("
                             " no INTEGER PRIMARY KEY,"
                             " time INTEGER NOT NULL,"
                             " name TEXT NOT NULL,"
                             " subject TEXT NOT NULL,"
                             " body TEXT NOT NULL,"
                             " pwhash TEXT NOT NULL);"
                             /* The high-water mark: row 'last_no' holds the highest
                              * number ever given, written in the transaction that
                              * gives it, so a deleted newest message's number is
                              * never given again. */
                             "CREATE TABLE IF NOT EXISTS board_meta ("
                             " key TEXT PRIMARY KEY,"
                             " value INTEGER NOT NULL)";

/* Open data_dir/board.db (creating the schema when new).  Busy -> 503,
 * else 500. */
static int db_open(const struct board_config *cfg, sqlite3 **out, struct board_error *err)
{
        *out = NULL;
        struct buf path = BUF_INIT;
        buf_printf(&path, "%s/board.db", cfg->data_dir);
        if (path.oom)
                return board_fail(err, 500, "out of memory");
        sqlite3 *db = NULL;
        int rc = sqlite3_open_v2(path.data, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
        buf_free(&path);
        if (rc != SQLITE_OK) {
                db_error(db, rc, "opening board.db", err);
                sqlite3_close(db);
                return -1;
        }
        sqlite3_busy_timeout(db, (int)(cfg->lock_timeout * 1000));
        rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, schema, NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
                db_error(db, rc, "preparing board.db", err);
                sqlite3_close(db);
                return -1;
        }
        *out = db;
        return 0;
}

static void db_close(sqlite3 *db)
{
        sqlite3_close(db);
}

/* BEGIN IMMEDIATE: the write lock, waited for up to busy_timeout. */
static int db_begin(sqlite3 *db, struct board_error *err)
{
        int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        return rc == SQLITE_OK ? 0 : db_error(db, rc, "starting a write transaction", err);
}

static void db_rollback(sqlite3 *db)
{
        if (!sqlite3_get_autocommit(db))
                sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

static int db_commit(sqlite3 *db, struct board_error *err)
{
        int rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
                db_error(db, rc, "committing", err);
                db_rollback(db);
                return -1;
        }
        return 0;
}

static int set_col(struct lr_text *t, sqlite3_stmt *st, int col)
{
        const unsigned char *p = sqlite3_column_text(st, col);
        int n = sqlite3_column_bytes(st, col);
        return lr_text_set(t, p ? (const char *)p : "", p ? (size_t)n : 0);
}

static int row_to_record(sqlite3_stmt *st, struct logrecord *rec)
{
        memset(rec, 0, sizeof *rec);
        rec->no = sqlite3_column_int64(st, 0);
        rec->time = sqlite3_column_int64(st, 1);
        if (set_col(&rec->name, st, 2) || set_col(&rec->subject, st, 3) || set_col(&rec->body, st, 4) ||
            set_col(&rec->pwhash, st, 5)) {
                logrecord_free(rec);
                return -1;
        }
        return 0;
}

/* All messages, oldest first (appended to *out). */
static int db_list(sqlite3 *db, struct msglist *out, struct board_error *err)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(
            db, "SELECT no, time, name, subject, body, pwhash FROM messages ORDER BY no", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return db_error(db, rc, "reading messages", err);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct logrecord rec;
                if (row_to_record(st, &rec) < 0 || msglist_push(out, &rec) < 0) {
                        logrecord_free(&rec);
                        sqlite3_finalize(st);
                        return board_fail(err, 500, "out of memory reading messages");
                }
        }
        if (rc != SQLITE_DONE) {
                db_error(db, rc, "reading messages", err);
                sqlite3_finalize(st);
                return -1;
        }
        sqlite3_finalize(st);
        return 0;
}

/* Highest number ever given (the high-water mark; 0 for a new board). */
static int db_max_no(sqlite3 *db, long long *out, struct board_error *err)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db,
                                    "SELECT MAX(COALESCE((SELECT MAX(no) FROM messages), 0),"
                                    " COALESCE((SELECT value FROM board_meta WHERE key = 'last_no'), 0))",
                                    -1, &st, NULL);
        if (rc != SQLITE_OK)
                return db_error(db, rc, "numbering", err);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                db_error(db, rc, "numbering", err);
                sqlite3_finalize(st);
                return -1;
        }
        *out = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return 0;
}

/* Message `no` into *out: 0 found, 1 absent, -1 error. */
static int db_get(sqlite3 *db, long long no, struct logrecord *out, struct board_error *err)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(
            db, "SELECT no, time, name, subject, body, pwhash FROM messages WHERE no = ?", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return db_error(db, rc, "reading a message", err);
        sqlite3_bind_int64(st, 1, no);
        rc = sqlite3_step(st);
        int result;
        if (rc == SQLITE_ROW)
                result = row_to_record(st, out) < 0 ? board_fail(err, 500, "out of memory") : 0;
        else if (rc == SQLITE_DONE)
                result = 1;
        else
                result = db_error(db, rc, "reading a message", err);
        sqlite3_finalize(st);
        return result;
}

static int exec_int(sqlite3 *db, const char *sql, long long v, const char *what, struct board_error *err)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return db_error(db, rc, what, err);
        sqlite3_bind_int64(st, 1, v);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? 0 : db_error(db, rc, what, err);
}

static void bind_text(sqlite3_stmt *st, int i, const struct lr_text *t)
{
        sqlite3_bind_text(st, i, t->ptr ? t->ptr : "", (int)t->len, SQLITE_TRANSIENT);
}

/* Insert and raise the high-water mark to rec->no (same transaction). */
static int db_insert(sqlite3 *db, const struct logrecord *rec, struct board_error *err)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(
            db, "INSERT INTO messages (no, time, name, subject, body, pwhash) VALUES (?, ?, ?, ?, ?, ?)", -1,
            &st, NULL);
        if (rc != SQLITE_OK)
                return db_error(db, rc, "storing the message", err);
        sqlite3_bind_int64(st, 1, rec->no);
        sqlite3_bind_int64(st, 2, rec->time);
        bind_text(st, 3, &rec->name);
        bind_text(st, 4, &rec->subject);
        bind_text(st, 5, &rec->body);
        bind_text(st, 6, &rec->pwhash);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
                return db_error(db, rc, "storing the message", err);
        return exec_int(db,
                        "INSERT INTO board_meta (key, value) VALUES ('last_no', ?1)"
                        " ON CONFLICT (key) DO UPDATE SET value = MAX(value, excluded.value)",
                        rec->no, "storing the high-water mark", err);
}

static int db_delete(sqlite3 *db, long long no, struct board_error *err)
{
        return exec_int(db, "DELETE FROM messages WHERE no = ?", no, "deleting the message", err);
}

/* Keep only the newest `cap` messages. */
static int db_cap(sqlite3 *db, long cap, struct board_error *err)
{
        return exec_int(
            db, "DELETE FROM messages WHERE no NOT IN (SELECT no FROM messages ORDER BY no DESC LIMIT ?)",
            cap, "dropping old messages", err);
}

/* ---- the store (store.h) ------------------------------------------------ */

/* This process's state for one board.  The database is still opened per
 * operation; a kept connection belongs here. */
struct sqlite_store {
        const struct board_config *cfg;
        char *rate;          /* data_dir/ratelimit */
        struct msglist view; /* what the last view returned */
};

static void sql_close(void *state)
{
        struct sqlite_store *s = state;
        if (s == NULL)
                return;
        msglist_free(&s->view);
        free(s->rate);
        free(s);
}

static int sql_open(const struct board_config *cfg, void **state, struct board_error *err)
{
        struct sqlite_store *s = calloc(1, sizeof *s);
        if (s == NULL)
                return board_fail(err, 500, "out of memory");
        s->cfg = cfg;
        struct buf rate = BUF_INIT;
        buf_printf(&rate, "%s/ratelimit", cfg->data_dir);
        if (rate.oom) {
                buf_free(&rate);
                free(s);
                return board_fail(err, 500, "out of memory");
        }
        s->rate = rate.data;
        *state = s;
        return 0;
}

static int sql_list(void *state, struct msglist *out, struct board_error *err)
{
        struct sqlite_store *s = state;
        sqlite3 *db;
        if (db_open(s->cfg, &db, err) < 0)
                return -1;
        int rc = db_list(db, out, err);
        db_close(db);
        return rc;
}

static int sql_view(void *state, const struct msglist **out, struct board_error *err)
{
        struct sqlite_store *s = state;
        msglist_free(&s->view);
        *out = &s->view;
        return sql_list(state, &s->view, err);
}

static int sql_get(void *state, long long no, struct logrecord *out, struct board_error *err)
{
        struct sqlite_store *s = state;
        sqlite3 *db;
        if (db_open(s->cfg, &db, err) < 0)
                return -1;
        int found = db_get(db, no, out, err);
        db_close(db);
        return found;
}

static int sql_post(void *state, struct logrecord *msg, const struct store_write *w, struct board_error *err)
{
        struct sqlite_store *s = state;
        const struct board_config *cfg = s->cfg;
        sqlite3 *db;
        if (db_open(cfg, &db, err) < 0)
                return -1;
        long long max = 0;
        int rc = db_begin(db, err);
        if (rc == 0)
                rc = ratelimit_admit(s->rate, w->addr, w->now, cfg->min_post_interval, err);
        if (rc == 0)
                rc = db_max_no(db, &max, err);
        if (rc == 0) {
                msg->no = max + 1;
                msg->time = w->now;
                sleep_ms(cfg->delay_ms);
                rc = db_insert(db, msg, err);
        }
        if (rc == 0)
                rc = db_cap(db, cfg->max_messages, err);
        if (rc == 0) {
                /* Recorded inside the write transaction, which is what
                 * serialises posts here: after the commit, a post waiting
                 * in BEGIN IMMEDIATE could check before this is written. */
                struct board_error rerr = BOARD_ERROR_INIT;
                (void)ratelimit_record(s->rate, w->addr, w->now, cfg->min_post_interval, &rerr);
                rc = db_commit(db, err);
        }
        if (rc != 0)
                db_rollback(db);
        db_close(db);
        return rc;
}

static int sql_delete(void *state, long long no, const char *verified_hash, const struct store_write *w,
                      struct board_error *err)
{
        (void)w;
        struct sqlite_store *s = state;
        sqlite3 *db;
        if (db_open(s->cfg, &db, err) < 0)
                return -1;
        struct logrecord m;
        memset(&m, 0, sizeof m);
        int rc = db_begin(db, err);
        if (rc == 0) {
                int found = db_get(db, no, &m, err);
                rc = found < 0 ? -1 : store_recheck_delete(found == 0 ? &m : NULL, verified_hash, err);
        }
        if (rc == 0) {
                sleep_ms(s->cfg->delay_ms);
                rc = db_delete(db, no, err);
        }
        if (rc == 0)
                rc = db_commit(db, err);
        if (rc != 0)
                db_rollback(db);
        logrecord_free(&m);
        db_close(db);
        return rc;
}

const struct store_ops store_sqlite_ops = {
    .name = "sqlite",
    .open = sql_open,
    .close = sql_close,
    .list = sql_list,
    .view = sql_view,
    .get = sql_get,
    .post = sql_post,
    .delete = sql_delete,
};
