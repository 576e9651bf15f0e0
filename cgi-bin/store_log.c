/* store_log.c - the flat-log store (see store_log.h): the list, page views
 * from this process's cache of the parsed log, posts one at a time or in
 * groups (group commit: the queue and its protocol are in postqueue.c,
 * the poster's side in groupcommit.c, storing a batch in the log is
 * here), and deletes; every read-modify-write inside
 * the window of the configured lock mode (locking.h), with the
 * demonstration delay between reading and writing. */
#include "store_log.h"
#include "test_hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "delay.h"
#include "fence.h"
#include "fileio.h"
#include "groupcommit.h"
#include "locking.h"
#include "logfile.h"
#include "postqueue.h"
#include "ratelimit.h"

/* The list page views read last, kept between requests with the text it
 * was parsed from, and the file it was read from kept open.  A flat log
 * that is still that file (same device and inode, size, mtime and ctime)
 * is not read again: every post renames a new file into place, and while
 * the old one is held open its inode number cannot be given to the new
 * one, so a rewrite is seen even when it keeps the size and falls within
 * one timestamp tick.  (An in-place write keeps the inode and can keep
 * size and times within a tick: in that mode the log is always read.)  A
 * changed log is read, from the descriptor whose fstat() becomes the
 * cache's identity, and when it is the old text minus some of its first
 * lines plus new lines at the end (what a post or the cap makes of it)
 * only the new lines are parsed.  What a view sees is exactly what
 * parsing the whole file would give: the file is chosen under the mode's
 * read lock, if it has one, and read either under it (in place) or from a
 * descriptor opened under it whose file no one writes again (rename; see
 * log_view()).
 * `generation` changes with every read (store.h). */
struct view_cache {
        struct msglist list;
        struct buf text;
        struct stat id;
        int fd;     /* the file `id` describes, or -1 (no log, or none read) */
        bool valid; /* list, text, id and fd are the log's (or: there is no log, fd -1) */
        unsigned long long generation;
};

/* This process's state for one board. */
struct log_store {
        const struct board_config *cfg;
        char *log;     /* data_dir/messages.log */
        char *rate;    /* data_dir/ratelimit */
        char *pending; /* data_dir/pending: the group-commit queue */
        struct view_cache view;
};

/* How many leading lines a changed log may have lost and still be
 * extended rather than parsed again. */
#define VIEW_MAX_DROPPED 8

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

/* Forget the list and the file it came from (the generation goes on). */
static void view_drop(struct view_cache *v)
{
        msglist_free(&v->list);
        buf_free(&v->text);
        if (v->fd >= 0)
                close(v->fd);
        v->fd = -1;
        v->valid = false;
}

static void log_close(void *state)
{
        struct log_store *s = state;
        if (s == NULL)
                return;
        view_drop(&s->view);
        free(s->log);
        free(s->rate);
        free(s->pending);
        free(s);
}

static int log_open(const struct board_config *cfg, void **state, struct board_error *err)
{
        struct log_store *s = calloc(1, sizeof *s);
        if (s == NULL)
                return board_fail(err, 500, "out of memory");
        s->cfg = cfg;
        s->log = path_in(cfg->data_dir, "messages.log");
        s->rate = path_in(cfg->data_dir, "ratelimit");
        s->pending = path_in(cfg->data_dir, "pending");
        s->view.fd = -1;
        if (!s->log || !s->rate || !s->pending) {
                log_close(s);
                return board_fail(err, 500, "out of memory");
        }
        *state = s;
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

/* What logfile_write()'s check needs. */
struct write_check {
        const struct log_store *s;
        struct board_lock *lk;
        struct fence_gate gate;
};

/* logfile_write()'s check right before the new log becomes visible: the
 * lock is still ours, and the fence gate (fence.h) admits the write; the
 * gate stays held until write_log() has renamed. */
static int check_before_rename(void *ctx, struct board_error *err)
{
        struct write_check *c = ctx;
        if (board_lock_make_exclusive(c->lk, err) < 0)
                return -1;
        const char *arm = dl_test_hook(STOP_AFTER_CHECK);
        if (arm != NULL && unlink(arm) == 0)
                raise(SIGSTOP);
        return fence_gate_enter(&c->gate, c->s->cfg->data_dir, c->s->log, c->lk->fence,
                                c->s->cfg->lock_timeout, err);
}

/* logfile_write()'s step right after the new log became visible: the
 * fence gate is left, and readers may come in again while the writer
 * syncs the directory and settles its bookkeeping, still holding off
 * other writers (board_lock_write_visible). */
static void after_rename(void *ctx)
{
        struct write_check *c = ctx;
        fence_gate_leave(&c->gate);
        board_lock_write_visible(c->lk);
}

/* Write `list` as the new log, recording the write's fence (or keeping
 * the one read with the list when the lock has none). */
static int write_log(const struct log_store *s, struct msglist *list, struct board_lock *lk,
                     struct board_error *err)
{
        const struct board_config *cfg = s->cfg;
        if (lk->fence > 0)
                list->fence = lk->fence;
        struct write_check c = {s, lk, FENCE_GATE_INIT};
        struct file_commit commit = {check_before_rename, after_rename, &c};
        int rc = logfile_write(s->log, list, (size_t)cfg->max_messages, cfg->write_method, cfg->delay_ms,
                               &commit, err);
        fence_gate_leave(&c.gate);
        return rc;
}

/* The read of a read-modify-write, under the write lock: the write's
 * fence announced first (step 0 in fence.h), then the log read. */
static int read_to_write(const struct log_store *s, const struct board_lock *lk, struct msglist *list,
                         struct board_error *err)
{
        if (fence_announce(s->cfg->data_dir, lk->fence, s->cfg->lock_timeout, err) < 0)
                return -1;
        return logfile_read(s->log, list, err);
}

/* ---- reading ----------------------------------------------------------- */

static int log_list(void *state, struct msglist *out, struct board_error *err)
{
        struct log_store *s = state;
        struct board_lock lk;
        int rc = board_lock_read(s->cfg, &lk, err);
        if (rc == 0) {
                rc = logfile_read(s->log, out, err);
                rc = board_lock_finish(&lk, rc, err);
        }
        return rc;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Bring the cached list from v->text to `now` by dropping leading records
 * and parsing only what was appended.  false when `now` is not such a
 * successor (the caller parses it whole). */
static bool view_extend(struct view_cache *v, const struct buf *now, const char *path)
{
        const char *old = v->text.data ? v->text.data : "";
        /* The fence line at the top changes with every write (fence.h): it
         * is no message, compare what follows it. */
        unsigned long long fence;
        size_t off = logfile_fence_line(old, v->text.len, &fence);
        long long last_held = v->list.count ? v->list.items[v->list.count - 1].no : 0;
        if (msglist_max_no(&v->list) > last_held)
                return false; /* the old text ends in the high-water mark: nothing may follow it */
        /* An empty buffer may have no storage at all: never hand its NULL
         * to memcmp or pointer arithmetic, even for zero bytes. */
        size_t skip = logfile_fence_line(now->data ? now->data : "", now->len, &fence);
        const char *text = now->data ? now->data + skip : "";
        size_t now_len = now->len - skip;
        for (size_t dropped = 0; dropped <= VIEW_MAX_DROPPED && dropped <= v->list.count; dropped++) {
                size_t keep = v->text.len - off;
                if (keep <= now_len && (keep == 0 || memcmp(text, old + off, keep) == 0)) {
                        struct msglist added = MSGLIST_INIT;
                        struct board_error ignored = BOARD_ERROR_INIT;
                        bool ok = logfile_parse(text + keep, now_len - keep, path, &added, &ignored) == 0;
                        long long last = v->list.count > dropped ? v->list.items[v->list.count - 1].no : 0;
                        if (ok && added.count > 0 && added.items[0].no <= last)
                                ok = false; /* numbers must keep increasing */
                        if (ok) {
                                msglist_cap(&v->list, v->list.count - dropped);
                                for (size_t i = 0; ok && i < added.count; i++)
                                        ok = msglist_push(&v->list, &added.items[i]) == 0;
                                msglist_note_no(&v->list, msglist_max_no(&added));
                        }
                        msglist_free(&added);
                        return ok;
                }
                const char *nl = memchr(old + off, '\n', v->text.len - off);
                if (nl == NULL)
                        return false;
                off = (size_t)(nl - old) + 1;
        }
        return false;
}

/* Under the read lock: is the cache still the log on disk?  0 with *fd
 * -1 when it is (or there is no log: the cache is emptied here); 0 with
 * *fd open on the log and *st its fstat() when it must be read
 * (view_load() takes both); -1 on an error. */
static int view_check(struct log_store *s, int *fd, struct stat *st, struct board_error *err)
{
        struct view_cache *v = &s->view;
        bool inplace = s->cfg->write_method == BOARD_WRITE_INPLACE;
        *fd = -1;
        bool exists = stat(s->log, st) == 0;
        if (!exists && errno == ESTALE) { /* replaced by another client: ask again (fileio.c) */
                file_refresh(s->log, 0);
                exists = stat(s->log, st) == 0;
        }
        if (!exists && errno != ENOENT)
                return board_fail_storage(err, errno, "cannot read the message log");
        if (v->valid && !inplace && (exists ? v->fd >= 0 && same_file(st, &v->id) : v->fd < 0))
                return 0; /* the file held open, unchanged; or still no log */
        v->generation++;
        int opened = exists ? file_open_read(s->log) : -1;
        if (opened < 0 && exists && errno != ENOENT)
                return board_fail_storage(err, errno, "cannot read the message log");
        if (opened < 0) { /* no log (yet, or removed since the stat): no messages */
                view_drop(v);
                v->valid = true;
                return 0;
        }
        if (fstat(opened, st) < 0) {
                int e = errno;
                close(opened);
                view_drop(v);
                return board_fail_storage(err, e, "cannot read the message log");
        }
        *fd = opened;
        return 0;
}

/* Read the log view_check() opened (`fd`, whose fstat() is `st`) into the
 * cache; takes `fd` (kept as the cache's file, or closed). */
static int view_load(struct log_store *s, int fd, const struct stat *st, struct board_error *err)
{
        struct view_cache *v = &s->view;
        const char *arm = dl_test_hook(STOP_BEFORE_VIEW_READ);
        if (arm != NULL && unlink(arm) == 0)
                raise(SIGSTOP);
        struct buf now = BUF_INIT;
        int rc = file_read_fd(fd, s->log, &now, err);
        int read_errno = errno; /* ESTALE: replaced as we read it (log_view) */
        if (rc == 0 && !(v->valid && v->fd >= 0 && view_extend(v, &now, s->log))) {
                view_drop(v);
                rc = logfile_parse(now.data ? now.data : "", now.len, s->log, &v->list, err);
        }
        if (rc == 0) {
                buf_free(&v->text);
                v->text = now;
                now = (struct buf)BUF_INIT;
                if (v->fd >= 0)
                        close(v->fd);
                v->fd = fd;
                v->id = *st;
                v->valid = true;
        } else {
                close(fd);
                view_drop(v);
        }
        buf_free(&now);
        errno = read_errno;
        return rc;
}

/* A page view's list.  The read lock covers the choice of the file: its
 * stat() and, when it changed, its open().  A log written in place is read
 * under the lock too, since the next writer rewrites that very file.  A
 * log written by rename is read after the lock is released: the file
 * renamed into place was written and synced before the rename and is
 * never written again (fileio.c), so its descriptor reads what was there
 * at open(), and a writer waiting to rename (an rw upgrade draining the
 * readers) waits only for the stat() and open(), not for the read and
 * the parse. */
static int view_once(struct log_store *s, struct board_error *err)
{
        struct board_lock lk;
        int fd = -1;
        struct stat st;
        int rc = board_lock_read(s->cfg, &lk, err);
        if (rc == 0) {
                rc = view_check(s, &fd, &st, err);
                if (rc == 0 && fd >= 0 && s->cfg->write_method == BOARD_WRITE_INPLACE) {
                        rc = view_load(s, fd, &st, err);
                        fd = -1;
                }
                rc = board_lock_finish(&lk, rc, err);
        }
        if (fd >= 0) {
                if (rc == 0)
                        rc = view_load(s, fd, &st, err);
                else {
                        close(fd);
                        view_drop(&s->view);
                }
        }
        return rc;
}

/* A log replaced as the view read it (another host posted, on a network
 * filesystem: replaced_under_read, fileio.c) is chosen and read again. */
static int log_view(void *state, const struct msglist **out, unsigned long long *generation,
                    struct board_error *err)
{
        struct log_store *s = state;
        int rc;
        for (int try = 0; (rc = view_once(s, err)) < 0 && replaced_under_read(errno) && try < 4; try++)
                file_refresh(s->log, try);
        *out = &s->view.list;
        if (generation)
                *generation = s->view.generation;
        return rc;
}

static int log_get(void *state, long long no, struct logrecord *out, struct board_error *err)
{
        const struct msglist *list;
        if (log_view(state, &list, NULL, err) < 0)
                return -1;
        long idx = msglist_find(list, no);
        if (idx < 0)
                return 1;
        return copy_message(out, &list->items[idx]) < 0 ? board_fail(err, 500, "out of memory") : 0;
}

/* ---- posting, one at a time --------------------------------------------- */

static int post_alone(struct log_store *s, struct logrecord *msg, const struct store_write *w,
                      struct board_error *err)
{
        const struct board_config *cfg = s->cfg;
        struct msglist list = MSGLIST_INIT;
        struct board_lock lk;
        int rc = board_lock_write_begin(cfg, &lk, err);
        if (rc < 0)
                return -1;
        rc = ratelimit_admit(s->rate, w->addr, w->now, cfg->min_post_interval, err);
        if (rc == 0)
                rc = read_to_write(s, &lk, &list, err);
        if (rc == 0) {
                struct logrecord copy;
                msg->no = msglist_max_no(&list) + 1;
                msg->time = w->now;
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
                rc = write_log(s, &list, &lk, err);
        if (rc == 0) {
                struct board_error rerr = BOARD_ERROR_INIT;
                /* The message is stored; a failure to note the time only
                 * weakens the rate limit. */
                (void)ratelimit_record(s->rate, w->addr, w->now, cfg->min_post_interval, &rerr);
        }
        rc = board_lock_finish(&lk, rc, err);
        msglist_free(&list);
        return rc;
}

/* ---- posting in groups (group commit, postqueue.h) ----------------------- */

static bool uses_queue(const struct board_config *cfg)
{
        return cfg->group_commit && board_lock_mode_row(cfg->lock_mode)->group_commit;
}

static bool log_has_id(const struct msglist *l, const char *id)
{
        for (size_t i = l->count; i-- > 0;)
                if (strcmp(l->items[i].id, id) == 0)
                        return true;
        return false;
}

/* Under the write lock: steps 4 and 5 of the protocol in postqueue.c
 * (group_commit.commit_batch).  *own_claimed is set when post `own` was
 * in the batch (committed now, or found already in the log); *claimed is
 * the size of the batch. */
static int commit_batch(void *state, struct board_lock *lk, size_t max, const char *own, bool *own_claimed,
                        size_t *claimed, struct board_error *err)
{
        struct log_store *s = state;
        const struct board_config *cfg = s->cfg;
        struct msglist list = MSGLIST_INIT;
        struct pq_batch batch = PQ_BATCH_INIT;
        int rc = read_to_write(s, lk, &list, err);
        if (rc == 0)
                rc = pq_claim(s->pending, max, &batch, err);
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
                        rc = write_log(s, &list, lk, err);
        }
        if (rc == 0)
                pq_settle(s->pending, &batch);
        else
                pq_give_back(s->pending, &batch, own);
        pq_batch_free(&batch);
        msglist_free(&list);
        return rc;
}

/* A post with group commit: the queue's protocol (groupcommit.h), the
 * batch stored by commit_batch() under the mode's write lock. */
static int post_queued(struct log_store *s, struct logrecord *msg, const struct store_write *w,
                       struct board_error *err)
{
        struct group_commit g = {s->cfg,          s->pending,   s->rate, board_lock_write_wait,
                                 board_lock_rate, commit_batch, s};
        return group_commit_post(&g, msg, w, err);
}

static int log_post(void *state, struct logrecord *msg, const struct store_write *w, struct board_error *err)
{
        struct log_store *s = state;
        return uses_queue(s->cfg) ? post_queued(s, msg, w, err) : post_alone(s, msg, w, err);
}

/* ---- deleting ----------------------------------------------------------- */

static int log_delete(void *state, long long no, const char *verified_hash, const struct store_write *w,
                      struct board_error *err)
{
        (void)w;
        struct log_store *s = state;
        const struct board_config *cfg = s->cfg;
        struct msglist list = MSGLIST_INIT;
        struct board_lock lk;
        int rc = board_lock_write_begin(cfg, &lk, err);
        if (rc < 0)
                return -1;
        rc = read_to_write(s, &lk, &list, err);
        long idx = -1;
        if (rc == 0) {
                idx = msglist_find(&list, no);
                rc = store_recheck_delete(idx >= 0 ? &list.items[idx] : NULL, verified_hash, err);
        }
        if (rc == 0) {
                msglist_remove(&list, (size_t)idx);
                sleep_ms(cfg->delay_ms);
                rc = board_lock_write_commit(&lk, err);
        }
        if (rc == 0)
                rc = write_log(s, &list, &lk, err);
        rc = board_lock_finish(&lk, rc, err);
        msglist_free(&list);
        return rc;
}

const struct store_ops store_log_ops = {
    .name = "log",
    .open = log_open,
    .close = log_close,
    .list = log_list,
    .view = log_view,
    .get = log_get,
    .post = log_post,
    .delete = log_delete,
};
