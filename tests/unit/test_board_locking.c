/* test_board_locking.c - the board's kept shared-lock handle for page
 * views (cgi-bin/locking.c, take_shared): a forked child's first view is
 * served, not refused because the handle belongs to its parent; and a
 * view of a second board while a view of the first still holds its lock
 * leaves that lock held until its own release, with more boards than
 * the process keeps handles for too; a child gives up the handles it
 * inherited, even while an inherited view holds one. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../cgi-bin/config.h"
#include "../../cgi-bin/locking.h"
#include "dirlock.h"
#include "dirlock_flock.h"
#include "open_fds.h"

static char dir[64];

/* Board `which` (its own lock space DIR/locks-WHICH) in mode `mode`. */
static void board(struct board_config *cfg, const char *mode, char which)
{
        char text[320];
        int n = snprintf(text, sizeof text, "data_dir = %s\nlock_mode = %s\nlock_space = %s/locks-%c\n", dir,
                         mode, dir, which);
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(config_parse(text, (size_t)n, "test.conf", cfg, &e), 0);
}

static int setup(void **state)
{
        (void)state;
        strcpy(dir, "/tmp/test_board_locking_XXXXXX");
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
        (void)state;
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

/* Is the board's "messages" lock free for an exclusive locker of the
 * same kind right now?  (Taken and let go at once.) */
static bool messages_free(const struct board_config *cfg)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *h = NULL;
        dirlock_error e;
        int rc = cfg->lock_mode == BOARD_LOCK_FLOCK
                     ? dirlock_flock_acquire(cfg->lock_dir, "messages", &o, &h, &e)
                     : dirlock_acquire(cfg->lock_space, "messages", &o, &h, &e);
        if (rc != DIRLOCK_OK) {
                assert_int_equal(rc, DIRLOCK_EBUSY);
                return false;
        }
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        return true;
}

static void view_once(const struct board_config *cfg)
{
        struct board_lock lk;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_lock_read(cfg, &lk, &e), 0);
        assert_false(messages_free(cfg));
        assert_int_equal(board_lock_release(&lk, &e), 0);
        assert_true(messages_free(cfg));
}

/* The parent's views leave it a kept handle; a child forked then must be
 * able to view at once (and again). */
static void child_views(const char *mode)
{
        struct board_config cfg;
        board(&cfg, mode, 'f');
        view_once(&cfg);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct board_lock lk;
                struct board_error e = BOARD_ERROR_INIT;
                int ok = 1;
                for (int i = 0; i < 2; i++) {
                        if (board_lock_read(&cfg, &lk, &e) != 0) {
                                fprintf(stderr, "child view %d: %d %s\n", i, e.status, e.msg);
                                ok = 0;
                                break;
                        }
                        ok &= !messages_free(&cfg);
                        ok &= board_lock_release(&lk, &e) == 0;
                }
                _exit(ok ? 0 : 1);
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        view_once(&cfg); /* the parent's handle is still good */
        config_free(&cfg);
}

static void test_child_views_flock(void **state)
{
        (void)state;
        child_views("flock");
}

static void test_child_views_rw(void **state)
{
        (void)state;
        child_views("rw");
}

/* A view of board B while a view of board A holds A's lock: A's lock
 * stays held until A's view releases it. */
static void nested_views(const char *mode)
{
        struct board_config a, b;
        board(&a, mode, 'a');
        board(&b, mode, 'b');
        struct board_lock la, lb;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_lock_read(&a, &la, &e), 0);
        assert_int_equal(board_lock_read(&b, &lb, &e), 0);
        assert_false(messages_free(&a));
        assert_false(messages_free(&b));
        assert_int_equal(board_lock_release(&lb, &e), 0);
        assert_false(messages_free(&a));
        assert_true(messages_free(&b));
        assert_int_equal(board_lock_release(&la, &e), 0);
        assert_true(messages_free(&a));
        view_once(&a);
        view_once(&b);
        view_once(&a);
        config_free(&a);
        config_free(&b);
}

static void test_nested_views_flock(void **state)
{
        (void)state;
        nested_views("flock");
}

static void test_nested_views_rw(void **state)
{
        (void)state;
        nested_views("rw");
}

/* A view whose release fails (its reader entry replaced by a directory,
 * which unlink() refuses) answers the error, and the next views are
 * served and hold writers off while the entry still cannot be removed:
 * the kept handle's reacquire tries that release again, fails, and the
 * view starts again from a new handle (take_shared). */
static void test_view_after_failed_release(void **state)
{
        (void)state;
        struct board_config cfg;
        board(&cfg, "rw", 'f');
        view_once(&cfg);
        struct board_lock lk;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_lock_read(&cfg, &lk, &e), 0);
        char readers[320], entry[640] = "";
        snprintf(readers, sizeof readers, "%s/messages.readers", cfg.lock_space);
        DIR *d = opendir(readers);
        assert_non_null(d);
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
                if (strncmp(de->d_name, "r.", 2) == 0)
                        snprintf(entry, sizeof entry, "%s/%s", readers, de->d_name);
        closedir(d);
        assert_true(entry[0] != '\0');
        assert_int_equal(unlink(entry), 0);
        assert_int_equal(mkdir(entry, 0700), 0);
        assert_int_equal(board_lock_release(&lk, &e), -1);
        assert_int_equal(e.status, 500);
        assert_non_null(strstr(e.msg, "cannot release"));
        view_once(&cfg);
        view_once(&cfg);
        assert_int_equal(rmdir(entry), 0);
        view_once(&cfg);
        config_free(&cfg);
}

/* More boards than the process keeps handles for, each view nested in the
 * last: every lock is held until its own view lets go. */
static void test_many_boards(void **state)
{
        (void)state;
        enum { N = 6 };
        struct board_config cfg[N];
        struct board_lock lk[N];
        struct board_error e = BOARD_ERROR_INIT;
        for (int i = 0; i < N; i++) {
                board(&cfg[i], i % 2 ? "rw" : "flock", (char)('k' + i));
                assert_int_equal(board_lock_read(&cfg[i], &lk[i], &e), 0);
        }
        for (int i = N - 1; i >= 0; i--) {
                for (int j = 0; j < N; j++)
                        assert_int_equal(messages_free(&cfg[j]), j > i);
                assert_int_equal(board_lock_release(&lk[i], &e), 0);
        }
        for (int round = 0; round < 3; round++)
                for (int i = 0; i < N; i++)
                        view_once(&cfg[i]);
        for (int i = 0; i < N; i++)
                config_free(&cfg[i]);
}

/* A child gives up the kept flock files it inherited at once, whether it
 * ever views those boards or not: a parent that dies holding one must not
 * leave it locked while the child lives. */
static void test_child_closes_inherited(void **state)
{
        (void)state;
        struct board_config a, b;
        board(&a, "flock", 'p');
        board(&b, "flock", 'q');
        view_once(&a);
        view_once(&b);
        char pa[200], pb[200];
        snprintf(pa, sizeof pa, "%s/locks-p/messages.flock", dir);
        snprintf(pb, sizeof pb, "%s/locks-q/messages.flock", dir);
        assert_int_equal(fds_open_on(pa), 1);
        assert_int_equal(fds_open_on(pb), 1);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(fds_open_on(pa) == 0 && fds_open_on(pb) == 0 ? 0 : 1);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        view_once(&a);
        config_free(&a);
        config_free(&b);
}

/* Forked while a view holds its lock: the child's own views get a handle
 * of their own, its copy of the parent's view cannot let the parent's
 * lock go, and the parent's view still holds it. */
static void forked_in_view(const char *mode)
{
        struct board_config cfg;
        board(&cfg, mode, 'v');
        struct board_lock outer;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_lock_read(&cfg, &outer, &e), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct board_lock inner;
                int ok = board_lock_read(&cfg, &inner, &e) == 0 && inner.handle != outer.handle;
                ok &= board_lock_release(&inner, &e) == 0;
                ok &= board_lock_release(&outer, &e) != 0; /* the parent's, not ours */
                ok &= !messages_free(&cfg);
                ok &= board_lock_read(&cfg, &inner, &e) == 0 && board_lock_release(&inner, &e) == 0;
                _exit(ok ? 0 : 1);
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_false(messages_free(&cfg));
        assert_int_equal(board_lock_release(&outer, &e), 0);
        assert_true(messages_free(&cfg));
        view_once(&cfg);
        config_free(&cfg);
}

static void test_forked_in_view_flock(void **state)
{
        (void)state;
        forked_in_view("flock");
}

static void test_forked_in_view_rw(void **state)
{
        (void)state;
        forked_in_view("rw");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_child_views_flock),
            cmocka_unit_test(test_child_views_rw),
            cmocka_unit_test(test_nested_views_flock),
            cmocka_unit_test(test_nested_views_rw),
            cmocka_unit_test(test_many_boards),
            cmocka_unit_test(test_child_closes_inherited),
            cmocka_unit_test(test_forked_in_view_flock),
            cmocka_unit_test(test_forked_in_view_rw),
            cmocka_unit_test(test_view_after_failed_release),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
