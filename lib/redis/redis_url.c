/* redis_url.c - parsing and printing the space string of a lock space on a
 * Redis server (the grammar is in redis_url.h).  Every part is checked
 * where it is read, and the first thing wrong is named in `why`; nothing
 * of the password ever goes into it.  dl_redis_url_format() prints the
 * canonical form, which parses back to the same struct (the fuzz target
 * checks it). */
#include "redis_url.h"
#include "server.h"

#include <stdio.h>
#include <string.h>

#define TCP_SCHEME  "redis://"
#define UNIX_SCHEME "redis+unix://"

bool dl_redis_url_is_redis(const char *space)
{
        return space != NULL && (strncmp(space, TCP_SCHEME, strlen(TCP_SCHEME)) == 0 ||
                                 strncmp(space, UNIX_SCHEME, strlen(UNIX_SCHEME)) == 0);
}

static int refuse(char *why, size_t size, const char *msg)
{
        if (why != NULL && size > 0)
                snprintf(why, size, "%s", msg);
        return -1;
}

/* Characters a credential may hold unencoded (RFC 3986 unreserved and
 * sub-delims, without ':' and '@'). */
static bool cred_plain(unsigned char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               strchr("-._~!$&'()*+,;=", c) != NULL;
}

static int hex_value(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* %-decode [s, e) into out (size bytes with the NUL).  0 or -1. */
static int decode_cred(const char *s, const char *e, char *out, size_t size)
{
        size_t n = 0;
        while (s < e) {
                unsigned char c = (unsigned char)*s;
                if (c == '%') {
                        int hi = e - s >= 3 ? hex_value(s[1]) : -1, lo = e - s >= 3 ? hex_value(s[2]) : -1;
                        if (hi < 0 || lo < 0)
                                return -1;
                        c = (unsigned char)(hi * 16 + lo);
                        if (c == 0)
                                return -1;
                        s += 3;
                } else if (cred_plain(c)) {
                        s++;
                } else {
                        return -1;
                }
                if (n + 1 >= size)
                        return -1;
                out[n++] = (char)c;
        }
        out[n] = '\0';
        return 0;
}

static int encode_cred(const char *in, char *out, size_t size)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t n = 0;
        for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
                if (n + 4 > size)
                        return -1;
                if (cred_plain(*p)) {
                        out[n++] = (char)*p;
                } else {
                        out[n++] = '%';
                        out[n++] = hex[*p >> 4];
                        out[n++] = hex[*p & 15];
                }
        }
        if (n + 1 > size)
                return -1;
        out[n] = '\0';
        return 0;
}

/* A decimal number of [s, e) in 0..max, without sign or leading zeros
 * (except "0").  0 or -1. */
static int parse_number(const char *s, const char *e, long max, long *out)
{
        if (s == e || e - s > 9 || (s[0] == '0' && e - s > 1))
                return -1;
        long v = 0;
        for (; s < e; s++) {
                if (*s < '0' || *s > '9')
                        return -1;
                v = v * 10 + (*s - '0');
        }
        if (v > max)
                return -1;
        *out = v;
        return 0;
}

static bool prefix_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '_' || c == '-' || c == ':';
}

static bool host_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '-';
}

static bool path_char(char c)
{
        return c > ' ' && c < 127 && c != '?' && c != '#' && c != '%';
}

/* The query "k=v&k=v" of [s, e): prefix for both kinds, db for sockets. */
static int parse_query(const char *s, const char *e, dl_redis_url *u, char *why, size_t size)
{
        bool seen_prefix = false, seen_db = false;
        while (s < e) {
                const char *amp = memchr(s, '&', (size_t)(e - s));
                const char *end = amp ? amp : e;
                const char *eq = memchr(s, '=', (size_t)(end - s));
                if (eq == NULL)
                        return refuse(why, size,
                                      "query parameters are NAME=VALUE (prefix=P, or db=N for a socket)");
                size_t kl = (size_t)(eq - s);
                const char *v = eq + 1;
                if (kl == 6 && memcmp(s, "prefix", 6) == 0) {
                        if (seen_prefix)
                                return refuse(why, size, "prefix is given twice");
                        seen_prefix = true;
                        size_t vl = (size_t)(end - v);
                        if (vl == 0 || vl > DL_REDIS_PREFIX_MAX)
                                return refuse(why, size,
                                              "the prefix must be 1-64 characters of A-Z a-z 0-9 . _ - :");
                        for (const char *p = v; p < end; p++)
                                if (!prefix_char(*p))
                                        return refuse(
                                            why, size,
                                            "the prefix must be 1-64 characters of A-Z a-z 0-9 . _ - :");
                        memset(u->prefix, 0, sizeof u->prefix); /* no tail of the default */
                        memcpy(u->prefix, v, vl);
                } else if (kl == 2 && memcmp(s, "db", 2) == 0) {
                        if (!u->unix_socket)
                                return refuse(why, size,
                                              "the database number of redis:// goes in the path (/N)");
                        if (seen_db)
                                return refuse(why, size, "db is given twice");
                        seen_db = true;
                        long db;
                        if (parse_number(v, end, DL_REDIS_DB_MAX, &db) != 0)
                                return refuse(why, size, "db must be a database number, 0 to 999999");
                        u->db = (int)db;
                } else {
                        return refuse(why, size,
                                      u->unix_socket ? "unknown query parameter (known: db, prefix)"
                                                     : "unknown query parameter (known: prefix)");
                }
                s = amp ? amp + 1 : e;
                if (amp && s == e)
                        return refuse(why, size, "the query ends with '&'");
        }
        return 0;
}

/* [[USER]:PASSWORD@] at the start of [*s, e): consumed when present. */
static int parse_userinfo(const char **s, const char *e, const char *authority_end, dl_redis_url *u,
                          char *why, size_t size)
{
        const char *at = NULL;
        for (const char *p = *s; p < authority_end; p++)
                if (*p == '@')
                        at = p; /* the last one: a password may not hold '@' unencoded anyway */
        (void)e;
        if (at == NULL)
                return 0;
        const char *colon = memchr(*s, ':', (size_t)(at - *s));
        if (colon == NULL)
                return refuse(why, size, "credentials are USER:PASSWORD@ or :PASSWORD@ (a user needs a ':')");
        if (colon > *s) {
                if (decode_cred(*s, colon, u->user, sizeof u->user) != 0)
                        return refuse(
                            why, size,
                            "the user name is not valid (at most 127 bytes; write reserved characters "
                            "as %XX)");
                u->has_user = true;
        }
        if (decode_cred(colon + 1, at, u->password, sizeof u->password) != 0)
                return refuse(
                    why, size,
                    "the password is not valid (at most 255 bytes; write reserved characters as %XX)");
        u->has_password = u->has_user || u->password[0] != '\0';
        *s = at + 1;
        return 0;
}

static int parse_tcp(const char *s, const char *e, dl_redis_url *u, char *why, size_t size)
{
        const char *q = memchr(s, '?', (size_t)(e - s));
        const char *rest_end = q ? q : e;
        const char *slash = memchr(s, '/', (size_t)(rest_end - s));
        const char *authority_end = slash ? slash : rest_end;
        if (parse_userinfo(&s, e, authority_end, u, why, size) != 0)
                return -1;
        const char *host_end;
        if (s < authority_end && *s == '[') {
                const char *close = memchr(s, ']', (size_t)(authority_end - s));
                if (close == NULL)
                        return refuse(why, size, "an IPv6 address in brackets lacks its ']'");
                size_t hl = (size_t)(close - s - 1);
                if (hl == 0 || hl >= sizeof u->host)
                        return refuse(why, size, "the IPv6 address is empty or too long");
                for (const char *p = s + 1; p < close; p++)
                        if (hex_value(*p) < 0 && *p != ':' && *p != '.')
                                return refuse(why, size,
                                              "the IPv6 address holds characters other than hex digits, "
                                              "':' and '.'");
                if (memchr(s + 1, ':', hl) == NULL)
                        return refuse(why, size, "a bracketed host must be an IPv6 address");
                memcpy(u->host, s + 1, hl);
                u->host[hl] = '\0';
                host_end = close + 1;
                if (host_end < authority_end && *host_end != ':')
                        return refuse(why, size, "unexpected text after the IPv6 address");
        } else {
                host_end = memchr(s, ':', (size_t)(authority_end - s));
                if (host_end == NULL)
                        host_end = authority_end;
                size_t hl = (size_t)(host_end - s);
                if (hl == 0)
                        return refuse(why, size, "no host name (redis://HOST[:PORT][/DB])");
                if (hl >= sizeof u->host)
                        return refuse(why, size, "the host name is longer than 255 characters");
                for (const char *p = s; p < host_end; p++)
                        if (!host_char(*p))
                                return refuse(why, size,
                                              "the host name holds characters other than A-Z a-z 0-9 . -");
                memcpy(u->host, s, hl);
                u->host[hl] = '\0';
        }
        if (host_end < authority_end) { /* ":PORT" */
                long port;
                if (parse_number(host_end + 1, authority_end, 65535, &port) != 0 || port == 0)
                        return refuse(why, size, DL_PORT_RULE);
                u->port = (int)port;
        }
        if (slash != NULL && slash + 1 < rest_end) {
                long db;
                if (parse_number(slash + 1, rest_end, DL_REDIS_DB_MAX, &db) != 0)
                        return refuse(why, size, "the path must be a database number, /0 to /999999");
                u->db = (int)db;
        }
        return q ? parse_query(q + 1, e, u, why, size) : 0;
}

static int parse_unix(const char *s, const char *e, dl_redis_url *u, char *why, size_t size)
{
        const char *q = memchr(s, '?', (size_t)(e - s));
        const char *rest_end = q ? q : e;
        const char *slash = memchr(s, '/', (size_t)(rest_end - s));
        if (slash == NULL)
                return refuse(why, size, "no socket path (redis+unix:///PATH/TO/SOCKET)");
        if (parse_userinfo(&s, e, slash, u, why, size) != 0)
                return -1;
        if (s != slash)
                return refuse(why, size, "the socket path must be absolute: redis+unix:///PATH/TO/SOCKET");
        size_t pl = (size_t)(rest_end - slash);
        if (pl < 2)
                return refuse(why, size, "no socket path (redis+unix:///PATH/TO/SOCKET)");
        if (pl > DL_REDIS_PATH_MAX)
                return refuse(why, size, "the socket path is longer than 107 bytes");
        for (const char *p = slash; p < rest_end; p++)
                if (!path_char(*p))
                        return refuse(
                            why, size,
                            "the socket path holds a space, control character, '%', '#' or non-ASCII "
                            "byte");
        memcpy(u->path, slash, pl);
        u->path[pl] = '\0';
        return q ? parse_query(q + 1, e, u, why, size) : 0;
}

int dl_redis_url_parse(const char *s, size_t len, dl_redis_url *u, char *why, size_t why_size)
{
        memset(u, 0, sizeof *u);
        u->port = DL_REDIS_DEFAULT_PORT;
        strcpy(u->prefix, DL_REDIS_DEFAULT_PREFIX);
        if (memchr(s, '\0', len) != NULL)
                return refuse(why, why_size, "the address holds a NUL byte");
        if (memchr(s, '#', len) != NULL)
                return refuse(why, why_size, "the address holds a '#' (fragments mean nothing here)");
        const char *e = s + len;
        if (len >= strlen(UNIX_SCHEME) && memcmp(s, UNIX_SCHEME, strlen(UNIX_SCHEME)) == 0) {
                u->unix_socket = true;
                return parse_unix(s + strlen(UNIX_SCHEME), e, u, why, why_size);
        }
        if (len >= strlen(TCP_SCHEME) && memcmp(s, TCP_SCHEME, strlen(TCP_SCHEME)) == 0)
                return parse_tcp(s + strlen(TCP_SCHEME), e, u, why, why_size);
        return refuse(why, why_size,
                      "not a Redis address (redis://HOST[:PORT][/DB] or redis+unix:///SOCKET)");
}

int dl_redis_url_format(const dl_redis_url *u, bool hide_password, char *buf, size_t size)
{
        char cred[3 * 128 + 3 * 256 + 4] = "";
        if (u->has_password || u->has_user) {
                char user[3 * 128 + 1] = "", password[3 * 256 + 1] = "***";
                if (u->has_user && encode_cred(u->user, user, sizeof user) != 0)
                        return -1;
                if (!hide_password && encode_cred(u->password, password, sizeof password) != 0)
                        return -1;
                snprintf(cred, sizeof cred, "%s:%s@", user, password);
        }
        int n;
        if (u->unix_socket)
                n = snprintf(buf, size, UNIX_SCHEME "%s%s?db=%d&prefix=%s", cred, u->path, u->db, u->prefix);
        else if (strchr(u->host, ':') != NULL)
                n = snprintf(buf, size, TCP_SCHEME "%s[%s]:%d/%d?prefix=%s", cred, u->host, u->port, u->db,
                             u->prefix);
        else
                n = snprintf(buf, size, TCP_SCHEME "%s%s:%d/%d?prefix=%s", cred, u->host, u->port, u->db,
                             u->prefix);
        return n < 0 || (size_t)n >= size ? -1 : n;
}
