/* form.h - application/x-www-form-urlencoded parser (pure, no global
 * state; suitable for fuzzing).  Also used for query strings. */
#ifndef BOARD_FORM_H
#define BOARD_FORM_H

#include <stddef.h>

struct form_field {
        char *name; /* decoded, NUL-terminated (may also contain NUL bytes) */
        size_t name_len;
        char *value; /* decoded, NUL-terminated (may also contain NUL bytes) */
        size_t value_len;
};

struct form {
        struct form_field *fields; /* in the order given; duplicates kept */
        size_t count;
};

enum {
        FORM_OK = 0,
        FORM_EPERCENT, /* '%' not followed by two hex digits */
        FORM_ETOOMANY, /* more than max_fields fields        */
        FORM_ENOMEM
};

/* Parse `len` bytes at `buf` ("a=1&b=x+y%21").  '+' is a space; pairs are
 * separated by '&'; empty pairs are skipped; a pair without '=' has an
 * empty value.  On error *out is empty and *err_pos (may be NULL) gets the
 * offset of the offending byte.  Always call form_free(). */
int form_parse(const char *buf, size_t len, size_t max_fields, struct form *out, size_t *err_pos);
/* As form_parse(), but a '%' without two hex digits after it is kept as a
 * literal '%' (used to show a broken form back to its author). */
int form_parse_lenient(const char *buf, size_t len, size_t max_fields, struct form *out);
void form_free(struct form *form);

/* First field called `name`, or NULL. */
const struct form_field *form_get(const struct form *form, const char *name);
/* How many fields are called `name`. */
size_t form_count(const struct form *form, const char *name);

const char *form_strerror(int code);

#endif
