/* etcd_url.c - the address of a lock space on an etcd cluster, parsed
 * from its space string (the grammar is in etcd_url.h).  A pure parser: no
 * libcurl, no network. */
#include "etcd_url.h"
#include "server.h"

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
                        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
                              (*p >= 'A' && *p <= 'F') || *p == ':' || *p == '.'))
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

int dl_etcd_url_parse(const char *s, size_t len, dl_etcd_url *u, char *why, size_t why_size)
{
        memset(u, 0, sizeof *u);
        const char *end = s + len, *p = s;
        size_t sl = strlen(DL_ETCD_SCHEME);
        if (len < sl || memcmp(s, DL_ETCD_SCHEME, sl) != 0)
                return fail(why, why_size, "not an etcd:// address");
        p += sl;
        const char *slash = memchr(p, '/', (size_t)(end - p));
        const char *hosts_end = slash ? slash : end;
        if (memchr(p, '@', (size_t)(hosts_end - p)) != NULL)
                return fail(
                    why, why_size,
                    "a user name or password (USER:PASSWORD@) is not supported: dirlock does not log in "
                    "to etcd, so it needs a cluster that lets it in without (etcd's authentication "
                    "off, as it is by default)");
        if (p == hosts_end)
                return fail(why, why_size,
                            "no endpoint given (etcd://HOST[:PORT][,HOST[:PORT]...][/PREFIX])");
        while (p <= hosts_end) {
                const char *comma = memchr(p, ',', (size_t)(hosts_end - p));
                const char *ep_end = comma ? comma : hosts_end;
                if (u->n == DL_ETCD_ENDPOINTS_MAX)
                        return fail(why, why_size,
                                    "more than 7 endpoints (an etcd cluster has at most 7 members)");
                if (parse_endpoint(p, ep_end, u, why, why_size) != 0)
                        return -1;
                if (comma == NULL)
                        break;
                p = comma + 1;
        }
        if (slash == NULL) {
                strcpy(u->prefix, DL_ETCD_DEFAULT_PREFIX);
                return 0;
        }
        p = slash + 1;
        size_t pl = (size_t)(end - p);
        if (pl == 0 || pl > DL_ETCD_PREFIX_MAX)
                return fail(why, why_size,
                            "the prefix after '/' must be 1-64 characters of A-Z a-z 0-9 . _ -");
        for (size_t i = 0; i < pl; i++)
                if (!prefix_char(p[i]))
                        return fail(
                            why, why_size,
                            "the prefix after '/' must be 1-64 characters of A-Z a-z 0-9 . _ - (no '/', "
                            "'?' or spaces)");
        memcpy(u->prefix, p, pl);
        u->prefix[pl] = '\0';
        return 0;
}

void dl_etcd_url_base(const dl_etcd_url *u, size_t i, char *buf, size_t size)
{
        if (u->ep[i].ipv6)
                snprintf(buf, size, "http://[%s]:%d", u->ep[i].host, u->ep[i].port);
        else
                snprintf(buf, size, "http://%s:%d", u->ep[i].host, u->ep[i].port);
}

int dl_etcd_url_cluster(const dl_etcd_url *u, char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s", DL_ETCD_SCHEME);
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

int dl_etcd_url_format(const dl_etcd_url *u, char *buf, size_t size)
{
        int at = dl_etcd_url_cluster(u, buf, size);
        if (at < 0)
                return -1;
        int n = snprintf(buf + at, size - (size_t)at, "/%s", u->prefix);
        if (n < 0 || (size_t)n >= size - (size_t)at)
                return -1;
        return at + n;
}
