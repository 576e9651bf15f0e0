/* buf.c - growable byte buffer (see buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int buf_reserve(struct buf *b, size_t extra)
{
        if (b->oom)
                return -1;
        if (extra > (size_t)-1 / 2 - b->len) {
                b->oom = 1;
                return -1;
        }
        size_t need = b->len + extra + 1;
        if (need <= b->cap)
                return 0;
        size_t cap = b->cap ? b->cap : 64;
        while (cap < need)
                cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) {
                b->oom = 1;
                return -1;
        }
        b->data = p;
        b->cap = cap;
        return 0;
}

int buf_append(struct buf *b, const void *data, size_t len)
{
        if (buf_reserve(b, len) < 0)
                return -1;
        if (len)
                memcpy(b->data + b->len, data, len);
        b->len += len;
        b->data[b->len] = '\0';
        return 0;
}

int buf_puts(struct buf *b, const char *s)
{
        return buf_append(b, s, strlen(s));
}

int buf_putc(struct buf *b, char c)
{
        return buf_append(b, &c, 1);
}

int buf_put_ll(struct buf *b, long long v)
{
        char digits[24];
        size_t n = sizeof digits;
        unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
        do {
                digits[--n] = (char)('0' + u % 10);
                u /= 10;
        } while (u != 0);
        if (v < 0)
                digits[--n] = '-';
        return buf_append(b, digits + n, sizeof digits - n);
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
        /* Format straight into the free space; only output longer than
         * that is formatted a second time, after growing the buffer. */
        if (buf_reserve(b, 128) < 0)
                return -1;
        size_t room = b->cap - b->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->data + b->len, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
                b->data[b->len] = '\0';
                b->oom = 1;
                return -1;
        }
        if ((size_t)n >= room) {
                if (buf_reserve(b, (size_t)n) < 0)
                        return -1;
                va_start(ap, fmt);
                vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
                va_end(ap);
        }
        b->len += (size_t)n;
        return 0;
}

void buf_reset(struct buf *b)
{
        b->len = 0;
        if (b->data)
                b->data[0] = '\0';
}

void buf_free(struct buf *b)
{
        free(b->data);
        b->data = NULL;
        b->len = b->cap = 0;
        b->oom = 0;
}
