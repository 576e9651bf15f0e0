/* app.c - request handling: configuration lookup, routing, CSRF, forms,
 * status codes and the response (see app.h). */
#include "app.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "board.h"
#include "cookie.h"
#include "errlog.h"
#include "fileio.h"
#include "form.h"
#include "json.h"
#include "password.h"
#include "render.h"
#include "validate.h"

#define MAX_FORM_FIELDS 32
#define MAX_COOKIES     64

int app_load(struct app *app, const char *conf_path, struct app_board **out, struct board_error *err)
{
        for (struct app_board *b = app->boards; b; b = b->next)
                if (strcmp(b->conf_path, conf_path) == 0) {
                        *out = b;
                        return 0;
                }
        struct app_board *b = calloc(1, sizeof *b);
        if (!b)
                return board_fail(err, 500, "out of memory");
        b->conf_path = strdup(conf_path);
        if (!b->conf_path) {
                free(b);
                return board_fail(err, 500, "out of memory");
        }
        if (config_load(conf_path, &b->cfg, err) < 0 || ensure_dir(b->cfg.data_dir, err) < 0 ||
            config_check_storage(conf_path, &b->cfg, err) < 0 ||
            csrf_load_secret(b->cfg.data_dir, b->secret, err) < 0) {
                config_free(&b->cfg);
                free(b->conf_path);
                free(b);
                return -1;
        }
        board_init(&b->board, &b->cfg);
        if (board_check_store(&b->board, err) < 0) {
                config_free(&b->cfg);
                free(b->conf_path);
                free(b);
                return -1;
        }
        b->next = app->boards;
        app->boards = b;
        *out = b;
        return 0;
}

void app_free(struct app *app)
{
        while (app->boards) {
                struct app_board *b = app->boards;
                app->boards = b->next;
                board_close(&b->board);
                config_free(&b->cfg);
                free(b->conf_path);
                memset(b->secret, 0, sizeof b->secret);
                memset(&b->cookies, 0, sizeof b->cookies);
                page_cache_free(&b->pages);
                free(b);
        }
}

/* ---- response --------------------------------------------------------- */

struct resp {
        int status;
        int retry_after;
        const char *content_type;
        struct buf location;
        const char *allow;
        const char *accept_post;              /* Accept-Post, with a 415 */
        char new_cookie[CSRF_COOKIE_LEN + 1]; /* set when the client needs one */
        struct buf body;
};

static const char *reason(int status)
{
        switch (status) {
        case 200:
                return "OK";
        case 301:
                return "Moved Permanently";
        case 303:
                return "See Other";
        case 400:
                return "Bad Request";
        case 403:
                return "Forbidden";
        case 404:
                return "Not Found";
        case 405:
                return "Method Not Allowed";
        case 413:
                return "Content Too Large";
        case 414:
                return "URI Too Long";
        case 415:
                return "Unsupported Media Type";
        case 429:
                return "Too Many Requests";
        case 503:
                return "Service Unavailable";
        }
        return status >= 500 ? "Internal Server Error" : "Error";
}

/* 1 when the server says the request came over HTTPS: HTTPS=on (or 1),
 * or REQUEST_SCHEME=https. */
static int over_https(char *const *envp)
{
        const char *https = env_get(envp, "HTTPS");
        const char *scheme = env_get(envp, "REQUEST_SCHEME");
        return (https && (strcasecmp(https, "on") == 0 || strcmp(https, "1") == 0)) ||
               (scheme && strcasecmp(scheme, "https") == 0);
}

/* The origin ("scheme://host[:port]", lower case, no default port) of
 * `url` (an Origin or Referer value) into out; 0, or -1 when it has none. */
static int origin_of(const char *url, char *out, size_t n)
{
        const char *sep = strstr(url, "://");
        if (!sep || sep == url)
                return -1;
        size_t slen = (size_t)(sep - url);
        const char *host = sep + 3;
        size_t hlen = strcspn(host, "/?#");
        if (hlen == 0 || slen + 3 + hlen >= n)
                return -1;
        size_t k = 0;
        for (size_t i = 0; i < slen; i++)
                out[k++] = (char)tolower((unsigned char)url[i]);
        memcpy(out + k, "://", 3);
        k += 3;
        for (size_t i = 0; i < hlen; i++)
                out[k++] = (char)tolower((unsigned char)host[i]);
        out[k] = '\0';
        size_t ol = strlen(out);
        if (strncmp(out, "http://", 7) == 0 && ol > 3 && strcmp(out + ol - 3, ":80") == 0)
                out[ol - 3] = '\0';
        else if (strncmp(out, "https://", 8) == 0 && ol > 4 && strcmp(out + ol - 4, ":443") == 0)
                out[ol - 4] = '\0';
        return 0;
}

/* 1 when a state-changing request came from a page of another origin: its
 * Origin header (or, without one, its Referer) names a different scheme,
 * host or port than this request's own (scheme from over_https(), host
 * from the Host header).  "Origin: null" (sandboxed or privacy-stripped)
 * counts as another.  Without either header, or without a Host to compare
 * with, nothing is refused here (the token still is checked). */
static int cross_origin(char *const *envp, char *shown, size_t shown_len)
{
        const char *origin = env_get(envp, "HTTP_ORIGIN");
        const char *from = origin && *origin ? origin : env_get(envp, "HTTP_REFERER");
        const char *host = env_get(envp, "HTTP_HOST");
        if (!from || !*from || !host || !*host)
                return 0;
        char own[300], own_norm[300], theirs[300];
        snprintf(own, sizeof own, "%s://%s", over_https(envp) ? "https" : "http", host);
        if (origin_of(own, own_norm, sizeof own_norm) < 0)
                return 0;
        int bad = origin_of(from, theirs, sizeof theirs) < 0;
        size_t n = 0;
        for (const char *c = bad ? "an address without an origin" : theirs; *c && n < shown_len - 1; c++)
                shown[n++] = ((unsigned char)*c < 0x20 || *c == 0x7F) ? '?' : *c;
        shown[n] = '\0';
        return bad || strcmp(own_norm, theirs) != 0;
}

static void emit(struct buf *out, const struct board_config *cfg, struct resp *r, char *const *envp,
                 int head_only)
{
        if (r->body.oom) {
                buf_reset(&r->body);
                r->body.oom = 0;
                r->status = 500;
                r->content_type = "text/plain; charset=utf-8";
                buf_puts(&r->body, "out of memory\n");
        }
        buf_printf(out, "Status: %d %s\r\n", r->status, reason(r->status));
        buf_printf(out, "Content-Type: %s\r\n",
                   r->content_type ? r->content_type : "text/html; charset=utf-8");
        buf_puts(out, "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
                      "Referrer-Policy: same-origin\r\n"
                      "Content-Security-Policy: default-src 'self'; frame-ancestors 'none'\r\n");
        if (r->location.len)
                buf_printf(out, "Location: %s\r\n", r->location.data);
        if (r->retry_after > 0)
                buf_printf(out, "Retry-After: %d\r\n", r->retry_after);
        if (r->allow)
                buf_printf(out, "Allow: %s\r\n", r->allow);
        if (r->accept_post)
                buf_printf(out, "Accept-Post: %s\r\n", r->accept_post);
        if (r->new_cookie[0] && cfg && !r->content_type) /* HTML pages only */
                buf_printf(out, "Set-Cookie: %s=%s; Path=%s; HttpOnly; SameSite=Strict%s\r\n",
                           CSRF_COOKIE_NAME, r->new_cookie, cfg->base_path,
                           over_https(envp) ? "; Secure" : "");
        buf_printf(out, "Content-Length: %zu\r\n\r\n", r->body.len);
        if (!head_only && r->body.len)
                buf_append(out, r->body.data, r->body.len);
}

/* One error line (errlog.h); `cfg` is NULL when no configuration loaded. */
static void log_error(const struct board_config *cfg, char *const *envp, int status, const char *msg)
{
        const char *u = env_get(envp, "REQUEST_URI");
        if (!u)
                u = env_get(envp, "DOCUMENT_URI");
        errlog_write(cfg ? cfg->error_log : NULL, cfg ? cfg->base_path : "-", status,
                     env_get(envp, "REQUEST_METHOD"), u, msg);
}

/* An error message as a visitor sees it: the server log gets full
 * paths; the page names data_dir and lock_space only (a lock space may be
 * a URL with a password). */
static void shown_error(struct buf *out, const struct board_config *cfg, const char *msg)
{
        size_t dl = strlen(cfg->data_dir);
        size_t ll = cfg->lock_space ? strlen(cfg->lock_space) : 0;
        for (const char *p = msg; *p;) {
                if (dl && strncmp(p, cfg->data_dir, dl) == 0) {
                        buf_puts(out, "data_dir");
                        p += dl;
                } else if (ll && strncmp(p, cfg->lock_space, ll) == 0) {
                        buf_puts(out, "lock_space");
                        p += ll;
                } else {
                        buf_putc(out, *p++);
                }
        }
}

/* A page with a heading and a message. */
static void message_page(struct resp *r, const struct board_config *cfg, const struct board_error *e)
{
        const char *heading;
        switch (e->status) {
        case 403:
                heading = "Not allowed";
                break;
        case 404:
                heading = "Not found";
                break;
        case 413:
                heading = "Too large";
                break;
        case 415:
                heading = "Not a form";
                break;
        case 429:
                heading = "Too many posts";
                break;
        case 503:
                heading = "Busy, please try again";
                break;
        default:
                heading = e->status >= 500 ? "Something went wrong" : "Bad request";
        }
        r->status = e->status;
        r->retry_after = e->retry_after;
        buf_reset(&r->body);
        struct buf shown = BUF_INIT;
        if (e->status >= 500 && e->status != 503)
                buf_puts(&shown, "The board could not complete the request: ");
        shown_error(&shown, cfg, e->msg);
        render_message(&r->body, cfg, heading, shown.data ? shown.data : "");
        if (shown.oom)
                r->body.oom = 1;
        buf_free(&shown);
}

/* ---- handlers --------------------------------------------------------- */

struct req {
        struct app_board *loaded; /* configuration, secret and store */
        const struct board_config *cfg;
        char *const *envp;
        body_read_fn rd; /* the body, read only by the form handlers */
        void *rdctx;
        const char *token_cookie; /* the client's valid cookie, or new_cookie */
        char token[CSRF_TOKEN_LEN + 1];
};

static long page_from_query(char *const *envp)
{
        const char *q = env_get(envp, "QUERY_STRING");
        if (!q || strlen(q) > REQUEST_QUERY_MAX)
                return 1;
        struct form f;
        long page = 1;
        if (form_parse(q, strlen(q), MAX_FORM_FIELDS, &f, NULL) == FORM_OK) {
                const struct form_field *p = form_get(&f, "page");
                long long v = p ? parse_decimal(p->value, p->value_len) : -1;
                if (v >= 1 && v <= 1000000)
                        page = (long)v;
        }
        form_free(&f);
        return page;
}

/* The board page, with an error and what was typed when given.  The
 * plain page (200, neither) comes from the page cache while the list's
 * generation is the one it was rendered from (pagecache.h). */
static void show_board(struct req *q, struct resp *r, int status, const char *error, const struct form *typed)
{
        const struct msglist *list;
        unsigned long long generation = 0;
        struct board_error lerr = BOARD_ERROR_INIT;
        int listed = board_view(&q->loaded->board, &list, &generation, &lerr);
        if (listed < 0 && status == 200) {
                message_page(r, q->cfg, &lerr);
                log_error(q->cfg, q->envp, lerr.status, lerr.msg);
                return;
        }
        long page = status == 200 ? page_from_query(q->envp) : 1;
        bool plain = listed == 0 && status == 200 && !error && !typed && strlen(q->token) == CSRF_TOKEN_LEN;
        r->status = status;
        buf_reset(&r->body);
        if (plain && page_cache_get(&q->loaded->pages, generation, page, q->token, &r->body))
                return;
        struct page_tokens tokens;
        struct page_args a;
        memset(&a, 0, sizeof a);
        a.cfg = q->cfg;
        a.list = listed == 0 ? list : NULL;
        a.page = page;
        a.tokens = plain ? &tokens : NULL;
        a.token = q->token;
        a.error = error;
        if (typed) {
                const struct form_field *f;
                if ((f = form_get(typed, "name")))
                        a.name = (struct lr_text){f->value, f->value_len};
                if ((f = form_get(typed, "subject")))
                        a.subject = (struct lr_text){f->value, f->value_len};
                if ((f = form_get(typed, "body")))
                        a.body = (struct lr_text){f->value, f->value_len};
        }
        render_page(&r->body, &a);
        if (plain)
                page_cache_put(&q->loaded->pages, generation, page, &r->body, &tokens);
}

static int csrf_ok(struct req *q, const struct form *f)
{
        const struct form_field *t = form_get(f, "token");
        if (!t || form_count(f, "token") != 1 || !q->token_cookie)
                return 0;
        return csrf_verify(q->loaded->secret, q->token_cookie, strlen(q->token_cookie), t->value,
                           t->value_len);
}

static void redirect_home(struct req *q, struct resp *r)
{
        r->status = 303;
        buf_reset(&r->location);
        buf_puts(&r->location, q->cfg->base_path);
        buf_reset(&r->body);
        buf_puts(&r->body, "<!DOCTYPE html>\n<title>Done</title>\n<p><a href=\"");
        html_escape(&r->body, q->cfg->base_path, strlen(q->cfg->base_path));
        buf_puts(&r->body, "\">Back to the board</a></p>\n");
}

static void fail(struct req *q, struct resp *r, const struct board_error *e)
{
        if (e->status >= 500)
                log_error(q->cfg, q->envp, e->status, e->msg);
        message_page(r, q->cfg, e);
}

/* A post refused for now (503 busy, 429 too soon) and certainly not
 * stored: the board again, saying so, with what was typed back in the
 * form, so that sending it again is one click.  A 503 is logged as every
 * 5xx is. */
static void not_posted(struct req *q, struct resp *r, const struct board_error *e, const struct form *typed)
{
        if (e->status >= 500)
                log_error(q->cfg, q->envp, e->status, e->msg);
        struct buf said = BUF_INIT;
        buf_puts(&said, "Your message was not posted: ");
        shown_error(&said, q->cfg, e->msg);
        buf_puts(&said, ". It is still in the form below; send it again when you are ready.");
        show_board(q, r, e->status, said.oom ? e->msg : said.data, typed);
        r->retry_after = e->retry_after;
        buf_free(&said);
}

static void handle_post(struct req *q, struct resp *r, const struct buf *body)
{
        struct form typed, strict;
        const char *text = body->data ? body->data : "";
        struct board_error e = BOARD_ERROR_INIT;
        if (form_parse_lenient(text, body->len, MAX_FORM_FIELDS, &typed) != FORM_OK) {
                board_fail(&e, 400, "The form has too many fields.");
                fail(q, r, &e);
                return;
        }
        if (!csrf_ok(q, &typed)) {
                show_board(q, r, 403,
                           "The form had expired or cookies are blocked for this site. Please check your "
                           "message and send it again.",
                           &typed);
                form_free(&typed);
                return;
        }
        size_t pos = 0;
        int rc = form_parse(text, body->len, MAX_FORM_FIELDS, &strict, &pos);
        if (rc != FORM_OK) {
                board_fail(&e, 400, "The form could not be read: %s at byte %zu.", form_strerror(rc),
                           pos + 1);
                show_board(q, r, 400, e.msg, &typed);
                form_free(&typed);
                return;
        }
        struct post_input in;
        if (validate_post(&strict, &in, &e) < 0) {
                if (e.status == 400)
                        show_board(q, r, 400, e.msg, &typed);
                else
                        fail(q, r, &e);
                form_free(&strict);
                form_free(&typed);
                return;
        }
        form_free(&strict);
        rc = 0;
        if (in.password[0]) {
                char *hash = NULL;
                rc = password_hash(in.password, &hash, &e);
                if (rc == 0) {
                        rc = lr_text_set(&in.msg.pwhash, hash, strlen(hash))
                                 ? board_fail(&e, 500, "out of memory")
                                 : 0;
                        free(hash);
                }
        }
        if (rc == 0) {
                const char *addr = env_get(q->envp, "REMOTE_ADDR");
                rc = board_post(&q->loaded->board, &in.msg, addr ? addr : "", (long long)time(NULL), &e);
        }
        post_input_free(&in);
        if (rc == 0)
                redirect_home(q, r);
        else if ((e.status == 429 || e.status == 503) && !e.maybe_done)
                not_posted(q, r, &e, &typed);
        else
                fail(q, r, &e); /* logs every 5xx, 503 included */
        form_free(&typed);
}

static void handle_delete(struct req *q, struct resp *r, const struct buf *body)
{
        struct form f;
        const char *text = body->data ? body->data : "";
        struct board_error e = BOARD_ERROR_INIT;
        size_t pos = 0;
        int rc = form_parse_lenient(text, body->len, MAX_FORM_FIELDS, &f);
        if (rc != FORM_OK) {
                board_fail(&e, 400, "The form has too many fields.");
                fail(q, r, &e);
                return;
        }
        if (!csrf_ok(q, &f)) {
                board_fail(&e, 403,
                           "The form had expired or cookies are blocked for this site; reload the "
                           "board and try again.");
                fail(q, r, &e);
                form_free(&f);
                return;
        }
        form_free(&f);
        rc = form_parse(text, body->len, MAX_FORM_FIELDS, &f, &pos);
        if (rc != FORM_OK) {
                board_fail(&e, 400, "The form could not be read: %s at byte %zu.", form_strerror(rc),
                           pos + 1);
                fail(q, r, &e);
                return;
        }
        long long no = 0;
        const char *password = NULL;
        rc = validate_delete(&f, &no, &password, &e);
        if (rc == 0) {
                const char *addr = env_get(q->envp, "REMOTE_ADDR");
                rc = board_delete(&q->loaded->board, no, password, addr ? addr : "", (long long)time(NULL),
                                  &e);
        }
        if (rc == 0)
                redirect_home(q, r);
        else
                fail(q, r, &e);
        form_free(&f);
}

/* Refuse a post or delete sent by a page of another site: 403. */
static int same_origin_ok(struct req *q, struct resp *r)
{
        char shown[128];
        if (!cross_origin(q->envp, shown, sizeof shown))
                return 1;
        struct board_error e = BOARD_ERROR_INIT;
        board_fail(
            &e, 403,
            "This form was sent from another site (%s), not from this board; nothing was done. To post "
            "or delete, use the board's own page.",
            shown);
        fail(q, r, &e);
        return 0;
}

#define FORM_TYPE "application/x-www-form-urlencoded"

/* 1 when the request body is the board's form: media type FORM_TYPE
 * (any case, parameters such as charset allowed). */
static int is_form_type(const char *ct)
{
        if (!ct)
                return 0;
        while (*ct == ' ' || *ct == '\t')
                ct++;
        size_t n = strlen(FORM_TYPE);
        if (strncasecmp(ct, FORM_TYPE, n) != 0)
                return 0;
        ct += n;
        while (*ct == ' ' || *ct == '\t')
                ct++;
        return *ct == '\0' || *ct == ';';
}

/* Refuse any body but the form's before reading it: 415 naming the type. */
static int form_type_ok(struct req *q, struct resp *r)
{
        const char *ct = env_get(q->envp, "CONTENT_TYPE");
        if (is_form_type(ct))
                return 1;
        struct board_error e = BOARD_ERROR_INIT;
        char shown[64];
        size_t n = 0;
        for (const char *c = ct && *ct ? ct : "none"; *c && *c != ';' && n < sizeof shown - 1; c++)
                shown[n++] = ((unsigned char)*c < 0x20 || *c == 0x7F) ? '?' : *c;
        shown[n] = '\0';
        board_fail(&e, 415,
                   "This address accepts only the board's form, sent as " FORM_TYPE " (the request's "
                   "Content-Type was %s).",
                   shown);
        fail(q, r, &e);
        r->accept_post = FORM_TYPE;
        return 0;
}

static void api_error(struct resp *r, const struct board_error *e)
{
        r->status = e->status;
        r->retry_after = e->retry_after;
        r->content_type = "application/json; charset=utf-8";
        buf_reset(&r->body);
        buf_puts(&r->body, "{\"error\":");
        json_string(&r->body, e->msg, strlen(e->msg));
        buf_puts(&r->body, "}\n");
}

/* One whole-number query parameter: 1 when given (*out set), 0 when
 * absent, -1 when bad (err set). */
static int query_number(const struct form *f, const char *name, long long min, long long max, long long *out,
                        struct board_error *err)
{
        const struct form_field *v = form_get(f, name);
        if (!v)
                return 0;
        long long n = form_count(f, name) == 1 ? parse_decimal(v->value, v->value_len) : -1;
        if (n < min || n > max)
                return board_fail(err, 400, "%s must be given once, as a whole number from %lld to %lld",
                                  name, min, max);
        *out = n;
        return 1;
}

/* GET api/messages[?since=N|before=N][&limit=N] (json.h says which). */
static void handle_api(struct req *q, struct resp *r)
{
        struct board_error e = BOARD_ERROR_INIT;
        struct json_page page = {0, 0, 0, JSON_PAGE_DEFAULT_LIMIT};
        const char *qs = env_get(q->envp, "QUERY_STRING");
        if (qs && *qs) {
                struct form f;
                if (strlen(qs) > REQUEST_QUERY_MAX ||
                    form_parse(qs, strlen(qs), MAX_FORM_FIELDS, &f, NULL) != FORM_OK) {
                        board_fail(&e, 400, "bad query string");
                        api_error(r, &e);
                        return;
                }
                long long limit = JSON_PAGE_DEFAULT_LIMIT;
                int rc = query_number(&f, "since", 0, 999999999999999999LL, &page.since, &e);
                if (rc >= 0) {
                        page.has_since = rc;
                        rc = query_number(&f, "before", 1, 999999999999999999LL, &page.before, &e);
                }
                if (rc >= 0)
                        rc = query_number(&f, "limit", 1, JSON_PAGE_MAX_LIMIT, &limit, &e);
                page.limit = (size_t)limit;
                form_free(&f);
                if (rc < 0) {
                        api_error(r, &e);
                        return;
                }
        }
        const struct msglist *list;
        if (board_view(&q->loaded->board, &list, NULL, &e) < 0) {
                if (e.status >= 500)
                        log_error(q->cfg, q->envp, e.status, e.msg);
                api_error(r, &e);
        } else {
                r->status = 200;
                r->content_type = "application/json; charset=utf-8";
                buf_reset(&r->body);
                json_messages(&r->body, list, &page);
        }
}

/* GET api/info: how this board runs, for pages that explain what they
 * show (htdocs/race.html).  Only settings a visitor may know: never a
 * path, a secret or an address. */
static void handle_info(struct req *q, struct resp *r)
{
        const char *mode = board_lock_mode_name(q->cfg->lock_mode);
        const char *store = q->loaded->board.store->name; /* app_load checked there is one */
        r->status = 200;
        r->content_type = "application/json; charset=utf-8";
        buf_reset(&r->body);
        buf_puts(&r->body, "{\"mode\":");
        json_string(&r->body, mode, strlen(mode));
        buf_puts(&r->body, ",\"store\":");
        json_string(&r->body, store, strlen(store));
        buf_printf(&r->body, ",\"delay_ms\":%ld,\"max_messages\":%ld}\n", q->cfg->delay_ms,
                   q->cfg->max_messages);
}

/* A page or form of the board, by its path below base_path. */
struct route {
        const char *path;
        void (*get)(struct req *q, struct resp *r);                          /* GET and HEAD, or NULL */
        void (*post)(struct req *q, struct resp *r, const struct buf *body); /* POST of the form, or NULL */
        const char *allow;        /* the methods it answers, for a 405's Allow */
        const char *wrong_method; /* a 405's message */
        int api;                  /* errors as JSON */
};

static void show_index(struct req *q, struct resp *r)
{
        show_board(q, r, 200, NULL, NULL);
}

static const struct route routes[] = {
    {"", show_index, NULL, "GET, HEAD", "Use GET for this page.", 0},
    {"index.html", show_index, NULL, "GET, HEAD", "Use GET for this page.", 0},
    {"post", NULL, handle_post, "POST", "This address only accepts the board's forms (POST).", 0},
    {"delete", NULL, handle_delete, "POST", "This address only accepts the board's forms (POST).", 0},
    {"api/messages", handle_api, NULL, "GET, HEAD", "use GET", 1},
    {"api/info", handle_info, NULL, "GET, HEAD", "use GET", 1},
};

static const struct route *find_route(const char *path)
{
        for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
                if (strcmp(routes[i].path, path) == 0)
                        return &routes[i];
        return NULL;
}

/* A form: refused before its body is read when a page of another site
 * sent it or it is not the form; else read within max_body. */
static void serve_form(struct req *q, struct resp *r,
                       void (*handle)(struct req *q, struct resp *r, const struct buf *body))
{
        if (!same_origin_ok(q, r) || !form_type_ok(q, r))
                return;
        struct board_error e = BOARD_ERROR_INIT;
        struct buf body = BUF_INIT;
        if (request_read_body(q->envp, q->cfg->max_body, q->rd, q->rdctx, &body, &e) < 0)
                fail(q, r, &e);
        else
                handle(q, r, &body);
        buf_free(&body);
}

/* The request's path to its route and method, or to 301, 404, 405, 414. */
static void dispatch(struct req *q, struct resp *r, const char *method)
{
        struct board_error e = BOARD_ERROR_INIT;
        char *path = NULL;
        int place = request_route(q->envp, q->cfg->base_path, &path, &e);
        if (place < 0) {
                fail(q, r, &e);
                return;
        }
        if (place == REQUEST_BASE_NO_SLASH) {
                r->status = 301;
                buf_puts(&r->location, q->cfg->base_path);
                return;
        }
        const struct route *rt = place == REQUEST_BELOW_BASE ? find_route(path) : NULL;
        free(path);
        if (rt == NULL) {
                board_fail(&e, 404, "There is no such page on this board.");
                fail(q, r, &e);
        } else if (rt->get && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)) {
                rt->get(q, r);
        } else if (rt->post && strcmp(method, "POST") == 0) {
                serve_form(q, r, rt->post);
        } else {
                board_fail(&e, 405, "%s", rt->wrong_method);
                r->allow = rt->allow;
                if (rt->api)
                        api_error(r, &e);
                else
                        fail(q, r, &e);
        }
}

/* The CSRF cookie: keep one the board issued (it points into *jar), else
 * issue a new one; and the form token for it.  -1 when none can be made. */
static int take_csrf_cookie(struct req *q, struct resp *r, struct cookie_jar *jar)
{
        const unsigned char *secret = q->loaded->secret;
        const char *ch = env_get(q->envp, "HTTP_COOKIE");
        if (ch && strlen(ch) <= REQUEST_COOKIE_MAX &&
            cookie_parse(ch, strlen(ch), MAX_COOKIES, jar) == COOKIE_OK) {
                const struct cookie *c = cookie_find(jar, CSRF_COOKIE_NAME);
                if (c && csrf_memo_token(&q->loaded->cookies, secret, c->value, c->value_len, q->token, NULL))
                        q->token_cookie = c->value;
        }
        if (q->token_cookie)
                return 0;
        struct board_error e = BOARD_ERROR_INIT;
        if (csrf_new_cookie(secret, r->new_cookie, &e) < 0) {
                log_error(q->cfg, q->envp, 500, e.msg);
                return -1;
        }
        csrf_token(secret, r->new_cookie, CSRF_COOKIE_LEN, q->token);
        return 0;
}

static void plain_error(struct buf *out, int status, const char *msg)
{
        buf_printf(
            out,
            "Status: %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n\r\n"
            "%s\n",
            status, reason(status), msg);
}

/* The board this request is for (BOARD_CONF: the request's parameter, else
 * the process environment), loaded once.  -1 with a 500 answer in *out. */
static int board_of_request(struct app *app, char *const *envp, struct app_board **board, struct buf *out)
{
        const char *conf = env_get(envp, "BOARD_CONF");
        if (!conf || !*conf)
                conf = getenv("BOARD_CONF");
        if (!conf || !*conf) {
                log_error(NULL, envp, 500, "BOARD_CONF is not set");
                plain_error(out, 500, "The board is not configured (BOARD_CONF is not set).");
                return -1;
        }
        struct board_error e = BOARD_ERROR_INIT;
        if (app_load(app, conf, board, &e) < 0) {
                log_error(NULL, envp, 500, e.msg);
                plain_error(out, 500, "The board's configuration could not be loaded; see the server log.");
                return -1;
        }
        return 0;
}

int app_handle(struct app *app, char *const *envp, body_read_fn rd, void *rdctx, struct buf *out)
{
        struct app_board *board;
        if (board_of_request(app, envp, &board, out) < 0)
                return 500;
        const char *method = env_get(envp, "REQUEST_METHOD");
        if (!method)
                method = "GET";
        struct resp r;
        memset(&r, 0, sizeof r);
        r.status = 200;
        struct req q = {board, &board->cfg, envp, rd, rdctx, NULL, ""};
        struct cookie_jar jar = {NULL, 0};
        if (take_csrf_cookie(&q, &r, &jar) < 0) {
                cookie_jar_free(&jar);
                plain_error(out, 500, "Cannot make a session cookie.");
                return 500;
        }
        dispatch(&q, &r, method);
        emit(out, q.cfg, &r, envp, strcmp(method, "HEAD") == 0);
        int status = r.status;
        cookie_jar_free(&jar);
        buf_free(&r.body);
        buf_free(&r.location);
        return status;
}
