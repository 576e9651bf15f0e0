/* fuzz_cookie.c - the Cookie header parser (cgi-bin/cookie.c).
 * Properties, for any input:
 *   - every cookie has a non-empty name without ';', '=' or surrounding
 *     blanks, and a value without ';'; at most max_cookies of them;
 *   - the jar written out again as name="value" pairs parses back to the
 *     same cookies (the parser removes one pair of surrounding quotes);
 *   - cookie_find returns the first cookie of a name. */
#include "fuzz.h"

#include "cookie.h"

#define MAX_COOKIES 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct cookie_jar jar;
        int rc = cookie_parse((const char *)data, size, MAX_COOKIES, &jar);
        FUZZ_CHECK(rc == COOKIE_OK || rc == COOKIE_ETOOMANY || rc == COOKIE_ENOMEM);
        if (rc != COOKIE_OK) {
                FUZZ_CHECK(jar.count == 0 && jar.items == NULL);
                cookie_jar_free(&jar);
                return 0;
        }
        FUZZ_CHECK(jar.count <= MAX_COOKIES);
        size_t cap = 1;
        for (size_t i = 0; i < jar.count; i++) {
                const struct cookie *c = &jar.items[i];
                FUZZ_CHECK(c->name_len > 0);
                FUZZ_CHECK(c->name[c->name_len] == '\0' && c->value[c->value_len] == '\0');
                FUZZ_CHECK(memchr(c->name, ';', c->name_len) == NULL);
                FUZZ_CHECK(memchr(c->name, '=', c->name_len) == NULL);
                FUZZ_CHECK(memchr(c->value, ';', c->value_len) == NULL);
                FUZZ_CHECK(c->name[0] != ' ' && c->name[0] != '\t');
                FUZZ_CHECK(c->name[c->name_len - 1] != ' ' && c->name[c->name_len - 1] != '\t');
                cap += c->name_len + c->value_len + 5;
        }
        char *s = malloc(cap), *d = s;
        FUZZ_CHECK(s != NULL);
        for (size_t i = 0; i < jar.count; i++) {
                const struct cookie *c = &jar.items[i];
                if (i > 0) {
                        *d++ = ';';
                        *d++ = ' ';
                }
                memcpy(d, c->name, c->name_len);
                d += c->name_len;
                *d++ = '=';
                *d++ = '"';
                memcpy(d, c->value, c->value_len);
                d += c->value_len;
                *d++ = '"';
        }
        struct cookie_jar again;
        rc = cookie_parse(s, (size_t)(d - s), MAX_COOKIES, &again);
        FUZZ_CHECK(rc == COOKIE_OK);
        FUZZ_CHECK(again.count == jar.count);
        for (size_t i = 0; i < jar.count; i++) {
                FUZZ_CHECK(again.items[i].name_len == jar.items[i].name_len);
                FUZZ_CHECK(again.items[i].value_len == jar.items[i].value_len);
                FUZZ_CHECK(memcmp(again.items[i].name, jar.items[i].name, jar.items[i].name_len) == 0);
                FUZZ_CHECK(memcmp(again.items[i].value, jar.items[i].value, jar.items[i].value_len) == 0);
        }
        if (jar.count > 0 && memchr(jar.items[0].name, '\0', jar.items[0].name_len) == NULL)
                FUZZ_CHECK(cookie_find(&again, jar.items[0].name) == &again.items[0]);
        cookie_jar_free(&again);
        free(s);
        cookie_jar_free(&jar);
        return 0;
}
