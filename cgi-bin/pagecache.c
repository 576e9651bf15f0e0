/* pagecache.c - rendered pages kept per list generation (see pagecache.h). */
#include "pagecache.h"

#include <string.h>

#include "csrf.h"

/* How much slot i is worth keeping: 0 free, 1 another generation's page,
 * 2 a page of `generation`. */
static int rank(const struct page_cache *c, size_t i, unsigned long long generation)
{
        if (!c->slot[i].used)
                return 0;
        return c->slot[i].generation == generation ? 2 : 1;
}

int page_cache_get(struct page_cache *c, unsigned long long generation, long page, const char *token,
                   struct buf *out)
{
        if (strlen(token) != CSRF_TOKEN_LEN)
                return 0;
        for (size_t i = 0; i < PAGE_CACHE_SLOTS; i++) {
                if (!c->slot[i].used || c->slot[i].generation != generation || c->slot[i].page != page)
                        continue;
                size_t start = out->len;
                if (buf_append(out, c->slot[i].html.data, c->slot[i].html.len) < 0)
                        return 0;
                for (size_t t = 0; t < c->slot[i].tokens.count; t++)
                        memcpy(out->data + start + c->slot[i].tokens.at[t], token, CSRF_TOKEN_LEN);
                c->slot[i].last_use = ++c->clock;
                return 1;
        }
        return 0;
}

void page_cache_put(struct page_cache *c, unsigned long long generation, long page, const struct buf *html,
                    const struct page_tokens *tokens)
{
        if (html->oom || !html->data || tokens->overflow)
                return;
        for (size_t t = 0; t < tokens->count; t++)
                if (tokens->at[t] + CSRF_TOKEN_LEN > html->len)
                        return;
        /* The slot: a free one, else one of another generation, else the
         * least recently used. */
        size_t pick = 0;
        for (size_t i = 1; i < PAGE_CACHE_SLOTS; i++) {
                int ri = rank(c, i, generation), rp = rank(c, pick, generation);
                if (ri < rp || (ri == rp && c->slot[i].last_use < c->slot[pick].last_use))
                        pick = i;
        }
        struct buf *b = &c->slot[pick].html;
        buf_reset(b);
        b->oom = 0;
        if (buf_append(b, html->data, html->len) < 0) {
                buf_free(b);
                c->slot[pick].used = false;
                return;
        }
        c->slot[pick].used = true;
        c->slot[pick].generation = generation;
        c->slot[pick].page = page;
        c->slot[pick].tokens = *tokens;
        c->slot[pick].last_use = ++c->clock;
}

void page_cache_free(struct page_cache *c)
{
        for (size_t i = 0; i < PAGE_CACHE_SLOTS; i++) {
                buf_free(&c->slot[i].html);
                c->slot[i].used = false;
        }
}
