/* say.c - the command's own messages on standard error: one line each,
 * with what they quote made harmless (say.h). */
#include "say.h"
#include "dirlock.h"

#include <stdarg.h>
#include <stdio.h>

void say(const char *fmt, ...)
{
        char msg[sizeof((dirlock_error *)0)->message];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        for (const char *p = msg; *p != '\0'; p++) {
                unsigned char c = (unsigned char)*p;
                if (c < 0x20 || c == 0x7f)
                        fprintf(stderr, "\\x%02x", c);
                else
                        fputc(c, stderr);
        }
        fputc('\n', stderr);
}
