/* test_board_validate.c - post and delete form checks: limits at their
 * edges, counted in characters whatever their UTF-8 length, UTF-8,
 * control characters, line breaks, defaults, duplicates; and the request
 * size a form at every limit needs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../cgi-bin/buf.h"
#include "../../cgi-bin/config.h"
#include "../../cgi-bin/csrf.h"
#include "../../cgi-bin/validate.h"

/* Parse a form and validate it as a post. */
static int check_post(const char *text, struct post_input *in, struct board_error *e)
{
        struct form f;
        assert_int_equal(form_parse(text, strlen(text), 32, &f, NULL), FORM_OK);
        int rc = validate_post(&f, in, e);
        form_free(&f);
        return rc;
}

static void with_field(struct buf *b, const char *name, char fill, size_t n)
{
        buf_printf(b, "&%s=", name);
        for (size_t i = 0; i < n; i++)
                buf_putc(b, fill);
}

static void test_defaults_and_newlines(void **state)
{
        (void)state;
        struct post_input in;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(check_post("body=a%0D%0Ab%0Dc%0Ad&name=+&token=t", &in, &e), 0);
        assert_string_equal(in.msg.name.ptr, "anonymous");
        assert_string_equal(in.msg.subject.ptr, "");
        assert_string_equal(in.msg.body.ptr, "a\nb\nc\nd");
        assert_string_equal(in.password, "");
        post_input_free(&in);
        assert_int_equal(check_post("body=%E6%97%A5&name=%E5%A4%AA&subject=s&password=p", &in, &e), 0);
        assert_string_equal(in.msg.name.ptr, "太");
        assert_string_equal(in.password, "p");
        post_input_free(&in);
}

static void test_limits(void **state)
{
        (void)state;
        struct {
                const char *field;
                size_t max;
        } lim[] = {{"name", 64}, {"subject", 128}, {"password", 128}};
        for (size_t k = 0; k < 3; k++) {
                for (int over = 0; over <= 1; over++) {
                        struct buf b = BUF_INIT;
                        buf_puts(&b, "body=x");
                        with_field(&b, lim[k].field, 'a', lim[k].max + (size_t)over);
                        struct post_input in;
                        struct board_error e = BOARD_ERROR_INIT;
                        int rc = check_post(b.data, &in, &e);
                        if (over) {
                                assert_int_equal(rc, -1);
                                assert_int_equal(e.status, 400);
                                assert_non_null(strstr(e.msg, "too long"));
                        } else {
                                assert_int_equal(rc, 0);
                                post_input_free(&in);
                        }
                        buf_free(&b);
                }
        }
        /* body: 8000 characters after CRLF -> LF */
        struct buf b = BUF_INIT;
        buf_puts(&b, "body=");
        for (int i = 0; i < 4000; i++)
                buf_puts(&b, "a%0D%0A");
        struct post_input in;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(check_post(b.data, &in, &e), 0);
        assert_int_equal(in.msg.body.len, 8000);
        post_input_free(&in);
        buf_puts(&b, "x");
        assert_int_equal(check_post(b.data, &in, &e), -1);
        assert_int_equal(e.status, 400);
        buf_free(&b);
}

/* n copies of the UTF-8 character ch, percent-encoded, after "&name=". */
static void with_chars(struct buf *b, const char *name, const char *ch, size_t n)
{
        buf_printf(b, "&%s=", name);
        for (size_t i = 0; i < n; i++)
                for (const unsigned char *p = (const unsigned char *)ch; *p; p++)
                        buf_printf(b, "%%%02X", *p);
}

/* Japanese (3 bytes a character) and emoji (4) are counted as the
 * characters a person typed, up to each field's limit: 8,000 × "あ" is a
 * message, 8,001 is one too many, and says so in characters. */
static void test_limits_in_characters(void **state)
{
        (void)state;
        struct {
                const char *field;
                size_t max;
        } lim[] = {{"name", MSG_NAME_MAX_CHARS},
                   {"subject", MSG_SUBJECT_MAX_CHARS},
                   {"password", MSG_PASSWORD_MAX_CHARS},
                   {"body", MSG_BODY_MAX_CHARS}};
        const char *chars[] = {"\xE3\x81\x82" /* あ */, "\xF0\x9F\x98\x80" /* U+1F600 */, "\xC3\xA9" /* é */};
        for (size_t k = 0; k < sizeof lim / sizeof lim[0]; k++)
                for (size_t c = 0; c < sizeof chars / sizeof chars[0]; c++)
                        for (int over = 0; over <= 1; over++) {
                                struct buf b = BUF_INIT;
                                buf_puts(&b, strcmp(lim[k].field, "body") == 0 ? "token=t" : "body=x");
                                with_chars(&b, lim[k].field, chars[c], lim[k].max + (size_t)over);
                                struct post_input in;
                                struct board_error e = BOARD_ERROR_INIT;
                                int rc = check_post(b.data, &in, &e);
                                if (over) {
                                        char want[64];
                                        snprintf(want, sizeof want, "%zu characters, at most %zu",
                                                 lim[k].max + 1, lim[k].max);
                                        if (rc != -1 || strstr(e.msg, want) == NULL)
                                                fail_msg(
                                                    "%s: %zu x '%s' accepted or not said in characters: %s",
                                                    lim[k].field, lim[k].max + 1, chars[c], e.msg);
                                } else {
                                        if (rc != 0)
                                                fail_msg("%s: %zu x '%s' refused: %s", lim[k].field,
                                                         lim[k].max, chars[c], e.msg);
                                        post_input_free(&in);
                                }
                                buf_free(&b);
                        }
}

/* A form with every field at its limit in 4-byte characters, as a
 * browser urlencodes it, fits the request size the limits give, and that
 * size is the board's default max_body. */
static void test_form_max_bytes(void **state)
{
        (void)state;
        struct buf b = BUF_INIT;
        buf_puts(&b, "token=");
        for (int i = 0; i < CSRF_TOKEN_LEN; i++)
                buf_putc(&b, 'f');
        with_chars(&b, "name", "\xF0\x9F\x98\x80", MSG_NAME_MAX_CHARS);
        with_chars(&b, "subject", "\xF0\x9F\x98\x80", MSG_SUBJECT_MAX_CHARS);
        with_chars(&b, "body", "\xF0\x9F\x98\x80", MSG_BODY_MAX_CHARS);
        with_chars(&b, "password", "\xF0\x9F\x98\x80", MSG_PASSWORD_MAX_CHARS);
        assert_int_equal((long)b.len, validate_post_form_max_bytes());
        struct post_input in;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(check_post(b.data, &in, &e), 0);
        post_input_free(&in);
        buf_free(&b);
        struct board_config c;
        const char *text = "data_dir = /tmp/x\n";
        assert_int_equal(config_parse(text, strlen(text), "t.conf", &c, &e), 0);
        assert_int_equal(c.max_body, validate_post_form_max_bytes());
        config_free(&c);
}

static void test_rejects(void **state)
{
        (void)state;
        const char *bad[] = {
            "name=x",                 /* no body */
            "body=+%0D%0A%09",        /* blank body */
            "body=%C0%AF",            /* overlong UTF-8 */
            "body=%ED%A0%80",         /* surrogate */
            "body=a%00b",             /* NUL */
            "body=a%1Bb",             /* ESC */
            "body=x&name=a%0Ab",      /* newline in the name */
            "body=x&subject=a%09b",   /* TAB in the subject */
            "body=x&body=y",          /* twice */
            "body=x&name=a&name=b",   /* twice */
            "body=x&token=a&token=b", /* twice */
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                struct post_input in;
                struct board_error e = BOARD_ERROR_INIT;
                if (check_post(bad[i], &in, &e) != -1)
                        fail_msg("accepted '%s'", bad[i]);
                assert_int_equal(e.status, 400);
                assert_true(strlen(e.msg) > 10);
        }
}

static void test_delete_form(void **state)
{
        (void)state;
        struct {
                const char *text;
                int ok;
                long long no;
        } cases[] = {
            {"no=12&password=pw", 1, 12},
            {"no=0&password=pw", 0, 0},
            {"no=-1&password=pw", 0, 0},
            {"no=1x&password=pw", 0, 0},
            {"no=&password=pw", 0, 0},
            {"password=pw", 0, 0},
            {"no=1", 0, 0},
            {"no=1&password=", 0, 0},
            {"no=1&no=2&password=p", 0, 0},
            {"no=1&password=a%00b", 0, 0},
            {"no=9999999999999999999&password=p", 0, 0},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                struct form f;
                assert_int_equal(form_parse(cases[i].text, strlen(cases[i].text), 32, &f, NULL), FORM_OK);
                long long no = 0;
                const char *pw = NULL;
                struct board_error e = BOARD_ERROR_INIT;
                int rc = validate_delete(&f, &no, &pw, &e);
                if ((rc == 0) != cases[i].ok)
                        fail_msg("case '%s': rc %d", cases[i].text, rc);
                if (rc == 0) {
                        assert_int_equal(no, cases[i].no);
                        assert_string_equal(pw, "pw");
                } else {
                        assert_int_equal(e.status, 400);
                }
                form_free(&f);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_defaults_and_newlines),
            cmocka_unit_test(test_limits),
            cmocka_unit_test(test_limits_in_characters),
            cmocka_unit_test(test_form_max_bytes),
            cmocka_unit_test(test_rejects),
            cmocka_unit_test(test_delete_form),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
