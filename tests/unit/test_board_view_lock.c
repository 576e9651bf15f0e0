/* test_board_view_lock.c - which lock a page view holds while it reads the
 * flat log, in the lock modes whose views take a shared lock (rw, flock).  A log written by rename is chosen
 * (stat, open) under the read lock and read after it, so a writer is not held up by views reading and
 * parsing; a log written in place is read under it. Built with the board's test hooks: the view stops, the
 * log opened and not yet read, at DIRLOCK_TEST_STOP_BEFORE_VIEW_READ (store_log.c). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../cgi-bin/board.h"
#include "../../cgi-bin/config.h"
#include "../../cgi-bin/locking.h"
#include "dirlock.h"
#include "dirlock_flock.h"

static char dir[64];
static char logpath[128];
static char armpath[128];
static pid_t child; /* the stopped view, killed by teardown if a test failed */

static int setup(void **state)
{
        (void)state;
        strcpy(dir, "/tmp/test_board_view_lock_XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        snprintf(logpath, sizeof logpath, "%s/messages.log", dir);
        snprintf(armpath, sizeof armpath, "%s/arm", dir);
        return setenv("DIRLOCK_TEST_STOP_BEFORE_VIEW_READ", armpath, 1);
}

static int teardown(void **state)
{
        (void)state;
        unsetenv("DIRLOCK_TEST_STOP_BEFORE_VIEW_READ");
        if (child > 0) {
                kill(child, SIGKILL);
                waitpid(child, NULL, 0);
                child = 0;
        }
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

/* Replace the log with messages 1..last, as a post does (a new file
 * renamed into place). */
static void write_log(long last)
{
        char tmp[160];
        snprintf(tmp, sizeof tmp, "%s.new", logpath);
        FILE *f = fopen(tmp, "w");
        assert_non_null(f);
        for (long i = 1; i <= last; i++)
                fprintf(f, "%ld\t%ld\tname %ld\tsubject %ld\tbody %ld\t\n", i, 1700000000 + i, i, i, i);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, logpath), 0);
}

static void load_config(struct board_config *cfg, const char *mode, const char *method)
{
        char text[256];
        int n = snprintf(text, sizeof text, "data_dir = %s\nlock_mode = %s\nwrite_method = %s\n", dir, mode,
                         method);
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(config_parse(text, (size_t)n, "test.conf", cfg, &e), 0);
}

/* In a child: a page view, stopped before it reads, then a second one;
 * exits with 10 * the first view's count of messages + the second's. */
static pid_t start_view(const struct board_config *cfg)
{
        FILE *arm = fopen(armpath, "w");
        assert_non_null(arm);
        fclose(arm);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                child = 0;
                struct board b;
                board_init(&b, cfg);
                const struct msglist *l;
                struct board_error e = BOARD_ERROR_INIT;
                if (board_view(&b, &l, NULL, &e) != 0)
                        _exit(99);
                size_t first = l->count;
                if (board_view(&b, &l, NULL, &e) != 0)
                        _exit(98);
                _exit((int)(10 * first + l->count));
        }
        int st;
        assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
        child = pid;
        assert_true(WIFSTOPPED(st)); /* stopped at the hook, the log opened */
        return pid;
}

/* Try the board's write lock, exclusive, for `timeout` seconds (a flock
 * lock in flock mode, as the board takes it: locking.c). */
static int try_write_lock(const struct board_config *cfg, double timeout)
{
        dirlock_options opts;
        dirlock_options_init(&opts);
        opts.mode = DIRLOCK_EXCLUSIVE;
        opts.timeout = timeout;
        dirlock *h = NULL;
        dirlock_error de = {0, 0, ""};
        int rc = cfg->lock_mode == BOARD_LOCK_FLOCK
                     ? dirlock_flock_acquire(cfg->lock_dir, BOARD_LOCK_NAME, &opts, &h, &de)
                     : dirlock_acquire(cfg->lock_space, BOARD_LOCK_NAME, &opts, &h, &de);
        if (rc == DIRLOCK_OK)
                assert_int_equal(dirlock_release(h, &de), DIRLOCK_OK);
        return rc;
}

static int finish_view(pid_t pid)
{
        assert_int_equal(kill(pid, SIGCONT), 0);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        child = 0;
        assert_true(WIFEXITED(st));
        return WEXITSTATUS(st);
}

/* Rename writes: while a view reads, a writer takes the lock and replaces
 * the log; the view still sees the whole file it opened (3 messages), and
 * its next view the new one (5).  *state: the lock mode. */
static void test_rename_log_is_read_after_the_lock(void **state)
{
        struct board_config cfg;
        load_config(&cfg, *state, "rename");
        write_log(3);
        pid_t pid = start_view(&cfg);
        int rc = try_write_lock(&cfg, 2.0);
        if (rc == DIRLOCK_OK)
                write_log(5);
        int seen = finish_view(pid);
        assert_int_equal(rc, DIRLOCK_OK);
        assert_int_equal(seen, 10 * 3 + 5);
        config_free(&cfg);
}

/* In-place writes: the view reads under the read lock, so the writer
 * waits (here: until its timeout).  *state: the lock mode. */
static void test_inplace_log_is_read_under_the_lock(void **state)
{
        struct board_config cfg;
        load_config(&cfg, *state, "inplace");
        write_log(3);
        pid_t pid = start_view(&cfg);
        int rc = try_write_lock(&cfg, 0.3);
        int seen = finish_view(pid);
        assert_int_equal(rc, DIRLOCK_ETIMEDOUT);
        assert_int_equal(seen, 10 * 3 + 3);
        assert_int_equal(try_write_lock(&cfg, 2.0), DIRLOCK_OK);
        config_free(&cfg);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_prestate_setup_teardown(test_rename_log_is_read_after_the_lock, setup, teardown,
                                                     "rw"),
            cmocka_unit_test_prestate_setup_teardown(test_inplace_log_is_read_under_the_lock, setup, teardown,
                                                     "rw"),
            cmocka_unit_test_prestate_setup_teardown(test_rename_log_is_read_after_the_lock, setup, teardown,
                                                     "flock"),
            cmocka_unit_test_prestate_setup_teardown(test_inplace_log_is_read_under_the_lock, setup, teardown,
                                                     "flock"),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
