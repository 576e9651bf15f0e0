/* board_error.c - error values (see board_error.h). */
#include "board_error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int board_fail(struct board_error *e, int status, const char *fmt, ...)
{
        if (!e)
                return -1;
        e->status = status;
        e->retry_after = 0;
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
}

const char *storage_hint(int sys_errno)
{
        switch (sys_errno) {
        case EROFS:
                return " (the data directory is read-only)";
        case ENOSPC:
        case EDQUOT:
                return " (the disk is full)";
        case EACCES:
        case EPERM:
                return " (permission denied on the data directory)";
        }
        return "";
}

void board_bug_unknown(const char *what, int value)
{
        fprintf(stderr, "board: bug: unknown %s %d (no configuration gives it)\n", what, value);
        abort();
}
