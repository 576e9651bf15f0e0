/* test_board_utf8.c - the UTF-8 validator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../cgi-bin/utf8.h"

static void test_valid(void **state)
{
        (void)state;
        const char *ok[] = {"",
                            "ascii",
                            "日本語のテキスト",
                            "é",
                            "\xF0\x9F\x98\x80",
                            "\xEF\xBF\xBF",
                            "\xF4\x8F\xBF\xBF",
                            "\xED\x9F\xBF"};
        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
                assert_true(utf8_valid(ok[i], strlen(ok[i])));
}

static void test_invalid(void **state)
{
        (void)state;
        const char *bad[] = {
            "\x80",             /* lone continuation */
            "\xC3",             /* truncated */
            "\xC0\xAF",         /* overlong '/' */
            "\xC1\xBF",         /* overlong */
            "\xE0\x80\xAF",     /* overlong 3-byte */
            "\xF0\x80\x80\xAF", /* overlong 4-byte */
            "\xED\xA0\x80",     /* surrogate U+D800 */
            "\xED\xBF\xBF",     /* surrogate U+DFFF */
            "\xF4\x90\x80\x80", /* above U+10FFFF */
            "\xF5\x80\x80\x80",
            "\xFF",
            "\xFE",
            "\xE6\x97",
            "ab\xE6\x97xy",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                assert_false(utf8_valid(bad[i], strlen(bad[i])));
}

static void test_decode(void **state)
{
        (void)state;
        uint32_t cp = 0;
        assert_int_equal(utf8_decode((const unsigned char *)"\xE6\x97\xA5", 3, &cp), 3);
        assert_int_equal(cp, 0x65E5);
        assert_int_equal(utf8_decode((const unsigned char *)"\xE6\x97\xA5", 2, &cp), 0);
        assert_int_equal(utf8_decode((const unsigned char *)"A", 1, &cp), 1);
        assert_int_equal(cp, 'A');
}

static void test_check_text(void **state)
{
        (void)state;
        size_t pos = 0;
        assert_int_equal(utf8_check_text("a\tb", 3, 1, &pos), UTF8_OK);
        assert_int_equal(utf8_check_text("a\r\nb", 4, 1, &pos), UTF8_OK);
        assert_int_equal(utf8_check_text("a\tb", 3, 0, &pos), UTF8_ECONTROL);
        assert_int_equal(pos, 1);
        assert_int_equal(utf8_check_text("ab\0", 3, 1, &pos), UTF8_ECONTROL);
        assert_int_equal(pos, 2);
        assert_int_equal(utf8_check_text("x\x7f", 2, 1, &pos), UTF8_ECONTROL);
        assert_int_equal(utf8_check_text("x\xC2\x85", 3, 1, &pos), UTF8_ECONTROL); /* C1 NEL */
        assert_int_equal(utf8_check_text("日\xFF", 4, 1, &pos), UTF8_EINVALID);
        assert_int_equal(pos, 3);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_valid),
            cmocka_unit_test(test_invalid),
            cmocka_unit_test(test_decode),
            cmocka_unit_test(test_check_text),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
