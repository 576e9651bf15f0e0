/* board.c - a board's operations through its store, and the delete
 * protocol around the store (see board.h). */
#include "board.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "deletelimit.h"
#include "locking.h"
#include "password.h"
#include "test_hooks.h"

void board_init(struct board *b, const struct board_config *cfg)
{
        b->cfg = cfg;
        b->store = store_for(cfg);
        b->state = NULL;
}

void board_close(struct board *b)
{
        if (b->state != NULL)
                b->store->close(b->state);
        b->state = NULL;
}

int board_check_store(const struct board *b, struct board_error *err)
{
        if (b->store == NULL)
                return board_fail(err, 500,
                                  "the configuration names store %d, which this board does not have",
                                  (int)b->cfg->store);
        return 0;
}

/* The store's state for this process, made on first use. */
static int opened(struct board *b, struct board_error *err)
{
        if (b->state != NULL)
                return 0;
        if (board_check_store(b, err) < 0)
                return -1;
        return b->store->open(b->cfg, &b->state, err);
}

int board_list(struct board *b, struct msglist *out, struct board_error *err)
{
        if (opened(b, err) < 0)
                return -1;
        return b->store->list(b->state, out, err);
}

int board_view(struct board *b, const struct msglist **out, unsigned long long *generation,
               struct board_error *err)
{
        if (opened(b, err) < 0)
                return -1;
        return b->store->view(b->state, out, generation, err);
}

/* Through the posts' gate (board_post_gate: at most max_waiting_posts at
 * once, the others refused at once), then the store. */
int board_post(struct board *b, struct logrecord *msg, const char *addr, long long now,
               struct board_error *err)
{
        if (opened(b, err) < 0)
                return -1;
        struct board_lock gate;
        if (board_post_gate(b->cfg, &gate, err) < 0)
                return -1;
        struct store_write w = {addr, now};
        int rc = b->store->post(b->state, msg, &w, err);
        /* The post's answer is the store's: a permit broken meanwhile (the
         * post outlived the stale age) changes nothing that was stored. */
        struct board_error ignored = BOARD_ERROR_INIT;
        (void)board_lock_release(&gate, &ignored);
        return rc;
}

/* The delete-password hash of message `no` (a new string), read without
 * the write lock: 0, or 404 / 403 (posted without a password) / 5xx. */
static int read_hash(struct board *b, long long no, char **hash, struct board_error *err)
{
        *hash = NULL;
        struct logrecord m;
        memset(&m, 0, sizeof m);
        int found = b->store->get(b->state, no, &m, err);
        int rc = 0;
        if (found < 0)
                rc = -1;
        else if (found == 1)
                rc = board_fail(err, 404, "There is no such message");
        else if (m.pwhash.len == 0)
                rc = board_fail(err, 403, "This message was posted without a password and cannot be deleted");
        else if (!(*hash = strdup(m.pwhash.ptr)))
                rc = board_fail(err, 500, "out of memory");
        logrecord_free(&m);
        return rc;
}

/* An attempt counted before its password is hashed, under the board's
 * "deletelimit" lock (taken in every lock mode: the limit is no part of
 * the lost-update demonstration): 0 counted (or no limit), -1 refused
 * (429) or failed -- nothing is hashed then.  A test build's twin counts
 * without the lock (the seam DELETE_LIMIT_UNLOCKED, lib/test_hooks.h). */
static int reserve_attempt(const struct board_config *cfg, const char *path, const char *addr, long long no,
                           long long now, struct board_error *err)
{
        if (cfg->delete_max_failures <= 0 || cfg->delete_failure_window <= 0)
                return 0;
        long wait = 0;
        if (dl_test_hook(DELETE_LIMIT_UNLOCKED) != NULL) /* test builds: the twin */
                return deletelimit_reserve(path, addr, no, now, cfg->delete_max_failures,
                                           cfg->delete_failure_window, &wait, err) == 0
                           ? 0
                           : -1;
        /* At the limit already (most guesses of a flood): refused without the lock. */
        if (deletelimit_check(path, addr, no, now, cfg->delete_max_failures, cfg->delete_failure_window,
                              &wait, err) != 0)
                return -1;
        struct board_lock lk;
        if (board_lock_always(cfg, BOARD_DELETE_LOCK_NAME, &lk, err) < 0)
                return -1;
        int rc = deletelimit_reserve(path, addr, no, now, cfg->delete_max_failures,
                                     cfg->delete_failure_window, &wait, err);
        return board_lock_finish(&lk, rc == 0 ? 0 : -1, err);
}

/* The attempt taken back: its password was right, or none was hashed. */
static void take_back_attempt(const struct board_config *cfg, const char *path, const char *addr,
                              long long no, long long now)
{
        if (cfg->delete_max_failures <= 0 || cfg->delete_failure_window <= 0)
                return;
        struct board_lock lk;
        struct board_error ignored = BOARD_ERROR_INIT; /* failing to take back only tightens the limit */
        if (board_lock_always(cfg, BOARD_DELETE_LOCK_NAME, &lk, &ignored) < 0)
                return;
        (void)deletelimit_take_back(path, addr, no, now, cfg->delete_failure_window, &ignored);
        (void)board_lock_finish(&lk, 0, &ignored);
}

/* The attempt counted (deletelimit.h: at most delete_max_failures per
 * address and per message hash in a window, however many come at once),
 * then the password against the hash read without the lock (yescrypt is
 * the slow part: no lock is held while it runs, so guesses never hold up
 * posts), then the store's delete under its write lock if the message
 * still has that hash.  A right password, or none hashed (no such
 * message, none set), is taken back from the count. */
int board_delete(struct board *b, long long no, const char *password, const char *addr, long long now,
                 struct board_error *err)
{
        const struct board_config *cfg = b->cfg;
        if (opened(b, err) < 0)
                return -1;
        struct buf failures = BUF_INIT;
        buf_printf(&failures, "%s/delete-failures", cfg->data_dir);
        if (failures.oom) {
                buf_free(&failures);
                return board_fail(err, 500, "out of memory");
        }
        char *hash = NULL;
        int rc = reserve_attempt(cfg, failures.data, addr, no, now, err);
        if (rc == 0) {
                rc = read_hash(b, no, &hash, err);
                if (rc == 0 && !password_verify(password, hash))
                        rc = board_fail(err, 403, "Wrong password");
                else
                        take_back_attempt(cfg, failures.data, addr, no, now);
        }
        if (rc == 0) {
                struct store_write w = {addr, now};
                rc = b->store->delete (b->state, no, hash, &w, err);
        }
        free(hash);
        buf_free(&failures);
        return rc == 0 ? 0 : -1;
}
