/* csrf.h - signed double-submit CSRF tokens.  Cookie `board_csrf` is one
 * the board issued: 128 random bits R and the first 128 bits of
 * HMAC-SHA256(secret, "board_csrf cookie:" R), both in hex, so a value
 * planted by anyone else (a sibling subdomain, plain HTTP) is refused and
 * replaced rather than given a working token.  The form carries hex
 * HMAC-SHA256(secret, cookie).  The secret is 32 random bytes in
 * data_dir/secret (mode 0600). */
#ifndef BOARD_CSRF_H
#define BOARD_CSRF_H

#include <stddef.h>

#include "board_error.h"

#define CSRF_COOKIE_NAME "board_csrf"
#define CSRF_SECRET_LEN  32
#define CSRF_COOKIE_LEN  64 /* hex characters: 32 random, 32 MAC */
#define CSRF_TOKEN_LEN   64 /* hex characters */

/* Load data_dir/secret, creating it (atomically, 0600) when absent. */
int csrf_load_secret(const char *data_dir, unsigned char secret[CSRF_SECRET_LEN], struct board_error *err);

/* A new cookie value: CSRF_COOKIE_LEN hex characters + NUL. */
int csrf_new_cookie(const unsigned char secret[CSRF_SECRET_LEN], char out[CSRF_COOKIE_LEN + 1],
                    struct board_error *err);

/* 1 when `value` is a cookie this board issued (its MAC checks out,
 * compared in constant time), else 0. */
int csrf_cookie_valid(const unsigned char secret[CSRF_SECRET_LEN], const char *value, size_t len);

/* The form token for a cookie value: CSRF_TOKEN_LEN hex characters + NUL. */
void csrf_token(const unsigned char secret[CSRF_SECRET_LEN], const char *cookie, size_t cookie_len,
                char out[CSRF_TOKEN_LEN + 1]);

/* 1 when the cookie is one the board issued and `token` is its token
 * (constant-time comparisons), else 0. */
int csrf_verify(const unsigned char secret[CSRF_SECRET_LEN], const char *cookie, size_t cookie_len,
                const char *token, size_t token_len);

#endif
