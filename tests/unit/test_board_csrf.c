/* test_board_csrf.c - CSRF secret file, cookies and token verification;
 * password hashing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "../../cgi-bin/csrf.h"
#include "../../cgi-bin/csrf_memo.h"
#include "../../cgi-bin/password.h"

static void test_secret_file(void **state)
{
        (void)state;
        char dir[] = "/tmp/test_board_csrf_XXXXXX";
        assert_non_null(mkdtemp(dir));
        unsigned char a[CSRF_SECRET_LEN], b[CSRF_SECRET_LEN];
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(csrf_load_secret(dir, a, &e), 0);
        char path[64];
        snprintf(path, sizeof path, "%s/secret", dir);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(st.st_size, CSRF_SECRET_LEN);
        assert_int_equal(csrf_load_secret(dir, b, &e), 0);
        assert_memory_equal(a, b, CSRF_SECRET_LEN); /* same secret on restart */
        /* a damaged secret is an error, not silently replaced */
        FILE *fp = fopen(path, "w");
        fputs("short", fp);
        fclose(fp);
        assert_int_equal(csrf_load_secret(dir, b, &e), -1);
        assert_non_null(strstr(e.msg, "secret"));
        char cmd[80];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

static void test_tokens(void **state)
{
        (void)state;
        unsigned char secret[CSRF_SECRET_LEN];
        memset(secret, 7, sizeof secret);
        char cookie[CSRF_COOKIE_LEN + 1], other[CSRF_COOKIE_LEN + 1];
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(csrf_new_cookie(secret, cookie, &e), 0);
        assert_int_equal(csrf_new_cookie(secret, other, &e), 0);
        assert_int_equal(strlen(cookie), CSRF_COOKIE_LEN);
        assert_string_not_equal(cookie, other);
        assert_true(csrf_cookie_valid(secret, cookie, strlen(cookie)));

        char token[CSRF_TOKEN_LEN + 1];
        csrf_token(secret, cookie, strlen(cookie), token);
        assert_int_equal(strlen(token), CSRF_TOKEN_LEN);
        assert_true(csrf_verify(secret, cookie, strlen(cookie), token, strlen(token)));

        /* wrong cookie, wrong secret, altered or truncated token */
        assert_false(csrf_verify(secret, other, strlen(other), token, strlen(token)));
        unsigned char secret2[CSRF_SECRET_LEN];
        memset(secret2, 8, sizeof secret2);
        assert_false(csrf_verify(secret2, cookie, strlen(cookie), token, strlen(token)));
        char bad[CSRF_TOKEN_LEN + 1];
        memcpy(bad, token, sizeof bad);
        bad[10] = bad[10] == 'a' ? 'b' : 'a';
        assert_false(csrf_verify(secret, cookie, strlen(cookie), bad, strlen(bad)));
        assert_false(csrf_verify(secret, cookie, strlen(cookie), token, CSRF_TOKEN_LEN - 1));
        assert_false(csrf_verify(secret, cookie, strlen(cookie), "", 0));
        assert_false(csrf_verify(secret, NULL, 0, token, strlen(token)));
}

/* The memory of checked cookies answers as the HMACs would: the token of
 * a valid cookie (computed once), and no token for a cookie the board did
 * not issue, even one that shares the slot of a remembered cookie. */
static void test_memo(void **state)
{
        (void)state;
        unsigned char secret[CSRF_SECRET_LEN];
        memset(secret, 7, sizeof secret);
        static struct csrf_memo memo; /* zeroed: nothing remembered */
        char cookie[CSRF_COOKIE_LEN + 1], want[CSRF_TOKEN_LEN + 1], got[CSRF_TOKEN_LEN + 1];
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(csrf_new_cookie(secret, cookie, &e), 0);
        csrf_token(secret, cookie, CSRF_COOKIE_LEN, want);
        bool computed = false;
        assert_int_equal(csrf_memo_token(&memo, secret, cookie, CSRF_COOKIE_LEN, got, &computed), 1);
        assert_true(computed);
        assert_string_equal(got, want);
        memset(got, 0, sizeof got);
        assert_int_equal(csrf_memo_token(&memo, secret, cookie, CSRF_COOKIE_LEN, got, &computed), 1);
        assert_false(computed); /* remembered */
        assert_string_equal(got, want);

        /* Same random half (same slot), forged MAC half: refused, every time. */
        char forged[CSRF_COOKIE_LEN + 1];
        memcpy(forged, cookie, sizeof forged);
        forged[CSRF_COOKIE_LEN - 1] = forged[CSRF_COOKIE_LEN - 1] == '0' ? '1' : '0';
        for (int i = 0; i < 2; i++) {
                memset(got, 'z', CSRF_TOKEN_LEN);
                assert_int_equal(csrf_memo_token(&memo, secret, forged, CSRF_COOKIE_LEN, got, &computed), 0);
                assert_true(computed);
                assert_int_equal(got[0], 'z'); /* untouched */
        }
        /* Not hex, too short: refused before any lookup. */
        char upper[CSRF_COOKIE_LEN + 1];
        memcpy(upper, cookie, sizeof upper);
        upper[0] = 'G';
        assert_int_equal(csrf_memo_token(&memo, secret, upper, CSRF_COOKIE_LEN, got, NULL), 0);
        assert_int_equal(csrf_memo_token(&memo, secret, cookie, CSRF_COOKIE_LEN - 1, got, NULL), 0);
        /* The valid cookie is still remembered. */
        assert_int_equal(csrf_memo_token(&memo, secret, cookie, CSRF_COOKIE_LEN, got, &computed), 1);
        assert_false(computed);
        assert_string_equal(got, want);

        /* A valid cookie of another secret (another board) gets nothing here. */
        unsigned char secret2[CSRF_SECRET_LEN];
        memset(secret2, 8, sizeof secret2);
        char theirs[CSRF_COOKIE_LEN + 1];
        assert_int_equal(csrf_new_cookie(secret2, theirs, &e), 0);
        assert_int_equal(csrf_memo_token(&memo, secret, theirs, CSRF_COOKIE_LEN, got, NULL), 0);

        /* Many cookies: each gets its own token, whichever slot it shares. */
        for (int i = 0; i < 3 * CSRF_MEMO_SLOTS; i++) {
                char c[CSRF_COOKIE_LEN + 1], t[CSRF_TOKEN_LEN + 1];
                assert_int_equal(csrf_new_cookie(secret, c, &e), 0);
                csrf_token(secret, c, CSRF_COOKIE_LEN, t);
                assert_int_equal(csrf_memo_token(&memo, secret, c, CSRF_COOKIE_LEN, got, NULL), 1);
                assert_string_equal(got, t);
                assert_int_equal(csrf_memo_token(&memo, secret, cookie, CSRF_COOKIE_LEN, got, NULL), 1);
                assert_string_equal(got, want);
        }
}

static void test_known_hmac(void **state)
{
        (void)state;
        /* HMAC-SHA256 with key 32 x 0x00 over "00000000000000000000000000000000". */
        unsigned char secret[CSRF_SECRET_LEN] = {0};
        const char *cookie = "00000000000000000000000000000000";
        char token[CSRF_TOKEN_LEN + 1];
        csrf_token(secret, cookie, 32, token);
        assert_string_equal(token, "336160767d9249e6516f5d06b1ab86c3178bf5a17a8fe8b4e67ed660297ac6de");
}

/* Only cookies the board issued are valid: right shape and a MAC under
 * this board's secret over the random half. */
static void test_cookie_shape(void **state)
{
        (void)state;
        unsigned char secret[CSRF_SECRET_LEN], other_secret[CSRF_SECRET_LEN];
        memset(secret, 7, sizeof secret);
        memset(other_secret, 9, sizeof other_secret);
        char cookie[CSRF_COOKIE_LEN + 1];
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(csrf_new_cookie(secret, cookie, &e), 0);
        assert_true(csrf_cookie_valid(secret, cookie, CSRF_COOKIE_LEN));
        assert_false(csrf_cookie_valid(other_secret, cookie, CSRF_COOKIE_LEN)); /* another board's */
        char forged[CSRF_COOKIE_LEN + 1];
        memcpy(forged, cookie, sizeof forged);
        forged[3] = forged[3] == 'a' ? 'b' : 'a'; /* random half changed, MAC kept */
        assert_false(csrf_cookie_valid(secret, forged, CSRF_COOKIE_LEN));
        memcpy(forged, cookie, sizeof forged);
        forged[40] = forged[40] == 'a' ? 'b' : 'a'; /* MAC changed */
        assert_false(csrf_cookie_valid(secret, forged, CSRF_COOKIE_LEN));
        memcpy(forged, cookie, sizeof forged);
        for (size_t i = 0; i < CSRF_COOKIE_LEN; i++)
                if (forged[i] >= 'a')
                        forged[i] = (char)(forged[i] - 'a' + 'A');
        if (strcmp(forged, cookie) != 0) /* (all digits: nothing to change) */
                assert_false(csrf_cookie_valid(secret, forged, CSRF_COOKIE_LEN)); /* upper case */
        assert_false(csrf_cookie_valid(secret, cookie, CSRF_COOKIE_LEN - 1));
        assert_false(csrf_cookie_valid(secret, "0123456789abcdef0123456789abcdef", 32)); /* unsigned */
        assert_false(csrf_cookie_valid(secret, "", 0));
}

static void test_password(void **state)
{
        (void)state;
        char *h = NULL;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(password_hash("パスワード", &h, &e), 0);
        assert_true(strncmp(h, "$y$", 3) == 0);
        assert_true(password_verify("パスワード", h));
        assert_false(password_verify("password", h));
        assert_false(password_verify("", h));
        char *h2 = NULL;
        assert_int_equal(password_hash("パスワード", &h2, &e), 0);
        assert_string_not_equal(h, h2); /* salted */
        assert_false(password_verify("x", ""));
        assert_false(password_verify("x", "*0"));
        free(h);
        free(h2);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_secret_file),  cmocka_unit_test(test_tokens),
            cmocka_unit_test(test_known_hmac),   cmocka_unit_test(test_memo),
            cmocka_unit_test(test_cookie_shape), cmocka_unit_test(test_password),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
