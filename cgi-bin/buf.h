/* buf.h - growable byte buffer used to build pages, headers and files.
 * Out of memory is sticky: once an append fails, buf.oom stays set and
 * later appends do nothing, so callers check once at the end. */
#ifndef BOARD_BUF_H
#define BOARD_BUF_H

#include <stddef.h>

struct buf {
        char *data; /* NUL-terminated when not NULL */
        size_t len;
        size_t cap;
        int oom;
};

#define BUF_INIT                                                                                             \
        {                                                                                                    \
                NULL, 0, 0, 0                                                                                \
        }

int buf_append(struct buf *b, const void *data, size_t len);
int buf_puts(struct buf *b, const char *s);
int buf_putc(struct buf *b, char c);
/* Append a decimal number (no printf on the hot rendering path). */
int buf_put_ll(struct buf *b, long long v);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_reset(struct buf *b);
void buf_free(struct buf *b);

#endif
