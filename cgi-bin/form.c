/* form.c - urlencoded form parser (see form.h). */
#include "form.h"

#include <stdlib.h>
#include <string.h>

static int hexval(unsigned char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Decode s[0..len) into a new NUL-terminated string. */
static int decode(const char *s, size_t len, size_t base, int lenient, char **out, size_t *out_len,
                  size_t *err_pos)
{
        char *d = malloc(len + 1);
        if (!d)
                return FORM_ENOMEM;
        size_t j = 0;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c == '+') {
                        d[j++] = ' ';
                } else if (c == '%') {
                        int hi = i + 1 < len ? hexval((unsigned char)s[i + 1]) : -1;
                        int lo = i + 2 < len ? hexval((unsigned char)s[i + 2]) : -1;
                        if ((hi < 0 || lo < 0) && lenient) {
                                d[j++] = '%';
                                continue;
                        }
                        if (hi < 0 || lo < 0) {
                                free(d);
                                if (err_pos)
                                        *err_pos = base + i;
                                return FORM_EPERCENT;
                        }
                        d[j++] = (char)(hi * 16 + lo);
                        i += 2;
                } else {
                        d[j++] = (char)c;
                }
        }
        d[j] = '\0';
        *out = d;
        *out_len = j;
        return FORM_OK;
}

void form_free(struct form *form)
{
        if (!form)
                return;
        for (size_t i = 0; i < form->count; i++) {
                free(form->fields[i].name);
                free(form->fields[i].value);
        }
        free(form->fields);
        form->fields = NULL;
        form->count = 0;
}

static int parse(const char *buf, size_t len, size_t max_fields, int lenient, struct form *out,
                 size_t *err_pos)
{
        out->fields = NULL;
        out->count = 0;
        size_t cap = 0;
        size_t i = 0;
        while (i < len) {
                const char *amp = memchr(buf + i, '&', len - i);
                size_t end = amp ? (size_t)(amp - buf) : len;
                if (end > i) {
                        if (out->count >= max_fields) {
                                form_free(out);
                                if (err_pos)
                                        *err_pos = i;
                                return FORM_ETOOMANY;
                        }
                        if (out->count == cap) {
                                size_t ncap = cap ? cap * 2 : 8;
                                struct form_field *nf = realloc(out->fields, ncap * sizeof *nf);
                                if (!nf) {
                                        form_free(out);
                                        return FORM_ENOMEM;
                                }
                                out->fields = nf;
                                cap = ncap;
                        }
                        const char *eq = memchr(buf + i, '=', end - i);
                        size_t name_end = eq ? (size_t)(eq - buf) : end;
                        struct form_field *f = &out->fields[out->count];
                        int rc = decode(buf + i, name_end - i, i, lenient, &f->name, &f->name_len, err_pos);
                        if (rc != FORM_OK) {
                                form_free(out);
                                return rc;
                        }
                        size_t vstart = eq ? name_end + 1 : end;
                        rc = decode(buf + vstart, end - vstart, vstart, lenient, &f->value, &f->value_len,
                                    err_pos);
                        if (rc != FORM_OK) {
                                free(f->name);
                                form_free(out);
                                return rc;
                        }
                        out->count++;
                }
                i = end + 1;
        }
        return FORM_OK;
}

int form_parse(const char *buf, size_t len, size_t max_fields, struct form *out, size_t *err_pos)
{
        return parse(buf, len, max_fields, 0, out, err_pos);
}

int form_parse_lenient(const char *buf, size_t len, size_t max_fields, struct form *out)
{
        return parse(buf, len, max_fields, 1, out, NULL);
}

static int name_is(const struct form_field *f, const char *name)
{
        size_t n = strlen(name);
        return f->name_len == n && memcmp(f->name, name, n) == 0;
}

const struct form_field *form_get(const struct form *form, const char *name)
{
        for (size_t i = 0; i < form->count; i++)
                if (name_is(&form->fields[i], name))
                        return &form->fields[i];
        return NULL;
}

size_t form_count(const struct form *form, const char *name)
{
        size_t n = 0;
        for (size_t i = 0; i < form->count; i++)
                n += name_is(&form->fields[i], name);
        return n;
}

const char *form_strerror(int code)
{
        switch (code) {
        case FORM_OK:
                return "no error";
        case FORM_EPERCENT:
                return "malformed percent-encoding";
        case FORM_ETOOMANY:
                return "too many form fields";
        case FORM_ENOMEM:
                return "out of memory";
        }
        return "unknown form error";
}
