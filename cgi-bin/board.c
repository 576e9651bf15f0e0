/* board.c - list, post and delete over the flat log or SQLite, with the
 * read-modify-write window (and its demonstration delay) per lock mode. */
#include "board.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "delay.h"
#include "deletelimit.h"
#include "locking.h"
#include "password.h"
#include "postqueue.h"
#include "ratelimit.h"
#include "store_log.h"
#include "store_sqlite.h"

struct paths {
        struct buf log;
        struct buf rate;
        struct buf pending;
        struct buf delfail;
};

static void free_paths(struct paths *p)
{
        buf_free(&p->log);
        buf_free(&p->rate);
        buf_free(&p->pending);
        buf_free(&p->delfail);
}

static int make_paths(const struct board_config *cfg, struct paths *p, struct board_error *err)
{
        memset(p, 0, sizeof *p);
        buf_printf(&p->log, "%s/messages.log", cfg->data_dir);
        buf_printf(&p->rate, "%s/ratelimit", cfg->data_dir);
        buf_printf(&p->pending, "%s/pending", cfg->data_dir);
        buf_printf(&p->delfail, "%s/delete-failures", cfg->data_dir);
        if (p->log.oom || p->rate.oom || p->pending.oom || p->delfail.oom) {
                free_paths(p);
                return board_fail(err, 500, "out of memory");
        }
        return 0;
}

static int copy_message(struct logrecord *dst, const struct logrecord *src)
{
        memset(dst, 0, sizeof *dst);
        dst->no = src->no;
        dst->time = src->time;
        memcpy(dst->id, src->id, sizeof dst->id);
        if (lr_text_set(&dst->name, src->name.ptr ? src->name.ptr : "", src->name.len) ||
            lr_text_set(&dst->subject, src->subject.ptr ? src->subject.ptr : "", src->subject.len) ||
            lr_text_set(&dst->body, src->body.ptr ? src->body.ptr : "", src->body.len) ||
            lr_text_set(&dst->pwhash, src->pwhash.ptr ? src->pwhash.ptr : "", src->pwhash.len)) {
                logrecord_free(dst);
                return -1;
        }
        return 0;
}

static int make_lock_exclusive(void *ctx, struct board_error *err)
{
        return board_lock_make_exclusive(ctx, err);
}

static int rate_limited(const struct board_config *cfg, const char *path, const char *addr, long long now,
                        struct board_error *err)
{
        long wait = 0;
        int rc = ratelimit_check(path, addr, now, cfg->min_post_interval, &wait, err);
        if (rc == 1) {
                board_fail(err, 429, "You are posting too fast; please wait %ld seconds", wait);
                err->retry_after = (int)wait;
                return -1;
        }
        return rc;
}

/* Finish a locked operation: release, and keep the first error. */
static int finish(struct board_lock *lk, int rc, struct board_error *err)
{
        struct board_error rel = BOARD_ERROR_INIT;
        int r = board_lock_release(lk, &rel);
        if (rc == 0 && r != 0) {
                *err = rel;
                return -1;
        }
        return rc;
}

/* ---- flat log --------------------------------------------------------- */

static int log_list(const struct board_config *cfg, struct msglist *out, struct board_error *err)
{
        struct paths p;
        if (make_paths(cfg, &p, err) < 0)
                return -1;
        struct board_lock lk;
        int rc = board_lock_read(cfg, &lk, err);
        if (rc == 0) {
                rc = store_log_read(p.log.data, out, err);
                rc = finish(&lk, rc, err);
        }
        free_paths(&p);
        return rc;
}

/* The list page views read last, kept by this process between requests,
 * with the text it was parsed from.  A flat log that is still the same
 * file (same path, inode, size, mtime and ctime: every post renames a new
 * file into place, and an in-place write changes size and times) is not
 * read again.  A changed one is read, and when it is the old text minus
 * some of its first lines plus new lines at the end (what a post or the
 * cap makes of it) only the new lines are parsed.  All of it under the
 * same read lock as a full read, so what a view sees is exactly what
 * parsing the whole file would give. */
static struct {
        struct msglist list;
        struct buf text;
        char *path;
        struct stat id;
        bool valid;
} view;

/* How many leading lines a changed log may have lost and still be
 * extended rather than parsed again. */
#define VIEW_MAX_DROPPED 8

static bool same_file(const struct stat *a, const struct stat *b)
{
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void view_drop(void)
{
        msglist_free(&view.list);
        buf_free(&view.text);
        free(view.path);
        view.path = NULL;
        view.valid = false;
}

/* Bring the cached list from view.text to `now` by dropping leading
 * records and parsing only what was appended.  false when `now` is not
 * such a successor (the caller parses it whole). */
static bool view_extend(const struct buf *now, const char *path)
{
        const char *old = view.text.data ? view.text.data : "";
        size_t off = 0;
        long long last_held = view.list.count ? view.list.items[view.list.count - 1].no : 0;
        if (msglist_max_no(&view.list) > last_held)
                return false; /* the old text ends in the high-water mark: nothing may follow it */
        /* An empty buffer may have no storage at all: never hand its NULL
         * to memcmp or pointer arithmetic, even for zero bytes. */
        const char *text = now->data ? now->data : "";
        for (size_t dropped = 0; dropped <= VIEW_MAX_DROPPED && dropped <= view.list.count; dropped++) {
                size_t keep = view.text.len - off;
                if (keep <= now->len && (keep == 0 || memcmp(text, old + off, keep) == 0)) {
                        struct msglist added = MSGLIST_INIT;
                        struct board_error ignored = BOARD_ERROR_INIT;
                        bool ok = store_log_parse(text + keep, now->len - keep, path, &added, &ignored) == 0;
                        long long last =
                            view.list.count > dropped ? view.list.items[view.list.count - 1].no : 0;
                        if (ok && added.count > 0 && added.items[0].no <= last)
                                ok = false; /* numbers must keep increasing */
                        if (ok) {
                                msglist_cap(&view.list, view.list.count - dropped);
                                for (size_t i = 0; ok && i < added.count; i++)
                                        ok = msglist_push(&view.list, &added.items[i]) == 0;
                                msglist_note_no(&view.list, msglist_max_no(&added));
                        }
                        msglist_free(&added);
                        return ok;
                }
                const char *nl = memchr(old + off, '\n', view.text.len - off);
                if (nl == NULL)
                        return false;
                off = (size_t)(nl - old) + 1;
        }
        return false;
}

static int log_view(const struct board_config *cfg, const struct msglist **out, struct board_error *err)
{
        struct paths p;
        if (make_paths(cfg, &p, err) < 0)
                return -1;
        struct board_lock lk;
        int rc = board_lock_read(cfg, &lk, err);
        if (rc == 0) {
                struct stat st;
                bool exists = stat(p.log.data, &st) == 0;
                bool same_path = view.path != NULL && strcmp(view.path, p.log.data) == 0;
                if (!exists && errno != ENOENT) {
                        rc = board_fail(err, 500, "cannot read the message log: %s", strerror(errno));
                } else if (!(exists && view.valid && same_path && same_file(&st, &view.id) &&
                             cfg->write_method != BOARD_WRITE_INPLACE)) {
                        /* (In-place writes keep the inode and can keep the
                         * size within one timestamp tick: always read.) */
                        struct buf now = BUF_INIT;
                        rc = exists ? file_read_all(p.log.data, &now, err) : 1;
                        if (rc == 1) { /* no log (yet): no messages */
                                view_drop();
                                rc = 0;
                        } else if (rc == 0 && !(view.valid && same_path && view_extend(&now, p.log.data))) {
                                view_drop();
                                rc = store_log_parse(now.data ? now.data : "", now.len, p.log.data,
                                                     &view.list, err);
                        }
                        if (rc == 0 && exists) {
                                buf_free(&view.text);
                                view.text = now;
                                now = (struct buf)BUF_INIT;
                                if (view.path == NULL)
                                        view.path = strdup(p.log.data);
                                view.id = st;
                                view.valid = view.path != NULL;
                        } else if (rc != 0) {
                                view_drop();
                        }
                        buf_free(&now);
                }
                rc = finish(&lk, rc, err);
        }
        free_paths(&p);
        *out = &view.list;
        return rc;
}

static int log_post(const struct board_config *cfg, struct logrecord *msg, const char *addr, long long now,
                    struct board_error *err)
{
        struct paths p;
        if (make_paths(cfg, &p, err) < 0)
                return -1;
        struct msglist list = MSGLIST_INIT;
        struct board_lock lk;
        int rc = board_lock_write_begin(cfg, &lk, err);
        if (rc < 0)
                goto out_free;
        rc = rate_limited(cfg, p.rate.data, addr, now, err);
        if (rc == 0)
                rc = store_log_read(p.log.data, &list, err);
        if (rc == 0) {
                struct logrecord copy;
                msg->no = msglist_max_no(&list) + 1;
                msg->time = now;
                if (copy_message(&copy, msg) < 0 || msglist_push(&list, &copy) < 0) {
                        logrecord_free(&copy);
                        rc = board_fail(err, 500, "out of memory");
                }
        }
        if (rc == 0) {
                sleep_ms(cfg->delay_ms);
                rc = board_lock_write_commit(&lk, err);
        }
        if (rc == 0)
                rc = store_log_write(p.log.data, &list, (size_t)cfg->max_messages, cfg->write_method,
                                     cfg->delay_ms, make_lock_exclusive, &lk, err);
        if (rc == 0) {
                struct board_error rerr = BOARD_ERROR_INIT;
                /* The message is stored; a failure to note the time only
                 * weakens the rate limit. */
                (void)ratelimit_record(p.rate.data, addr, now, cfg->min_post_interval, &rerr);
        }
        rc = finish(&lk, rc, err);
out_free:
        msglist_free(&list);
        free_paths(&p);
        return rc;
}

/* ---- flat log, group commit (postqueue.h) ------------------------------ */

static bool uses_queue(const struct board_config *cfg)
{
        return cfg->group_commit && (cfg->lock_mode == BOARD_LOCK_MKDIR || cfg->lock_mode == BOARD_LOCK_RW ||
                                     cfg->lock_mode == BOARD_LOCK_FLOCK);
}

/* The rate limit of a queued post is checked and recorded before it is
 * queued, under the board's "ratelimit" lock: the request that commits
 * the post is often another one. */
static int rate_charge(const struct board_config *cfg, const struct paths *p, const char *addr, long long now,
                       struct board_error *err)
{
        if (cfg->min_post_interval <= 0)
                return 0;
        struct board_lock lk;
        if (board_lock_named(cfg, BOARD_RATE_LOCK_NAME, &lk, err) < 0)
                return -1;
        int rc = rate_limited(cfg, p->rate.data, addr, now, err);
        if (rc == 0) {
                struct board_error rerr = BOARD_ERROR_INIT; /* failing to note it only weakens the limit */
                (void)ratelimit_record(p->rate.data, addr, now, cfg->min_post_interval, &rerr);
        }
        return finish(&lk, rc, err);
}

/* A charged post that was certainly not stored does not count. */
static void rate_refund(const struct board_config *cfg, const struct paths *p, const char *addr,
                        long long now)
{
        if (cfg->min_post_interval <= 0)
                return;
        struct board_lock lk;
        struct board_error ignored = BOARD_ERROR_INIT;
        if (board_lock_named(cfg, BOARD_RATE_LOCK_NAME, &lk, &ignored) < 0)
                return;
        (void)ratelimit_forget(p->rate.data, addr, now, cfg->min_post_interval, &ignored);
        (void)finish(&lk, 0, &ignored);
}

static bool log_has_id(const struct msglist *l, const char *id)
{
        for (size_t i = l->count; i-- > 0;)
                if (strcmp(l->items[i].id, id) == 0)
                        return true;
        return false;
}

/* The most messages one rewrite of the log takes from the queue. */
#define BATCH_MAX 256

static size_t batch_max(const struct board_config *cfg)
{
        return (size_t)cfg->max_messages < BATCH_MAX ? (size_t)cfg->max_messages : BATCH_MAX;
}

/* Under the write lock: steps 4 and 5 of the protocol in postqueue.c.
 * *own_claimed is set when post `own` was in the batch (committed now, or
 * found already in the log); *claimed is the size of the batch. */
static int commit_batch(const struct board_config *cfg, const struct paths *p, struct board_lock *lk,
                        const char *own, bool *own_claimed, size_t *claimed, struct board_error *err)
{
        struct msglist list = MSGLIST_INIT;
        struct pq_batch batch = PQ_BATCH_INIT;
        int rc = store_log_read(p->log.data, &list, err);
        if (rc == 0)
                rc = pq_claim(p->pending.data, batch_max(cfg), &batch, err);
        *claimed = batch.count;
        long long next = msglist_max_no(&list) + 1;
        size_t added = 0;
        for (size_t i = 0; rc == 0 && i < batch.count; i++) {
                if (strcmp(batch.items[i].id, own) == 0)
                        *own_claimed = true;
                if (log_has_id(&list, batch.items[i].id))
                        continue; /* its holder died after the log's rename (I4) */
                struct logrecord copy;
                if (copy_message(&copy, &batch.items[i]) < 0) {
                        rc = board_fail(err, 500, "out of memory");
                        break;
                }
                copy.no = next;
                if (msglist_push(&list, &copy) < 0) {
                        logrecord_free(&copy);
                        rc = board_fail(err, 500, "out of memory");
                        break;
                }
                next++;
                added++;
        }
        if (rc == 0 && added > 0) {
                sleep_ms(cfg->delay_ms);
                rc = board_lock_write_commit(lk, err);
                if (rc == 0)
                        rc = store_log_write(p->log.data, &list, (size_t)cfg->max_messages, cfg->write_method,
                                             cfg->delay_ms, make_lock_exclusive, lk, err);
        }
        if (rc == 0)
                pq_settle(p->pending.data, &batch);
        else
                pq_give_back(p->pending.data, &batch, own);
        pq_batch_free(&batch);
        msglist_free(&list);
        return rc;
}

/* Holding the write lock with post t not yet stored: lead until it is. */
static int lead(const struct board_config *cfg, const struct paths *p, struct board_lock *lk,
                const struct pq_ticket *t, bool *maybe_stored, struct board_error *err)
{
        bool own_claimed = false;
        while (!own_claimed) {
                size_t claimed = 0;
                if (commit_batch(cfg, p, lk, t->id, &own_claimed, &claimed, err) < 0) {
                        *maybe_stored = false; /* given back without it */
                        return -1;
                }
                if (!own_claimed && claimed < batch_max(cfg))
                        return board_fail(err, 500, "the message was lost from the queue '%s'",
                                          p->pending.data);
        }
        return 0;
}

/* A post with group commit: steps 1 to 3 and 6 of the protocol in
 * postqueue.c. */
static int log_post_queued(const struct board_config *cfg, struct logrecord *msg, const char *addr,
                           long long now, struct board_error *err)
{
        struct paths p;
        if (make_paths(cfg, &p, err) < 0)
                return -1;
        bool maybe_stored = false;
        struct pq_ticket t;
        msg->no = 0;
        msg->time = now;
        int rc = rate_charge(cfg, &p, addr, now, err);
        if (rc < 0)
                goto out;
        rc = pq_enqueue(p.pending.data, msg, &t, err);
        if (rc < 0)
                goto refund;
        maybe_stored = true;
        double deadline = monotonic_seconds() + cfg->lock_timeout;
        for (;;) {
                if (pq_stored(&t))
                        break; /* committed by a holder (I3) */
                double left = deadline - monotonic_seconds();
                struct board_lock lk;
                rc = board_lock_write_wait(cfg, &lk, left > 0 ? left : 0, pq_notify_fd(&t), err);
                if (rc == 1) { /* the entry changed: look again */
                        pq_notify_drain();
                        rc = 0;
                        continue;
                }
                if (rc < 0) {
                        if (pq_withdraw(p.pending.data, &t) == 0) {
                                maybe_stored = false;
                        } else {
                                board_fail(
                                    err, 503,
                                    "busy: your message was already being saved by another request when "
                                    "this one stopped waiting, so it may appear shortly; please look at "
                                    "the board before sending it again");
                                err->retry_after = 1;
                        }
                        break;
                }
                if (!pq_stored(&t))
                        rc = lead(cfg, &p, &lk, &t, &maybe_stored, err);
                rc = finish(&lk, rc, err);
                break;
        }
        pq_ticket_close(&t);
refund:
        if (rc < 0 && !maybe_stored)
                rate_refund(cfg, &p, addr, now);
out:
        free_paths(&p);
        return rc;
}

/* Under the write lock: message `no` is still the one whose hash the
 * password was checked against before the lock (a string comparison,
 * no hashing). */
static int recheck_delete(const struct logrecord *m, const char *verified_hash, struct board_error *err)
{
        if (!m)
                return board_fail(err, 404, "There is no such message");
        if (m->pwhash.len == 0 || strcmp(m->pwhash.ptr, verified_hash) != 0)
                return board_fail(err, 403, "Wrong password");
        return 0;
}

static int log_delete(const struct board_config *cfg, long long no, const char *verified_hash,
                      struct board_error *err)
{
        struct paths p;
        if (make_paths(cfg, &p, err) < 0)
                return -1;
        struct msglist list = MSGLIST_INIT;
        struct board_lock lk;
        int rc = board_lock_write_begin(cfg, &lk, err);
        if (rc < 0)
                goto out_free;
        rc = store_log_read(p.log.data, &list, err);
        long idx = -1;
        if (rc == 0) {
                idx = msglist_find(&list, no);
                rc = recheck_delete(idx >= 0 ? &list.items[idx] : NULL, verified_hash, err);
        }
        if (rc == 0) {
                msglist_remove(&list, (size_t)idx);
                sleep_ms(cfg->delay_ms);
                rc = board_lock_write_commit(&lk, err);
        }
        if (rc == 0)
                rc = store_log_write(p.log.data, &list, (size_t)cfg->max_messages, cfg->write_method,
                                     cfg->delay_ms, make_lock_exclusive, &lk, err);
        rc = finish(&lk, rc, err);
out_free:
        msglist_free(&list);
        free_paths(&p);
        return rc;
}

/* ---- SQLite ----------------------------------------------------------- */

static int sql_list(const struct board_config *cfg, struct msglist *out, struct board_error *err)
{
        struct sqlite3 *db;
        if (store_sqlite_open(cfg, &db, err) < 0)
                return -1;
        int rc = store_sqlite_list(db, out, err);
        store_sqlite_close(db);
        return rc;
}

static int sql_post(const struct board_config *cfg, struct logrecord *msg, const char *addr, long long now,
                    struct board_error *err)
{
        struct paths p;
        if (make_paths(cfg, &p, err) < 0)
                return -1;
        struct sqlite3 *db;
        int rc = store_sqlite_open(cfg, &db, err);
        if (rc < 0) {
                free_paths(&p);
                return -1;
        }
        long long max = 0;
        rc = store_sqlite_begin(db, err);
        if (rc == 0)
                rc = rate_limited(cfg, p.rate.data, addr, now, err);
        if (rc == 0)
                rc = store_sqlite_max_no(db, &max, err);
        if (rc == 0) {
                msg->no = max + 1;
                msg->time = now;
                sleep_ms(cfg->delay_ms);
                rc = store_sqlite_insert(db, msg, err);
        }
        if (rc == 0)
                rc = store_sqlite_cap(db, cfg->max_messages, err);
        if (rc == 0) {
                /* Recorded inside the write transaction, which is what
                 * serialises posts here: after the commit, a post waiting
                 * in BEGIN IMMEDIATE could check before this is written. */
                struct board_error rerr = BOARD_ERROR_INIT;
                (void)ratelimit_record(p.rate.data, addr, now, cfg->min_post_interval, &rerr);
                rc = store_sqlite_commit(db, err);
        }
        if (rc != 0)
                store_sqlite_rollback(db);
        store_sqlite_close(db);
        free_paths(&p);
        return rc;
}

static int sql_delete(const struct board_config *cfg, long long no, const char *verified_hash,
                      struct board_error *err)
{
        struct sqlite3 *db;
        if (store_sqlite_open(cfg, &db, err) < 0)
                return -1;
        struct logrecord m;
        memset(&m, 0, sizeof m);
        int rc = store_sqlite_begin(db, err);
        if (rc == 0) {
                int found = store_sqlite_get(db, no, &m, err);
                rc = found < 0 ? -1 : recheck_delete(found == 0 ? &m : NULL, verified_hash, err);
        }
        if (rc == 0) {
                sleep_ms(cfg->delay_ms);
                rc = store_sqlite_delete(db, no, err);
        }
        if (rc == 0)
                rc = store_sqlite_commit(db, err);
        if (rc != 0)
                store_sqlite_rollback(db);
        logrecord_free(&m);
        store_sqlite_close(db);
        return rc;
}

/* ---- dispatch --------------------------------------------------------- */

int board_list(const struct board_config *cfg, struct msglist *out, struct board_error *err)
{
        return cfg->store == BOARD_STORE_SQLITE ? sql_list(cfg, out, err) : log_list(cfg, out, err);
}

int board_view(const struct board_config *cfg, const struct msglist **out, struct board_error *err)
{
        if (cfg->store != BOARD_STORE_SQLITE)
                return log_view(cfg, out, err);
        view_drop();
        *out = &view.list;
        return sql_list(cfg, &view.list, err);
}

int board_post(const struct board_config *cfg, struct logrecord *msg, const char *addr, long long now,
               struct board_error *err)
{
        if (cfg->store == BOARD_STORE_SQLITE)
                return sql_post(cfg, msg, addr, now, err);
        return uses_queue(cfg) ? log_post_queued(cfg, msg, addr, now, err)
                               : log_post(cfg, msg, addr, now, err);
}

/* The delete-password hash of message `no` (a new string), read without
 * the write lock: 0, or 404 / 403 (posted without a password) / 5xx. */
static int read_hash(const struct board_config *cfg, long long no, char **hash, struct board_error *err)
{
        *hash = NULL;
        const struct logrecord *m = NULL;
        struct logrecord row;
        memset(&row, 0, sizeof row);
        if (cfg->store == BOARD_STORE_SQLITE) {
                struct sqlite3 *db;
                if (store_sqlite_open(cfg, &db, err) < 0)
                        return -1;
                int found = store_sqlite_get(db, no, &row, err);
                store_sqlite_close(db);
                if (found < 0)
                        return -1;
                m = found == 0 ? &row : NULL;
        } else {
                const struct msglist *list;
                if (board_view(cfg, &list, err) < 0)
                        return -1;
                long idx = msglist_find(list, no);
                m = idx >= 0 ? &list->items[idx] : NULL;
        }
        int rc = 0;
        if (!m)
                rc = board_fail(err, 404, "There is no such message");
        else if (m->pwhash.len == 0)
                rc = board_fail(err, 403, "This message was posted without a password and cannot be deleted");
        else if (!(*hash = strdup(m->pwhash.ptr)))
                rc = board_fail(err, 500, "out of memory");
        logrecord_free(&row);
        return rc;
}

/* A wrong password: counted for the address and the message, under the
 * board's "deletelimit" lock. */
static void count_failure(const struct board_config *cfg, const struct paths *p, const char *addr,
                          long long no, long long now)
{
        if (cfg->delete_max_failures <= 0 || cfg->delete_failure_window <= 0)
                return;
        struct board_lock lk;
        struct board_error ignored = BOARD_ERROR_INIT; /* failing to count only weakens the limit */
        if (board_lock_named(cfg, BOARD_DELETE_LOCK_NAME, &lk, &ignored) < 0)
                return;
        (void)deletelimit_record(p->delfail.data, addr, no, now, cfg->delete_failure_window, &ignored);
        (void)finish(&lk, 0, &ignored);
}

/* The limit, then the password against the hash read without the lock
 * (yescrypt is the slow part: no lock is held while it runs, so guesses
 * never hold up posts), then the delete under the lock if the message
 * still has that hash. */
int board_delete(const struct board_config *cfg, long long no, const char *password, const char *addr,
                 long long now, struct board_error *err)
{
        struct paths p;
        if (make_paths(cfg, &p, err) < 0)
                return -1;
        long wait = 0;
        char *hash = NULL;
        int rc = deletelimit_check(p.delfail.data, addr, no, now, cfg->delete_max_failures,
                                   cfg->delete_failure_window, &wait, err);
        if (rc == 0)
                rc = read_hash(cfg, no, &hash, err);
        if (rc == 0 && !password_verify(password, hash)) {
                count_failure(cfg, &p, addr, no, now);
                rc = board_fail(err, 403, "Wrong password");
        }
        if (rc == 0)
                rc = cfg->store == BOARD_STORE_SQLITE ? sql_delete(cfg, no, hash, err)
                                                      : log_delete(cfg, no, hash, err);
        free(hash);
        free_paths(&p);
        return rc == 0 ? 0 : -1;
}
