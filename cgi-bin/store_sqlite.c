/* store_sqlite.c - the SQLite store (see store_sqlite.h): one connection
 * and its prepared statements per process, the schema, page views from a
 * list kept while the database is unchanged, posts stored in groups
 * through the pending queue (groupcommit.h) or one at a time, deletes.
 *
 * Writers.  Every write is one SQLite transaction (BEGIN IMMEDIATE ...
 * COMMIT) taken inside the board's exclusive "messages" lock of the
 * library (board_lock_exclusive).  SQLite's own lock alone would do for
 * correctness, but a writer that finds it taken sleeps in the busy handler
 * and tries again later, so a writer that came later often gets in first
 * and a few wait far longer than the rest (or past busy_timeout: 503).
 * The library's lock wakes its waiters when it is released, and with
 * group commit the holder stores every post queued meanwhile in its
 * transaction, oldest first: a post waits for at most the batch being
 * written and its own.  busy_timeout (lock_timeout) still covers other
 * connections (a checkpoint, the sqlite3 shell).
 *
 * Invariants kept inside each write transaction:
 *   - numbers are never given twice: the next number is one above the
 *     higher of MAX(no) and board_meta 'last_no', and 'last_no' is raised
 *     in the transaction that gives the number;
 *   - a queued post is stored at most once: its post id is stored with it
 *     (column post_id, unique), and a batch skips ids already stored (a
 *     leader that died between COMMIT and settling its claims; I4 of
 *     postqueue.c);
 *   - posts one at a time check and record the post interval inside their
 *     transaction; queued posts are charged before queueing under the
 *     board's "ratelimit" lock (groupcommit.c), as for the flat log;
 *   - the fence recorded in board_meta 'fence' never decreases, and no
 *     change written under a lower fence is committed (fence.h): right
 *     before COMMIT the write's fence is recorded with
 *     UPDATE ... WHERE value <= fence in the same transaction; when that
 *     changes no row, a later holder has written, and the transaction is
 *     rolled back (503, nothing written).  SQLite's own write lock
 *     (BEGIN IMMEDIATE) serialises the comparison with every other
 *     writer's, whether it still holds the board's lock or not.
 *
 * The schema (a new database, one of an earlier version, the switch to
 * the WAL journal) is made under the "schema" lock instead (open_db): no
 * message is written until it exists.
 *
 * Page views.  PRAGMA data_version changes when another connection
 * commits; this connection's own writes drop the kept list.  A view reads
 * the version first and then the list, so a commit between the two only
 * makes the next view read again. */
#include "store_sqlite.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "delay.h"
#include "fence.h"
#include "groupcommit.h"
#include "locking.h"
#include "postqueue.h"
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

/* The schema, made (or brought up to date) in one write transaction when
 * the statements below cannot be prepared. */
static const char schema[] = "CREATE TABLE IF NOT EXISTS messages ("
                             " no INTEGER PRIMARY KEY,"
                             " time INTEGER NOT NULL,"
                             " name TEXT NOT NULL,"
                             " subject TEXT NOT NULL,"
                             " body TEXT NOT NULL,"
                             " pwhash TEXT NOT NULL,"
                             " post_id TEXT);"
                             /* The high-water mark: row 'last_no' holds the highest
                              * number ever given, written in the transaction that
                              * gives it, so a deleted newest message's number is
                              * never given again.  Row 'fence' holds the highest
                              * fence that has written the database (fence.h). */
                             "CREATE TABLE IF NOT EXISTS board_meta ("
                             " key TEXT PRIMARY KEY,"
                             " value INTEGER NOT NULL)";
/* Databases made before post ids were stored lack the column. */
static const char add_post_id[] = "ALTER TABLE messages ADD COLUMN post_id TEXT";
static const char post_id_index[] =
    "CREATE UNIQUE INDEX IF NOT EXISTS messages_post_id ON messages (post_id)";

enum stmt {
        ST_BEGIN,
        ST_COMMIT,
        ST_ROLLBACK,
        ST_VERSION,
        ST_LIST,
        ST_GET,
        ST_MAX_NO,
        ST_HAS_POST,
        ST_INSERT,
        ST_MARK,
        ST_DELETE,
        ST_CAP,
        ST_FENCE_RECORD,
        ST_FENCE_READ,
        ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_VERSION] = "PRAGMA data_version",
    [ST_LIST] = "SELECT no, time, name, subject, body, pwhash FROM messages ORDER BY no",
    [ST_GET] = "SELECT no, time, name, subject, body, pwhash FROM messages WHERE no = ?1",
    [ST_MAX_NO] = "SELECT MAX(COALESCE((SELECT MAX(no) FROM messages), 0),"
                  " COALESCE((SELECT value FROM board_meta WHERE key = 'last_no'), 0))",
    [ST_HAS_POST] = "SELECT 1 FROM messages WHERE post_id = ?1",
    [ST_INSERT] = "INSERT INTO messages (no, time, name, subject, body, pwhash, post_id)"
                  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_MARK] = "INSERT INTO board_meta (key, value) VALUES ('last_no', ?1)"
                " ON CONFLICT (key) DO UPDATE SET value = MAX(value, excluded.value)",
    [ST_DELETE] = "DELETE FROM messages WHERE no = ?1",
    /* Keep the newest ?1: drop the (?1 + 1)-th newest and everything older. */
    [ST_CAP] =
        "DELETE FROM messages WHERE no <= (SELECT no FROM messages ORDER BY no DESC LIMIT 1 OFFSET ?1)",
    /* Changes one row when ?1 is at least the recorded fence, none when a
     * later holder has recorded a higher one. */
    [ST_FENCE_RECORD] = "INSERT INTO board_meta (key, value) VALUES ('fence', ?1)"
                        " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                        " WHERE value <= excluded.value",
    [ST_FENCE_READ] = "SELECT COALESCE((SELECT value FROM board_meta WHERE key = 'fence'), 0)",
};

/* This process's state for one board. */
struct sqlite_store {
        const struct board_config *cfg;
        char *rate;    /* data_dir/ratelimit */
        char *pending; /* data_dir/pending: the group-commit queue */
        sqlite3 *db;
        sqlite3_stmt *st[ST_COUNT];
        struct msglist view;                /* what the last view returned */
        long long view_version;             /* data_version it was read at */
        bool view_valid;                    /* false: read it again */
        unsigned long long view_generation; /* one more at every read (store.h) */
};

static void close_db(struct sqlite_store *s)
{
        for (int i = 0; i < ST_COUNT; i++) {
                sqlite3_finalize(s->st[i]);
                s->st[i] = NULL;
        }
        sqlite3_close(s->db);
        s->db = NULL;
}

static int prepare_all(struct sqlite_store *s)
{
        for (int i = 0; i < ST_COUNT; i++) {
                sqlite3_finalize(s->st[i]);
                s->st[i] = NULL;
                int rc =
                    sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL);
                if (rc != SQLITE_OK)
                        return rc;
        }
        return SQLITE_OK;
}

/* Create or complete the schema: WAL journal, the tables and the post id
 * column, in one write transaction.  0, or -1 with the error. */
static int make_schema(sqlite3 *db, struct board_error *err)
{
        int rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return db_error(db, rc, "preparing board.db", err);
        rc = sqlite3_exec(db, schema, NULL, NULL, NULL);
        if (rc == SQLITE_OK) {
                sqlite3_stmt *probe = NULL;
                if (sqlite3_prepare_v2(db, "SELECT post_id FROM messages", -1, &probe, NULL) != SQLITE_OK)
                        rc = sqlite3_exec(db, add_post_id, NULL, NULL, NULL);
                sqlite3_finalize(probe);
        }
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, post_id_index, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                return 0;
        db_error(db, rc, "preparing board.db", err); /* before ROLLBACK replaces the message */
        if (!sqlite3_get_autocommit(db))
                sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
}

static int journal_is_wal(sqlite3 *db)
{
        sqlite3_stmt *st = NULL;
        int wal = sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL) == SQLITE_OK &&
                  sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) &&
                  strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
        sqlite3_finalize(st);
        return wal;
}

/* Open data_dir/board.db for this process with busy_timeout from
 * lock_timeout and every statement prepared.  A database without the
 * schema or the WAL journal (new, or made by an earlier version) gets them
 * under the board's "schema" lock: the first requests of a new board's
 * processes take turns instead of retrying in SQLite's busy handler, and
 * the ones that waited find the schema made and only prepare.  Not under
 * "messages": a process opening the database then waited behind every
 * batch of posts queued before it, although none of them touches the
 * schema.  Busy -> 503, else 500. */
static int open_db(struct sqlite_store *s, struct board_error *err)
{
        struct buf path = BUF_INIT;
        buf_printf(&path, "%s/board.db", s->cfg->data_dir);
        if (path.oom)
                return board_fail(err, 500, "out of memory");
        int rc = sqlite3_open_v2(path.data, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
        buf_free(&path);
        if (rc != SQLITE_OK) {
                db_error(s->db, rc, "opening board.db", err);
                close_db(s);
                return -1;
        }
        sqlite3_busy_timeout(s->db, (int)(s->cfg->lock_timeout * 1000));
        if (prepare_all(s) == SQLITE_OK && journal_is_wal(s->db))
                return 0;
        struct board_lock lk;
        if (board_lock_exclusive(s->cfg, BOARD_SCHEMA_LOCK_NAME, &lk, s->cfg->lock_timeout, -1, err) < 0) {
                close_db(s);
                return -1;
        }
        if (prepare_all(s) == SQLITE_OK && journal_is_wal(s->db)) {
                rc = 0; /* made while we waited */
        } else {
                rc = make_schema(s->db, err);
                if (rc == 0 && (rc = prepare_all(s)) != SQLITE_OK)
                        rc = db_error(s->db, rc, "preparing board.db", err);
        }
        if (board_lock_finish(&lk, rc, err) < 0) {
                close_db(s);
                return -1;
        }
        return 0;
}

/* Statement i, reset and unbound, ready to bind and step. */
static sqlite3_stmt *stmt(struct sqlite_store *s, enum stmt i)
{
        sqlite3_reset(s->st[i]);
        sqlite3_clear_bindings(s->st[i]);
        return s->st[i];
}

/* Step a statement that returns no rows, then reset it. */
static int run(struct sqlite_store *s, sqlite3_stmt *st, const char *what, struct board_error *err)
{
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : db_error(s->db, rc, what, err);
}

static int db_begin(struct sqlite_store *s, struct board_error *err)
{
        return run(s, stmt(s, ST_BEGIN), "starting a write transaction", err);
}

static void db_rollback(struct sqlite_store *s)
{
        if (!sqlite3_get_autocommit(s->db)) {
                sqlite3_step(stmt(s, ST_ROLLBACK));
                sqlite3_reset(s->st[ST_ROLLBACK]);
        }
}

/* COMMIT; rolled back when it fails. */
static int db_commit(struct sqlite_store *s, struct board_error *err)
{
        if (run(s, stmt(s, ST_COMMIT), "committing", err) < 0) {
                db_rollback(s);
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
static int db_list(struct sqlite_store *s, struct msglist *out, struct board_error *err)
{
        sqlite3_stmt *st = stmt(s, ST_LIST);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct logrecord rec;
                if (row_to_record(st, &rec) < 0 || msglist_push(out, &rec) < 0) {
                        logrecord_free(&rec);
                        sqlite3_reset(st);
                        return board_fail(err, 500, "out of memory reading messages");
                }
        }
        sqlite3_reset(st); /* ends the read transaction */
        return rc == SQLITE_DONE ? 0 : db_error(s->db, rc, "reading messages", err);
}

/* A single integer from a statement that returns one row. */
static int step_int(struct sqlite_store *s, sqlite3_stmt *st, long long *out, const char *what,
                    struct board_error *err)
{
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                *out = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        return rc == SQLITE_ROW ? 0 : db_error(s->db, rc, what, err);
}

/* Message `no` into *out: 0 found, 1 absent, -1 error. */
static int db_get(struct sqlite_store *s, long long no, struct logrecord *out, struct board_error *err)
{
        sqlite3_stmt *st = stmt(s, ST_GET);
        sqlite3_bind_int64(st, 1, no);
        int rc = sqlite3_step(st);
        int result;
        if (rc == SQLITE_ROW)
                result = row_to_record(st, out) < 0 ? board_fail(err, 500, "out of memory") : 0;
        else if (rc == SQLITE_DONE)
                result = 1;
        else
                result = db_error(s->db, rc, "reading a message", err);
        sqlite3_reset(st);
        return result;
}

/* 1 when a message with post id `id` is stored, 0 when not, -1 error. */
static int db_has_post(struct sqlite_store *s, const char *id, struct board_error *err)
{
        sqlite3_stmt *st = stmt(s, ST_HAS_POST);
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc == SQLITE_ROW)
                return 1;
        return rc == SQLITE_DONE ? 0 : db_error(s->db, rc, "looking for a queued post", err);
}

static void bind_text(sqlite3_stmt *st, int i, const struct lr_text *t)
{
        sqlite3_bind_text(st, i, t->ptr ? t->ptr : "", (int)t->len, SQLITE_STATIC);
}

/* Insert rec (numbered; its post id when `post_id` is not NULL). */
static int db_insert(struct sqlite_store *s, const struct logrecord *rec, const char *post_id,
                     struct board_error *err)
{
        sqlite3_stmt *st = stmt(s, ST_INSERT);
        sqlite3_bind_int64(st, 1, rec->no);
        sqlite3_bind_int64(st, 2, rec->time);
        bind_text(st, 3, &rec->name);
        bind_text(st, 4, &rec->subject);
        bind_text(st, 5, &rec->body);
        bind_text(st, 6, &rec->pwhash);
        if (post_id)
                sqlite3_bind_text(st, 7, post_id, -1, SQLITE_STATIC);
        return run(s, st, "storing the message", err);
}

/* Raise the high-water mark to `no`, then keep only the newest
 * max_messages (same transaction as the inserts). */
static int db_mark_and_cap(struct sqlite_store *s, long long no, struct board_error *err)
{
        sqlite3_stmt *st = stmt(s, ST_MARK);
        sqlite3_bind_int64(st, 1, no);
        if (run(s, st, "storing the high-water mark", err) < 0)
                return -1;
        st = stmt(s, ST_CAP);
        sqlite3_bind_int64(st, 1, s->cfg->max_messages);
        return run(s, st, "dropping old messages", err);
}

/* ---- the store (store.h) ------------------------------------------------ */

static void sql_close(void *state)
{
        struct sqlite_store *s = state;
        if (s == NULL)
                return;
        close_db(s);
        msglist_free(&s->view);
        free(s->rate);
        free(s->pending);
        free(s);
}

static char *path_in(const char *dir, const char *leaf)
{
        struct buf b = BUF_INIT;
        buf_printf(&b, "%s/%s", dir, leaf);
        if (b.oom) {
                buf_free(&b);
                return NULL;
        }
        return b.data;
}

static int sql_open(const struct board_config *cfg, void **state, struct board_error *err)
{
        struct sqlite_store *s = calloc(1, sizeof *s);
        if (s == NULL)
                return board_fail(err, 500, "out of memory");
        s->cfg = cfg;
        s->rate = path_in(cfg->data_dir, "ratelimit");
        s->pending = path_in(cfg->data_dir, "pending");
        if (!s->rate || !s->pending) {
                sql_close(s);
                return board_fail(err, 500, "out of memory");
        }
        if (open_db(s, err) < 0) {
                sql_close(s);
                return -1;
        }
        *state = s;
        return 0;
}

static int sql_list(void *state, struct msglist *out, struct board_error *err)
{
        return db_list(state, out, err);
}

static int sql_view(void *state, const struct msglist **out, unsigned long long *generation,
                    struct board_error *err)
{
        struct sqlite_store *s = state;
        *out = &s->view;
        long long version = 0;
        if (step_int(s, stmt(s, ST_VERSION), &version, "reading messages", err) < 0)
                return -1;
        if (s->view_valid && version == s->view_version) {
                if (generation)
                        *generation = s->view_generation;
                return 0;
        }
        s->view_generation++;
        if (generation)
                *generation = s->view_generation;
        msglist_free(&s->view);
        s->view_valid = false;
        if (db_list(s, &s->view, err) < 0) {
                msglist_free(&s->view);
                return -1;
        }
        s->view_version = version;
        s->view_valid = true;
        return 0;
}

static int sql_get(void *state, long long no, struct logrecord *out, struct board_error *err)
{
        return db_get(state, no, out, err);
}

/* The writers' lock (see the top of the file) and the post interval's. */
static int write_lock(const struct board_config *cfg, struct board_lock *lk, double timeout, int cancel_fd,
                      struct board_error *err)
{
        return board_lock_exclusive(cfg, BOARD_LOCK_NAME, lk, timeout, cancel_fd, err);
}

static int rate_lock(const struct board_config *cfg, struct board_lock *lk, struct board_error *err)
{
        return board_lock_exclusive(cfg, BOARD_RATE_LOCK_NAME, lk, cfg->lock_timeout, -1, err);
}

/* Inside the write transaction: record the write's fence, or refuse it
 * when a later holder has recorded a higher one (503; the caller rolls
 * back).  A lock without fences (0) records nothing. */
static int record_fence(struct sqlite_store *s, unsigned long long fence, struct board_error *err)
{
        if (fence == 0)
                return 0;
        sqlite3_stmt *st = stmt(s, ST_FENCE_RECORD);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)fence);
        if (run(s, st, "recording the fence", err) < 0)
                return -1;
        if (sqlite3_changes(s->db) == 1)
                return 0;
        long long recorded = 0;
        if (step_int(s, stmt(s, ST_FENCE_READ), &recorded, "reading the fence", err) < 0)
                return -1;
        if (fence_admit((unsigned long long)recorded, fence, err) == 0)
                return board_fail(err, 500, "the fence %llu was not recorded (the database records %lld)",
                                  fence, recorded);
        return -1;
}

/* Inside the write transaction, after the delay: the lock is still ours
 * (it may have been broken as stale while this holder was paused), the
 * fence is recorded (refused when lower than the recorded one), COMMIT.
 * Rolled back when any of them fails. */
static int commit_locked(struct sqlite_store *s, struct board_lock *lk, struct board_error *err)
{
        if (board_lock_make_exclusive(lk, err) < 0 || record_fence(s, lk->fence, err) < 0) {
                db_rollback(s);
                return -1;
        }
        int rc = db_commit(s, err);
        s->view_valid = false; /* this connection's own commit: data_version does not change */
        return rc;
}

/* Under the write lock: steps 4 and 5 of postqueue.c's protocol in one
 * transaction (group_commit.commit_batch). */
static int commit_batch(void *state, struct board_lock *lk, size_t max, const char *own, bool *own_claimed,
                        size_t *claimed, struct board_error *err)
{
        struct sqlite_store *s = state;
        struct pq_batch batch = PQ_BATCH_INIT;
        long long last = 0;
        int rc = db_begin(s, err);
        if (rc == 0)
                rc = pq_claim(s->pending, max, &batch, err);
        *claimed = batch.count;
        if (rc == 0)
                rc = step_int(s, stmt(s, ST_MAX_NO), &last, "numbering", err);
        size_t added = 0;
        for (size_t i = 0; rc == 0 && i < batch.count; i++) {
                const struct logrecord *m = &batch.items[i];
                if (strcmp(m->id, own) == 0)
                        *own_claimed = true;
                int stored = db_has_post(s, m->id, err);
                if (stored < 0)
                        rc = -1;
                else if (stored == 0) {
                        struct logrecord numbered = *m; /* shares the strings */
                        numbered.no = ++last;
                        rc = db_insert(s, &numbered, m->id, err);
                        added++;
                }
        }
        if (rc == 0 && added > 0) {
                rc = db_mark_and_cap(s, last, err);
                if (rc == 0)
                        sleep_ms(s->cfg->delay_ms);
        }
        if (rc == 0)
                rc = commit_locked(s, lk, err);
        else
                db_rollback(s);
        if (rc == 0)
                pq_settle(s->pending, &batch);
        else
                pq_give_back(s->pending, &batch, own);
        pq_batch_free(&batch);
        return rc;
}

/* A post on its own (group_commit = no): the post interval, numbering,
 * insert and cap in one transaction. */
static int post_alone(struct sqlite_store *s, struct logrecord *msg, const struct store_write *w,
                      struct board_error *err)
{
        const struct board_config *cfg = s->cfg;
        struct board_lock lk;
        if (write_lock(cfg, &lk, cfg->lock_timeout, -1, err) < 0)
                return -1;
        long long last = 0;
        int rc = db_begin(s, err);
        if (rc == 0)
                rc = ratelimit_admit(s->rate, w->addr, w->now, cfg->min_post_interval, err);
        if (rc == 0)
                rc = step_int(s, stmt(s, ST_MAX_NO), &last, "numbering", err);
        if (rc == 0) {
                msg->no = last + 1;
                msg->time = w->now;
                rc = db_insert(s, msg, NULL, err);
        }
        if (rc == 0)
                rc = db_mark_and_cap(s, msg->no, err);
        if (rc == 0) {
                sleep_ms(cfg->delay_ms);
                /* Recorded inside the write transaction: the next post
                 * checks only after this one commits. */
                struct board_error rerr = BOARD_ERROR_INIT;
                (void)ratelimit_record(s->rate, w->addr, w->now, cfg->min_post_interval, &rerr);
                rc = commit_locked(s, &lk, err);
        } else {
                db_rollback(s);
        }
        return board_lock_finish(&lk, rc, err);
}

static int sql_post(void *state, struct logrecord *msg, const struct store_write *w, struct board_error *err)
{
        struct sqlite_store *s = state;
        if (!s->cfg->group_commit)
                return post_alone(s, msg, w, err);
        struct group_commit g = {s->cfg, s->pending, s->rate, write_lock, rate_lock, commit_batch, s};
        return group_commit_post(&g, msg, w, err);
}

static int sql_delete(void *state, long long no, const char *verified_hash, const struct store_write *w,
                      struct board_error *err)
{
        (void)w;
        struct sqlite_store *s = state;
        struct board_lock lk;
        if (write_lock(s->cfg, &lk, s->cfg->lock_timeout, -1, err) < 0)
                return -1;
        struct logrecord m;
        memset(&m, 0, sizeof m);
        int rc = db_begin(s, err);
        if (rc == 0) {
                int found = db_get(s, no, &m, err);
                rc = found < 0 ? -1 : store_recheck_delete(found == 0 ? &m : NULL, verified_hash, err);
        }
        if (rc == 0) {
                sleep_ms(s->cfg->delay_ms);
                sqlite3_stmt *st = stmt(s, ST_DELETE);
                sqlite3_bind_int64(st, 1, no);
                rc = run(s, st, "deleting the message", err);
        }
        if (rc == 0)
                rc = commit_locked(s, &lk, err);
        else
                db_rollback(s);
        logrecord_free(&m);
        return board_lock_finish(&lk, rc, err);
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
