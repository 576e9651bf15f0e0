/* deletelimit.c - the failed-delete limit: attempts counted before their
 * password is hashed (see deletelimit.h). */
#include "deletelimit.h"

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "fileio.h"

/* The two keys of a delete: "a ADDRESS" (at most 64 printable bytes) and
 * "m NUMBER". */
static void make_keys(const char *addr, long long no, char akey[72], char mkey[32])
{
        size_t i = 0;
        akey[i++] = 'a';
        akey[i++] = ' ';
        for (size_t k = 0; addr && addr[k] && k < 64; k++) {
                unsigned char c = (unsigned char)addr[k];
                akey[i++] = (c > 0x20 && c < 0x7F) ? (char)c : '?';
        }
        if (i == 2)
                akey[i++] = '-';
        akey[i] = '\0';
        snprintf(mkey, 32, "m %lld", no);
}

/* Each well-formed line: fn(ctx, key, klen, time). */
static void each_line(const struct buf *b, void (*fn)(void *, const char *, size_t, long long), void *ctx)
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

struct count_ctx {
        const char *key;
        long long since; /* count failures after this time */
        long count;
        long long oldest; /* oldest counted attempt */
};

static void count_fn(void *p, const char *key, size_t klen, long long t)
{
        struct count_ctx *c = p;
        if (t > c->since && klen == strlen(c->key) && memcmp(key, c->key, klen) == 0) {
                if (c->count == 0 || t < c->oldest)
                        c->oldest = t;
                c->count++;
        }
}

/* Entries after `since` are kept; one entry of each key in drop[] at
 * `drop_at` is left out (an attempt taken back). */
struct keep_ctx {
        long long since;
        struct buf *out;
        const char *drop[2];
        long long drop_at;
};

static void keep_fn(void *p, const char *key, size_t klen, long long t)
{
        struct keep_ctx *c = p;
        if (t <= c->since)
                return; /* out of the window: dropped */
        for (int i = 0; i < 2; i++)
                if (c->drop[i] != NULL && t == c->drop_at && klen == strlen(c->drop[i]) &&
                    memcmp(key, c->drop[i], klen) == 0) {
                        c->drop[i] = NULL; /* one entry only */
                        return;
                }
        buf_append(c->out, key, klen);
        buf_printf(c->out, "\t%lld\n", t);
}

/* Rewrite the file from `old` (its content; `found` 0 when it was
 * missing) as `k` keeps it, with an attempt of akey and mkey at `add_at`
 * appended when add_at >= 0. */
static int rewrite(const char *path, const struct buf *old, int found, struct keep_ctx *k, const char *akey,
                   const char *mkey, long long add_at, struct board_error *err)
{
        struct buf out = BUF_INIT;
        k->out = &out;
        if (found)
                each_line(old, keep_fn, k);
        if (add_at >= 0)
                buf_printf(&out, "%s\t%lld\n%s\t%lld\n", akey, add_at, mkey, add_at);
        int rc = out.oom ? board_fail(err, 500, "out of memory")
                         : file_replace(path, out.data ? out.data : "", out.len, 0600, NULL, err);
        buf_free(&out);
        return rc;
}

/* Read the file into *b (*found: it exists) and count the attempts of
 * akey and mkey: 1 (429, *retry_after) when either has `max`, 0 when
 * neither, -1 on error. */
static int limit_reached(const char *path, struct buf *b, int *found, const char *akey, const char *mkey,
                         long long now, long max, long window, long *retry_after, struct board_error *err)
{
        int rc = file_read_all(path, b, err);
        if (rc < 0)
                return -1;
        *found = rc == 0;
        struct count_ctx a = {akey, now - window, 0, 0}, m = {mkey, now - window, 0, 0};
        if (*found) {
                each_line(b, count_fn, &a);
                each_line(b, count_fn, &m);
        }
        struct count_ctx *hit = a.count >= max ? &a : m.count >= max ? &m : NULL;
        if (!hit)
                return 0;
        /* Free again once the oldest counted attempt leaves the window. */
        long wait = (long)(hit->oldest + window - now);
        *retry_after = wait > 0 ? wait : 1;
        board_fail(err, 429,
                   hit == &a ? "Too many wrong passwords from your address; please wait %ld seconds"
                             : "Too many wrong passwords for this message; please wait %ld seconds",
                   *retry_after);
        err->retry_after = (int)*retry_after;
        return 1;
}

int deletelimit_check(const char *path, const char *addr, long long no, long long now, long max, long window,
                      long *retry_after, struct board_error *err)
{
        *retry_after = 0;
        if (max <= 0 || window <= 0)
                return 0;
        char akey[72], mkey[32];
        make_keys(addr, no, akey, mkey);
        struct buf b = BUF_INIT;
        int found;
        int rc = limit_reached(path, &b, &found, akey, mkey, now, max, window, retry_after, err);
        buf_free(&b);
        return rc;
}

int deletelimit_reserve(const char *path, const char *addr, long long no, long long now, long max,
                        long window, long *retry_after, struct board_error *err)
{
        *retry_after = 0;
        if (max <= 0 || window <= 0)
                return 0;
        char akey[72], mkey[32];
        make_keys(addr, no, akey, mkey);
        struct buf b = BUF_INIT;
        int found;
        int rc = limit_reached(path, &b, &found, akey, mkey, now, max, window, retry_after, err);
        if (rc == 0) {
                struct keep_ctx k = {now - window, NULL, {NULL, NULL}, 0};
                rc = rewrite(path, &b, found, &k, akey, mkey, now, err) < 0 ? -1 : 0;
        }
        buf_free(&b);
        return rc;
}

int deletelimit_take_back(const char *path, const char *addr, long long no, long long now, long window,
                          struct board_error *err)
{
        if (window <= 0)
                return 0;
        char akey[72], mkey[32];
        make_keys(addr, no, akey, mkey);
        struct buf b = BUF_INIT;
        int rc = file_read_all(path, &b, err);
        if (rc != 0) { /* missing: nothing to take back */
                buf_free(&b);
                return rc < 0 ? -1 : 0;
        }
        struct keep_ctx k = {now - window, NULL, {akey, mkey}, now};
        rc = rewrite(path, &b, 1, &k, akey, mkey, -1, err);
        buf_free(&b);
        return rc;
}
