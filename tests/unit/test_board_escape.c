/* test_board_escape.c - HTML and JSON escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../cgi-bin/json.h"
#include "../../cgi-bin/render.h"

static void html_is(const char *in, size_t len, const char *want)
{
        struct buf b = BUF_INIT;
        html_escape(&b, in, len);
        assert_false(b.oom);
        assert_string_equal(b.data ? b.data : "", want);
        buf_free(&b);
}

static void json_is(const char *in, size_t len, const char *want)
{
        struct buf b = BUF_INIT;
        json_string(&b, in, len);
        assert_string_equal(b.data, want);
        buf_free(&b);
}

static void test_html(void **state)
{
        (void)state;
        html_is("", 0, "");
        html_is("<script>alert('x')</script>", 27, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
        html_is("a & b \"c\"", 9, "a &amp; b &quot;c&quot;");
        html_is("&amp;", 5, "&amp;amp;");
        html_is("日本語\nline\ttab\r", strlen("日本語\nline\ttab\r"), "日本語\nline\ttab\r");
        /* invalid UTF-8 and controls become U+FFFD */
        html_is("a\xFF"
                "b",
                3,
                "a\xEF\xBF\xBD"
                "b");
        html_is("a\0b", 3,
                "a\xEF\xBF\xBD"
                "b");
        html_is("\x1b[0m", 4, "\xEF\xBF\xBD[0m");
        html_is("\xE6\x97", 2, "\xEF\xBF\xBD\xEF\xBF\xBD");
}

static void test_json(void **state)
{
        (void)state;
        json_is("", 0, "\"\"");
        json_is("line1\nline2", 11, "\"line1\\nline2\"");
        json_is("q\"b\\s/", 6, "\"q\\\"b\\\\s/\"");
        json_is("\t\r\x01\x1f\x7f", 5, "\"\\t\\r\\u0001\\u001f\\u007f\"");
        json_is("a\0b", 3, "\"a\\u0000b\"");
        json_is("日本", strlen("日本"), "\"日本\"");
        json_is("<\xFF>", 3, "\"<\\ufffd>\"");
}

static void test_json_messages(void **state)
{
        (void)state;
        struct logrecord items[2] = {
            {1, 0, {"anonymous", 9}, {"hi", 2}, {"line1\nline2", 11}, {"$y$secret", 9}, ""},
            {2, 1795343757, {"太郎", 6}, {"", 0}, {"x", 1}, {"", 0}, ""},
        };
        struct msglist l = {items, 2, 2, 0, 0};
        struct buf b = BUF_INIT;
        struct json_page all = {0, 0, 0, JSON_PAGE_DEFAULT_LIMIT};
        json_messages(&b, &l, &all);
        assert_string_equal(
            b.data, "{\"messages\":[{\"no\":1,\"name\":\"anonymous\",\"subject\":\"hi\",\"body\":"
                    "\"line1\\nline2\",\"time\":\"1970-01-01T00:00:00Z\"},{\"no\":2,\"name\":"
                    "\"太郎\",\"subject\":\"\",\"body\":\"x\",\"time\":\"2026-11-22T10:35:57Z\"}]}\n");
        assert_null(strstr(b.data, "secret"));
        buf_reset(&b);
        struct json_page since1 = {1, 0, 1, JSON_PAGE_DEFAULT_LIMIT};
        json_messages(&b, &l, &since1);
        assert_non_null(strstr(b.data, "\"no\":2"));
        assert_null(strstr(b.data, "\"no\":1"));
        buf_reset(&b);
        struct json_page since2 = {2, 0, 1, JSON_PAGE_DEFAULT_LIMIT};
        json_messages(&b, &l, &since2);
        assert_string_equal(b.data, "{\"messages\":[]}\n");
        buf_free(&b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_html),
            cmocka_unit_test(test_json),
            cmocka_unit_test(test_json_messages),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
