/* test_core_api.c - unit tests of the exclusive lock's calls in one
 * process: names, errors, their messages (control characters shown as
 * escapes) and names, bad lock directories, one
 * try and busy, timeouts, the smallest stale age, a lost lock leaving the
 * new holder alone, dirlock_with, two handles in two threads, and a
 * holder whose main thread exits. */
#include "core_fixture.h"

static void test_names(void **state)
{
        (void)state;
        assert_true(dirlock_name_valid("a"));
        assert_true(dirlock_name_valid("board-1.messages_x"));
        char max[DIRLOCK_NAME_MAX + 2];
        memset(max, 'a', DIRLOCK_NAME_MAX);
        max[DIRLOCK_NAME_MAX] = '\0';
        assert_true(dirlock_name_valid(max));
        max[DIRLOCK_NAME_MAX] = 'a';
        max[DIRLOCK_NAME_MAX + 1] = '\0';
        assert_false(dirlock_name_valid(max));
        const char *bad[] = {"", ".", "..", ".hidden", "../x", "a/b", "a b", "a\nb", "ä", "a*", NULL};
        for (int i = 0; bad[i]; i++) {
                assert_false(dirlock_name_valid(bad[i]));
                dirlock *h = NULL;
                dirlock_error e;
                assert_int_equal(dirlock_acquire(lockdir, bad[i], NULL, &h, &e), DIRLOCK_ENAME);
                assert_int_equal(e.code, DIRLOCK_ENAME);
                assert_non_null(strstr(e.message, "invalid lock name"));
                assert_null(h);
        }
        assert_false(dirlock_name_valid(NULL));
        /* Nothing escaped the lock directory. */
        struct stat st;
        char path[512];
        snprintf(path, sizeof path, "%s/../x.lock", lockdir);
        assert_int_not_equal(stat(path, &st), 0);
}

/* No control character of a rejected name or path reaches a message as
 * it is (a terminal would act on it, a log would get a forged line):
 * each is shown as \xHH, and a message cut at its buffer's end is cut
 * at a whole escape. */
static void assert_no_controls(const char *msg)
{
        for (const char *p = msg; *p; p++)
                assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
}

static void test_messages_show_controls(void **state)
{
        (void)state;
        dirlock *h = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "a\x1b[31mb\nforged", NULL, &h, &e), DIRLOCK_ENAME);
        assert_no_controls(e.message);
        assert_non_null(strstr(e.message, "'a\\x1b[31mb\\x0aforged'"));
        char dir[600];
        snprintf(dir, sizeof dir, "%s/file\x07", lockdir); /* a file where a directory must be */
        FILE *f = fopen(dir, "w");
        assert_non_null(f);
        fclose(f);
        snprintf(dir, sizeof dir, "%s/file\x07/\x7f", lockdir);
        assert_int_not_equal(dirlock_acquire(dir, "x", NULL, &h, &e), DIRLOCK_OK);
        assert_null(h);
        assert_no_controls(e.message);
        assert_non_null(strstr(e.message, "file\\x07/\\x7f"));
        /* A path that ends in 300 newlines: 1,200 bytes of escapes for 639
         * places. */
        int n = snprintf(dir, sizeof dir, "%s/missing/", lockdir);
        assert_true(n > 0 && n + 301 < (int)sizeof dir);
        memset(dir + n, '\n', 300);
        dir[n + 300] = '\0';
        assert_int_not_equal(dirlock_acquire(dir, "x", NULL, &h, &e), DIRLOCK_OK);
        assert_null(h);
        assert_no_controls(e.message);
        size_t len = strlen(e.message);
        assert_true(len < sizeof e.message);
        assert_non_null(strstr(e.message, "\\x0a\\x0a"));
        assert_true(len >= 4 && strncmp(e.message + len - 4, "\\x0a", 4) == 0);
}

static void test_errors_have_text(void **state)
{
        (void)state;
        for (int c = 0; c < DIRLOCK_CODE_COUNT; c++) {
                assert_non_null(dirlock_strerror(c));
                assert_string_not_equal(dirlock_strerror(c), "unknown dirlock error");
        }
        assert_string_equal(dirlock_strerror(-1), "unknown dirlock error");
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.mode = 7;
        dirlock *h;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "x", &o, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "mode"));
        o = (dirlock_options)DIRLOCK_OPTIONS_INIT;
        o.flags = 1u << 20;
        assert_int_equal(dirlock_acquire(lockdir, "x", &o, &h, &e), DIRLOCK_EINVAL);
        /* A notice asked for with nobody to tell. */
        o = (dirlock_options)DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_SERVER_NOTICE;
        assert_int_equal(dirlock_acquire(lockdir, "x", &o, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "server_notice"));
}

/* Each code has a distinct name, the one written in the header after
 * DIRLOCK_, and the names end with NULL right after the last code. */
static void test_code_names(void **state)
{
        (void)state;
        assert_string_equal(dirlock_code_name(DIRLOCK_OK), "OK");
        assert_string_equal(dirlock_code_name(DIRLOCK_EBUSY), "EBUSY");
        assert_string_equal(dirlock_code_name(DIRLOCK_ETIMEDOUT), "ETIMEDOUT");
        assert_string_equal(dirlock_code_name(DIRLOCK_EIO), "EIO");
        assert_string_equal(dirlock_code_name(DIRLOCK_EDATA), "EDATA");
        for (int c = 0; c < DIRLOCK_CODE_COUNT; c++) {
                const char *n = dirlock_code_name(c);
                assert_non_null(n);
                assert_true(strcmp(n, "OK") == 0 || (n[0] == 'E' && strlen(n) > 1));
                for (const char *p = n; *p; p++)
                        assert_true((*p >= 'A' && *p <= 'Z'));
                for (int d = 0; d < c; d++)
                        assert_string_not_equal(n, dirlock_code_name(d));
        }
        assert_null(dirlock_code_name(DIRLOCK_CODE_COUNT));
        assert_null(dirlock_code_name(-1));
        /* A code's name and text come from the same entry of the list. */
        dirlock *h, *h2;
        dirlock_error e;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        assert_int_equal(dirlock_acquire(lockdir, "named", NULL, &h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_acquire(lockdir, "named", &o, &h2, &e), DIRLOCK_EBUSY);
        assert_string_equal(dirlock_code_name(e.code), "EBUSY");
        assert_string_equal(dirlock_strerror(e.code), "lock is busy");
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
}

static void test_lockdir_errors(void **state)
{
        (void)state;
        char path[512];
        /* Created when missing, with parents. */
        snprintf(path, sizeof path, "%s/new/deeper", lockdir);
        dirlock *h;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(path, "x", NULL, &h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        /* Not created with DIRLOCK_NO_MKDIR; the message names it. */
        snprintf(path, sizeof path, "%s/absent", lockdir);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.flags = DIRLOCK_NO_MKDIR;
        assert_int_equal(dirlock_acquire(path, "x", &o, &h, &e), DIRLOCK_EIO);
        assert_int_equal(e.sys_errno, ENOENT);
        assert_non_null(strstr(e.message, path));
        /* A file in the way. */
        snprintf(path, sizeof path, "%s/file", lockdir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
        assert_int_equal(dirlock_acquire(path, "x", NULL, &h, &e), DIRLOCK_EIO);
        assert_non_null(strstr(e.message, "not a directory"));
}

static void test_try_and_busy(void **state)
{
        (void)state;
        dirlock *a = take("busy", 0);
        assert_non_null(a);
        dirlock *b = NULL;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock_error e;
        double t0 = now_ms();
        assert_int_equal(dirlock_acquire(lockdir, "busy", &o, &b, &e), DIRLOCK_EBUSY);
        assert_true(now_ms() - t0 < 50);
        assert_non_null(strstr(e.message, "held by pid"));
        assert_null(b);
        assert_int_equal(dirlock_check(a, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(a, &e), DIRLOCK_OK);
        b = take("busy", 0);
        assert_non_null(b);
        assert_int_equal(dirlock_release(b, &e), DIRLOCK_OK);
}

/* The timeout is honoured within 10 ms (best of three, on a busy box). */
static void test_timeout_accuracy(void **state)
{
        (void)state;
        dirlock *a = take_other("slow");
        assert_non_null(a);
        double best = 1e9;
        for (int i = 0; i < 3; i++) {
                dirlock *b = NULL;
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 0.25;
                dirlock_error e;
                double t0 = now_ms();
                assert_int_equal(dirlock_acquire(lockdir, "slow", &o, &b, &e), DIRLOCK_ETIMEDOUT);
                double late = now_ms() - t0 - 250;
                assert_true(late >= -0.5); /* never early */
                if (late < best)
                        best = late;
        }
        print_message("timeout overshoot: %.2f ms\n", best);
        assert_true(best < 10);
        dirlock_release(a, NULL);
}

/* The smallest stale age: below it, a clear refusal. */
static void test_min_stale_age(void **state)
{
        (void)state;
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.stale_age = DIRLOCK_MIN_STALE_AGE / 2;
        dirlock *h = NULL;
        dirlock_error e;
        assert_int_equal(dirlock_acquire(lockdir, "tiny", &o, &h, &e), DIRLOCK_EINVAL);
        assert_non_null(strstr(e.message, "below the smallest accepted"));
        assert_null(h);
        o.stale_age = DIRLOCK_MIN_STALE_AGE;
        assert_int_equal(dirlock_acquire(lockdir, "tiny", &o, &h, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
}

static void test_lost_lock_leaves_new_holder(void **state)
{
        (void)state;
        dirlock *a = take("lost", 0);
        assert_non_null(a);
        dirlock_error e;
        /* An administrator breaks it by force; someone else takes it. */
        assert_int_equal(dirlock_break(lockdir, "lost", 0, 0, &e), DIRLOCK_ELIVE);
        assert_int_equal(dirlock_break(lockdir, "lost", 0, 1, &e), DIRLOCK_OK);
        dirlock *b = take("lost", 0);
        assert_non_null(b);
        assert_int_equal(dirlock_check(a, &e), DIRLOCK_ELOST);
        assert_int_equal(dirlock_refresh(a, &e), DIRLOCK_ELOST);
        assert_int_equal(dirlock_release(a, &e), DIRLOCK_ELOST);
        assert_non_null(strstr(e.message, "left alone"));
        /* The new holder is untouched. */
        assert_int_equal(dirlock_check(b, &e), DIRLOCK_OK);
        dirlock_owner o;
        assert_int_equal(dirlock_inspect(lockdir, "lost", 0, &o, &e), DIRLOCK_OK);
        assert_string_equal(o.token, dirlock_token(b));
        assert_int_equal(dirlock_release(b, &e), DIRLOCK_OK);
        assert_int_equal(dirlock_inspect(lockdir, "lost", 0, &o, &e), DIRLOCK_ENOLOCK);
        assert_int_equal(dirlock_break(lockdir, "lost", 0, 1, &e), DIRLOCK_ENOLOCK);
}

static int body_calls;

static int body(void *arg)
{
        body_calls++;
        return *(int *)arg * 2;
}

static void test_with(void **state)
{
        (void)state;
        int in = 21, out = 0;
        dirlock_error e;
        assert_int_equal(dirlock_with(lockdir, "with", NULL, body, &in, &out, &e), DIRLOCK_OK);
        assert_int_equal(out, 42);
        assert_int_equal(body_calls, 1);
        dirlock *h = take("with", 0); /* released afterwards */
        assert_non_null(h);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        assert_int_equal(dirlock_with(lockdir, "with", &o, body, &in, &out, &e), DIRLOCK_EBUSY);
        assert_int_equal(body_calls, 1); /* not run without the lock */
        dirlock_release(h, NULL);
}

struct thread_arg {
        const char *name;
        int iterations;
        int failures;
};

static void *thread_body(void *p)
{
        struct thread_arg *a = p;
        for (int i = 0; i < a->iterations; i++) {
                dirlock *h = NULL;
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 10;
                if (dirlock_acquire(lockdir, a->name, &o, &h, NULL) != DIRLOCK_OK ||
                    dirlock_release(h, NULL) != DIRLOCK_OK)
                        a->failures++;
        }
        return NULL;
}

/* Separate handles in separate threads: independent names never interfere,
 * one shared name is handed over between the threads. */
static void test_threads(void **state)
{
        (void)state;
        struct thread_arg args[4] = {{"t1", 200, 0}, {"t2", 200, 0}, {"shared", 200, 0}, {"shared", 200, 0}};
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
                pthread_create(&th[i], NULL, thread_body, &args[i]);
        for (int i = 0; i < 4; i++) {
                pthread_join(th[i], NULL);
                assert_int_equal(args[i].failures, 0);
        }
}

static void *sleeper(void *arg)
{
        (void)arg;
        struct timespec ts = {0, 600000000L};
        nanosleep(&ts, NULL);
        return NULL;
}

/* A holder whose main thread has exited (pthread_exit) while another runs
 * is a zombie in /proc, but alive: its lock must not be broken. */
static void test_main_thread_exit_keeps_lock(void **state)
{
        (void)state;
        int pipefd[2];
        assert_int_equal(pipe(pipefd), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dirlock *h;
                if (dirlock_acquire(lockdir, "threads", NULL, &h, NULL) != DIRLOCK_OK)
                        _exit(1);
                pthread_t t;
                pthread_create(&t, NULL, sleeper, NULL);
                if (write(pipefd[1], "x", 1) != 1)
                        _exit(1);
                pthread_exit(NULL);
        }
        char c;
        assert_int_equal(read(pipefd[0], &c, 1), 1);
        struct timespec ts = {0, 150000000L};
        nanosleep(&ts, NULL);
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *h = NULL;
        assert_int_equal(dirlock_acquire(lockdir, "threads", &o, &h, NULL), DIRLOCK_EBUSY);
        int status;
        waitpid(pid, &status, 0);
        assert_int_equal(dirlock_acquire(lockdir, "threads", &o, &h, NULL), DIRLOCK_OK); /* dead now */
        dirlock_release(h, NULL);
        close(pipefd[0]);
        close(pipefd[1]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_names),
            cmocka_unit_test(test_errors_have_text),
            cmocka_unit_test(test_messages_show_controls),
            cmocka_unit_test(test_code_names),
            cmocka_unit_test(test_lockdir_errors),
            cmocka_unit_test(test_try_and_busy),
            cmocka_unit_test(test_timeout_accuracy),
            cmocka_unit_test(test_min_stale_age),
            cmocka_unit_test(test_lost_lock_leaves_new_holder),
            cmocka_unit_test(test_with),
            cmocka_unit_test(test_threads),
            cmocka_unit_test(test_main_thread_exit_keeps_lock),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
