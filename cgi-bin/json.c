/* json.c - JSON output (see json.h). */
#include "json.h"

#include <time.h>

#include "utf8.h"

void json_string(struct buf *out, const char *s, size_t len)
{
        const unsigned char *p = (const unsigned char *)s;
        buf_putc(out, '"');
        size_t i = 0;
        while (i < len) {
                unsigned char c = p[i];
                if (c == '"' || c == '\\') {
                        buf_putc(out, '\\');
                        buf_putc(out, (char)c);
                        i++;
                } else if (c == '\n') {
                        buf_puts(out, "\\n");
                        i++;
                } else if (c == '\r') {
                        buf_puts(out, "\\r");
                        i++;
                } else if (c == '\t') {
                        buf_puts(out, "\\t");
                        i++;
                } else if (c < 0x20 || c == 0x7F) {
                        buf_printf(out, "\\u%04x", c);
                        i++;
                } else if (c < 0x80) {
                        buf_putc(out, (char)c);
                        i++;
                } else {
                        uint32_t cp;
                        size_t n = utf8_decode(p + i, len - i, &cp);
                        if (n == 0) {
                                buf_puts(out, "\\ufffd");
                                i++;
                        } else {
                                buf_append(out, p + i, n);
                                i += n;
                        }
                }
        }
        buf_putc(out, '"');
}

void format_time_iso(long long t, char out[32])
{
        time_t tt = (time_t)t;
        struct tm tm;
        if (!gmtime_r(&tt, &tm) || strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
                out[0] = '\0';
        }
}

void json_messages(struct buf *out, const struct msglist *l, const struct json_page *page)
{
        /* [lo, hi): the messages numbered above since and below before. */
        size_t lo = 0, hi = l->count;
        while (lo < hi && l->items[lo].no <= page->since)
                lo++;
        while (hi > lo && page->before > 0 && l->items[hi - 1].no >= page->before)
                hi--;
        if (hi - lo > page->limit) {
                if (page->has_since)
                        hi = lo + page->limit;
                else
                        lo = hi - page->limit;
        }
        buf_puts(out, "{\"messages\":[");
        int first = 1;
        for (size_t i = lo; i < hi; i++) {
                const struct logrecord *m = &l->items[i];
                char when[32];
                format_time_iso(m->time, when);
                buf_printf(out, "%s{\"no\":%lld,\"name\":", first ? "" : ",", m->no);
                json_string(out, m->name.ptr, m->name.len);
                buf_puts(out, ",\"subject\":");
                json_string(out, m->subject.ptr, m->subject.len);
                buf_puts(out, ",\"body\":");
                json_string(out, m->body.ptr, m->body.len);
                buf_printf(out, ",\"time\":\"%s\"}", when);
                first = 0;
        }
        buf_puts(out, "]}\n");
}
