/* test_board_logrecord.c - message log lines: round trip and errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../cgi-bin/logrecord.h"

static struct lr_text T(const char *s, size_t n) {
        struct lr_text t = {(char *)s, n};
        return t;
}

static void
round_trip(const struct logrecord *in)
{
        char *line;
        size_t len;
        assert_int_equal(logrecord_serialize(in, &line, &len), LOGRECORD_OK);
        assert_true(len > 0);
        assert_int_equal(line[len - 1], '\n');
        assert_null(memchr(line, '\n', len - 1)); /* exactly one line */
        struct logrecord out;
        assert_int_equal(logrecord_parse(line, len, &out), LOGRECORD_OK);
        assert_true(logrecord_equal(in, &out));
        logrecord_free(&out);
        /* without the LF too */
        assert_int_equal(logrecord_parse(line, len - 1, &out), LOGRECORD_OK);
        assert_true(logrecord_equal(in, &out));
        logrecord_free(&out);
        free(line);
}

static void test_plain(void **state)
{
        (void)state;
        struct logrecord r = {1, 1700000000, T("anonymous", 9), T("hi", 2), T("hello", 5), T("", 0), ""};
        char *line;
        size_t len;
        assert_int_equal(logrecord_serialize(&r, &line, &len), LOGRECORD_OK);
        assert_string_equal(line, "1\t1700000000\tanonymous\thi\thello\t\n");
        free(line);
        round_trip(&r);
}

static void test_special_bytes(void **state)
{
        (void)state;
        const char body[] = "tab\there\nnew\\line\r\nCR\\t\\n not escapes \0NUL \x01\xff end\\";
        struct logrecord r = {42,
                              0,
                              T("名前\t", strlen("名前\t")),
                              T("件名\\", strlen("件名\\")),
                              T(body, sizeof body - 1),
                              T("$y$j9T$abc$def", 14),
                              ""};
        char *line;
        size_t len;
        assert_int_equal(logrecord_serialize(&r, &line, &len), LOGRECORD_OK);
        /* Only the four escapes are used; NUL and other bytes pass as is. */
        static const char want1[] = "tab\\there\\nnew\\\\line\\r\\nCR\\\\t\\\\n";
        static const char want2[] = "\0NUL \x01\xff end\\\\\t";
        assert_non_null(memmem(line, len, want1, sizeof want1 - 1));
        assert_non_null(memmem(line, len, want2, sizeof want2 - 1));
        free(line);
        round_trip(&r);
}

static void test_japanese(void **state)
{
        (void)state;
        const char *b = "こんにちは、世界。\n二行目です。";
        struct logrecord r = {
            7,        1795343757, T("太郎", strlen("太郎")), T("挨拶", strlen("挨拶")), T(b, strlen(b)),
            T("", 0), ""};
        round_trip(&r);
}

static void test_all_bytes(void **state)
{
        (void)state;
        char all[256];
        for (int i = 0; i < 256; i++)
                all[i] = (char)i;
        struct logrecord r = {123456789012LL, 99, T(all, 256), T(all + 9, 5), T(all, 256), T(all, 1), ""};
        round_trip(&r);
}

static void test_parse_errors(void **state)
{
        (void)state;
        struct {
                const char *line;
                int code;
        } cases[] = {
            {"", LOGRECORD_EFIELDS},
            {"1\t2\ta\tb\tc", LOGRECORD_EFIELDS},
            {"1\t2\ta\tb\tc\td\t0123456789abcdef\te", LOGRECORD_EFIELDS},
            {"1\t2\ta\tb\tc\td\te", LOGRECORD_EID},
            {"1\t2\ta\tb\tc\td\t", LOGRECORD_EID},
            {"1\t2\ta\tb\tc\td\t0123456789ABCDEF", LOGRECORD_EID},
            {"1\t2\ta\tb\tc\td\t0123456789abcde", LOGRECORD_EID},
            {"1\t2\ta\tb\tc\td\t0123456789abcdef0", LOGRECORD_EID},
            {"0\t2\ta\tb\tc\t", LOGRECORD_ENUMBER},
            {"-1\t2\ta\tb\tc\t", LOGRECORD_ENUMBER},
            {"01\t2\ta\tb\tc\t", LOGRECORD_ENUMBER},
            {"x\t2\ta\tb\tc\t", LOGRECORD_ENUMBER},
            {"\t2\ta\tb\tc\t", LOGRECORD_ENUMBER},
            {"99999999999999999999\t2\ta\tb\tc\t", LOGRECORD_ENUMBER},
            {"1\t\ta\tb\tc\t", LOGRECORD_ETIME},
            {"1\t2x\ta\tb\tc\t", LOGRECORD_ETIME},
            {"1\t2\ta\\x\tb\tc\t", LOGRECORD_EESCAPE},
            {"1\t2\ta\tb\tc\\\t", LOGRECORD_EESCAPE},
            {"1\t2\ta\tb\tc\tend\\", LOGRECORD_EESCAPE},
            {"1\t2\ta\nb\tb\tc\t", LOGRECORD_ELINE},
            {"1\t2\ta\tb\tc\t\n\n", LOGRECORD_ELINE},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                struct logrecord r;
                int rc = logrecord_parse(cases[i].line, strlen(cases[i].line), &r);
                if (rc != cases[i].code)
                        fail_msg("case %zu '%s': got %d want %d", i, cases[i].line, rc, cases[i].code);
                assert_null(r.name.ptr);
                logrecord_free(&r);
                assert_non_null(logrecord_strerror(rc));
        }
}

static void test_post_id(void **state)
{
        (void)state;
        struct logrecord r = {5, 1700000000, T("a", 1), T("s", 1), T("b", 1), T("", 0), "00ff00ff00ff00ff"};
        char *line;
        size_t len;
        assert_int_equal(logrecord_serialize(&r, &line, &len), LOGRECORD_OK);
        assert_string_equal(line, "5\t1700000000\ta\ts\tb\t\t00ff00ff00ff00ff\n");
        free(line);
        round_trip(&r);
        /* A record without an id is written in the six-field form. */
        struct logrecord plain = {5, 1700000000, T("a", 1), T("s", 1), T("b", 1), T("", 0), ""};
        struct logrecord back;
        assert_int_equal(logrecord_parse("5\t1700000000\ta\ts\tb\t\n", 20, &back), LOGRECORD_OK);
        assert_true(logrecord_equal(&plain, &back));
        assert_false(logrecord_equal(&r, &back));
        logrecord_free(&back);
        /* An id that is not one is refused, never written. */
        strcpy(r.id, "not-an-id");
        line = (char *)1;
        assert_int_equal(logrecord_serialize(&r, &line, &len), LOGRECORD_EID);
        assert_null(line);
}

static void test_serialize_refuses_bad_numbers(void **state)
{
        (void)state;
        struct logrecord r = {0, 1, T("", 0), T("", 0), T("x", 1), T("", 0), ""};
        char *line = (char *)1;
        size_t len = 5;
        assert_int_equal(logrecord_serialize(&r, &line, &len), LOGRECORD_ENUMBER);
        assert_null(line);
        r.no = 1;
        r.time = -5;
        assert_int_equal(logrecord_serialize(&r, &line, &len), LOGRECORD_ETIME);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_plain),        cmocka_unit_test(test_special_bytes),
            cmocka_unit_test(test_japanese),     cmocka_unit_test(test_all_bytes),
            cmocka_unit_test(test_parse_errors), cmocka_unit_test(test_serialize_refuses_bad_numbers),
            cmocka_unit_test(test_post_id),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
