/* say.c - the command's own messages on standard error: one line each,
 * with what they quote made harmless (say.h). */
#include "say.h"
#include "dirlock.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

void say(const char *fmt, ...)
{
        char msg[sizeof((dirlock_error *)0)->message];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        /* The line whole, in one write: commands sharing a log (CGI
         * programs) must not interleave inside each other's lines. */
        char line[4 * sizeof msg + 2];
        size_t n = 0;
        for (const char *p = msg; *p != '\0'; p++) {
                unsigned char c = (unsigned char)*p;
                if (c < 0x20 || c == 0x7f)
                        n += (size_t)snprintf(line + n, sizeof line - n, "\\x%02x", c);
                else
                        line[n++] = (char)c;
        }
        line[n++] = '\n';
        (void)!write(STDERR_FILENO, line, n);
}
