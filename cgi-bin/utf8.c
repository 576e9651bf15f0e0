/* utf8.c - UTF-8 validation and decoding (see utf8.h). */
#include "utf8.h"

size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
        if (len == 0)
                return 0;
        unsigned c = s[0];
        if (c < 0x80) {
                *cp = c;
                return 1;
        }
        size_t n;
        uint32_t v, min;
        if (c >= 0xC2 && c <= 0xDF) {
                n = 2;
                v = c & 0x1F;
                min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
                n = 3;
                v = c & 0x0F;
                min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
                n = 4;
                v = c & 0x07;
                min = 0x10000;
        } else {
                return 0;
        }
        if (len < n)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xC0) != 0x80)
                        return 0;
                v = (v << 6) | (s[i] & 0x3F);
        }
        if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
                return 0;
        *cp = v;
        return n;
}

int utf8_valid(const char *s, size_t len)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t i = 0;
        while (i < len) {
                uint32_t cp;
                size_t n = utf8_decode(p + i, len - i, &cp);
                if (n == 0)
                        return 0;
                i += n;
        }
        return 1;
}

int utf8_check_text(const char *s, size_t len, int multiline, size_t *bad_pos)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t i = 0;
        while (i < len) {
                uint32_t cp;
                size_t n = utf8_decode(p + i, len - i, &cp);
                if (n == 0) {
                        if (bad_pos)
                                *bad_pos = i;
                        return UTF8_EINVALID;
                }
                int control = cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0);
                if (control && !(multiline && (cp == '\t' || cp == '\n' || cp == '\r'))) {
                        if (bad_pos)
                                *bad_pos = i;
                        return UTF8_ECONTROL;
                }
                i += n;
        }
        return UTF8_OK;
}

size_t utf8_count(const char *s, size_t len)
{
        size_t n = 0;
        for (size_t i = 0; i < len; i++)
                n += ((unsigned char)s[i] & 0xC0) != 0x80;
        return n;
}
