/* test_board_ratelimit.c - per-address post interval file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../cgi-bin/buf.h"
#include "../../cgi-bin/fileio.h"
#include "../../cgi-bin/ratelimit.h"

static void test_interval(void **state)
{
        (void)state;
        char dir[] = "/tmp/test_board_rate_XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[64];
        snprintf(path, sizeof path, "%s/ratelimit", dir);
        struct board_error e = BOARD_ERROR_INIT;
        long wait = -1;
        assert_int_equal(ratelimit_check(path, "10.0.0.1", 1000, 30, &wait, &e), 0);
        assert_int_equal(ratelimit_record(path, "10.0.0.1", 1000, 30, &e), 0);
        assert_int_equal(ratelimit_record(path, "10.0.0.2", 1010, 30, &e), 0);
        assert_int_equal(ratelimit_check(path, "10.0.0.1", 1005, 30, &wait, &e), 1);
        assert_int_equal(wait, 25);
        assert_int_equal(ratelimit_check(path, "10.0.0.3", 1005, 30, &wait, &e), 0);
        assert_int_equal(ratelimit_check(path, "10.0.0.1", 1030, 30, &wait, &e), 0);
        /* old entries are dropped when writing */
        assert_int_equal(ratelimit_record(path, "10.0.0.3", 1100, 30, &e), 0);
        struct buf b = BUF_INIT;
        assert_int_equal(file_read_all(path, &b, &e), 0);
        assert_string_equal(b.data, "10.0.0.3\t1100\n");
        buf_free(&b);
        /* a post that failed is taken back, only when the time matches */
        assert_int_equal(ratelimit_record(path, "10.0.0.4", 1101, 30, &e), 0);
        assert_int_equal(ratelimit_forget(path, "10.0.0.4", 1100, 30, &e), 0);
        assert_int_equal(ratelimit_check(path, "10.0.0.4", 1102, 30, &wait, &e), 1);
        assert_int_equal(ratelimit_forget(path, "10.0.0.4", 1101, 30, &e), 0);
        assert_int_equal(ratelimit_check(path, "10.0.0.4", 1102, 30, &wait, &e), 0);
        assert_int_equal(ratelimit_check(path, "10.0.0.3", 1102, 30, &wait, &e), 1);
        /* interval 0 = off, nothing written */
        assert_int_equal(ratelimit_check(path, "10.0.0.3", 1100, 0, &wait, &e), 0);
        /* odd addresses cannot break the file format */
        assert_int_equal(ratelimit_record(path, "a\tb\nc", 1200, 30, &e), 0);
        assert_int_equal(ratelimit_check(path, "a\tb\nc", 1201, 30, &wait, &e), 1);
        char cmd[80];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_interval),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
