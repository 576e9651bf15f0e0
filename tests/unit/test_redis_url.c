/* test_redis_url.c - unit tests of the Redis space address parser
 * (lib/redis/redis_url.c): the defaults, every part, credentials with %XX, the
 * canonical form and its round trip, the password never shown, TLS
 * (rediss://) and the parameters that name files and a variable, and a
 * clear refusal of each kind of bad address. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "redis_url.h"

#include <stdio.h>
#include <string.h>

static int parse(const char *s, dl_redis_url *u, char *why)
{
        return dl_redis_url_parse(s, strlen(s), u, why, 200);
}

static void canonical(const char *in, const char *want)
{
        dl_redis_url u, back;
        char why[200] = "", out[DL_REDIS_URL_MAX];
        if (parse(in, &u, why) != 0)
                fail_msg("'%s' refused: %s", in, why);
        assert_true(dl_redis_url_format(&u, false, out, sizeof out) > 0);
        assert_string_equal(out, want);
        assert_int_equal(parse(out, &back, why), 0);
        assert_memory_equal(&u, &back, sizeof u);
}

static void test_defaults_and_parts(void **state)
{
        (void)state;
        dl_redis_url u;
        char why[200];
        assert_int_equal(parse("redis://localhost", &u, why), 0);
        assert_false(u.unix_socket);
        assert_string_equal(u.host, "localhost");
        assert_int_equal(u.port, 6379);
        assert_int_equal(u.db, 0);
        assert_string_equal(u.prefix, "dirlock");
        assert_false(u.has_password);
        canonical("redis://localhost", "redis://localhost:6379/0?prefix=dirlock");
        canonical("redis://127.0.0.1:7000/3?prefix=board:locks",
                  "redis://127.0.0.1:7000/3?prefix=board:locks");
        canonical("redis://h/", "redis://h:6379/0?prefix=dirlock");
        canonical("redis://[::1]:6380/2", "redis://[::1]:6380/2?prefix=dirlock");
        canonical("redis+unix:///run/redis/redis.sock",
                  "redis+unix:///run/redis/redis.sock?db=0&prefix=dirlock");
        canonical("redis+unix:///tmp/r.sock?prefix=a.b-c_d&db=5",
                  "redis+unix:///tmp/r.sock?db=5&prefix=a.b-c_d");
        assert_true(dl_redis_url_is_redis("redis://x"));
        assert_true(dl_redis_url_is_redis("redis+unix:///x"));
        assert_false(dl_redis_url_is_redis("/var/locks"));
        assert_true(dl_redis_url_is_redis("rediss://x"));
        assert_false(dl_redis_url_is_redis("redis:/x"));
}

static void test_tls_and_files(void **state)
{
        (void)state;
        dl_redis_url u;
        char why[200], out[DL_REDIS_URL_MAX];
        assert_int_equal(parse("rediss://locker@redis.example:6380/2?prefix=board&password_file=/etc/dl/pw"
                               "&cacert=/etc/dl/ca.pem&cert=/etc/dl/c.pem&key=/etc/dl/c.key",
                               &u, why),
                         0);
        assert_true(u.tls);
        assert_true(u.has_user);
        assert_false(u.has_password);
        assert_true(dl_redis_url_logs_in(&u));
        assert_string_equal(u.user, "locker");
        assert_string_equal(u.password_file, "/etc/dl/pw");
        assert_string_equal(u.cacert, "/etc/dl/ca.pem");
        assert_string_equal(u.cert, "/etc/dl/c.pem");
        assert_string_equal(u.key, "/etc/dl/c.key");
        assert_int_equal(u.port, 6380);
        assert_int_equal(u.db, 2);
        /* The canonical order, whatever the order given; a user with no
         * password in the address is "USER@", hidden or not. */
        canonical("rediss://locker@h?key=k&cacert=c&password_file=p&prefix=x&cert=c2",
                  "rediss://locker@h:6379/0?prefix=x&password_file=p&cacert=c&cert=c2&key=k");
        assert_int_equal(parse("rediss://locker@h?password_file=p", &u, why), 0);
        assert_true(dl_redis_url_format(&u, true, out, sizeof out) > 0);
        assert_string_equal(out, "rediss://locker@h:6379/0?prefix=dirlock&password_file=p");
        /* Files may hold any byte but NUL, %XX-encoded. */
        canonical("rediss://h?cacert=/a%20b/c%26d%3Fe%25f%23",
                  "rediss://h:6379/0?prefix=dirlock&cacert=/a%20b/c%26d%3Fe%25f%23");
        assert_int_equal(parse("rediss://h?cacert=/a%20b/c%26d", &u, why), 0);
        assert_string_equal(u.cacert, "/a b/c&d");
        /* The password from the environment; a default user's password from a file. */
        canonical("redis://:@h?password_env=DL_PW_1", "redis://h:6379/0?prefix=dirlock&password_env=DL_PW_1");
        canonical("redis+unix:///s?password_file=/p&db=3",
                  "redis+unix:///s?db=3&prefix=dirlock&password_file=/p");
        assert_int_equal(parse("redis://h?password_env=X", &u, why), 0);
        assert_false(u.has_user);
        assert_true(dl_redis_url_logs_in(&u));
        assert_int_equal(parse("redis://h", &u, why), 0);
        assert_false(dl_redis_url_logs_in(&u));
}

static void test_credentials(void **state)
{
        (void)state;
        dl_redis_url u;
        char why[200], out[DL_REDIS_URL_MAX];
        assert_int_equal(parse("redis://:s3cret@h:1/0", &u, why), 0);
        assert_true(u.has_password);
        assert_false(u.has_user);
        assert_string_equal(u.password, "s3cret");
        assert_int_equal(parse("redis://alice:p%40ss%3Aword%25@h", &u, why), 0);
        assert_true(u.has_user);
        assert_string_equal(u.user, "alice");
        assert_string_equal(u.password, "p@ss:word%");
        canonical("redis://alice:p%40ss%3Aword%25@h",
                  "redis://alice:p%40ss%3Aword%25@h:6379/0?prefix=dirlock");
        /* Shown with the password hidden. */
        assert_true(dl_redis_url_format(&u, true, out, sizeof out) > 0);
        assert_string_equal(out, "redis://alice:***@h:6379/0?prefix=dirlock");
        assert_null(strstr(out, "p%40ss"));
        /* A lone empty password is none; a user with an empty one is kept. */
        assert_int_equal(parse("redis://:@h", &u, why), 0);
        assert_false(u.has_password);
        canonical("redis://bob:@h", "redis://bob:@h:6379/0?prefix=dirlock");
        canonical("redis+unix://:pw@/tmp/s", "redis+unix://:pw@/tmp/s?db=0&prefix=dirlock");
}

/* Each bad address is refused with a message naming what is wrong, and
 * never the password. */
static void refused(const char *in, const char *words)
{
        dl_redis_url u;
        char why[200] = "";
        if (parse(in, &u, why) == 0)
                fail_msg("'%s' was accepted", in);
        if (strstr(why, words) == NULL)
                fail_msg("'%s': message '%s' does not say '%s'", in, why, words);
        assert_null(strstr(why, "hunter2"));
}

static void test_bad_addresses(void **state)
{
        (void)state;
        refused("redis://", "no host");
        refused("redis://:6379", "no host");
        refused("redis://h:0", "port");
        refused("redis://h:65536", "port");
        refused("redis://h:x", "port");
        refused("redis://h:080", "port");
        refused("redis://h/x", "database number");
        refused("redis://h/1000000", "database number");
        refused("redis://h?db=1", "goes in the path");
        refused("redis://h?prefix=", "prefix");
        refused("redis://h?prefix=a{b}", "prefix");
        refused("redis://h?prefix=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                "prefix");
        refused("redis://h?prefix=a&prefix=b", "twice");
        refused("redis://h?color=red", "unknown query parameter");
        refused("redis://h?prefix=a&", "ends with");
        refused("redis://h_1", "host name");
        refused("redis://[::1", "']'");
        refused("redis://[zz]", "IPv6");
        refused("redis://user@h", "a user needs a password");
        refused("redis://@h", "nothing before '@'");
        refused("redis://u:hunter2@h?password_file=/p", "given twice");
        refused("redis://h?password_file=/p&password_env=P", "given twice");
        refused("redis://u:hunter2@h?password_env=P", "given twice");
        refused("redis://h?password_file=", "file name");
        refused("redis://h?password_file=/a b", "file name");
        refused("redis://h?password_file=/a%00", "file name");
        refused("redis://h?password_file=/a%2", "file name");
        refused("redis://h?password_file=/p&password_file=/q", "twice");
        refused("redis://h?password_env=1X", "environment variable");
        refused("redis://h?password_env=A-B", "environment variable");
        refused("redis://h?password_env=", "environment variable");
        refused("redis://h?cacert=/ca.pem", "rediss://");
        refused("redis+unix:///s?cert=/c", "rediss://");
        refused("rediss://h?cert=/c", "both cert=FILE and key=FILE");
        refused("rediss://h?key=/k", "both cert=FILE and key=FILE");
        refused("rediss://h?cacert=/a&cacert=/b", "twice");
        refused("redis://u:hunter2 x@h", "password");
        refused("redis://u:hunter2%4@h", "password");
        refused("redis://u:hunter2%00@h", "password");
        refused("redis://h#frag", "'#'");
        refused("redis+unix://", "no socket path");
        refused("redis+unix://relative/path", "absolute");
        refused("redis+unix:///", "no socket path");
        refused("redis+unix:///tmp/a b", "socket path");
        refused("redis+unix:///tmp/s?db=x", "db must be");
        refused("redis+unix:///tmp/s?db=1&db=2", "twice");
        refused("http://h", "not a Redis address");
        char longpath[200] = "redis+unix:///";
        memset(longpath + strlen(longpath), 'p', 120);
        refused(longpath, "longer than 107");
        /* A NUL inside the given length. */
        dl_redis_url u;
        char why[200];
        assert_int_equal(dl_redis_url_parse("redis://h\0x", 11, &u, why, sizeof why), -1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_defaults_and_parts),
            cmocka_unit_test(test_credentials),
            cmocka_unit_test(test_tls_and_files),
            cmocka_unit_test(test_bad_addresses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
