/* cookie.h - Cookie request-header parser (pure, no global state; suitable
 * for fuzzing). */
#ifndef BOARD_COOKIE_H
#define BOARD_COOKIE_H

#include <stddef.h>

struct cookie {
        char *name; /* NUL-terminated copies */
        size_t name_len;
        char *value; /* surrounding double quotes removed */
        size_t value_len;
};

struct cookie_jar {
        struct cookie *items;
        size_t count;
};

enum { COOKIE_OK = 0, COOKIE_ETOOMANY, COOKIE_ENOMEM };

/* Parse a Cookie header value ("a=1; b=2").  Pairs are separated by ';',
 * spaces and tabs around names and values are dropped, pairs without '='
 * or with an empty name are skipped.  Always call cookie_jar_free(). */
int cookie_parse(const char *buf, size_t len, size_t max_cookies, struct cookie_jar *out);
void cookie_jar_free(struct cookie_jar *jar);

/* First cookie called `name`, or NULL. */
const struct cookie *cookie_find(const struct cookie_jar *jar, const char *name);

#endif
