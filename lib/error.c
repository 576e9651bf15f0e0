/* error.c - error codes: their fixed descriptions and names (both from the
 * one list, DIRLOCK_CODES in dirlock.h) and the helpers that fill a
 * dirlock_error with a message naming what failed. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DESCRIPTION_(name, description) [DIRLOCK_##name] = description,
static const char *const descriptions[DIRLOCK_CODE_COUNT] = {DIRLOCK_CODES(DESCRIPTION_)};
#undef DESCRIPTION_

#define NAME_(name, description) [DIRLOCK_##name] = #name,
static const char *const names[DIRLOCK_CODE_COUNT] = {DIRLOCK_CODES(NAME_)};
#undef NAME_

const char *dirlock_strerror(int code)
{
        if (code < 0 || code >= DIRLOCK_CODE_COUNT)
                return "unknown dirlock error";
        return descriptions[code];
}

const char *dirlock_code_name(int code)
{
        if (code < 0 || code >= DIRLOCK_CODE_COUNT)
                return NULL;
        return names[code];
}

int dl_fail(dirlock_error *err, int code, int sys_errno, const char *fmt, ...)
{
        if (err == NULL)
                return code;
        err->code = code;
        err->sys_errno = sys_errno;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        if (n < 0)
                n = 0;
        if (sys_errno != 0 && (size_t)n < sizeof err->message)
                snprintf(err->message + n, sizeof err->message - (size_t)n, ": %s", strerror(sys_errno));
        return code;
}

void dl_ok(dirlock_error *err)
{
        if (err == NULL)
                return;
        err->code = DIRLOCK_OK;
        err->sys_errno = 0;
        err->message[0] = '\0';
}
