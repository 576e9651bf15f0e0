/* validate.c - form field checks (see validate.h). */
#include "validate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "csrf.h"
#include "utf8.h"

long long parse_decimal(const char *s, size_t len)
{
        if (len == 0 || len > 18)
                return -1;
        long long v = 0;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                v = v * 10 + (s[i] - '0');
        }
        return v;
}

void post_input_free(struct post_input *in)
{
        logrecord_free(&in->msg);
        free(in->password);
        in->password = NULL;
}

static int once(const struct form *f, const char *name, const struct form_field **out,
                struct board_error *err)
{
        if (form_count(f, name) > 1)
                return board_fail(err, 400, "The field '%s' was sent more than once", name);
        *out = form_get(f, name);
        return 0;
}

/* The fields of the post form and their limits in characters; the
 * token is hex, sent as it is. */
static const struct {
        const char *name;
        size_t max_chars;
} post_fields[] = {
    {"name", MSG_NAME_MAX_CHARS},
    {"subject", MSG_SUBJECT_MAX_CHARS},
    {"body", MSG_BODY_MAX_CHARS},
    {"password", MSG_PASSWORD_MAX_CHARS},
};

long validate_post_form_max_bytes(void)
{
        enum { UTF8_MAX = 4, PERCENT = 3 }; /* bytes per character; "%XX" per byte */
        long n = (long)strlen("token=") + CSRF_TOKEN_LEN;
        for (size_t i = 0; i < sizeof post_fields / sizeof post_fields[0]; i++)
                n += 1 + (long)strlen(post_fields[i].name) + 1 +
                     (long)(post_fields[i].max_chars * UTF8_MAX * PERCENT);
        return n;
}

/* s[0..len): valid UTF-8, no control characters but TAB, LF and CR when
 * multiline, and at most max characters (max_chars (size_t)-1: no limit
 * checked here). */
static int check_text(const char *label, const char *s, size_t len, size_t max_chars, int multiline,
                      struct board_error *err)
{
        size_t pos = 0;
        int rc = utf8_check_text(s, len, multiline, &pos);
        if (rc == UTF8_EINVALID)
                return board_fail(err, 400, "%s is not valid UTF-8 (byte %zu)", label, pos + 1);
        if (rc == UTF8_ECONTROL)
                return board_fail(err, 400, "%s contains a control character (byte %zu)", label, pos + 1);
        size_t chars = utf8_count(s, len);
        if (chars > max_chars)
                return board_fail(err, 400, "%s is too long: %zu characters, at most %zu", label, chars,
                                  max_chars);
        return 0;
}

/* Code points that show nothing: Unicode White_Space, the zero-width
 * and other format characters, variation selectors, fillers and blanks
 * that render as space. */
static int invisible(uint32_t cp)
{
        static const uint32_t ranges[][2] = {
            {0x0009, 0x000D},   {0x0020, 0x0020},   {0x0085, 0x0085},   {0x00A0, 0x00A0}, {0x00AD, 0x00AD},
            {0x034F, 0x034F},   {0x061C, 0x061C},   {0x115F, 0x1160},   {0x1680, 0x1680}, {0x17B4, 0x17B5},
            {0x180B, 0x180F},   {0x2000, 0x200F},   {0x2028, 0x202F},   {0x205F, 0x206F}, {0x2800, 0x2800},
            {0x3000, 0x3000},   {0x3164, 0x3164},   {0xFE00, 0xFE0F},   {0xFEFF, 0xFEFF}, {0xFFA0, 0xFFA0},
            {0x1D173, 0x1D17A}, {0xE0000, 0xE007F}, {0xE0100, 0xE01EF},
        };
        for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
                if (cp >= ranges[i][0] && cp <= ranges[i][1])
                        return 1;
        return 0;
}

/* 1 when s (valid UTF-8) shows nothing: empty, or invisible characters
 * only (U+FEFF, U+200B, U+3000, whitespace, ...).  Such a field counts as
 * empty. */
static int only_invisible(const char *s, size_t len)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t i = 0;
        while (i < len) {
                uint32_t cp;
                size_t n = utf8_decode(p + i, len - i, &cp);
                if (n == 0 || !invisible(cp))
                        return 0;
                i += n;
        }
        return 1;
}

/* CRLF and lone CR -> LF, into a new string. */
static int normalize_newlines(const char *s, size_t len, struct lr_text *out)
{
        char *d = malloc(len + 1);
        if (!d)
                return -1;
        size_t j = 0;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '\r') {
                        d[j++] = '\n';
                        if (i + 1 < len && s[i + 1] == '\n')
                                i++;
                } else {
                        d[j++] = s[i];
                }
        }
        d[j] = '\0';
        out->ptr = d;
        out->len = j;
        return 0;
}

int validate_post(const struct form *f, struct post_input *in, struct board_error *err)
{
        memset(in, 0, sizeof *in);
        const struct form_field *name = NULL, *subject = NULL, *body = NULL, *password = NULL, *token = NULL;
        if (once(f, "name", &name, err) || once(f, "subject", &subject, err) || once(f, "body", &body, err) ||
            once(f, "password", &password, err) || once(f, "token", &token, err))
                return -1;
        if (!body || body->value_len == 0)
                return board_fail(err, 400, "Please write a message (the message field is empty)");
        if (name && check_text("The name", name->value, name->value_len, MSG_NAME_MAX_CHARS, 0, err))
                return -1;
        if (subject &&
            check_text("The subject", subject->value, subject->value_len, MSG_SUBJECT_MAX_CHARS, 0, err))
                return -1;
        if (password &&
            check_text("The password", password->value, password->value_len, MSG_PASSWORD_MAX_CHARS, 0, err))
                return -1;
        /* Check the body as sent (UTF-8, controls), then its length once
         * line breaks are LF. */
        if (check_text("The message", body->value, body->value_len, (size_t)-1, 1, err))
                return -1;
        if (only_invisible(body->value, body->value_len))
                return board_fail(err, 400,
                                  "Please write a message (the message field is empty: it holds only spaces "
                                  "or invisible characters)");
        if (normalize_newlines(body->value, body->value_len, &in->msg.body) < 0)
                return board_fail(err, 500, "out of memory");
        size_t chars = utf8_count(in->msg.body.ptr, in->msg.body.len);
        if (chars > MSG_BODY_MAX_CHARS) {
                board_fail(err, 400, "The message is too long: %zu characters, at most %d", chars,
                           MSG_BODY_MAX_CHARS);
                post_input_free(in);
                return -1;
        }
        int oom = 0;
        if (!name || only_invisible(name->value, name->value_len))
                oom |= lr_text_set(&in->msg.name, MSG_DEFAULT_NAME, strlen(MSG_DEFAULT_NAME));
        else
                oom |= lr_text_set(&in->msg.name, name->value, name->value_len);
        if (!subject || only_invisible(subject->value, subject->value_len))
                oom |= lr_text_set(&in->msg.subject, "", 0);
        else
                oom |= lr_text_set(&in->msg.subject, subject->value, subject->value_len);
        oom |= lr_text_set(&in->msg.pwhash, "", 0);
        in->password = strdup(password ? password->value : "");
        if (oom || !in->password) {
                post_input_free(in);
                return board_fail(err, 500, "out of memory");
        }
        return 0;
}

int validate_delete(const struct form *f, long long *no, const char **password, struct board_error *err)
{
        const struct form_field *n = NULL, *pw = NULL, *token = NULL;
        if (once(f, "no", &n, err) || once(f, "password", &pw, err) || once(f, "token", &token, err))
                return -1;
        if (!n)
                return board_fail(err, 400, "Please give the number of the message to delete");
        *no = parse_decimal(n->value, n->value_len);
        if (*no < 1)
                return board_fail(err, 400, "The message number must be a whole number from 1");
        if (!pw || pw->value_len == 0)
                return board_fail(err, 400, "Please give the message's password");
        if (check_text("The password", pw->value, pw->value_len, MSG_PASSWORD_MAX_CHARS, 0, err))
                return -1;
        *password = pw->value;
        return 0;
}
