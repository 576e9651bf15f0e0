/* redis_url.c - parsing and printing the space string of a lock space on a
 * Redis server (the grammar is in redis_url.h).  Every part is checked
 * where it is read, what must go together once all are, and the first
 * thing wrong is named in `why`; nothing of the password ever goes into
 * it.  dl_redis_url_format() prints the
 * canonical form, which parses back to the same struct (the fuzz target
 * checks it). */
#include "redis_url.h"
#include "server.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define TCP_SCHEME  "redis://"
#define TLS_SCHEME  "rediss://"
#define UNIX_SCHEME "redis+unix://"

bool dl_redis_url_is_redis(const char *space)
{
        return space != NULL && (strncmp(space, TCP_SCHEME, strlen(TCP_SCHEME)) == 0 ||
                                 strncmp(space, TLS_SCHEME, strlen(TLS_SCHEME)) == 0 ||
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

/* A file named by a parameter may hold any byte but NUL: these go
 * unencoded, every other one as %XX. */
static bool file_plain(unsigned char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               strchr("-._~/", c) != NULL;
}

static bool env_char(char c, bool first)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
               (!first && c >= '0' && c <= '9');
}

/* A value of the query may be written with any printable ASCII byte
 * unencoded but '&', '#' and '?' (which end it) and '%' (which encodes). */
static bool query_plain(unsigned char c)
{
        return c > ' ' && c < 127 && c != '&' && c != '#' && c != '?';
}

/* The parameters that name a file: where each goes, and whether it is
 * for TLS only. */
static char *file_param(dl_redis_url *u, const char *k, size_t kl, bool *tls_only)
{
        static const struct {
                const char *name;
                size_t offset;
                bool tls_only;
        } files[] = {
            {"password_file", offsetof(dl_redis_url, password_file), false},
            {"cacert", offsetof(dl_redis_url, cacert), true},
            {"cert", offsetof(dl_redis_url, cert), true},
            {"key", offsetof(dl_redis_url, key), true},
        };
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
                if (strlen(files[i].name) == kl && memcmp(k, files[i].name, kl) == 0) {
                        *tls_only = files[i].tls_only;
                        return (char *)u + files[i].offset;
                }
        return NULL;
}

#define KNOWN_TCP  "prefix, password_file, password_env, and for rediss:// cacert, cert, key"
#define KNOWN_UNIX "db, prefix, password_file, password_env"

/* One "NAME=VALUE" of the query, [s, end), into u. */
static int parse_param(const char *s, const char *end, dl_redis_url *u, char *why, size_t size)
{
        const char *eq = memchr(s, '=', (size_t)(end - s));
        if (eq == NULL)
                return refuse(why, size, "query parameters are NAME=VALUE joined by '&'");
        size_t kl = (size_t)(eq - s);
        const char *v = eq + 1;
        size_t vl = (size_t)(end - v);
        bool tls_only;
        char *file = file_param(u, s, kl, &tls_only);
        if (file != NULL) {
                if (tls_only && !u->tls)
                        return refuse(why, size,
                                      "cacert, cert and key are for a TLS connection: rediss://HOST...");
                if (file[0] != '\0')
                        return refuse(why, size, "a file parameter is given twice");
                if (v == end || dl_url_decode(v, end, query_plain, file, DL_REDIS_FILE_MAX + 1) != 0)
                        return refuse(why, size,
                                      "a file name must be 1-255 bytes, with spaces, control characters, "
                                      "'&', '#', '?' and non-ASCII bytes written %XX, and no %00");
        } else if (kl == 12 && memcmp(s, "password_env", 12) == 0) {
                if (u->password_env[0] != '\0')
                        return refuse(why, size, "password_env is given twice");
                bool good = vl >= 1 && vl <= DL_REDIS_ENV_MAX;
                for (size_t i = 0; good && i < vl; i++)
                        good = env_char(v[i], i == 0);
                if (!good)
                        return refuse(why, size,
                                      "password_env must name an environment variable: 1-63 characters of "
                                      "A-Z a-z 0-9 _, not starting with a digit");
                memcpy(u->password_env, v, vl);
                u->password_env[vl] = '\0';
        } else if (kl == 6 && memcmp(s, "prefix", 6) == 0) {
                if (u->prefix[0] != '\0')
                        return refuse(why, size, "prefix is given twice");
                bool good = vl >= 1 && vl <= DL_REDIS_PREFIX_MAX;
                for (size_t i = 0; good && i < vl; i++)
                        good = prefix_char(v[i]);
                if (!good)
                        return refuse(why, size, "the prefix must be 1-64 characters of A-Z a-z 0-9 . _ - :");
                memcpy(u->prefix, v, vl);
                u->prefix[vl] = '\0';
        } else if (kl == 2 && memcmp(s, "db", 2) == 0) {
                if (!u->unix_socket)
                        return refuse(why, size, "the database number of redis:// goes in the path (/N)");
                if (u->db >= 0)
                        return refuse(why, size, "db is given twice");
                long db;
                if (parse_number(v, end, DL_REDIS_DB_MAX, &db) != 0)
                        return refuse(why, size, "db must be a database number, 0 to 999999");
                u->db = (int)db;
        } else {
                return refuse(why, size,
                              u->unix_socket ? "unknown query parameter (known: " KNOWN_UNIX ")"
                                             : "unknown query parameter (known: " KNOWN_TCP ")");
        }
        return 0;
}

/* The query "k=v&k=v" of [s, e).  u->prefix is empty and u->db -1 (for a
 * socket) until given: the caller puts the defaults in after. */
static int parse_query(const char *s, const char *e, dl_redis_url *u, char *why, size_t size)
{
        while (s < e) {
                const char *amp = memchr(s, '&', (size_t)(e - s));
                const char *end = amp ? amp : e;
                if (parse_param(s, end, u, why, size) != 0)
                        return -1;
                s = amp ? amp + 1 : e;
                if (amp && s == e)
                        return refuse(why, size, "the query ends with '&'");
        }
        return 0;
}

/* [USER[:PASSWORD]@] at the start of [*s, authority_end): consumed when
 * present. */
static int parse_userinfo(const char **s, const char *authority_end, dl_redis_url *u, char *why, size_t size)
{
        const char *at = NULL;
        for (const char *p = *s; p < authority_end; p++)
                if (*p == '@')
                        at = p; /* the last one: a password may not hold '@' unencoded anyway */
        if (at == NULL)
                return 0;
        const char *colon = memchr(*s, ':', (size_t)(at - *s));
        const char *user_end = colon ? colon : at;
        if (user_end > *s) {
                if (dl_url_decode(*s, user_end, cred_plain, u->user, sizeof u->user) != 0)
                        return refuse(
                            why, size,
                            "the user name is not valid (at most 127 bytes; write reserved characters "
                            "as %XX)");
                u->has_user = true;
        } else if (colon == NULL) {
                return refuse(why, size,
                              "credentials are USER@, USER:PASSWORD@ or :PASSWORD@ (nothing before '@')");
        }
        if (colon != NULL) {
                if (dl_url_decode(colon + 1, at, cred_plain, u->password, sizeof u->password) != 0)
                        return refuse(why, size,
                                      "the password is not valid (at most 255 bytes; write reserved "
                                      "characters as %XX)");
                u->has_password = u->has_user || u->password[0] != '\0';
        }
        *s = at + 1;
        return 0;
}

static int parse_tcp(const char *s, const char *e, dl_redis_url *u, char *why, size_t size)
{
        const char *q = memchr(s, '?', (size_t)(e - s));
        const char *rest_end = q ? q : e;
        const char *slash = memchr(s, '/', (size_t)(rest_end - s));
        const char *authority_end = slash ? slash : rest_end;
        if (parse_userinfo(&s, authority_end, u, why, size) != 0)
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
                        if (dl_url_hex_value(*p) < 0 && *p != ':' && *p != '.')
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
        if (parse_userinfo(&s, slash, u, why, size) != 0)
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

/* What parts must go together, once every part is read. */
static int check_whole(dl_redis_url *u, char *why, size_t size)
{
        if (u->prefix[0] == '\0')
                strcpy(u->prefix, DL_REDIS_DEFAULT_PREFIX);
        if (u->db < 0)
                u->db = 0;
        int sources = u->has_password + (u->password_file[0] != '\0') + (u->password_env[0] != '\0');
        if (sources > 1)
                return refuse(why, size,
                              "the password is given twice: give it once, in the address, by password_file "
                              "or by password_env");
        if (u->has_user && sources == 0)
                return refuse(why, size,
                              "a user needs a password: USER:PASSWORD@, or USER@ with password_file=FILE or "
                              "password_env=NAME");
        if ((u->cert[0] != '\0') != (u->key[0] != '\0'))
                return refuse(why, size, "a client certificate needs both cert=FILE and key=FILE");
        return 0;
}

int dl_redis_url_parse(const char *s, size_t len, dl_redis_url *u, char *why, size_t why_size)
{
        memset(u, 0, sizeof *u);
        u->port = DL_REDIS_DEFAULT_PORT;
        if (memchr(s, '\0', len) != NULL)
                return refuse(why, why_size, "the address holds a NUL byte");
        if (memchr(s, '#', len) != NULL)
                return refuse(why, why_size, "the address holds a '#' (fragments mean nothing here)");
        const char *e = s + len;
        int rc;
        if (len >= strlen(UNIX_SCHEME) && memcmp(s, UNIX_SCHEME, strlen(UNIX_SCHEME)) == 0) {
                u->unix_socket = true;
                u->db = -1; /* until the query gives it */
                rc = parse_unix(s + strlen(UNIX_SCHEME), e, u, why, why_size);
        } else if (len >= strlen(TCP_SCHEME) && memcmp(s, TCP_SCHEME, strlen(TCP_SCHEME)) == 0) {
                rc = parse_tcp(s + strlen(TCP_SCHEME), e, u, why, why_size);
        } else if (len >= strlen(TLS_SCHEME) && memcmp(s, TLS_SCHEME, strlen(TLS_SCHEME)) == 0) {
                u->tls = true;
                rc = parse_tcp(s + strlen(TLS_SCHEME), e, u, why, why_size);
        } else {
                return refuse(why, why_size,
                              "not a Redis address (redis://HOST[:PORT][/DB], rediss://... for TLS, or "
                              "redis+unix:///SOCKET)");
        }
        return rc != 0 ? rc : check_whole(u, why, why_size);
}

bool dl_redis_url_logs_in(const dl_redis_url *u)
{
        return u->has_password || u->password_file[0] != '\0' || u->password_env[0] != '\0';
}

/* The %-encoded file names and the environment variable, as the query's
 * tail ("&password_file=..."), into buf.  -1 when it does not fit. */
static int format_params(const dl_redis_url *u, char *buf, size_t size)
{
        const struct {
                const char *name, *value;
        } files[] = {
            {"password_file", u->password_file}, {"cacert", u->cacert}, {"cert", u->cert}, {"key", u->key}};
        size_t n = 0;
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
                if (files[i].value[0] == '\0')
                        continue;
                int k = snprintf(buf + n, size - n, "&%s=", files[i].name);
                if (k < 0 || (size_t)k >= size - n)
                        return -1;
                n += (size_t)k;
                k = dl_url_encode(files[i].value, file_plain, buf + n, size - n);
                if (k < 0)
                        return -1;
                n += (size_t)k;
        }
        if (u->password_env[0] != '\0') {
                int k = snprintf(buf + n, size - n, "&password_env=%s", u->password_env);
                if (k < 0 || (size_t)k >= size - n)
                        return -1;
        }
        return 0;
}

int dl_redis_url_format(const dl_redis_url *u, bool hide_password, char *buf, size_t size)
{
        char cred[3 * DL_REDIS_USER_MAX + 3 * DL_REDIS_PASSWORD_MAX + 4] = "";
        if (u->has_password || u->has_user) {
                char user[3 * DL_REDIS_USER_MAX + 1] = "", password[3 * DL_REDIS_PASSWORD_MAX + 1] = "***";
                if (u->has_user && dl_url_encode(u->user, cred_plain, user, sizeof user) < 0)
                        return -1;
                if (!hide_password && dl_url_encode(u->password, cred_plain, password, sizeof password) < 0)
                        return -1;
                if (u->has_password)
                        snprintf(cred, sizeof cred, "%s:%s@", user, password);
                else
                        snprintf(cred, sizeof cred, "%s@", user);
        }
        char params[4 * (16 + 3 * DL_REDIS_FILE_MAX) + 16 + DL_REDIS_ENV_MAX + 1] = "";
        if (format_params(u, params, sizeof params) != 0)
                return -1;
        int n;
        if (u->unix_socket)
                n = snprintf(buf, size, UNIX_SCHEME "%s%s?db=%d&prefix=%s%s", cred, u->path, u->db, u->prefix,
                             params);
        else if (strchr(u->host, ':') != NULL)
                n = snprintf(buf, size, "%s%s[%s]:%d/%d?prefix=%s%s", u->tls ? TLS_SCHEME : TCP_SCHEME, cred,
                             u->host, u->port, u->db, u->prefix, params);
        else
                n = snprintf(buf, size, "%s%s%s:%d/%d?prefix=%s%s", u->tls ? TLS_SCHEME : TCP_SCHEME, cred,
                             u->host, u->port, u->db, u->prefix, params);
        return n < 0 || (size_t)n >= size ? -1 : n;
}
