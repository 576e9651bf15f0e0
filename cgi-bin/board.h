/* board.h - what requests do to a board: list, view, post and delete
 * through its store (store.h), which the configuration picks and this
 * process opens on first use; and the delete protocol around the store
 * (the password checked before the store's write lock, wrong ones
 * limited, deletelimit.h). */
#ifndef BOARD_BOARD_H
#define BOARD_BOARD_H

#include "board_error.h"
#include "config.h"
#include "msglist.h"
#include "store.h"

/* One board in this process. */
struct board {
        const struct board_config *cfg;
        const struct store_ops *store; /* picked by cfg->store; NULL: none, every operation a 500 */
        void *state;                   /* the store's, made on first use; NULL before */
};

/* Set up *b for `cfg` (which must outlive it); nothing is opened yet. */
void board_init(struct board *b, const struct board_config *cfg);
/* 0 when the board has the store its configuration names, else -1 with
 * a 500 error naming the value (every operation fails with it then). */
int board_check_store(const struct board *b, struct board_error *err);
/* Free what the store keeps for this process. */
void board_close(struct board *b);

/* All messages, oldest first. */
int board_list(struct board *b, struct msglist *out, struct board_error *err);

/* The same for page views, borrowed: *out stays valid until the next
 * board_view() of this board and must not be freed.  The flat log is
 * parsed again only when the file changed since the last view in this
 * process.  *generation (may be NULL) is the same number as an earlier
 * view's only when the list is the same, unchanged (store.h). */
int board_view(struct board *b, const struct msglist **out, unsigned long long *generation,
               struct board_error *err);

/* Store a new message (name, subject, body, pwhash of *msg are copied;
 * msg->no and msg->time are set).  `addr` is the poster's address for the
 * rate limit.  Errors: 429 (err->retry_after), 503, 500. */
int board_post(struct board *b, struct logrecord *msg, const char *addr, long long now,
               struct board_error *err);

/* Delete message `no` when `password` matches.  The attempt is counted
 * per address (`addr`) and per message before the password is hashed,
 * and taken back unless the password was wrong; past the configured
 * limit a delete is refused before any hashing (deletelimit.h).  The
 * password is checked before the store's lock is taken.  Errors: 404 no
 * such message, 403 wrong password or none set, 429
 * (err->retry_after), 503, 500. */
int board_delete(struct board *b, long long no, const char *password, const char *addr, long long now,
                 struct board_error *err);

#endif
