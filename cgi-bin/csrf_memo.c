/* csrf_memo.c - remembered CSRF cookies and their tokens (see csrf_memo.h). */
#include "csrf_memo.h"

#include <openssl/crypto.h>
#include <string.h>

/* The slot of a cookie: from the first hex digits of its random half. */
static size_t slot_of(const char *cookie)
{
        size_t v = 0;
        for (int i = 0; i < 4; i++) {
                char c = cookie[i];
                v = v * 16 + (size_t)(c >= 'a' ? c - 'a' + 10 : c - '0');
        }
        return v % CSRF_MEMO_SLOTS;
}

int csrf_memo_token(struct csrf_memo *m, const unsigned char secret[CSRF_SECRET_LEN], const char *cookie,
                    size_t len, char token[CSRF_TOKEN_LEN + 1], bool *computed)
{
        if (computed)
                *computed = false;
        if (len != CSRF_COOKIE_LEN)
                return 0;
        for (size_t i = 0; i < len; i++) { /* what csrf_cookie_valid accepts, before slot_of reads it */
                char c = cookie[i];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                        return 0;
        }
        size_t k = slot_of(cookie);
        if (m->slot[k].used && CRYPTO_memcmp(m->slot[k].cookie, cookie, CSRF_COOKIE_LEN) == 0) {
                memcpy(token, m->slot[k].token, CSRF_TOKEN_LEN + 1);
                return 1;
        }
        if (computed)
                *computed = true;
        if (!csrf_cookie_valid(secret, cookie, len))
                return 0;
        csrf_token(secret, cookie, len, token);
        memcpy(m->slot[k].cookie, cookie, CSRF_COOKIE_LEN);
        memcpy(m->slot[k].token, token, CSRF_TOKEN_LEN + 1);
        m->slot[k].used = true;
        return 1;
}
