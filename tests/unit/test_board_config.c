/* test_board_config.c - configuration parsing: defaults, values, errors.
 * <fcntl.h> comes first on purpose: glibc defines LOCK_RW there, and the
 * board's lock modes must not collide with it. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../cgi-bin/config.h"
#include "../../cgi-bin/validate.h"

static int parse(const char *text, struct board_config *cfg, struct board_error *err)
{
        return config_parse(text, strlen(text), "board.conf", cfg, err);
}

static void test_defaults(void **state)
{
        (void)state;
        struct board_config c;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(parse("# comment\n\ndata_dir = /tmp/x\n", &c, &e), 0);
        assert_string_equal(c.data_dir, "/tmp/x");
        assert_string_equal(c.title, "dirlock board");
        assert_string_equal(c.base_path, "/");
        assert_int_equal(c.lock_mode, BOARD_LOCK_MKDIR);
        assert_int_equal(c.store, BOARD_STORE_LOG);
        assert_true(c.lock_timeout == 10.0);
        assert_true(c.stale_age == 30.0);
        assert_int_equal(c.delay_ms, 0);
        assert_int_equal(c.write_method, BOARD_WRITE_RENAME);
        assert_int_equal(c.max_messages, 1000);
        assert_int_equal(c.page_size, 20);
        assert_int_equal(c.min_post_interval, 0);
        assert_int_equal(c.max_body, validate_post_form_max_bytes());
        assert_int_equal(c.group_commit, 1);
        assert_string_equal(c.lock_space, "/tmp/x/locks");
        assert_int_equal(c.max_waiting_posts, 0);
        config_free(&c);
}

static void test_all_keys(void **state)
{
        (void)state;
        struct board_config c;
        struct board_error e = BOARD_ERROR_INIT;
        const char *text = "title = 掲示板 = test \r\n"
                           "  base_path=/board/rw/\n"
                           "data_dir\t=\t/var/lib/board rw  \n"
                           "lock_mode = rw\nstore = sqlite\nlock_timeout = 0.5\nstale_age = 2\n"
                           "delay_ms = 300\nwrite_method = inplace\nmax_messages = 5\npage_size = 3\n"
                           "min_post_interval = 10\nmax_body = 1024\ngroup_commit = no\n"
                           "max_waiting_posts = 4\nlock_space = /dev/shm/board locks/rw";
        assert_int_equal(parse(text, &c, &e), 0);
        assert_string_equal(c.title, "掲示板 = test");
        assert_string_equal(c.base_path, "/board/rw/");
        assert_string_equal(c.data_dir, "/var/lib/board rw");
        assert_int_equal(c.lock_mode, BOARD_LOCK_RW);
        assert_int_equal(c.store, BOARD_STORE_SQLITE);
        assert_true(c.lock_timeout == 0.5);
        assert_true(c.stale_age == 2.0);
        assert_int_equal(c.delay_ms, 300);
        assert_int_equal(c.write_method, BOARD_WRITE_INPLACE);
        assert_int_equal(c.max_messages, 5);
        assert_int_equal(c.page_size, 3);
        assert_int_equal(c.min_post_interval, 10);
        assert_int_equal(c.max_body, 1024);
        assert_int_equal(c.group_commit, 0);
        assert_string_equal(c.lock_space, "/dev/shm/board locks/rw");
        assert_int_equal(c.max_waiting_posts, 4);
        assert_string_equal(c.gate_space, "/dev/shm/board locks/rw");
        config_free(&c);
}

static void expect_error(const char *text, const char *needle)
{
        struct board_config c;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(parse(text, &c, &e), -1);
        assert_int_equal(e.status, 500);
        if (!strstr(e.msg, needle))
                fail_msg("message '%s' lacks '%s'", e.msg, needle);
        assert_null(c.title);
        assert_null(c.data_dir);
}

static void test_errors(void **state)
{
        (void)state;
        expect_error("title = x\n", "'data_dir' is required");
        expect_error("data_dir = /x\ncolour = red\n", "board.conf:2: unknown key 'colour'");
        expect_error("data_dir = /x\nlock_mode = spin\n", "board.conf:2: key 'lock_mode': bad value 'spin'");
        expect_error("data_dir = /x\nstore = csv\n", "key 'store'");
        expect_error("data_dir = /x\n\n\ndelay_ms = -1\n", "board.conf:4: key 'delay_ms'");
        expect_error("data_dir = /x\ndelay_ms = 10ms\n", "key 'delay_ms'");
        expect_error("data_dir = /x\nmax_messages = 0\n", "key 'max_messages'");
        expect_error("data_dir = /x\npage_size = \n", "key 'page_size'");
        expect_error("data_dir = /x\nlock_timeout = nan\n", "key 'lock_timeout'");
        expect_error("data_dir = /x\nbase_path = /board\n", "key 'base_path'");
        expect_error("data_dir = /x\nbase_path = board/\n", "key 'base_path'");
        expect_error("data_dir = /x\nbase_path = /a\"b/\n", "key 'base_path'");
        expect_error("data_dir = /x\nwrite_method = copy\n", "key 'write_method'");
        expect_error("data_dir = /x\nmax_body = 99999999999\n", "key 'max_body'");
        expect_error("data_dir = /x\ngroup_commit = maybe\n", "key 'group_commit'");
        expect_error("data_dir = /x\njust words\n", "board.conf:2: expected 'key = value'");
        expect_error("data_dir = /x\ndata_dir = /y\n", "given twice");
        expect_error("data_dir =\n", "key 'data_dir'");
        expect_error("data_dir = /x\nlock_space =\n", "key 'lock_space'");
        expect_error("data_dir = /x\nlock_space = a\x01b\n", "key 'lock_space'");
        expect_error("data_dir = /x\nlock_mode = flock\nlock_space = redis://127.0.0.1/board\n",
                     "lock_mode flock takes flock(2) locks on files in a directory");
        expect_error("data_dir = /x\nlock_mode = rw\nlock_space = flock:/run/b\n",
                     "lock_mode rw writes under an intent lock, which lock space 'flock:/run/b' does not have");
        expect_error("data_dir = /x\nlock_space = redis://127.0.0.1/0\ngroup_commit = yes\n",
                     "group commit judges queued posts by process id");
        expect_error("data_dir = /x\nmax_waiting_posts = -1\n", "key 'max_waiting_posts'");
        expect_error("data_dir = /x\nmax_waiting_posts = 65536\n", "key 'max_waiting_posts'");
}

/* The posts' gate counts in the lock space, or for flock:DIR in DIR: a
 * space with counting locks. */
static void test_gate_space(void **state)
{
        (void)state;
        struct board_config c;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(parse("data_dir = /x\nmax_waiting_posts = 2\nlock_mode = flock\n"
                               "lock_space = flock:/run/board\n",
                               &c, &e),
                         0);
        assert_string_equal(c.gate_space, "/run/board");
        assert_int_equal(c.max_waiting_posts, 2);
        config_free(&c);
        assert_int_equal(parse("data_dir = /x\nlock_space = /run/l\n", &c, &e), 0);
        assert_string_equal(c.gate_space, "/run/l");
        config_free(&c);
}

/* Group commit is off on a lock server's space (several hosts), on by
 * default on a directory. */
static void test_group_commit_per_space(void **state)
{
        (void)state;
        const char *spaces[] = {"/run/locks", "flock:/run/board", "redis://127.0.0.1:6379/0",
                                "redis+unix:///run/redis.sock"};
        const int want[] = {1, 1, 0, 0};
        for (size_t i = 0; i < 4; i++) {
                char text[128];
                snprintf(text, sizeof text, "data_dir = /x\nlock_space = %s\n", spaces[i]);
                struct board_config c;
                struct board_error e = BOARD_ERROR_INIT;
                assert_int_equal(parse(text, &c, &e), 0);
                assert_int_equal(c.group_commit, want[i]);
                config_free(&c);
        }
}

/* lock_space is handed to the library as it is: a directory, flock:DIR or
 * a backend's URL (the library says what it cannot use). */
static void test_lock_space_kinds(void **state)
{
        (void)state;
        const char *spaces[] = {"relative/locks", "flock:/run/board", "redis://127.0.0.1:6379/0"};
        for (size_t i = 0; i < 3; i++) {
                char text[128];
                snprintf(text, sizeof text, "data_dir = /x\nlock_space = %s\n", spaces[i]);
                struct board_config c;
                struct board_error e = BOARD_ERROR_INIT;
                assert_int_equal(parse(text, &c, &e), 0);
                assert_string_equal(c.lock_space, spaces[i]);
                config_free(&c);
        }
        struct board_config c;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(parse("data_dir = /x\nlock_mode = flock\nlock_space = flock:/run/b\n", &c, &e), 0);
        config_free(&c);
}

static void test_load_missing_file(void **state)
{
        (void)state;
        struct board_config c;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(config_load("/nonexistent/board.conf", &c, &e), -1);
        assert_non_null(strstr(e.msg, "/nonexistent/board.conf"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_defaults),
            cmocka_unit_test(test_all_keys),
            cmocka_unit_test(test_errors),
            cmocka_unit_test(test_gate_space),
            cmocka_unit_test(test_lock_space_kinds),
            cmocka_unit_test(test_group_commit_per_space),
            cmocka_unit_test(test_load_missing_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
