/* test_board_cookie.c - the Cookie header parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../cgi-bin/cookie.h"

static void test_pairs(void **state)
{
        (void)state;
        struct cookie_jar jar;
        const char *h = "a=1; board_csrf=00ff ;\tb = two words ; c=\"quoted\"";
        assert_int_equal(cookie_parse(h, strlen(h), 16, &jar), COOKIE_OK);
        assert_int_equal(jar.count, 4);
        assert_string_equal(cookie_find(&jar, "a")->value, "1");
        assert_string_equal(cookie_find(&jar, "board_csrf")->value, "00ff");
        assert_string_equal(cookie_find(&jar, "b")->value, "two words");
        assert_string_equal(cookie_find(&jar, "c")->value, "quoted");
        assert_null(cookie_find(&jar, "d"));
        assert_null(cookie_find(&jar, "board"));
        cookie_jar_free(&jar);
}

static void test_odd_input(void **state)
{
        (void)state;
        struct cookie_jar jar;
        const char *h = ";;novalue; =x; e=; f==g;  ;\"=1";
        assert_int_equal(cookie_parse(h, strlen(h), 16, &jar), COOKIE_OK);
        assert_null(cookie_find(&jar, "novalue"));
        assert_string_equal(cookie_find(&jar, "e")->value, "");
        assert_string_equal(cookie_find(&jar, "f")->value, "=g");
        assert_string_equal(cookie_find(&jar, "\"")->value, "1");
        assert_int_equal(jar.count, 3);
        cookie_jar_free(&jar);
        assert_int_equal(cookie_parse("", 0, 16, &jar), COOKIE_OK);
        assert_int_equal(jar.count, 0);
        cookie_jar_free(&jar);
}

static void test_first_wins_and_limit(void **state)
{
        (void)state;
        struct cookie_jar jar;
        const char *h = "x=1; x=2; y=3";
        assert_int_equal(cookie_parse(h, strlen(h), 16, &jar), COOKIE_OK);
        assert_string_equal(cookie_find(&jar, "x")->value, "1");
        cookie_jar_free(&jar);
        assert_int_equal(cookie_parse(h, strlen(h), 2, &jar), COOKIE_ETOOMANY);
        assert_int_equal(jar.count, 0);
        cookie_jar_free(&jar);
}

static void test_embedded_nul(void **state)
{
        (void)state;
        struct cookie_jar jar;
        const char h[] = "a=1\0; b=2";
        assert_int_equal(cookie_parse(h, sizeof h - 1, 16, &jar), COOKIE_OK);
        assert_int_equal(cookie_find(&jar, "a")->value_len, 2);
        assert_string_equal(cookie_find(&jar, "b")->value, "2");
        cookie_jar_free(&jar);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_pairs),
            cmocka_unit_test(test_odd_input),
            cmocka_unit_test(test_first_wins_and_limit),
            cmocka_unit_test(test_embedded_nul),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
