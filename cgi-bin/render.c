/* render.c - HTML pages (see render.h). */
#include "render.h"

#include <string.h>

#include "json.h"
#include "utf8.h"
#include "validate.h"

void html_escape(struct buf *out, const char *s, size_t len)
{
        /* Runs of bytes that need no change are copied in one append:
         * p[run..i) is such a run. */
        const unsigned char *p = (const unsigned char *)s;
        size_t i = 0, run = 0;
        while (i < len) {
                unsigned char c = p[i];
                const char *rep;
                size_t n = 1;
                if (c >= 0x20 && c < 0x7F) {
                        switch (c) {
                        case '&':
                                rep = "&amp;";
                                break;
                        case '<':
                                rep = "&lt;";
                                break;
                        case '>':
                                rep = "&gt;";
                                break;
                        case '"':
                                rep = "&quot;";
                                break;
                        case '\'':
                                rep = "&#39;";
                                break;
                        default:
                                i++;
                                continue;
                        }
                } else if (c == '\t' || c == '\n' || c == '\r') {
                        i++;
                        continue;
                } else {
                        /* Other control characters and invalid UTF-8 become
                         * U+FFFD; valid non-ASCII characters pass. */
                        uint32_t cp = 0;
                        n = utf8_decode(p + i, len - i, &cp);
                        int control = cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0);
                        if (n != 0 && !control) {
                                i += n;
                                continue;
                        }
                        rep = "\xEF\xBF\xBD";
                        if (n == 0)
                                n = 1;
                }
                buf_append(out, p + run, i - run);
                buf_puts(out, rep);
                i += n;
                run = i;
        }
        buf_append(out, p + run, i - run);
}

static void esc(struct buf *out, const char *s)
{
        html_escape(out, s, strlen(s));
}

/* How the flat log is written, as the page header says it. */
static const char *write_label(enum board_write_method method)
{
        switch (method) {
        case BOARD_WRITE_RENAME:
                return "rename";
        case BOARD_WRITE_INPLACE:
                return "in place";
        default:
                board_bug_unknown("write method", (int)method);
        }
}

/* What a board made to show a failure demonstrates, said on every page
 * of it (a torn board's 500s are its point, not a fault); NULL for a
 * board that locks as it should.  Read from the lock mode's row
 * (lockmode.h) and the write method. */
static const char *demonstrates(const struct board_config *cfg)
{
        if (cfg->store != BOARD_STORE_LOG)
                return NULL;
        const struct board_lock_mode_row *row = board_lock_mode_row(cfg->lock_mode);
        if (cfg->write_method == BOARD_WRITE_INPLACE && row->read == BOARD_LOCK_NOTHING)
                return "This board demonstrates torn reads: it rewrites its message log in place, a piece "
                       "at a time, and its page views read the log without a lock, so a view (or a post) may "
                       "catch it half written and answer 500 \"line N does not parse\". That is what it is "
                       "here to show, not a fault; the same board with a reader-writer lock (lock mode rw) "
                       "never shows a torn log.";
        if (cfg->write_method == BOARD_WRITE_INPLACE)
                return "This board rewrites its message log in place, a piece at a time, to show what a "
                       "reader-writer lock is for: page views take the shared lock and posts the exclusive "
                       "one while they write, so no view ever sees the log half written.";
        if (row->write == BOARD_LOCK_NOTHING)
                return "This board demonstrates lost updates: it takes no lock, so two posts sent at the "
                       "same moment read the same log, and the later write throws the earlier message away "
                       "although both were answered \"stored\".";
        if (row->write_after_read)
                return "This board demonstrates a lock in the wrong place: it locks only around the write, "
                       "so two posts sent at the same moment still read the same old log, and one of the "
                       "messages is lost although both were answered \"stored\".";
        return NULL;
}

static void head(struct buf *out, const struct board_config *cfg, const char *title)
{
        buf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
        esc(out, title);
        if (strcmp(title, cfg->title) != 0) {
                buf_puts(out, " - ");
                esc(out, cfg->title);
        }
        buf_puts(out, "</title>\n<link rel=\"stylesheet\" href=\"/static/style.css\">\n"
                      "<link rel=\"icon\" href=\"/favicon.ico\">\n</head>\n<body>\n"
                      "<header class=\"site\">\n<h1><a href=\"");
        esc(out, cfg->base_path);
        buf_puts(out, "\">");
        esc(out, cfg->title);
        buf_puts(out, "</a></h1>\n<p class=\"mode\">");
        switch (cfg->store) {
        case BOARD_STORE_SQLITE:
                buf_puts(out, "store: sqlite");
                break;
        case BOARD_STORE_LOG:
                buf_printf(out, "store: log, lock mode: %s, write: %s", board_lock_mode_name(cfg->lock_mode),
                           write_label(cfg->write_method));
                break;
        default:
                board_bug_unknown("store", (int)cfg->store);
        }
        buf_puts(out, "</p>\n");
        const char *demo = demonstrates(cfg);
        if (demo) {
                buf_puts(out, "<p class=\"demo\">");
                esc(out, demo);
                buf_puts(out, "</p>\n");
        }
        buf_puts(out, "</header>\n<main>\n");
}

static void foot(struct buf *out)
{
        buf_puts(out, "</main>\n<footer class=\"site\"><p><a href=\"/\">All boards</a></p></footer>\n"
                      "</body>\n</html>\n");
}

static void token_input(struct buf *out, const struct page_args *a)
{
        buf_puts(out, "<input type=\"hidden\" name=\"token\" value=\"");
        struct page_tokens *t = a->tokens;
        if (t && t->count < sizeof t->at / sizeof t->at[0])
                t->at[t->count++] = out->len;
        else if (t)
                t->overflow = true;
        esc(out, a->token);
        buf_puts(out, "\">\n");
}

static void text_value(struct buf *out, const struct lr_text *t)
{
        if (t->ptr)
                html_escape(out, t->ptr, t->len);
}

static void post_form(struct buf *out, const struct page_args *a)
{
        buf_puts(out, "<section class=\"compose\" aria-labelledby=\"post-h\">\n"
                      "<h2 id=\"post-h\">New message</h2>\n<form method=\"post\" action=\"");
        esc(out, a->cfg->base_path);
        buf_puts(out, "post\" accept-charset=\"utf-8\">\n");
        token_input(out, a);
        buf_printf(out,
                   "<p class=\"field\"><label for=\"name\">Name</label>\n"
                   "<input id=\"name\" name=\"name\" maxlength=\"%d\" autocomplete=\"nickname\" "
                   "placeholder=\"" MSG_DEFAULT_NAME "\" value=\"",
                   MSG_NAME_MAX_CHARS);
        text_value(out, &a->name);
        buf_printf(out,
                   "\"></p>\n<p class=\"field\"><label for=\"subject\">Subject</label>\n"
                   "<input id=\"subject\" name=\"subject\" maxlength=\"%d\" value=\"",
                   MSG_SUBJECT_MAX_CHARS);
        text_value(out, &a->subject);
        buf_printf(out,
                   "\"></p>\n<p class=\"field\"><label for=\"body\">Message</label>\n"
                   "<textarea id=\"body\" name=\"body\" rows=\"6\" maxlength=\"%d\" required>\n",
                   MSG_BODY_MAX_CHARS);
        text_value(out, &a->body);
        buf_printf(out,
                   "</textarea></p>\n<p class=\"field\"><label for=\"password\">Password for deleting "
                   "(optional)</label>\n<input id=\"password\" name=\"password\" type=\"password\" "
                   "maxlength=\"%d\" autocomplete=\"new-password\"></p>\n"
                   "<p><button type=\"submit\">Post</button></p>\n</form>\n</section>\n",
                   MSG_PASSWORD_MAX_CHARS);
}

static void delete_form(struct buf *out, const struct page_args *a)
{
        buf_puts(out, "<section class=\"delete\" aria-labelledby=\"del-h\">\n"
                      "<h2 id=\"del-h\">Delete a message</h2>\n<form method=\"post\" action=\"");
        esc(out, a->cfg->base_path);
        buf_puts(out, "delete\">\n");
        token_input(out, a);
        buf_printf(out,
                   "<p class=\"field\"><label for=\"del-no\">Message number</label>\n"
                   "<input id=\"del-no\" name=\"no\" inputmode=\"numeric\" pattern=\"[0-9]+\" required></p>\n"
                   "<p class=\"field\"><label for=\"del-pw\">Password</label>\n"
                   "<input id=\"del-pw\" name=\"password\" type=\"password\" maxlength=\"%d\" "
                   "autocomplete=\"current-password\" required></p>\n"
                   "<p><button type=\"submit\">Delete</button></p>\n</form>\n</section>\n",
                   MSG_PASSWORD_MAX_CHARS);
}

static void message(struct buf *out, const struct logrecord *m)
{
        char iso[32];
        format_time_iso(m->time, iso);
        char shown[32];
        memcpy(shown, iso, sizeof shown);
        if (strlen(shown) == 20) { /* 2026-11-22T10:00:00Z -> 2026-11-22 10:00:00 UTC */
                shown[10] = ' ';
                shown[19] = '\0';
                strcat(shown, " UTC");
        }
        buf_puts(out, "<article class=\"msg\" id=\"m");
        buf_put_ll(out, m->no);
        buf_puts(out, "\">\n<header>\n<h3><span class=\"no\">");
        buf_put_ll(out, m->no);
        buf_puts(out, "</span> ");
        if (m->subject.len)
                html_escape(out, m->subject.ptr, m->subject.len);
        else
                buf_puts(out, "<span class=\"nosubject\">(no subject)</span>");
        buf_puts(out, "</h3>\n<p class=\"meta\"><span class=\"name\">");
        html_escape(out, m->name.ptr ? m->name.ptr : "", m->name.len);
        buf_puts(out, "</span> <time datetime=\"");
        buf_puts(out, iso);
        buf_puts(out, "\">");
        buf_puts(out, shown);
        buf_puts(out, "</time></p>\n</header>\n<div class=\"body\">");
        html_escape(out, m->body.ptr ? m->body.ptr : "", m->body.len);
        buf_puts(out, "</div>\n</article>\n");
}

static void pager(struct buf *out, const struct page_args *a, long pages)
{
        if (pages <= 1)
                return;
        buf_puts(out, "<nav class=\"pager\" aria-label=\"Pages\">\n<ul>\n");
        struct buf base = BUF_INIT; /* escaped once for all the links */
        esc(&base, a->cfg->base_path);
        for (long p = 1; p <= pages; p++) {
                if (p == a->page) {
                        buf_puts(out, "<li><span aria-current=\"page\">");
                        buf_put_ll(out, p);
                        buf_puts(out, "</span></li>\n");
                } else {
                        buf_puts(out, "<li><a href=\"");
                        buf_append(out, base.data ? base.data : "", base.len);
                        buf_puts(out, "?page=");
                        buf_put_ll(out, p);
                        buf_puts(out, "\">");
                        buf_put_ll(out, p);
                        buf_puts(out, "</a></li>\n");
                }
        }
        buf_free(&base);
        buf_puts(out, "</ul>\n</nav>\n");
}

void render_page(struct buf *out, const struct page_args *a)
{
        size_t start = out->len;
        if (a->tokens)
                *a->tokens = (struct page_tokens){{0, 0}, 0, false};
        head(out, a->cfg, a->cfg->title);
        if (a->error) {
                buf_puts(out, "<div class=\"error\" role=\"alert\"><p>");
                esc(out, a->error);
                buf_puts(out, "</p></div>\n");
        }
        post_form(out, a);
        buf_puts(out, "<section class=\"messages\" aria-labelledby=\"msgs-h\">\n"
                      "<h2 id=\"msgs-h\">Messages</h2>\n");
        if (!a->list) {
                buf_puts(out, "<p>The messages cannot be shown right now.</p>\n");
        } else if (a->list->count == 0) {
                buf_puts(out, "<p>No messages yet.</p>\n");
        } else {
                size_t per = (size_t)a->cfg->page_size;
                long pages = (long)((a->list->count + per - 1) / per);
                size_t skip = (size_t)(a->page - 1) * per;
                if (a->page > pages) {
                        buf_puts(out, "<p>There is no such page.</p>\n");
                } else {
                        /* newest first */
                        size_t shown = 0;
                        for (size_t i = a->list->count - skip; i > 0 && shown < per; i--, shown++)
                                message(out, &a->list->items[i - 1]);
                }
                pager(out, a, pages);
        }
        buf_puts(out, "</section>\n");
        delete_form(out, a);
        foot(out);
        for (size_t i = 0; a->tokens && i < a->tokens->count; i++)
                a->tokens->at[i] -= start;
}

void render_message(struct buf *out, const struct board_config *cfg, const char *heading, const char *msg)
{
        head(out, cfg, heading);
        buf_puts(out, "<section class=\"notice\">\n<h2>");
        esc(out, heading);
        buf_puts(out, "</h2>\n<p>");
        esc(out, msg);
        buf_puts(out, "</p>\n<p><a href=\"");
        esc(out, cfg->base_path);
        buf_puts(out, "\">Back to the board</a></p>\n</section>\n");
        foot(out);
}
