/* url_text.c - the %-encoding of a value in a lock server's address
 * (server.h): a credential, a file name, a user name.  Which bytes may
 * stand unencoded is each grammar's own (redis_url.h, etcd_url.h): the
 * parser passes its rule in, so one decoder and one encoder serve every
 * scheme; and an address as a message shows it (dl_url_shown).  Pure: no
 * allocation, nothing read, nothing of a value ever in a message (the
 * callers word their errors). */
#include "server.h"

#include <stdio.h>
#include <string.h>

int dl_url_hex_value(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int dl_url_decode(const char *s, const char *e, dl_url_plain *plain, char *out, size_t size)
{
        size_t n = 0;
        while (s < e) {
                unsigned char c = (unsigned char)*s;
                if (c == '%') {
                        int hi = e - s >= 3 ? dl_url_hex_value(s[1]) : -1;
                        int lo = e - s >= 3 ? dl_url_hex_value(s[2]) : -1;
                        if (hi < 0 || lo < 0 || hi * 16 + lo == 0)
                                return -1;
                        c = (unsigned char)(hi * 16 + lo);
                        s += 3;
                } else if (plain(c)) {
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

int dl_url_encode(const char *in, dl_url_plain *plain, char *out, size_t size)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t n = 0;
        for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
                if (n + 4 > size)
                        return -1;
                if (plain(*p)) {
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
        return (int)n;
}

void dl_url_shown(const char *space, char *out, size_t size)
{
        const char *rest = strstr(space, "://");
        if (rest == NULL) {
                snprintf(out, size, "%.200s", space);
                return;
        }
        int scheme = rest - space > 40 ? 40 : (int)(rest - space);
        rest += 3;
        const char *at = strrchr(rest, '@');
        if (strchr(rest, '?') != NULL) /* a value there may be a password, '@' or '?' in it or not */
                snprintf(out, size, "%.*s://...", scheme, space);
        else if (at != NULL)
                snprintf(out, size, "%.*s://***%.200s", scheme, space, at);
        else
                snprintf(out, size, "%.*s://%.200s", scheme, space, rest);
}
