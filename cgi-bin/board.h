/* board.h - the board's operations on its store, each wrapped in the lock
 * protocol of the configured mode (see locking.h). */
#ifndef BOARD_BOARD_H
#define BOARD_BOARD_H

#include "board_error.h"
#include "config.h"
#include "msglist.h"

/* All messages, oldest first. */
int board_list(const struct board_config *cfg, struct msglist *out, struct board_error *err);

/* The same for page views, borrowed: *out stays valid until the next
 * board_view() and must not be freed.  The flat log is parsed again only
 * when the file changed since the last view in this process. */
int board_view(const struct board_config *cfg, const struct msglist **out, struct board_error *err);

/* Store a new message (name, subject, body, pwhash of *msg are copied;
 * msg->no and msg->time are set).  `addr` is the poster's address for the
 * rate limit.  Errors: 429 (err->retry_after), 503, 500. */
int board_post(const struct board_config *cfg, struct logrecord *msg, const char *addr, long long now,
               struct board_error *err);

/* Delete message `no` when `password` matches.  The password is checked
 * before the lock is taken; wrong ones are counted per address (`addr`)
 * and per message, and past the configured limit a delete is refused
 * before any hashing (deletelimit.h).  Errors: 404 no such message, 403
 * wrong password or none set, 429 (err->retry_after), 503, 500. */
int board_delete(const struct board_config *cfg, long long no, const char *password, const char *addr,
                 long long now, struct board_error *err);

#endif
