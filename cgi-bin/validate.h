/* validate.h - checks on submitted post and delete forms: duplicates,
 * lengths in characters (name 64, subject 128, body 8000, password 128),
 * UTF-8, control characters; line breaks of the body normalized to LF.
 * The one place the fields' limits are stated: the form's maxlength
 * attributes (render.c) and the request size a post may need
 * (validate_post_form_max_bytes, the default max_body) are made from
 * them. */
#ifndef BOARD_VALIDATE_H
#define BOARD_VALIDATE_H

#include "board_error.h"
#include "form.h"
#include "logrecord.h"

/* The longest each field may be, in characters (Unicode code points; a
 * line break of the body counts once, as the LF it is stored as): the
 * limit a person sees, whatever script they write in.  A browser's
 * maxlength counts UTF-16 units, one or two per character, so whatever
 * the form lets through is within them. */
#define MSG_NAME_MAX_CHARS     64
#define MSG_SUBJECT_MAX_CHARS  128
#define MSG_BODY_MAX_CHARS     8000
#define MSG_PASSWORD_MAX_CHARS 128
#define MSG_DEFAULT_NAME       "anonymous"

/* The largest body a post form within those limits can be, urlencoded:
 * each character at most 4 bytes of UTF-8, each byte at most 3 ("%E3"),
 * plus the field names, '=' and '&', and the CSRF token.  A request
 * limit below it refuses some posts the form allows. */
long validate_post_form_max_bytes(void);

struct post_input {
        struct logrecord msg; /* name, subject, body set; no/time/pwhash not */
        char *password;       /* may be empty, never NULL on success */
};

/* Validate a post form.  On success *in owns new strings (free with
 * post_input_free); on failure err is a 400 saying which field and why. */
int validate_post(const struct form *f, struct post_input *in, struct board_error *err);
void post_input_free(struct post_input *in);

/* Validate a delete form: `no` a decimal >= 1, password present. */
int validate_delete(const struct form *f, long long *no, const char **password, struct board_error *err);

/* Decimal digits only, 1..18 of them; -1 when not a number. */
long long parse_decimal(const char *s, size_t len);

#endif
