/* render.h - HTML pages.  Everything written from data is escaped. */
#ifndef BOARD_RENDER_H
#define BOARD_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "config.h"
#include "logrecord.h"
#include "msglist.h"

/* Append s[0..len) with & < > " ' escaped; invalid UTF-8 and control
 * characters other than TAB, LF and CR become U+FFFD. */
void html_escape(struct buf *out, const char *s, size_t len);

/* Where a rendered page holds its CSRF form token (offsets from the start
 * of the page, each the first of CSRF_TOKEN_LEN bytes); `overflow` when it
 * holds it more often than `at` has room for. */
struct page_tokens {
        size_t at[2];
        size_t count;
        bool overflow;
};

struct page_args {
        const struct board_config *cfg;
        const struct msglist *list;         /* NULL when the messages could not be read */
        long page;                          /* 1.. */
        const char *token;                  /* CSRF form token */
        const char *error;                  /* shown above the form, or NULL */
        struct lr_text name, subject, body; /* what to put back in the form */
        struct page_tokens *tokens;         /* when not NULL: where render_page put the token */
};

/* The board: heading, post form, one page of messages newest first, pager,
 * delete form.  With a->tokens, also where in it the token was written. */
void render_page(struct buf *out, const struct page_args *a);

/* A short page with a heading, a message and a link back to the board. */
void render_message(struct buf *out, const struct board_config *cfg, const char *heading,
                    const char *message);

#endif
