/* error.c - error codes: their fixed descriptions and names (both from the
 * one list, DIRLOCK_CODES in dirlock.h) and the helpers that fill a
 * dirlock_error with a message naming what failed, among them why an
 * acquire ended without its lock. */
#include "core.h"

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

/* A message is one line of text: what it quotes (a rejected name or path,
 * a server's answer) may hold any byte, and a control character written
 * to a terminal or a log as it is would act there (an escape sequence, a
 * forged log line).  Each one is shown as \xHH instead; a message that
 * grows past its buffer is cut at a whole escape. */
static bool is_control(char c)
{
        return (unsigned char)c < 0x20 || c == 0x7f;
}

static void show_controls(dirlock_error *err)
{
        char *msg = err->message;
        size_t o = 0;
        while (msg[o] != '\0' && !is_control(msg[o]))
                o++;
        if (msg[o] == '\0')
                return;
        char rest[sizeof err->message];
        strcpy(rest, msg + o);
        for (const char *p = rest; *p != '\0'; p++) {
                bool control = is_control(*p);
                if (o + (control ? 4 : 1) >= sizeof err->message)
                        break;
                if (control)
                        o += (size_t)snprintf(msg + o, 5, "\\x%02x", (unsigned char)*p);
                else
                        msg[o++] = *p;
        }
        msg[o] = '\0';
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
        show_controls(err);
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

int dl_gave_up(dirlock_error *err, double timeout, bool canceled, const char *what, const char *who)
{
        if (timeout == 0)
                return dl_fail(err, DIRLOCK_EBUSY, 0, "%s is held by %s", what, who);
        if (canceled)
                return dl_fail(err, DIRLOCK_ECANCELED, 0, "canceled waiting for %s (held by %s)", what, who);
        return dl_fail(err, DIRLOCK_ETIMEDOUT, 0, "timed out after %.3g s: %s is held by %s", timeout, what,
                       who);
}

int dl_gave_up_ahead(dirlock_error *err, double timeout, bool canceled, const char *what, const char *ahead)
{
        if (timeout == 0)
                return dl_fail(err, DIRLOCK_EBUSY, 0, "%s goes first to a waiter ahead, %s", what, ahead);
        if (canceled)
                return dl_fail(err, DIRLOCK_ECANCELED, 0,
                               "canceled waiting for %s (a waiter ahead, %s, goes first)", what, ahead);
        return dl_fail(err, DIRLOCK_ETIMEDOUT, 0,
                       "timed out after %.3g s: %s goes first to a waiter ahead, %s", timeout, what, ahead);
}

int dl_about(dirlock_error *err, int rc, const char *name)
{
        if (err == NULL || rc == DIRLOCK_OK || name == NULL)
                return rc;
        char prefix[DIRLOCK_NAME_MAX + 16];
        int n = snprintf(prefix, sizeof prefix, "lock '%s': ", name);
        size_t size = sizeof err->message;
        if (n <= 0 || (size_t)n >= size || strncmp(err->message, prefix, (size_t)n) == 0)
                return rc;
        memmove(err->message + n, err->message, size - (size_t)n - 1);
        memcpy(err->message, prefix, (size_t)n);
        err->message[size - 1] = '\0';
        return rc;
}
