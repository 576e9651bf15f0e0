/* fuzz_etcdurl.c - the etcd lock-space address parser (lib/etcd/etcd_url.c).
 * Properties:
 *   1. any input: dl_etcd_url_parse either refuses it, with a message,
 *      or gives an address u whose fields are in range (1..7 endpoints,
 *      each a host of 1..255 characters and a port 1..65535, a prefix of
 *      1..64 allowed characters), whose canonical form parses back to u
 *      and prints the same again;
 *   2. an address built from the input bytes (names, IPv6 addresses,
 *      any ports and prefix within range) survives format -> parse
 *      unchanged;
 *   3. the cluster's address of either (dl_etcd_url_cluster) fits
 *      DL_ETCD_CLUSTER_MAX and is the canonical form up to its "/PREFIX". */
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
        char text[DL_ETCD_ENDPOINTS_MAX * (DL_ETCD_HOST_MAX + 10) + DL_ETCD_PREFIX_MAX + 16],
            again[sizeof text];
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
        FUZZ_CHECK(c > 0 && c < n && memcmp(cluster, text, (size_t)c) == 0 && text[c] == '/');
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
        check_canonical(&u);
        return 0;
}
