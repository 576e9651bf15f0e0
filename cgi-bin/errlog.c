/* errlog.c - the board's error lines (see errlog.h). */
#include "errlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"

/* Append at most `max` bytes of s, control bytes as '?'. */
static void put_clean(struct buf *b, const char *s, size_t max)
{
        size_t n = 0;
        for (const char *c = s ? s : "-"; *c && n < max; c++, n++)
                buf_putc(b, ((unsigned char)*c < 0x20 || *c == 0x7F) ? '?' : *c);
}

void errlog_write(const char *file, const char *board, int status, const char *method, const char *uri,
                  const char *cause)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        char when[96] = "-";
        if (gmtime_r(&ts.tv_sec, &tm))
                snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
                         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
        struct buf line = BUF_INIT;
        buf_printf(&line, "%s ", when);
        put_clean(&line, board, 256);
        buf_printf(&line, " %d ", status);
        put_clean(&line, method, 16);
        buf_putc(&line, ' ');
        put_clean(&line, uri, 200);
        buf_printf(&line, " [pid %ld]: ", (long)getpid());
        put_clean(&line, cause, 1024);
        buf_putc(&line, '\n');
        if (line.oom) {
                buf_free(&line);
                fprintf(stderr, "board[%ld]: %d (out of memory formatting the error line)\n", (long)getpid(),
                        status);
                return;
        }
        fwrite(line.data, 1, line.len, stderr);
        fflush(stderr);
        if (file && *file) {
                /* O_APPEND: lines of concurrent processes never overwrite
                 * each other; one write() per line keeps them whole. */
                int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
                ssize_t n = -1;
                int e = 0;
                if (fd >= 0) {
                        n = write(fd, line.data, line.len);
                        e = errno;
                        close(fd);
                } else {
                        e = errno;
                }
                if (n != (ssize_t)line.len)
                        fprintf(stderr, "board[%ld]: cannot append to error_log '%s': %s\n", (long)getpid(),
                                file, n < 0 ? strerror(e) : "short write");
        }
        buf_free(&line);
}
