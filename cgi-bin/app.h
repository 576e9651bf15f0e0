/* app.h - one HTTP request of the board, from CGI parameters to a complete
 * CGI response (routing, CSRF, status codes, pages).  Independent of how
 * the request arrived (FastCGI or plain CGI). */
#ifndef BOARD_APP_H
#define BOARD_APP_H

#include "board.h"
#include "board_error.h"
#include "buf.h"
#include "config.h"
#include "csrf.h"
#include "csrf_memo.h"
#include "pagecache.h"
#include "request.h"

/* A loaded board: its configuration, CSRF secret and store. */
struct app_board {
        char *conf_path;
        struct board_config cfg;
        unsigned char secret[CSRF_SECRET_LEN];
        struct csrf_memo cookies; /* cookies checked, with their tokens */
        struct page_cache pages;  /* the board's pages rendered last */
        struct board board;       /* its store's state lives as long as this */
        struct app_board *next;
};

/* The boards this process has loaded, by configuration path. */
struct app {
        struct app_board *boards;
};

#define APP_INIT                                                                                             \
        {                                                                                                    \
                NULL                                                                                         \
        }

/* Load (once) the board configured by file `conf_path`: parse it, create
 * data_dir if missing, load or create the CSRF secret.  Its store is
 * opened on its first request. */
int app_load(struct app *app, const char *conf_path, struct app_board **out, struct board_error *err);
void app_free(struct app *app);

/* Serve one request.  `envp` holds the CGI parameters; the body is read
 * through `rd`.  The complete CGI response (Status and other headers, blank
 * line, body) is appended to *out.  Returns the HTTP status. */
int app_handle(struct app *app, char *const *envp, body_read_fn rd, void *rdctx, struct buf *out);

#endif
