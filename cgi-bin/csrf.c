/* csrf.c - CSRF secret, cookies and tokens (see csrf.h). */
#include "csrf.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fileio.h"
#include "hex.h"
#include "random.h"
#include "tempname.h"

static int read_secret(const char *path, unsigned char secret[CSRF_SECRET_LEN], struct board_error *err)
{
        struct buf b = BUF_INIT;
        int rc = file_read_all(path, &b, err);
        if (rc == 0 && b.len != CSRF_SECRET_LEN)
                rc = board_fail(err, 500, "secret file '%s' has %zu bytes, expected %d", path, b.len,
                                CSRF_SECRET_LEN);
        if (rc == 0)
                memcpy(secret, b.data, CSRF_SECRET_LEN);
        if (b.data)
                OPENSSL_cleanse(b.data, b.len);
        buf_free(&b);
        return rc;
}

int csrf_load_secret(const char *data_dir, unsigned char secret[CSRF_SECRET_LEN], struct board_error *err)
{
        struct buf path = BUF_INIT;
        buf_printf(&path, "%s/secret", data_dir);
        if (path.oom)
                return board_fail(err, 500, "out of memory");
        int rc = read_secret(path.data, secret, err);
        if (rc == 1) {
                /* Absent: write a fresh one next to it and link() it into
                 * place, so concurrent first starts agree on one secret. */
                unsigned char fresh[CSRF_SECRET_LEN];
                struct buf tmp = BUF_INIT;
                rc = random_bytes(fresh, sizeof fresh, err);
                if (rc == 0)
                        rc = temp_name_make(path.data, NULL, &tmp, err);
                if (rc == 0) {
                        int fd = open(tmp.data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                        if (fd < 0) {
                                int e = errno;
                                rc = board_fail(err, 500, "cannot create secret file '%s': %s%s", tmp.data,
                                                strerror(e), storage_hint(e));
                        } else {
                                int e = 0;
                                if (write_all(fd, fresh, sizeof fresh) < 0 || fsync(fd) < 0) {
                                        e = errno;
                                        rc = board_fail(err, 500, "cannot write secret file '%s': %s%s",
                                                        tmp.data, strerror(e), storage_hint(e));
                                }
                                close(fd);
                                if (rc == 0 && link(tmp.data, path.data) < 0 && errno != EEXIST) {
                                        e = errno;
                                        rc = board_fail(err, 500, "cannot create secret file '%s': %s%s",
                                                        path.data, strerror(e), storage_hint(e));
                                }
                                unlink(tmp.data);
                        }
                }
                OPENSSL_cleanse(fresh, sizeof fresh);
                buf_free(&tmp);
                if (rc == 0) {
                        rc = read_secret(path.data, secret, err);
                        if (rc == 1)
                                rc = board_fail(err, 500, "secret file '%s' vanished", path.data);
                }
        }
        buf_free(&path);
        return rc;
}

#define COOKIE_RANDOM_HEX (CSRF_COOKIE_LEN / 2)
#define COOKIE_MAC_TAG    "board_csrf cookie:"

/* The MAC half of a cookie for its random half (hex, COOKIE_RANDOM_HEX
 * characters), into out (CSRF_COOKIE_LEN / 2 hex + NUL); -1 when libcrypto
 * fails. */
static int cookie_mac(const unsigned char secret[CSRF_SECRET_LEN], const char *random_hex,
                      char out[CSRF_COOKIE_LEN / 2 + 1])
{
        unsigned char msg[sizeof COOKIE_MAC_TAG - 1 + COOKIE_RANDOM_HEX];
        memcpy(msg, COOKIE_MAC_TAG, sizeof COOKIE_MAC_TAG - 1);
        memcpy(msg + sizeof COOKIE_MAC_TAG - 1, random_hex, COOKIE_RANDOM_HEX);
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned int mac_len = 0;
        if (!HMAC(EVP_sha256(), secret, CSRF_SECRET_LEN, msg, sizeof msg, mac, &mac_len) ||
            mac_len < CSRF_COOKIE_LEN / 4)
                return -1;
        hex_encode(mac, CSRF_COOKIE_LEN / 4, out);
        return 0;
}

int csrf_new_cookie(const unsigned char secret[CSRF_SECRET_LEN], char out[CSRF_COOKIE_LEN + 1],
                    struct board_error *err)
{
        unsigned char r[COOKIE_RANDOM_HEX / 2];
        if (random_bytes(r, sizeof r, err) < 0)
                return -1;
        hex_encode(r, sizeof r, out);
        if (cookie_mac(secret, out, out + COOKIE_RANDOM_HEX) < 0)
                return board_fail(err, 500, "cannot compute the cookie's HMAC (libcrypto failed)");
        return 0;
}

int csrf_cookie_valid(const unsigned char secret[CSRF_SECRET_LEN], const char *value, size_t len)
{
        if (len != CSRF_COOKIE_LEN)
                return 0;
        for (size_t i = 0; i < len; i++) {
                char c = value[i];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                        return 0;
        }
        char want[CSRF_COOKIE_LEN / 2 + 1];
        if (cookie_mac(secret, value, want) < 0)
                return 0;
        return CRYPTO_memcmp(want, value + COOKIE_RANDOM_HEX, CSRF_COOKIE_LEN / 2) == 0;
}

void csrf_token(const unsigned char secret[CSRF_SECRET_LEN], const char *cookie, size_t cookie_len,
                char out[CSRF_TOKEN_LEN + 1])
{
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned int mac_len = 0;
        if (!HMAC(EVP_sha256(), secret, CSRF_SECRET_LEN, (const unsigned char *)cookie, cookie_len, mac,
                  &mac_len) ||
            mac_len != CSRF_TOKEN_LEN / 2) {
                /* Cannot happen with a working libcrypto; never matches. */
                memset(out, 'x', CSRF_TOKEN_LEN);
                out[CSRF_TOKEN_LEN] = '\0';
                return;
        }
        hex_encode(mac, mac_len, out);
}

int csrf_verify(const unsigned char secret[CSRF_SECRET_LEN], const char *cookie, size_t cookie_len,
                const char *token, size_t token_len)
{
        if (!cookie || !token || !csrf_cookie_valid(secret, cookie, cookie_len) ||
            token_len != CSRF_TOKEN_LEN)
                return 0;
        char want[CSRF_TOKEN_LEN + 1];
        csrf_token(secret, cookie, cookie_len, want);
        return CRYPTO_memcmp(want, token, CSRF_TOKEN_LEN) == 0;
}
