/* fuzz_form.c - the urlencoded form parser (cgi-bin/form.c).
 * Properties, for any input:
 *   - form_parse and form_parse_lenient never fail but with their error
 *     codes; on error the form is empty and err_pos lies inside the input;
 *   - the lenient parser never reports bad percent-encoding;
 *   - no field count beyond max_fields;
 *   - a parsed form, encoded again (every byte but unreserved ones as %XX)
 *     parses back to exactly the same fields. */
#include "fuzz.h"

#include "form.h"

#define MAX_FIELDS 64

static char *encode(const struct form *f, size_t *len)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t cap = 1;
        for (size_t i = 0; i < f->count; i++)
                cap += 3 * (f->fields[i].name_len + f->fields[i].value_len) + 2;
        char *s = malloc(cap), *d = s;
        FUZZ_CHECK(s != NULL);
        for (size_t i = 0; i < f->count; i++) {
                const char *parts[2] = {f->fields[i].name, f->fields[i].value};
                size_t lens[2] = {f->fields[i].name_len, f->fields[i].value_len};
                if (i > 0)
                        *d++ = '&';
                for (int k = 0; k < 2; k++) {
                        if (k == 1)
                                *d++ = '=';
                        for (size_t j = 0; j < lens[k]; j++) {
                                unsigned char c = (unsigned char)parts[k][j];
                                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~') {
                                        *d++ = (char)c;
                                } else {
                                        *d++ = '%';
                                        *d++ = hex[c >> 4];
                                        *d++ = hex[c & 15];
                                }
                        }
                }
        }
        *len = (size_t)(d - s);
        return s;
}

static void check_form(const struct form *f)
{
        FUZZ_CHECK(f->count <= MAX_FIELDS);
        for (size_t i = 0; i < f->count; i++) {
                FUZZ_CHECK(f->fields[i].name != NULL && f->fields[i].value != NULL);
                FUZZ_CHECK(f->fields[i].name[f->fields[i].name_len] == '\0');
                FUZZ_CHECK(f->fields[i].value[f->fields[i].value_len] == '\0');
        }
}

static void round_trip(const struct form *f)
{
        size_t len;
        char *enc = encode(f, &len);
        struct form g;
        size_t pos = 0;
        int rc = form_parse(enc, len, MAX_FIELDS, &g, &pos);
        FUZZ_CHECK(rc == FORM_OK);
        FUZZ_CHECK(g.count == f->count);
        for (size_t i = 0; i < f->count; i++) {
                FUZZ_CHECK(g.fields[i].name_len == f->fields[i].name_len);
                FUZZ_CHECK(g.fields[i].value_len == f->fields[i].value_len);
                FUZZ_CHECK(memcmp(g.fields[i].name, f->fields[i].name, f->fields[i].name_len) == 0);
                FUZZ_CHECK(memcmp(g.fields[i].value, f->fields[i].value, f->fields[i].value_len) == 0);
        }
        /* form_get finds the first of each name. */
        if (f->count > 0 && memchr(f->fields[0].name, '\0', f->fields[0].name_len) == NULL)
                FUZZ_CHECK(form_get(&g, f->fields[0].name) == &g.fields[0]);
        form_free(&g);
        free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *buf = (const char *)data;
        struct form f;
        size_t pos = (size_t)-1;
        int rc = form_parse(buf, size, MAX_FIELDS, &f, &pos);
        FUZZ_CHECK(rc == FORM_OK || rc == FORM_EPERCENT || rc == FORM_ETOOMANY || rc == FORM_ENOMEM);
        if (rc == FORM_OK) {
                check_form(&f);
                round_trip(&f);
        } else {
                FUZZ_CHECK(f.count == 0 && f.fields == NULL);
                if (rc == FORM_EPERCENT) {
                        FUZZ_CHECK(pos < size);
                        FUZZ_CHECK(buf[pos] == '%');
                }
        }
        FUZZ_CHECK(form_strerror(rc) != NULL);
        form_free(&f);

        rc = form_parse_lenient(buf, size, MAX_FIELDS, &f);
        FUZZ_CHECK(rc == FORM_OK || rc == FORM_ETOOMANY || rc == FORM_ENOMEM);
        if (rc == FORM_OK) {
                check_form(&f);
                round_trip(&f);
        }
        form_free(&f);
        return 0;
}
