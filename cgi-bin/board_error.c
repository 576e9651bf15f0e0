/* board_error.c - error values (see board_error.h). */
#include "board_error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int board_fail(struct board_error *e, int status, const char *fmt, ...)
{
        if (!e)
                return -1;
        e->status = status;
        e->retry_after = 0;
        e->maybe_done = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        return -1;
}

void board_error_clear(struct board_error *e)
{
        if (!e)
                return;
        e->status = 0;
        e->retry_after = 0;
        e->msg[0] = '\0';
        e->maybe_done = 0;
}

const char *storage_hint(int sys_errno)
{
        switch (sys_errno) {
        case EROFS:
                return " (the data directory is read-only)";
        case ENOSPC:
        case EDQUOT:
                return " (the disk is full)";
        case EFBIG:
                return " (the file would pass a size limit: the board's RLIMIT_FSIZE, or the filesystem's)";
        case EACCES:
        case EPERM:
                return " (permission denied on the data directory)";
        }
        if (storage_status(sys_errno) == 503)
                return " (the data directory's storage cannot be reached now; please try again)";
        return "";
}

int storage_status(int sys_errno)
{
        switch (sys_errno) {
        case ENOTCONN:
        case ETIMEDOUT:
        case EHOSTDOWN:
        case EHOSTUNREACH:
        case ENETDOWN:
        case ENETUNREACH:
        case ECONNREFUSED:
        case ECONNRESET:
        case ECONNABORTED:
        case ESTALE: /* what is left of it after looking again */
                return 503;
        }
        return 500;
}

int board_fail_storage(struct board_error *e, int sys_errno, const char *fmt, ...)
{
        if (!e)
                return -1;
        char what[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        int status = storage_status(sys_errno);
        board_fail(e, status, "%s: %s%s", what, strerror(sys_errno), storage_hint(sys_errno));
        e->retry_after = status == 503 ? 1 : 0;
        return -1;
}

void board_bug_unknown(const char *what, int value)
{
        fprintf(stderr, "board: bug: unknown %s %d (no configuration gives it)\n", what, value);
        abort();
}
