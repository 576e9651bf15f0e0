/* berr.c - error values (see berr.h). */
#include "berr.h"

#include <stdarg.h>
#include <stdio.h>

int berr_set(struct berr *e, int status, const char *fmt, ...)
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

void berr_clear(struct berr *e)
{
        if (!e)
                return;
        e->status = 0;
        e->retry_after = 0;
        e->msg[0] = '\0';
}
