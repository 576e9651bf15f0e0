/* etcd_url.h - the address of a lock space on an etcd cluster, parsed from
 * its space string (etcd_url.c).  A pure parser: no libcurl, no json-c, no
 * network, no files read, so it builds everywhere (the placeholder of a
 * build without etcd support names the forms) and is fuzzed on its own
 * (tests/fuzz/fuzz_etcdurl.c).
 *
 *   etcd://HOST[:PORT][,HOST[:PORT]...][/PREFIX][?PARAMS]     plain HTTP
 *   etcds://HOST[:PORT][,HOST[:PORT]...][/PREFIX][?PARAMS]    HTTPS (TLS)
 *
 * HOST is a name of [A-Za-z0-9.-], a dotted IPv4 address or an IPv6
 * address in brackets; PORT 1..65535 (default 2379, etcd's client port,
 * which etcdctl's default endpoint uses too); 1 to
 * DL_ETCD_ENDPOINTS_MAX endpoints, each the client URL of a member of one
 * cluster; PREFIX 1..64 characters of [A-Za-z0-9._-] (default "dirlock"):
 * every key of the space starts with "PREFIX/", so two prefixes on one
 * cluster are two separate spaces, and a role granted readwrite on
 * "PREFIX/" (etcdctl role grant-permission --prefix) is all a locker
 * needs.  PARAMS, NAME=VALUE joined by '&', each at most once, named as
 * etcdctl names them:
 *
 *   user=NAME            log in to etcd's authentication as NAME: the
 *                        cluster's token, got with the password, is sent
 *                        with every request and got again as it expires
 *   password_file=FILE   the password is FILE's content (one trailing
 *                        newline dropped), read at each log-in
 *   password_env=NAME    the password is environment variable NAME's value
 *   cacert=FILE          etcds: the CAs that sign the members'
 *                        certificates (PEM; default: the system's), which
 *                        must name the HOST given
 *   cert=FILE, key=FILE  etcds: our client certificate and its key (PEM),
 *                        for members run with --client-cert-auth; both or
 *                        neither
 *
 * A FILE or user NAME is 1..255 (NAME: 127) bytes, written %XX where it is
 * not [A-Za-z0-9._~/-]; an environment variable's NAME is 1..63
 * characters of [A-Za-z0-9_], not starting with a digit.  A user needs
 * exactly one of password_file and password_env, and they need a user.
 * "USER:PASSWORD@" before the hosts is refused (a password in the
 * address would show in process lists), saying what to write instead. */
#ifndef DIRLOCK_ETCD_URL_H
#define DIRLOCK_ETCD_URL_H

#include <stdbool.h>
#include <stddef.h>

struct dl_etcd_wait;

#define DL_ETCD_SPACE_FORMS                                                                                  \
        "etcd[s]://HOST[:PORT][,HOST[:PORT]...][/PREFIX][?user=U&password_file=F&cacert=F&cert=F&key=F]"
#define DL_ETCD_SCHEME         "etcd://"
#define DL_ETCD_TLS_SCHEME     "etcds://"
#define DL_ETCD_DEFAULT_PORT   2379
#define DL_ETCD_DEFAULT_PREFIX "dirlock"
#define DL_ETCD_PREFIX_MAX     64
#define DL_ETCD_ENDPOINTS_MAX  7
#define DL_ETCD_HOST_MAX       255
#define DL_ETCD_FILE_MAX       255 /* a file named by a parameter, decoded */
#define DL_ETCD_USER_MAX       127
#define DL_ETCD_ENV_MAX        63

typedef struct dl_etcd_url {
        bool tls; /* etcds:// */
        size_t n; /* endpoints */
        struct {
                char host[DL_ETCD_HOST_MAX + 1]; /* without brackets */
                bool ipv6;
                int port;
        } ep[DL_ETCD_ENDPOINTS_MAX];
        char prefix[DL_ETCD_PREFIX_MAX + 1];
        char user[DL_ETCD_USER_MAX + 1];          /* "": no log-in */
        char password_file[DL_ETCD_FILE_MAX + 1]; /* "": none */
        char password_env[DL_ETCD_ENV_MAX + 1];   /* "": none */
        char cacert[DL_ETCD_FILE_MAX + 1];        /* etcds; "": the system's CAs */
        char cert[DL_ETCD_FILE_MAX + 1];          /* etcds; "": no client certificate */
        char key[DL_ETCD_FILE_MAX + 1];
        /* Not part of the address: NULL, or while an acquire waits, that
         * wait, which the calls made through this copy of its handle serve
         * (struct dl_etcd_wait in etcd.h).  The parser sets NULL. */
        const struct dl_etcd_wait *wait;
} dl_etcd_url;

/* Parse the `len` bytes at `s` (the whole space string, scheme included,
 * not NUL-terminated).  0, or -1 with the reason in `why`. */
int dl_etcd_url_parse(const char *s, size_t len, dl_etcd_url *u, char *why, size_t why_size);
/* "http://HOST:PORT" (etcds: "https://...") of endpoint i. */
void dl_etcd_url_base(const dl_etcd_url *u, size_t i, char *buf, size_t size);
/* The canonical form, "etcd[s]://h:p,h:p/prefix[?params]" (the
 * parameters in the grammar's order, %-encoded); its length, or -1. */
int dl_etcd_url_format(const dl_etcd_url *u, char *buf, size_t size);
/* The cluster's part of it, "etcd[s]://h:p,h:p[?params]": the members,
 * in their order, and how they are reached (TLS files, user, where the
 * password is), without the prefix -- every space on the cluster reached
 * the same way has the same, and shares connections and the log-in
 * token; its length, or -1 when it does not fit.  DL_ETCD_CLUSTER_MAX
 * always does. */
int dl_etcd_url_cluster(const dl_etcd_url *u, char *buf, size_t size);
#define DL_ETCD_PARAMS_MAX (5 * (16 + 3 * DL_ETCD_FILE_MAX) + 6 + 3 * DL_ETCD_USER_MAX + 14 + DL_ETCD_ENV_MAX)
#define DL_ETCD_CLUSTER_MAX                                                                                  \
        (sizeof DL_ETCD_TLS_SCHEME + DL_ETCD_ENDPOINTS_MAX * (DL_ETCD_HOST_MAX + 9) + DL_ETCD_PARAMS_MAX + 2)

#endif
