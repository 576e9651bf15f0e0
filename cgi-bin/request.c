/* request.c - request environment, routing and body (see request.h). */
#include "request.h"

#include <stdlib.h>
#include <string.h>

const char *env_get(char *const *envp, const char *name)
{
        if (!envp)
                return NULL;
        size_t n = strlen(name);
        for (char *const *e = envp; *e; e++)
                if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
                        return *e + n + 1;
        return NULL;
}

int request_route(char *const *envp, const char *base_path, char **route, struct board_error *err)
{
        *route = NULL;
        struct buf path = BUF_INIT;
        const char *uri = env_get(envp, "DOCUMENT_URI");
        if (uri && *uri) {
                if (strlen(uri) > REQUEST_PATH_MAX)
                        return board_fail(err, 414, "The request path is too long");
                buf_puts(&path, uri);
        } else {
                const char *sn = env_get(envp, "SCRIPT_NAME");
                const char *pi = env_get(envp, "PATH_INFO");
                size_t l = (sn ? strlen(sn) : 0) + (pi ? strlen(pi) : 0);
                if (l > REQUEST_PATH_MAX)
                        return board_fail(err, 414, "The request path is too long");
                buf_puts(&path, sn ? sn : "");
                buf_puts(&path, pi ? pi : "");
        }
        if (path.oom) {
                buf_free(&path);
                return board_fail(err, 500, "out of memory");
        }
        const char *p = path.data ? path.data : "";
        size_t bl = strlen(base_path);
        int rc;
        if (strncmp(p, base_path, bl) == 0) {
                *route = strdup(p + bl);
                rc = *route ? REQUEST_BELOW_BASE : board_fail(err, 500, "out of memory");
        } else if (strlen(p) + 1 == bl && strncmp(p, base_path, bl - 1) == 0) {
                rc = REQUEST_BASE_NO_SLASH;
        } else {
                rc = REQUEST_OUTSIDE_BASE;
        }
        buf_free(&path);
        return rc;
}

int request_read_body(char *const *envp, long max_body, body_read_fn rd, void *ctx, struct buf *body,
                      struct board_error *err)
{
        const char *cl = env_get(envp, "CONTENT_LENGTH");
        if (!cl || !*cl)
                return 0;
        size_t digits = strspn(cl, "0123456789");
        if (digits == 0 || cl[digits] != '\0')
                return board_fail(err, 400, "Bad Content-Length");
        if (digits > 12 || strtol(cl, NULL, 10) > max_body)
                return board_fail(err, 413, "The request is larger than %ld bytes", max_body);
        size_t want = (size_t)strtol(cl, NULL, 10);
        char chunk[16384];
        while (body->len < want) {
                size_t n = want - body->len;
                if (n > sizeof chunk)
                        n = sizeof chunk;
                long got = rd(ctx, chunk, n);
                if (got <= 0)
                        return board_fail(err, 400, "The request body is shorter than its Content-Length");
                if (buf_append(body, chunk, (size_t)got) < 0)
                        return board_fail(err, 500, "out of memory reading the request");
        }
        return 0;
}
