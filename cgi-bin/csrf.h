/* csrf.h - signed double-submit CSRF tokens: cookie `board_csrf` holds 128
 * random bits in hex, the form carries hex HMAC-SHA256(secret, cookie).
 * The secret is 32 random bytes in data_dir/secret (mode 0600). */
#ifndef BOARD_CSRF_H
#define BOARD_CSRF_H

#include <stddef.h>

#include "berr.h"

#define CSRF_COOKIE_NAME "board_csrf"
#define CSRF_SECRET_LEN  32
#define CSRF_COOKIE_LEN  32 /* hex characters */
#define CSRF_TOKEN_LEN   64 /* hex characters */

/* Load data_dir/secret, creating it (atomically, 0600) when absent. */
int csrf_load_secret(const char *data_dir, unsigned char secret[CSRF_SECRET_LEN], struct berr *err);

/* A new random cookie value: CSRF_COOKIE_LEN hex characters + NUL. */
int csrf_new_cookie(char out[CSRF_COOKIE_LEN + 1], struct berr *err);

/* 1 when `value` looks like a cookie we issue (32 lower-case hex). */
int csrf_cookie_valid(const char *value, size_t len);

/* The form token for a cookie value: CSRF_TOKEN_LEN hex characters + NUL. */
void csrf_token(const unsigned char secret[CSRF_SECRET_LEN], const char *cookie, size_t cookie_len,
                char out[CSRF_TOKEN_LEN + 1]);

/* 1 when the cookie is well-formed and `token` is its token (constant-time
 * comparison), else 0. */
int csrf_verify(const unsigned char secret[CSRF_SECRET_LEN], const char *cookie, size_t cookie_len,
                const char *token, size_t token_len);

#endif
