/* board.c - list, post and delete over the flat log or SQLite, with the
 * read-modify-write window (and its demonstration delay) per lock mode. */
#include "board.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "fileio.h"
#include "locking.h"
#include "password.h"
#include "ratelimit.h"
#include "store_log.h"
#include "store_sqlite.h"

struct paths {
        struct buf log;
        struct buf rate;
};

static int make_paths(const struct board_config *cfg, struct paths *p, struct berr *err)
{
        memset(p, 0, sizeof *p);
        buf_printf(&p->log, "%s/messages.log", cfg->data_dir);
        buf_printf(&p->rate, "%s/ratelimit", cfg->data_dir);
        if (p->log.oom || p->rate.oom) {
                buf_free(&p->log);
                buf_free(&p->rate);
                return berr_set(err, 500, "out of memory");
        }
        return 0;
}

static void free_paths(struct paths *p)
{
        buf_free(&p->log);
        buf_free(&p->rate);
}

static int copy_message(struct logrecord *dst, const struct logrecord *src)
{
        memset(dst, 0, sizeof *dst);
        dst->no = src->no;
        dst->time = src->time;
        if (lr_text_set(&dst->name, src->name.ptr ? src->name.ptr : "", src->name.len) ||
            lr_text_set(&dst->subject, src->subject.ptr ? src->subject.ptr : "", src->subject.len) ||
            lr_text_set(&dst->body, src->body.ptr ? src->body.ptr : "", src->body.len) ||
            lr_text_set(&dst->pwhash, src->pwhash.ptr ? src->pwhash.ptr : "", src->pwhash.len)) {
                logrecord_free(dst);
                return -1;
        }
        return 0;
}

static int lock_still_ours(void *ctx, struct berr *err)
{
        return board_lock_check(ctx, err);
}

static int rate_limited(const struct board_config *cfg, const char *path, const char *addr, long long now,
                        struct berr *err)
{
        long wait = 0;
        int rc = ratelimit_check(path, addr, now, cfg->min_post_interval, &wait, err);
        if (rc == 1) {
                berr_set(err, 429, "You are posting too fast; please wait %ld seconds", wait);
                err->retry_after = (int)wait;
                return -1;
        }
        return rc;
}

/* Finish a locked operation: release, and keep the first error. */
static int finish(struct board_lock *lk, int rc, struct berr *err)
{
        struct berr rel = BERR_INIT;
        int r = board_lock_release(lk, &rel);
        if (rc == 0 && r != 0) {
                *err = rel;
                return -1;
        }
        return rc;
}

/* ---- flat log --------------------------------------------------------- */

static int log_list(const struct board_config *cfg, struct msglist *out, struct berr *err)
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
        for (size_t dropped = 0; dropped <= VIEW_MAX_DROPPED && dropped <= view.list.count; dropped++) {
                size_t keep = view.text.len - off;
                if (keep <= now->len && memcmp(now->data, old + off, keep) == 0) {
                        struct msglist added = MSGLIST_INIT;
                        struct berr ignored = BERR_INIT;
                        bool ok =
                            store_log_parse(now->data + keep, now->len - keep, path, &added, &ignored) == 0;
                        long long last =
                            view.list.count > dropped ? view.list.items[view.list.count - 1].no : 0;
                        if (ok && added.count > 0 && added.items[0].no <= last)
                                ok = false; /* numbers must keep increasing */
                        if (ok) {
                                msglist_cap(&view.list, view.list.count - dropped);
                                for (size_t i = 0; ok && i < added.count; i++)
                                        ok = msglist_push(&view.list, &added.items[i]) == 0;
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

static int log_view(const struct board_config *cfg, const struct msglist **out, struct berr *err)
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
                        rc = berr_set(err, 500, "cannot read the message log: %s", strerror(errno));
                } else if (!(exists && view.valid && same_path && same_file(&st, &view.id) &&
                             cfg->write_method != WRITE_INPLACE)) {
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
                    struct berr *err)
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
                        rc = berr_set(err, 500, "out of memory");
                }
        }
        if (rc == 0) {
                sleep_ms(cfg->delay_ms);
                rc = board_lock_write_commit(&lk, err);
        }
        if (rc == 0)
                rc = store_log_write(p.log.data, &list, (size_t)cfg->max_messages, cfg->write_method,
                                     cfg->delay_ms, lock_still_ours, &lk, err);
        if (rc == 0) {
                struct berr rerr = BERR_INIT;
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

static int check_delete(const struct logrecord *m, const char *password, struct berr *err)
{
        if (!m)
                return berr_set(err, 404, "There is no such message");
        if (m->pwhash.len == 0)
                return berr_set(err, 403, "This message was posted without a password and cannot be deleted");
        if (!password_verify(password, m->pwhash.ptr))
                return berr_set(err, 403, "Wrong password");
        return 0;
}

static int log_delete(const struct board_config *cfg, long long no, const char *password, struct berr *err)
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
                rc = check_delete(idx >= 0 ? &list.items[idx] : NULL, password, err);
        }
        if (rc == 0) {
                msglist_remove(&list, (size_t)idx);
                sleep_ms(cfg->delay_ms);
                rc = board_lock_write_commit(&lk, err);
        }
        if (rc == 0)
                rc = store_log_write(p.log.data, &list, (size_t)cfg->max_messages, cfg->write_method,
                                     cfg->delay_ms, lock_still_ours, &lk, err);
        rc = finish(&lk, rc, err);
out_free:
        msglist_free(&list);
        free_paths(&p);
        return rc;
}

/* ---- SQLite ----------------------------------------------------------- */

static int sql_list(const struct board_config *cfg, struct msglist *out, struct berr *err)
{
        struct sqlite3 *db;
        if (store_sqlite_open(cfg, &db, err) < 0)
                return -1;
        int rc = store_sqlite_list(db, out, err);
        store_sqlite_close(db);
        return rc;
}

static int sql_post(const struct board_config *cfg, struct logrecord *msg, const char *addr, long long now,
                    struct berr *err)
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
                struct berr rerr = BERR_INIT;
                (void)ratelimit_record(p.rate.data, addr, now, cfg->min_post_interval, &rerr);
                rc = store_sqlite_commit(db, err);
        }
        if (rc != 0)
                store_sqlite_rollback(db);
        store_sqlite_close(db);
        free_paths(&p);
        return rc;
}

static int sql_delete(const struct board_config *cfg, long long no, const char *password, struct berr *err)
{
        struct sqlite3 *db;
        if (store_sqlite_open(cfg, &db, err) < 0)
                return -1;
        struct logrecord m;
        memset(&m, 0, sizeof m);
        int rc = store_sqlite_begin(db, err);
        if (rc == 0) {
                int found = store_sqlite_get(db, no, &m, err);
                rc = found < 0 ? -1 : check_delete(found == 0 ? &m : NULL, password, err);
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

int board_list(const struct board_config *cfg, struct msglist *out, struct berr *err)
{
        return cfg->store == STORE_SQLITE ? sql_list(cfg, out, err) : log_list(cfg, out, err);
}

int board_view(const struct board_config *cfg, const struct msglist **out, struct berr *err)
{
        if (cfg->store != STORE_SQLITE)
                return log_view(cfg, out, err);
        view_drop();
        *out = &view.list;
        return sql_list(cfg, &view.list, err);
}

int board_post(const struct board_config *cfg, struct logrecord *msg, const char *addr, long long now,
               struct berr *err)
{
        return cfg->store == STORE_SQLITE ? sql_post(cfg, msg, addr, now, err)
                                          : log_post(cfg, msg, addr, now, err);
}

int board_delete(const struct board_config *cfg, long long no, const char *password, struct berr *err)
{
        return cfg->store == STORE_SQLITE ? sql_delete(cfg, no, password, err)
                                          : log_delete(cfg, no, password, err);
}
