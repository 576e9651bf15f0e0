/* pagecache.h - the board pages this process rendered last, kept for the
 * next views of the same list (render.h, board.h).
 *
 * A page is kept under the generation of the list it was rendered from
 * (board_view(): the same number means the very same, unchanged list)
 * and its page number; it is rendered again as soon as a view reports
 * another generation.  The only part of a page that differs between
 * visitors, the CSRF form token, is written over at the places the
 * rendering recorded, so a kept page carries the token of whoever asks
 * for it.  Only the plain page (status 200, no error, nothing typed back)
 * is kept. */
#ifndef BOARD_PAGECACHE_H
#define BOARD_PAGECACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "render.h"

#define PAGE_CACHE_SLOTS 4

struct page_cache {
        struct {
                bool used;
                unsigned long long generation;
                long page;
                unsigned long long last_use;
                struct buf html;
                struct page_tokens tokens;
        } slot[PAGE_CACHE_SLOTS];
        unsigned long long clock;
};

/* Page `page` of list `generation`, with `token` in it, appended to *out:
 * 1; or 0 when it is not kept (nothing appended). */
int page_cache_get(struct page_cache *c, unsigned long long generation, long page, const char *token,
                   struct buf *out);

/* Keep `html` (a copy), the page `page` of list `generation`, with its
 * token at `tokens`; pages of other generations go first. */
void page_cache_put(struct page_cache *c, unsigned long long generation, long page, const struct buf *html,
                    const struct page_tokens *tokens);

void page_cache_free(struct page_cache *c);

#endif
