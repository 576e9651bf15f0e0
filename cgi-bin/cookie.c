/* cookie.c - Cookie header parser (see cookie.h). */
#include "cookie.h"

#include <stdlib.h>
#include <string.h>

static int is_ws(char c)
{
        return c == ' ' || c == '\t';
}

static char *dup_bytes(const char *s, size_t n)
{
        char *d = malloc(n + 1);
        if (!d)
                return NULL;
        if (n)
                memcpy(d, s, n);
        d[n] = '\0';
        return d;
}

void cookie_jar_free(struct cookie_jar *jar)
{
        if (!jar)
                return;
        for (size_t i = 0; i < jar->count; i++) {
                free(jar->items[i].name);
                free(jar->items[i].value);
        }
        free(jar->items);
        jar->items = NULL;
        jar->count = 0;
}

int cookie_parse(const char *buf, size_t len, size_t max_cookies, struct cookie_jar *out)
{
        out->items = NULL;
        out->count = 0;
        size_t cap = 0;
        size_t i = 0;
        while (i < len) {
                const char *semi = memchr(buf + i, ';', len - i);
                size_t end = semi ? (size_t)(semi - buf) : len;
                const char *eq = memchr(buf + i, '=', end - i);
                if (eq) {
                        size_t ns = i, ne = (size_t)(eq - buf);
                        while (ns < ne && is_ws(buf[ns]))
                                ns++;
                        while (ne > ns && is_ws(buf[ne - 1]))
                                ne--;
                        size_t vs = (size_t)(eq - buf) + 1, ve = end;
                        while (vs < ve && is_ws(buf[vs]))
                                vs++;
                        while (ve > vs && is_ws(buf[ve - 1]))
                                ve--;
                        if (ve - vs >= 2 && buf[vs] == '"' && buf[ve - 1] == '"') {
                                vs++;
                                ve--;
                        }
                        if (ne > ns) {
                                if (out->count >= max_cookies) {
                                        cookie_jar_free(out);
                                        return COOKIE_ETOOMANY;
                                }
                                if (out->count == cap) {
                                        size_t ncap = cap ? cap * 2 : 4;
                                        struct cookie *n = realloc(out->items, ncap * sizeof *n);
                                        if (!n) {
                                                cookie_jar_free(out);
                                                return COOKIE_ENOMEM;
                                        }
                                        out->items = n;
                                        cap = ncap;
                                }
                                struct cookie *c = &out->items[out->count];
                                c->name = dup_bytes(buf + ns, ne - ns);
                                c->value = dup_bytes(buf + vs, ve - vs);
                                if (!c->name || !c->value) {
                                        free(c->name);
                                        free(c->value);
                                        cookie_jar_free(out);
                                        return COOKIE_ENOMEM;
                                }
                                c->name_len = ne - ns;
                                c->value_len = ve - vs;
                                out->count++;
                        }
                }
                i = end + 1;
        }
        return COOKIE_OK;
}

const struct cookie *cookie_find(const struct cookie_jar *jar, const char *name)
{
        size_t n = strlen(name);
        for (size_t i = 0; i < jar->count; i++)
                if (jar->items[i].name_len == n && memcmp(jar->items[i].name, name, n) == 0)
                        return &jar->items[i];
        return NULL;
}
