/* etcd_url.c - the address of a lock space on an etcd cluster, parsed
 * from its space string, and printed back in its canonical form (the
 * grammar is in etcd_url.h).  A pure parser: no libcurl, no network, no
 * files read.  The first thing wrong is named in `why`. */
#include "etcd_url.h"
#include "server.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static bool host_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '-';
}

static bool prefix_char(char c)
{
        return host_char(c) || c == '_';
}

static int fail(char *why, size_t size, const char *msg)
{
        snprintf(why, size, "%s", msg);
        return -1;
}

/* One "HOST[:PORT]" of [p, end); 0 or -1 with why. */
static int parse_endpoint(const char *p, const char *end, dl_etcd_url *u, char *why, size_t why_size)
{
        size_t i = u->n;
        const char *host = p, *host_end;
        if (p < end && *p == '[') {
                host = ++p;
                while (p < end && *p != ']')
                        if (dl_url_hex_value(*p) < 0 && *p != ':' && *p != '.')
                                return fail(why, why_size,
                                            "an IPv6 address in brackets holds only hex digits, ':' and '.'");
                        else
                                p++;
                if (p == end)
                        return fail(why, why_size, "an IPv6 address has no closing ']'");
                host_end = p++;
                u->ep[i].ipv6 = true;
        } else {
                while (p < end && host_char(*p))
                        p++;
                host_end = p;
        }
        size_t hl = (size_t)(host_end - host);
        if (hl == 0)
                return fail(why, why_size,
                            "an endpoint names no host (HOST[:PORT], endpoints separated by ',')");
        if (hl > DL_ETCD_HOST_MAX)
                return fail(why, why_size, "a host name is longer than 255 characters");
        memcpy(u->ep[i].host, host, hl);
        u->ep[i].host[hl] = '\0';
        u->ep[i].port = DL_ETCD_DEFAULT_PORT;
        if (p < end && *p == ':') {
                p++;
                long port = 0;
                const char *digits = p;
                while (p < end && *p >= '0' && *p <= '9' && port <= 65535)
                        port = port * 10 + (*p++ - '0');
                if (p == digits || port < 1 || port > 65535)
                        return fail(why, why_size, DL_PORT_RULE);
                u->ep[i].port = (int)port;
        }
        if (p != end)
                return fail(
                    why, why_size,
                    "an endpoint has characters a host name cannot have (HOST is a name of A-Z a-z 0-9 . -, "
                    "an IPv4 address, or an IPv6 address in brackets)");
        u->n++;
        return 0;
}

/* A file or user name may hold any byte but NUL: these go unencoded,
 * every other one as %XX. */
static bool value_plain(unsigned char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               strchr("-._~/", c) != NULL;
}

/* A value of the query may be written with any printable ASCII byte
 * unencoded but '&', '#' and '?' (which end it) and '%' (which encodes). */
static bool query_plain(unsigned char c)
{
        return c > ' ' && c < 127 && c != '&' && c != '#' && c != '?';
}

/* The parameters whose value is %-encoded: where each goes, its size,
 * and whether it is for etcds:// only. */
static const struct param {
        const char *name;
        size_t offset, size;
        bool tls_only;
} params[] = {
    {"user", offsetof(dl_etcd_url, user), DL_ETCD_USER_MAX + 1, false},
    {"password_file", offsetof(dl_etcd_url, password_file), DL_ETCD_FILE_MAX + 1, false},
    {"cacert", offsetof(dl_etcd_url, cacert), DL_ETCD_FILE_MAX + 1, true},
    {"cert", offsetof(dl_etcd_url, cert), DL_ETCD_FILE_MAX + 1, true},
    {"key", offsetof(dl_etcd_url, key), DL_ETCD_FILE_MAX + 1, true},
};
#define PARAM_COUNT (sizeof params / sizeof params[0])

static bool env_char(char c, bool first)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
               (!first && c >= '0' && c <= '9');
}

/* One "NAME=VALUE" of the query, [s, end), into u. */
static int parse_param(const char *s, const char *end, dl_etcd_url *u, char *why, size_t why_size)
{
        const char *eq = memchr(s, '=', (size_t)(end - s));
        if (eq == NULL)
                return fail(why, why_size, "query parameters are NAME=VALUE joined by '&'");
        size_t kl = (size_t)(eq - s), vl = (size_t)(end - eq - 1);
        const char *v = eq + 1;
        for (size_t i = 0; i < PARAM_COUNT; i++) {
                if (strlen(params[i].name) != kl || memcmp(s, params[i].name, kl) != 0)
                        continue;
                char *to = (char *)u + params[i].offset;
                if (params[i].tls_only && !u->tls)
                        return fail(why, why_size,
                                    "cacert, cert and key are for a TLS connection: etcds://HOST...");
                if (to[0] != '\0')
                        return fail(why, why_size, "a query parameter is given twice");
                if (v == end || dl_url_decode(v, end, query_plain, to, params[i].size) != 0)
                        return fail(why, why_size,
                                    "a file or user name must be 1-255 bytes (a user 1-127), with spaces, "
                                    "control characters, '&', '#', '?' and non-ASCII bytes written %XX, and "
                                    "no %00");
                return 0;
        }
        if (kl == 12 && memcmp(s, "password_env", 12) == 0) {
                if (u->password_env[0] != '\0')
                        return fail(why, why_size, "a query parameter is given twice");
                bool good = vl >= 1 && vl <= DL_ETCD_ENV_MAX;
                for (size_t i = 0; good && i < vl; i++)
                        good = env_char(v[i], i == 0);
                if (!good)
                        return fail(why, why_size,
                                    "password_env must name an environment variable: 1-63 characters of "
                                    "A-Z a-z 0-9 _, not starting with a digit");
                memcpy(u->password_env, v, vl);
                u->password_env[vl] = '\0';
                return 0;
        }
        return fail(why, why_size,
                    "unknown query parameter (known: user, password_file, password_env, and for etcds:// "
                    "cacert, cert, key)");
}

/* The query of [s, e), then what must go together. */
static int parse_query(const char *s, const char *e, dl_etcd_url *u, char *why, size_t why_size)
{
        while (s < e) {
                const char *amp = memchr(s, '&', (size_t)(e - s));
                const char *end = amp ? amp : e;
                if (parse_param(s, end, u, why, why_size) != 0)
                        return -1;
                s = amp ? amp + 1 : e;
                if (amp && s == e)
                        return fail(why, why_size, "the query ends with '&'");
        }
        int sources = (u->password_file[0] != '\0') + (u->password_env[0] != '\0');
        if (u->user[0] != '\0' && sources != 1)
                return fail(why, why_size,
                            sources == 0 ? "a user needs a password: password_file=FILE or password_env=NAME"
                                         : "the password is given twice: password_file or password_env, "
                                           "not both");
        if (u->user[0] == '\0' && sources != 0)
                return fail(why, why_size, "a password needs a user: user=NAME");
        if ((u->cert[0] != '\0') != (u->key[0] != '\0'))
                return fail(why, why_size, "a client certificate needs both cert=FILE and key=FILE");
        return 0;
}

/* The endpoints of [p, end), "HOST[:PORT],..." */
static int parse_endpoints(const char *p, const char *end, dl_etcd_url *u, char *why, size_t why_size)
{
        if (p == end)
                return fail(why, why_size,
                            "no endpoint given (etcd://HOST[:PORT][,HOST[:PORT]...][/PREFIX])");
        for (;;) {
                const char *comma = memchr(p, ',', (size_t)(end - p));
                const char *ep_end = comma ? comma : end;
                if (u->n == DL_ETCD_ENDPOINTS_MAX)
                        return fail(why, why_size,
                                    "more than 7 endpoints (an etcd cluster has at most 7 members)");
                if (parse_endpoint(p, ep_end, u, why, why_size) != 0)
                        return -1;
                if (comma == NULL)
                        return 0;
                p = comma + 1;
        }
}

int dl_etcd_url_parse(const char *s, size_t len, dl_etcd_url *u, char *why, size_t why_size)
{
        memset(u, 0, sizeof *u);
        const char *end = s + len, *p = s;
        size_t sl = strlen(DL_ETCD_SCHEME), tl = strlen(DL_ETCD_TLS_SCHEME);
        if (len >= sl && memcmp(s, DL_ETCD_SCHEME, sl) == 0) {
                p += sl;
        } else if (len >= tl && memcmp(s, DL_ETCD_TLS_SCHEME, tl) == 0) {
                u->tls = true;
                p += tl;
        } else {
                return fail(why, why_size, "not an etcd:// or etcds:// address");
        }
        if (memchr(p, '\0', (size_t)(end - p)) != NULL || memchr(p, '#', (size_t)(end - p)) != NULL)
                return fail(why, why_size, "the address holds a NUL byte or a '#'");
        const char *q = memchr(p, '?', (size_t)(end - p));
        const char *rest_end = q ? q : end;
        const char *slash = memchr(p, '/', (size_t)(rest_end - p));
        const char *hosts_end = slash ? slash : rest_end;
        if (memchr(p, '@', (size_t)(hosts_end - p)) != NULL)
                return fail(why, why_size,
                            "a user name or password before the hosts (USER:PASSWORD@) is not taken: log in "
                            "with ?user=NAME&password_file=FILE (or password_env=NAME) after the prefix");
        if (parse_endpoints(p, hosts_end, u, why, why_size) != 0)
                return -1;
        if (slash == NULL) {
                strcpy(u->prefix, DL_ETCD_DEFAULT_PREFIX);
        } else {
                p = slash + 1;
                size_t pl = (size_t)(rest_end - p);
                bool good = pl >= 1 && pl <= DL_ETCD_PREFIX_MAX;
                for (size_t i = 0; good && i < pl; i++)
                        good = prefix_char(p[i]);
                if (!good)
                        return fail(
                            why, why_size,
                            "the prefix after '/' must be 1-64 characters of A-Z a-z 0-9 . _ - (no '/' "
                            "or spaces)");
                memcpy(u->prefix, p, pl);
                u->prefix[pl] = '\0';
        }
        return q != NULL ? parse_query(q + 1, end, u, why, why_size) : 0;
}

void dl_etcd_url_base(const dl_etcd_url *u, size_t i, char *buf, size_t size)
{
        const char *scheme = u->tls ? "https" : "http";
        if (u->ep[i].ipv6)
                snprintf(buf, size, "%s://[%s]:%d", scheme, u->ep[i].host, u->ep[i].port);
        else
                snprintf(buf, size, "%s://%s:%d", scheme, u->ep[i].host, u->ep[i].port);
}

/* The members, "etcd[s]://h:p,h:p", into buf: its length, or -1. */
static int format_members(const dl_etcd_url *u, char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s", u->tls ? DL_ETCD_TLS_SCHEME : DL_ETCD_SCHEME);
        if (n < 0 || (size_t)n >= size)
                return -1;
        size_t at = (size_t)n;
        for (size_t i = 0; i < u->n; i++) {
                /* Each at most DL_ETCD_HOST_MAX + 9 bytes: ",[HOST]:65535". */
                n = snprintf(buf + at, size - at, u->ep[i].ipv6 ? "%s[%s]:%d" : "%s%s:%d", i > 0 ? "," : "",
                             u->ep[i].host, u->ep[i].port);
                if (n < 0 || (size_t)n >= size - at)
                        return -1;
                at += (size_t)n;
        }
        return (int)at;
}

/* The parameters, "?user=...&...", or "" when there are none, into buf:
 * its length, or -1. */
static int format_params(const dl_etcd_url *u, char *buf, size_t size)
{
        size_t n = 0;
        buf[0] = '\0';
        for (size_t i = 0; i <= PARAM_COUNT; i++) {
                const char *name = i < PARAM_COUNT ? params[i].name : "password_env";
                const char *v = i < PARAM_COUNT ? (const char *)u + params[i].offset : u->password_env;
                if (v[0] == '\0')
                        continue;
                int k = snprintf(buf + n, size - n, "%c%s=", n == 0 ? '?' : '&', name);
                if (k < 0 || (size_t)k >= size - n)
                        return -1;
                n += (size_t)k;
                k = dl_url_encode(v, value_plain, buf + n, size - n);
                if (k < 0)
                        return -1;
                n += (size_t)k;
        }
        return (int)n;
}

int dl_etcd_url_cluster(const dl_etcd_url *u, char *buf, size_t size)
{
        int at = format_members(u, buf, size);
        if (at < 0)
                return -1;
        int n = format_params(u, buf + at, size - (size_t)at);
        return n < 0 ? -1 : at + n;
}

int dl_etcd_url_format(const dl_etcd_url *u, char *buf, size_t size)
{
        int at = format_members(u, buf, size);
        if (at < 0)
                return -1;
        int n = snprintf(buf + at, size - (size_t)at, "/%s", u->prefix);
        if (n < 0 || (size_t)n >= size - (size_t)at)
                return -1;
        at += n;
        n = format_params(u, buf + at, size - (size_t)at);
        return n < 0 ? -1 : at + n;
}
