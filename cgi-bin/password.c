/* password.c - yescrypt password hashing through crypt(3) (see password.h). */
#include "password.h"
#include "test_hooks.h"

#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int password_hash(const char *password, char **out, struct board_error *err)
{
        *out = NULL;
        char *salt = crypt_gensalt_ra("$y$", 0, NULL, 0);
        if (!salt)
                return board_fail(err, 500, "cannot make a password salt: %s", strerror(errno));
        void *data = NULL;
        int size = 0;
        char *h = crypt_ra(password, salt, &data, &size);
        free(salt);
        if (!h || h[0] == '*') {
                free(data);
                return board_fail(err, 500, "cannot hash the password");
        }
        *out = strdup(h);
        OPENSSL_cleanse(data, (size_t)size);
        free(data);
        if (!*out)
                return board_fail(err, 500, "out of memory");
        return 0;
}

/* Test builds: one byte per password checked against a hash, appended to
 * the file the seam COUNT_HASHES names, whatever process checks it. */
static void count_hash(void)
{
        const char *path = dl_test_hook(COUNT_HASHES);
        int fd = path != NULL ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
        if (fd >= 0) {
                if (write(fd, "h", 1) != 1)
                        abort(); /* a count the test cannot trust */
                close(fd);
        }
}

int password_verify(const char *password, const char *hash)
{
        if (!hash || !hash[0] || hash[0] == '*')
                return 0;
        count_hash();
        void *data = NULL;
        int size = 0;
        char *h = crypt_ra(password, hash, &data, &size);
        int ok = 0;
        if (h && h[0] != '*') {
                size_t a = strlen(h), b = strlen(hash);
                ok = a == b && CRYPTO_memcmp(h, hash, a) == 0;
        }
        if (data) {
                OPENSSL_cleanse(data, (size_t)size);
                free(data);
        }
        return ok;
}
