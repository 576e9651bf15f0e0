/* csrf_memo.h - a process's memory of the CSRF cookies it has checked
 * (csrf.h), so that a returning visitor's page view costs no HMAC: for
 * each cookie found valid, its form token.
 *
 * Only cookies whose MAC checked out are remembered, with the token
 * computed for them, so an answer from the memory is the answer the two
 * HMACs would give (the secret never changes while the process runs).
 * A fixed number of slots, picked by the cookie's random half (which the
 * client sent and so reveals nothing); a new cookie takes its slot from
 * whoever held it.  The stored cookie is compared with the one sent in
 * constant time. */
#ifndef BOARD_CSRF_MEMO_H
#define BOARD_CSRF_MEMO_H

#include <stdbool.h>
#include <stddef.h>

#include "csrf.h"

#define CSRF_MEMO_SLOTS 64

struct csrf_memo {
        struct {
                bool used;
                char cookie[CSRF_COOKIE_LEN];
                char token[CSRF_TOKEN_LEN + 1];
        } slot[CSRF_MEMO_SLOTS];
};

/* 1 when `cookie` (len bytes) is one the board issued, with its form
 * token in `token`; 0 when it is not (token untouched).  Remembers a
 * valid cookie it had not seen.  *computed (may be NULL) says whether the
 * HMACs ran. */
int csrf_memo_token(struct csrf_memo *m, const unsigned char secret[CSRF_SECRET_LEN], const char *cookie,
                    size_t len, char token[CSRF_TOKEN_LEN + 1], bool *computed);

#endif
