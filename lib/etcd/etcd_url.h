/* etcd_url.h - the address of a lock space on an etcd cluster, parsed from
 * its space string (etcd_url.c).  A pure parser: no libcurl, no json-c, no
 * network, so it builds everywhere (the placeholder of a build without
 * etcd support names the forms) and is fuzzed on its own
 * (tests/fuzz/fuzz_etcdurl.c).
 *
 *   etcd://HOST[:PORT][,HOST[:PORT]...][/PREFIX]
 *
 * HOST is a name of [A-Za-z0-9.-], a dotted IPv4 address or an IPv6
 * address in brackets; PORT 1..65535 (default 2379, etcd's client port,
 * which etcdctl's default endpoint uses too); 1 to
 * DL_ETCD_ENDPOINTS_MAX endpoints, each the client URL of a member of one
 * cluster; PREFIX 1..64 characters of [A-Za-z0-9._-] (default "dirlock"):
 * every key of the space starts with "PREFIX/", so two prefixes on one
 * cluster are two separate spaces.  No user name or password: the
 * library does not log in to etcd (a "USER:PASSWORD@" is refused, saying
 * so). */
#ifndef DIRLOCK_ETCD_URL_H
#define DIRLOCK_ETCD_URL_H

#include <stdbool.h>
#include <stddef.h>

struct dl_etcd_wait;

#define DL_ETCD_SPACE_FORMS    "etcd://HOST[:PORT][,HOST[:PORT]...][/PREFIX]"
#define DL_ETCD_SCHEME         "etcd://"
#define DL_ETCD_DEFAULT_PORT   2379
#define DL_ETCD_DEFAULT_PREFIX "dirlock"
#define DL_ETCD_PREFIX_MAX     64
#define DL_ETCD_ENDPOINTS_MAX  7
#define DL_ETCD_HOST_MAX       255

typedef struct dl_etcd_url {
        size_t n; /* endpoints */
        struct {
                char host[DL_ETCD_HOST_MAX + 1]; /* without brackets */
                bool ipv6;
                int port;
        } ep[DL_ETCD_ENDPOINTS_MAX];
        char prefix[DL_ETCD_PREFIX_MAX + 1];
        /* Not part of the address: NULL, or while an acquire waits, that
         * wait, which the calls made through this copy of its handle serve
         * (struct dl_etcd_wait in etcd.h).  The parser sets NULL. */
        const struct dl_etcd_wait *wait;
} dl_etcd_url;

/* Parse the `len` bytes at `s` (the whole space string, scheme included,
 * not NUL-terminated).  0, or -1 with the reason in `why`. */
int dl_etcd_url_parse(const char *s, size_t len, dl_etcd_url *u, char *why, size_t why_size);
/* "http://HOST:PORT" of endpoint i. */
void dl_etcd_url_base(const dl_etcd_url *u, size_t i, char *buf, size_t size);
/* The canonical form, "etcd://h:p,h:p/prefix"; its length, or -1. */
int dl_etcd_url_format(const dl_etcd_url *u, char *buf, size_t size);
/* The cluster's part of it, "etcd://h:p,h:p" (the members, in their
 * order, without the prefix: every space on the cluster has the same);
 * its length, or -1 when it does not fit.  DL_ETCD_CLUSTER_MAX always
 * does. */
int dl_etcd_url_cluster(const dl_etcd_url *u, char *buf, size_t size);
#define DL_ETCD_CLUSTER_MAX (sizeof DL_ETCD_SCHEME + DL_ETCD_ENDPOINTS_MAX * (DL_ETCD_HOST_MAX + 9))

#endif
