/* fuzz_etcdurl.c - the etcd lock-space address parser (lib/etcd/etcd_url.c).
 * Properties:
 *   1. any input: dl_etcd_url_parse either refuses it, with a message,
 *      or gives an address u whose fields are in range (1..7 endpoints,
 *      each a host of 1..255 characters and a port 1..65535, a prefix of
 *      1..64 allowed characters), whose canonical form parses back to u
 *      and prints the same again;
 *   2. an address built from the input bytes (names, IPv6 addresses,
 *      any ports and prefix within range, etcd:// or etcds://, any user
 *      and file names in the parameters, a variable's name, as the grammar
 *      allows them together) survives format -> parse unchanged;
 *   3. the cluster's address of either (dl_etcd_url_cluster) fits
 *      DL_ETCD_CLUSTER_MAX and is the canonical form without its
 *      "/PREFIX";
 *   4. a parsed address keeps the grammar's rules of what goes together:
 *      a user with exactly one source of its password, none without one,
 *      the files of TLS only on etcds://, cert and key both or neither. */
#include "fuzz.h"

#include "etcd_url.h"

static void check_canonical(const dl_etcd_url *u)
{
        FUZZ_CHECK(u->n >= 1 && u->n <= DL_ETCD_ENDPOINTS_MAX);
        for (size_t i = 0; i < u->n; i++) {
                size_t hl = strlen(u->ep[i].host);
                FUZZ_CHECK(hl >= 1 && hl <= DL_ETCD_HOST_MAX);
                FUZZ_CHECK(u->ep[i].port >= 1 && u->ep[i].port <= 65535);
        }
        size_t pl = strlen(u->prefix);
        FUZZ_CHECK(pl >= 1 && pl <= DL_ETCD_PREFIX_MAX);
        FUZZ_CHECK(strspn(u->prefix, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
                   pl);
        int sources = (u->password_file[0] != 0) + (u->password_env[0] != 0);
        FUZZ_CHECK(u->user[0] != 0 ? sources == 1 : sources == 0);
        FUZZ_CHECK(u->tls || (u->cacert[0] == 0 && u->cert[0] == 0 && u->key[0] == 0));
        FUZZ_CHECK((u->cert[0] == 0) == (u->key[0] == 0));
        char text[DL_ETCD_CLUSTER_MAX + DL_ETCD_PREFIX_MAX + 2], again[sizeof text];
        int n = dl_etcd_url_format(u, text, sizeof text);
        FUZZ_CHECK(n > 0 && (size_t)n < sizeof text);
        dl_etcd_url back;
        char why[200];
        FUZZ_CHECK(dl_etcd_url_parse(text, (size_t)n, &back, why, sizeof why) == 0);
        FUZZ_CHECK(memcmp(u, &back, sizeof back) == 0);
        FUZZ_CHECK(dl_etcd_url_format(&back, again, sizeof again) == n &&
                   memcmp(text, again, (size_t)n) == 0);
        char cluster[DL_ETCD_CLUSTER_MAX];
        int c = dl_etcd_url_cluster(u, cluster, sizeof cluster);
        const char *slash = memchr(text, '/', (size_t)n);
        while (slash != NULL && slash[1] == '/') /* the scheme's "//" */
                slash = memchr(slash + 2, '/', (size_t)(text + n - slash - 2));
        FUZZ_CHECK(slash != NULL && c == n - (int)pl - 1);
        size_t at = (size_t)(slash - text);
        FUZZ_CHECK(memcmp(cluster, text, at) == 0 &&
                   memcmp(cluster + at, slash + 1 + pl, (size_t)c - at) == 0);
}

/* A value of 1..max bytes from the input: any byte but NUL. */
static void fuzz_value(struct fuzz_in *in, char *out, size_t max)
{
        const uint8_t *b;
        size_t n = fuzz_bytes(in, max, &b), k = 0;
        for (size_t i = 0; i < n; i++)
                if (b[i] != 0)
                        out[k++] = (char)b[i];
        if (k == 0)
                out[k++] = '/';
        out[k] = '\0';
}

/* The parameters of an address being built (property 2). */
static void fuzz_params(struct fuzz_in *in, dl_etcd_url *u)
{
        static const char envc[] = "ABCXYZ_abz019";
        unsigned which = (unsigned)fuzz_u64(in, 1);
        if (which & 1) {
                fuzz_value(in, u->user, DL_ETCD_USER_MAX);
                if (which & 2) {
                        fuzz_value(in, u->password_file, DL_ETCD_FILE_MAX);
                } else {
                        size_t n = 1 + (size_t)(fuzz_u64(in, 1) % DL_ETCD_ENV_MAX);
                        for (size_t i = 0; i < n; i++)
                                u->password_env[i] = envc[fuzz_u64(in, 1) % (sizeof envc - 1)];
                        if (u->password_env[0] >= '0' && u->password_env[0] <= '9')
                                u->password_env[0] = '_';
                }
        }
        if (!u->tls)
                return;
        if (which & 4)
                fuzz_value(in, u->cacert, DL_ETCD_FILE_MAX);
        if (which & 8) {
                fuzz_value(in, u->cert, DL_ETCD_FILE_MAX);
                fuzz_value(in, u->key, DL_ETCD_FILE_MAX);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* 1: the input as an address. */
        dl_etcd_url u;
        char why[200];
        why[0] = '\0';
        if (dl_etcd_url_parse((const char *)data, size, &u, why, sizeof why) == 0)
                check_canonical(&u);
        else
                FUZZ_CHECK(why[0] != '\0');

        /* 2: the input as the parts of an address. */
        static const char hostc[] = "abcdefghijklmnopqrstuvwxyzABC0123456789.-";
        static const char hexc[] = "0123456789abcdefABCDEF:.";
        static const char prefc[] = "abcXYZ019._-";
        struct fuzz_in in = {data, size};
        memset(&u, 0, sizeof u);
        u.n = 1 + (size_t)(fuzz_u64(&in, 1) % DL_ETCD_ENDPOINTS_MAX);
        u.tls = fuzz_u64(&in, 1) & 1;
        for (size_t e = 0; e < u.n; e++) {
                u.ep[e].ipv6 = fuzz_u64(&in, 1) & 1;
                const char *set = u.ep[e].ipv6 ? hexc : hostc;
                size_t setn = u.ep[e].ipv6 ? sizeof hexc - 1 : sizeof hostc - 1;
                size_t hl = 1 + (size_t)(fuzz_u64(&in, 1) % (u.ep[e].ipv6 ? 45 : DL_ETCD_HOST_MAX));
                for (size_t i = 0; i < hl; i++)
                        u.ep[e].host[i] = set[fuzz_u64(&in, 1) % setn];
                u.ep[e].port = 1 + (int)(fuzz_u64(&in, 2) % 65535);
        }
        size_t pl = 1 + (size_t)(fuzz_u64(&in, 1) % DL_ETCD_PREFIX_MAX);
        for (size_t i = 0; i < pl; i++)
                u.prefix[i] = prefc[fuzz_u64(&in, 1) % (sizeof prefc - 1)];
        fuzz_params(&in, &u);
        check_canonical(&u);
        return 0;
}
