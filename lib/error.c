/* error.c - error codes: their fixed descriptions and the helpers that fill
 * a dirlock_error with a message naming what failed. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const descriptions[DIRLOCK_CODE_COUNT] = {
    [DIRLOCK_OK] = "success",
    [DIRLOCK_EBUSY] = "lock is busy",
    [DIRLOCK_ETIMEDOUT] = "timed out waiting for the lock",
    [DIRLOCK_ENAME] = "invalid lock name",
    [DIRLOCK_EINVAL] = "invalid argument",
    [DIRLOCK_ELOST] = "lock was lost (broken as stale)",
    [DIRLOCK_ENOTOWNER] = "lock is not owned by this process",
    [DIRLOCK_ELIVE] = "lock is held by a live owner",
    [DIRLOCK_ENOLOCK] = "no such lock",
    [DIRLOCK_EUPGRADE] = "cannot upgrade a shared lock (use an intent lock)",
    [DIRLOCK_EBALANCE] = "release without a matching acquire",
    [DIRLOCK_EIO] = "system call failed",
    [DIRLOCK_ENOMEM] = "out of memory",
    [DIRLOCK_ECANCELED] = "wait canceled",
    [DIRLOCK_EPERM] = "lock may not be broken or taken by this user",
    [DIRLOCK_ESERVER] = "lock server unreachable or not answering",
    [DIRLOCK_EAUTH] = "lock server refused the credentials or database",
    [DIRLOCK_EDATA] = "unexpected data or script error on the lock server",
    [DIRLOCK_ENETFS] = "mode not safe among the clients of this network filesystem",
};

const char *dirlock_strerror(int code)
{
        if (code < 0 || code >= DIRLOCK_CODE_COUNT || descriptions[code] == NULL)
                return "unknown dirlock error";
        return descriptions[code];
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
