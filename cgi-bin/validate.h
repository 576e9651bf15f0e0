/* validate.h - checks on submitted post and delete forms: duplicates,
 * lengths (name 64, subject 128, body 8000, password 128 bytes), UTF-8,
 * control characters; line breaks of the body normalized to LF. */
#ifndef BOARD_VALIDATE_H
#define BOARD_VALIDATE_H

#include "board_error.h"
#include "form.h"
#include "logrecord.h"

#define MSG_NAME_MAX_BYTES     64
#define MSG_SUBJECT_MAX_BYTES  128
#define MSG_BODY_MAX_BYTES     8000
#define MSG_PASSWORD_MAX_BYTES 128
#define MSG_DEFAULT_NAME       "anonymous"

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
