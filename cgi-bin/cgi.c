/* cgi.c - one request as plain CGI (see cgi.h). */
#include "cgi.h"

#include <errno.h>
#include <unistd.h>

static long fd_read(void *ctx, char *dst, size_t n)
{
        int fd = *(int *)ctx;
        for (;;) {
                ssize_t got = read(fd, dst, n);
                if (got < 0 && errno == EINTR)
                        continue;
                return (long)got;
        }
}

int board_run_cgi(struct app *app, char *const *envp, int in_fd, int out_fd)
{
        struct buf out = BUF_INIT;
        int status = app_handle(app, envp, fd_read, &in_fd, &out);
        const char *p = out.data;
        size_t left = out.len;
        while (left > 0) {
                ssize_t n = write(out_fd, p, left);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        status = -1;
                        break;
                }
                p += n;
                left -= (size_t)n;
        }
        if (out.oom)
                status = -1;
        buf_free(&out);
        return status;
}
