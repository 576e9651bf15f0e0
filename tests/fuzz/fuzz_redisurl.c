/* fuzz_redisurl.c - the Redis lock-space address parser (lib/redis/redis_url.c).
 * Properties:
 *   1. any input: dl_redis_url_parse either refuses it, with a message,
 *      or gives an address u whose fields are in range (port 1..65535, db
 *      0..999999, a prefix of 1..64 allowed characters, a host or an
 *      absolute socket path), whose canonical form fits DL_REDIS_URL_MAX,
 *      parses back to u and prints the same again;
 *   2. the form with the password hidden is the canonical form of u with
 *      the password replaced by *** (so it never holds the password), and
 *      parses to u without it;
 *   3. an address built from the input bytes (TCP, TLS or socket, any
 *      credentials, any db, port and prefix within range, any file names
 *      in the parameters that name files, a variable's name, as the
 *      grammar allows them together) survives format -> parse unchanged;
 *   4. a parsed address keeps the grammar's rules of what goes together:
 *      at most one source of the password, a user only with one, files of
 *      TLS only on rediss://, cert and key both or neither. */
#include "fuzz.h"

#include "redis_url.h"

static void check_canonical(const dl_redis_url *u)
{
        FUZZ_CHECK(u->db >= 0 && u->db <= DL_REDIS_DB_MAX);
        size_t pl = strlen(u->prefix);
        FUZZ_CHECK(pl >= 1 && pl <= DL_REDIS_PREFIX_MAX);
        FUZZ_CHECK(strspn(u->prefix, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:") ==
                   pl);
        if (u->unix_socket)
                FUZZ_CHECK(u->path[0] == '/' && strlen(u->path) >= 2);
        else
                FUZZ_CHECK(u->host[0] != '\0' && u->port >= 1 && u->port <= 65535);
        /* 4 */
        int sources = u->has_password + (u->password_file[0] != 0) + (u->password_env[0] != 0);
        FUZZ_CHECK(sources <= 1 && (!u->has_user || sources == 1));
        FUZZ_CHECK(u->tls || (u->cacert[0] == 0 && u->cert[0] == 0 && u->key[0] == 0));
        FUZZ_CHECK(!u->tls || !u->unix_socket);
        FUZZ_CHECK((u->cert[0] == 0) == (u->key[0] == 0));
        FUZZ_CHECK(dl_redis_url_logs_in(u) == (sources == 1));
        char text[DL_REDIS_URL_MAX], again[DL_REDIS_URL_MAX];
        int n = dl_redis_url_format(u, false, text, sizeof text);
        FUZZ_CHECK(n > 0 && (size_t)n < sizeof text);
        dl_redis_url back;
        char why[200];
        FUZZ_CHECK(dl_redis_url_parse(text, (size_t)n, &back, why, sizeof why) == 0);
        FUZZ_CHECK(memcmp(u, &back, sizeof back) == 0);
        FUZZ_CHECK(dl_redis_url_format(&back, false, again, sizeof again) == n &&
                   memcmp(text, again, (size_t)n) == 0);
        /* 2: hidden */
        char shown[DL_REDIS_URL_MAX];
        FUZZ_CHECK(dl_redis_url_format(u, true, shown, sizeof shown) > 0);
        dl_redis_url masked = *u;
        if (u->has_password)
                strcpy(masked.password, "***");
        FUZZ_CHECK(dl_redis_url_format(&masked, false, again, sizeof again) > 0 && strcmp(again, shown) == 0);
        dl_redis_url hidden;
        FUZZ_CHECK(dl_redis_url_parse(shown, strlen(shown), &hidden, why, sizeof why) == 0);
        FUZZ_CHECK(hidden.unix_socket == u->unix_socket && hidden.db == u->db && hidden.port == u->port &&
                   strcmp(hidden.prefix, u->prefix) == 0 && hidden.tls == u->tls &&
                   strcmp(hidden.password_file, u->password_file) == 0 &&
                   strcmp(hidden.password_env, u->password_env) == 0 &&
                   strcmp(hidden.cacert, u->cacert) == 0 && strcmp(hidden.cert, u->cert) == 0 &&
                   strcmp(hidden.key, u->key) == 0);
        FUZZ_CHECK(!u->has_password || strstr(shown, ":***@") != NULL);
}

/* A file name of 1..DL_REDIS_FILE_MAX bytes from the input: any byte but
 * NUL. */
static void fuzz_file(struct fuzz_in *in, char *out)
{
        const uint8_t *b;
        size_t n = fuzz_bytes(in, DL_REDIS_FILE_MAX, &b), k = 0;
        for (size_t i = 0; i < n; i++)
                if (b[i] != 0)
                        out[k++] = (char)b[i];
        if (k == 0)
                out[k++] = '/';
        out[k] = '\0';
}

/* The parameters of an address being built (property 3), as the grammar
 * allows them with its credentials so far. */
static void fuzz_params(struct fuzz_in *in, dl_redis_url *u)
{
        static const char envc[] = "ABCXYZ_abz019";
        unsigned pw = (unsigned)fuzz_u64(in, 1) % 3; /* none, a file, a variable */
        if (u->has_password)
                pw = 0;
        else if (u->has_user && pw == 0)
                pw = 1;
        if (pw == 1)
                fuzz_file(in, u->password_file);
        if (pw == 2) {
                size_t n = 1 + (size_t)(fuzz_u64(in, 1) % DL_REDIS_ENV_MAX);
                for (size_t i = 0; i < n; i++)
                        u->password_env[i] = envc[fuzz_u64(in, 1) % (sizeof envc - 1)];
                if (u->password_env[0] >= '0' && u->password_env[0] <= '9')
                        u->password_env[0] = '_';
        }
        if (!u->tls)
                return;
        unsigned files = (unsigned)fuzz_u64(in, 1);
        if (files & 1)
                fuzz_file(in, u->cacert);
        if (files & 2) {
                fuzz_file(in, u->cert);
                fuzz_file(in, u->key);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* 1, 2: the input as an address. */
        dl_redis_url u;
        char why[200];
        why[0] = '\0';
        if (dl_redis_url_parse((const char *)data, size, &u, why, sizeof why) == 0)
                check_canonical(&u);
        else
                FUZZ_CHECK(why[0] != '\0');

        /* 3: the input as the parts of an address. */
        static const char hostc[] = "abcdefghijklmnopqrstuvwxyz0123456789.-";
        static const char hexc[] = "0123456789abcdef:";
        static const char prefc[] = "abcXYZ019._-:";
        static const char pathc[] = "abc/._-~!$&'()*+,;=@[]:0";
        struct fuzz_in in = {data, size};
        memset(&u, 0, sizeof u);
        unsigned kind = (unsigned)fuzz_u64(&in, 1);
        u.unix_socket = kind & 1;
        u.tls = !u.unix_socket && (kind & 2);
        if (u.unix_socket) {
                size_t pl = 1 + (size_t)(fuzz_u64(&in, 1) % (DL_REDIS_PATH_MAX - 1));
                u.path[0] = '/';
                for (size_t i = 1; i < pl + 1 && i < DL_REDIS_PATH_MAX; i++)
                        u.path[i] = pathc[fuzz_u64(&in, 1) % (sizeof pathc - 1)];
                u.port = DL_REDIS_DEFAULT_PORT;
        } else if (fuzz_u64(&in, 1) & 1) {
                size_t hl = 2 + (size_t)(fuzz_u64(&in, 1) % 40);
                for (size_t i = 0; i < hl; i++)
                        u.host[i] = hexc[fuzz_u64(&in, 1) % (sizeof hexc - 1)];
                u.host[0] = ':'; /* an IPv6 address needs a ':' */
                u.port = 1 + (int)(fuzz_u64(&in, 2) % 65535);
        } else {
                size_t hl = 1 + (size_t)(fuzz_u64(&in, 1) % 255);
                for (size_t i = 0; i < hl; i++)
                        u.host[i] = hostc[fuzz_u64(&in, 1) % (sizeof hostc - 1)];
                u.port = 1 + (int)(fuzz_u64(&in, 2) % 65535);
        }
        u.db = (int)(fuzz_u64(&in, 3) % (DL_REDIS_DB_MAX + 1));
        size_t pl = 1 + (size_t)(fuzz_u64(&in, 1) % DL_REDIS_PREFIX_MAX);
        for (size_t i = 0; i < pl; i++)
                u.prefix[i] = prefc[fuzz_u64(&in, 1) % (sizeof prefc - 1)];
        /* none, a password, a user and a password, a user alone (its
         * password from a file or a variable: fuzz_params) */
        unsigned cred = (unsigned)fuzz_u64(&in, 1) % 4;
        const uint8_t *b;
        size_t n;
        if (cred >= 2) {
                u.has_user = true;
                n = fuzz_bytes(&in, sizeof u.user - 1, &b);
                size_t k = 0;
                for (size_t i = 0; i < n; i++)
                        if (b[i] != 0)
                                u.user[k++] = (char)b[i];
                if (k == 0)
                        u.user[k++] = 'u';
        }
        if (cred == 1 || cred == 2) {
                n = fuzz_bytes(&in, sizeof u.password - 1, &b);
                size_t k = 0;
                for (size_t i = 0; i < n; i++)
                        if (b[i] != 0)
                                u.password[k++] = (char)b[i];
                if (k == 0 && !u.has_user)
                        u.password[k++] = 'p';
                u.has_password = true;
        }
        fuzz_params(&in, &u);
        check_canonical(&u);
        return 0;
}
