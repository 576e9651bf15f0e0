/* test_board_form.c - the urlencoded form parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../cgi-bin/form.h"

static int parse(const char *s, struct form *f)
{
        return form_parse(s, strlen(s), 32, f, NULL);
}

static void test_simple(void **state)
{
        (void)state;
        struct form f;
        assert_int_equal(parse("name=taro&subject=hello&body=hi", &f), FORM_OK);
        assert_int_equal(f.count, 3);
        assert_string_equal(f.fields[0].name, "name");
        assert_string_equal(f.fields[0].value, "taro");
        assert_string_equal(form_get(&f, "subject")->value, "hello");
        assert_string_equal(form_get(&f, "body")->value, "hi");
        assert_null(form_get(&f, "password"));
        form_free(&f);
}

static void test_plus_and_percent(void **state)
{
        (void)state;
        struct form f;
        assert_int_equal(parse("a=x+y%2Bz&b=%e6%97%a5%E6%9C%AC&c=%0D%0A&d=100%25", &f), FORM_OK);
        assert_string_equal(form_get(&f, "a")->value, "x y+z");
        assert_string_equal(form_get(&f, "b")->value, "日本");
        assert_string_equal(form_get(&f, "c")->value, "\r\n");
        assert_string_equal(form_get(&f, "d")->value, "100%");
        form_free(&f);
}

static void test_nul_byte(void **state)
{
        (void)state;
        struct form f;
        assert_int_equal(parse("a=x%00y", &f), FORM_OK);
        const struct form_field *a = form_get(&f, "a");
        assert_int_equal(a->value_len, 3);
        assert_memory_equal(a->value, "x\0y", 3);
        form_free(&f);
}

static void test_bad_percent(void **state)
{
        (void)state;
        const char *bad[] = {"a=%", "a=%4", "a=%zz", "a=ok&b=%G1", "%x=1", "a=%%41"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                struct form f;
                size_t pos = 999;
                assert_int_equal(form_parse(bad[i], strlen(bad[i]), 32, &f, &pos), FORM_EPERCENT);
                assert_int_equal(f.count, 0);
                assert_null(f.fields);
                assert_true(pos < strlen(bad[i]));
                assert_int_equal(bad[i][pos], '%');
                form_free(&f);
        }
}

static void test_lenient_keeps_percent(void **state)
{
        (void)state;
        struct form f;
        const char *s = "body=50%+off%zz%41&name=a%";
        assert_int_equal(form_parse_lenient(s, strlen(s), 32, &f), FORM_OK);
        assert_string_equal(form_get(&f, "body")->value, "50% off%zzA");
        assert_string_equal(form_get(&f, "name")->value, "a%");
        form_free(&f);
}

static void test_duplicates_and_empty(void **state)
{
        (void)state;
        struct form f;
        assert_int_equal(parse("&a=1&&a=2&b&=v&", &f), FORM_OK);
        assert_int_equal(f.count, 4);
        assert_int_equal(form_count(&f, "a"), 2);
        assert_string_equal(form_get(&f, "a")->value, "1");
        assert_string_equal(f.fields[1].value, "2");
        assert_string_equal(form_get(&f, "b")->value, "");
        assert_string_equal(form_get(&f, "")->value, "v");
        form_free(&f);
        assert_int_equal(parse("", &f), FORM_OK);
        assert_int_equal(f.count, 0);
        form_free(&f);
}

static void test_limit(void **state)
{
        (void)state;
        struct form f;
        const char *s = "a=1&b=2&c=3&d=4";
        assert_int_equal(form_parse(s, strlen(s), 4, &f, NULL), FORM_OK);
        assert_int_equal(f.count, 4);
        form_free(&f);
        assert_int_equal(form_parse(s, strlen(s), 3, &f, NULL), FORM_ETOOMANY);
        assert_int_equal(f.count, 0);
        form_free(&f);
}

static void test_length_not_nul(void **state)
{
        (void)state;
        /* Only `len` bytes are looked at. */
        struct form f;
        assert_int_equal(form_parse("a=1&b=2", 3, 32, &f, NULL), FORM_OK);
        assert_int_equal(f.count, 1);
        assert_string_equal(f.fields[0].value, "1");
        form_free(&f);
        assert_string_equal(form_strerror(FORM_EPERCENT), "malformed percent-encoding");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_simple),
            cmocka_unit_test(test_plus_and_percent),
            cmocka_unit_test(test_nul_byte),
            cmocka_unit_test(test_bad_percent),
            cmocka_unit_test(test_lenient_keeps_percent),
            cmocka_unit_test(test_duplicates_and_empty),
            cmocka_unit_test(test_limit),
            cmocka_unit_test(test_length_not_nul),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
