/* ratelimit.c - per-address post interval (see ratelimit.h). */
#include "ratelimit.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fileio.h"

/* The key written for an address: at most KEY_MAX printable bytes. */
#define KEY_MAX 64

static void addr_key(const char *addr, char out[KEY_MAX + 1])
{
        size_t i = 0;
        for (; addr && addr[i] && i < KEY_MAX; i++) {
                unsigned char c = (unsigned char)addr[i];
                out[i] = (c > 0x20 && c < 0x7F) ? (char)c : '?';
        }
        if (i == 0)
                out[i++] = '-';
        out[i] = '\0';
}

/* Walk the lines of the file; calls fn for each well-formed entry. */
static void each_entry(const struct buf *b, void (*fn)(void *ctx, const char *key, size_t klen, long long t),
                       void *ctx)
{
        size_t pos = 0;
        while (pos < b->len) {
                const char *nl = memchr(b->data + pos, '\n', b->len - pos);
                size_t end = nl ? (size_t)(nl - b->data) : b->len;
                const char *tab = memchr(b->data + pos, '\t', end - pos);
                if (tab) {
                        size_t ts = (size_t)(tab - b->data) + 1;
                        long long t = 0;
                        int ok = ts < end && end - ts <= 18;
                        for (size_t i = ts; ok && i < end; i++) {
                                if (b->data[i] < '0' || b->data[i] > '9')
                                        ok = 0;
                                else
                                        t = t * 10 + (b->data[i] - '0');
                        }
                        if (ok)
                                fn(ctx, b->data + pos, (size_t)(tab - b->data) - pos, t);
                }
                pos = end + 1;
        }
}

struct check_ctx {
        const char *key;
        long long last;
};

static void check_fn(void *p, const char *key, size_t klen, long long t)
{
        struct check_ctx *c = p;
        if (klen == strlen(c->key) && memcmp(key, c->key, klen) == 0 && t > c->last)
                c->last = t;
}

int ratelimit_check(const char *path, const char *addr, long long now, long interval, long *retry_after,
                    struct board_error *err)
{
        *retry_after = 0;
        if (interval <= 0)
                return 0;
        char key[KEY_MAX + 1];
        addr_key(addr, key);
        struct buf b = BUF_INIT;
        int rc = file_read_all(path, &b, err);
        if (rc < 0) {
                buf_free(&b);
                return -1;
        }
        struct check_ctx c = {key, -1};
        if (rc == 0)
                each_entry(&b, check_fn, &c);
        buf_free(&b);
        if (c.last >= 0 && now - c.last < interval) {
                long wait = (long)(interval - (now - c.last));
                *retry_after = wait > 0 ? wait : 1;
                return 1;
        }
        return 0;
}

int ratelimit_admit(const char *path, const char *addr, long long now, long interval, struct board_error *err)
{
        long wait = 0;
        int rc = ratelimit_check(path, addr, now, interval, &wait, err);
        if (rc == 1) {
                board_fail(err, 429, "You are posting too fast; please wait %ld seconds", wait);
                err->retry_after = (int)wait;
                return -1;
        }
        return rc;
}

/* Rewrite the file without some of its entries: record drops the
 * address's old entry and every entry older than the interval, then adds
 * the new one; forget drops only the address's entry at `then`. */
struct rewrite_ctx {
        const char *key;
        long long now;  /* record */
        long interval;  /* record */
        long long then; /* forget; -1 when recording */
        struct buf *out;
        int dropped;
};

static void rewrite_fn(void *p, const char *key, size_t klen, long long t)
{
        struct rewrite_ctx *c = p;
        int same = klen == strlen(c->key) && memcmp(key, c->key, klen) == 0;
        int drop = c->then >= 0 ? same && t == c->then : same || c->now - t >= c->interval;
        if (drop) {
                c->dropped = 1;
                return;
        }
        buf_append(c->out, key, klen);
        buf_printf(c->out, "\t%lld\n", t);
}

static int rewrite(const char *path, struct rewrite_ctx *c, struct board_error *err)
{
        struct buf old = BUF_INIT, out = BUF_INIT;
        int rc = file_read_all(path, &old, err);
        if (rc < 0 || (rc == 1 && c->then >= 0)) { /* error, or nothing to forget */
                buf_free(&old);
                return rc < 0 ? -1 : 0;
        }
        c->out = &out;
        if (rc == 0)
                each_entry(&old, rewrite_fn, c);
        buf_free(&old);
        if (c->then < 0)
                buf_printf(&out, "%s\t%lld\n", c->key, c->now);
        if (out.oom)
                rc = board_fail(err, 500, "out of memory");
        else if (c->then < 0 || c->dropped)
                rc = file_replace(path, out.data ? out.data : "", out.len, 0644, NULL, err);
        else
                rc = 0;
        buf_free(&out);
        return rc;
}

int ratelimit_record(const char *path, const char *addr, long long now, long interval,
                     struct board_error *err)
{
        if (interval <= 0)
                return 0;
        char key[KEY_MAX + 1];
        addr_key(addr, key);
        struct rewrite_ctx c = {key, now, interval, -1, NULL, 0};
        return rewrite(path, &c, err);
}

int ratelimit_forget(const char *path, const char *addr, long long then, long interval,
                     struct board_error *err)
{
        if (interval <= 0)
                return 0;
        char key[KEY_MAX + 1];
        addr_key(addr, key);
        struct rewrite_ctx c = {key, 0, interval, then, NULL, 0};
        return rewrite(path, &c, err);
}
