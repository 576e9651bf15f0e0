/* cgi.c - one request as plain CGI (see cgi.h). */
#include "cgi.h"

#include <errno.h>
#include <unistd.h>

#include "fileio.h"

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
        if (out.len > 0 && write_all(out_fd, out.data, out.len) < 0)
                status = -1;
        if (out.oom)
                status = -1;
        buf_free(&out);
        return status;
}
