/* request.h - the CGI/FastCGI request: environment lookups with size caps,
 * routing below base_path, and reading the body within max_body. */
#ifndef BOARD_REQUEST_H
#define BOARD_REQUEST_H

#include <stddef.h>

#include "board_error.h"
#include "buf.h"

/* Largest request parameters the board uses; longer ones are refused
 * (path, query) or ignored (cookie). */
#define REQUEST_PATH_MAX   2048
#define REQUEST_QUERY_MAX  2048
#define REQUEST_COOKIE_MAX 4096
#define REQUEST_ADDR_MAX   64

/* Reads up to n bytes of the body: >0 bytes read, 0 end, -1 error. */
typedef long (*body_read_fn)(void *ctx, char *dst, size_t n);

/* Value of `name` in a NULL-terminated "NAME=value" array, or NULL. */
const char *env_get(char *const *envp, const char *name);

/* Where a request's path is, relative to the board's base_path. */
enum request_place {
        REQUEST_BELOW_BASE,    /* at or below base_path: *route is the rest */
        REQUEST_BASE_NO_SLASH, /* base_path without its trailing slash */
        REQUEST_OUTSIDE_BASE,  /* not this board's */
};

/* The request path relative to `base_path`, from DOCUMENT_URI, else
 * SCRIPT_NAME + PATH_INFO: where it is (enum request_place), with *route
 * (a new string) set for REQUEST_BELOW_BASE; -1 on error (414 path too
 * long, 500). */
int request_route(char *const *envp, const char *base_path, char **route, struct board_error *err);

/* Read the body announced by CONTENT_LENGTH into *body.  Checks the length
 * before reading anything: above max_body -> 413 without reading; a bad
 * CONTENT_LENGTH or a short body -> 400. */
int request_read_body(char *const *envp, long max_body, body_read_fn rd, void *ctx, struct buf *body,
                      struct board_error *err);

#endif
