/* test_board_lockmode.c - the board's lock modes as a table
 * (cgi-bin/lockmode.h) and its other enumerated settings: every mode has
 * a row, and every row keeps what the locking code relies on; the names
 * of modes, stores and write methods round-trip through the
 * configuration parser, whose messages list them all; each step of each
 * mode takes the lock it always took (locking.c carries every row out at
 * every site); a lock mode or write method no configuration gives aborts
 * naming the value, and an unknown store is an error, never the log
 * store. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../cgi-bin/board.h"
#include "../../cgi-bin/config.h"
#include "../../cgi-bin/locking.h"
#include "../../cgi-bin/lockmode.h"
#include "../../cgi-bin/logfile.h"
#include "../../cgi-bin/store.h"
#include "dirlock.h"
#include "dirlock_flock.h"

static char dir[64];

static int setup(void **state)
{
        (void)state;
        strcpy(dir, "/tmp/test_board_lockmode_XXXXXX");
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
        (void)state;
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static int parse(const char *text, struct board_config *cfg, struct board_error *err)
{
        return config_parse(text, strlen(text), "board.conf", cfg, err);
}

/* A board in `mode` (a name) with its lock space in the test directory. */
static void board_in(struct board_config *cfg, const char *mode, const char *extra)
{
        char text[512];
        snprintf(text, sizeof text, "data_dir = %s\nlock_mode = %s\n%s", dir, mode, extra);
        struct board_error e = BOARD_ERROR_INIT;
        if (parse(text, cfg, &e) != 0)
                fail_msg("%s", e.msg);
}

static void test_every_mode_has_a_row(void **state)
{
        (void)state;
        for (int m = 0; m < BOARD_LOCK_MODES; m++) {
                const struct board_lock_mode_row *row = board_lock_mode_row((enum board_lock_mode)m);
                assert_non_null(row->name);
                assert_true(row->name[0] != '\0');
                assert_string_equal(board_lock_mode_name((enum board_lock_mode)m), row->name);
                enum board_lock_mode back = BOARD_LOCK_NONE;
                assert_int_equal(board_lock_mode_parse(row->name, &back), 0);
                assert_int_equal(back, m); /* so no two rows share a name */
        }
        enum board_lock_mode unused;
        assert_int_equal(board_lock_mode_parse("spin", &unused), -1);
        assert_int_equal(board_lock_mode_parse("", &unused), -1);
}

/* What the locking code and group commit rely on, for every row (the
 * comment above the rows in lockmode.c). */
static void test_rows_keep_their_rules(void **state)
{
        (void)state;
        for (int m = 0; m < BOARD_LOCK_MODES; m++) {
                const struct board_lock_mode_row *row = board_lock_mode_row((enum board_lock_mode)m);
                const char *name = row->name;
                if (row->read != BOARD_LOCK_NOTHING && row->read != DIRLOCK_SHARED)
                        fail_msg("%s: a page view's lock must be shared", name);
                if (row->write != BOARD_LOCK_NOTHING && row->write != DIRLOCK_EXCLUSIVE &&
                    row->write != DIRLOCK_INTENT)
                        fail_msg("%s: a write lock must keep other writers out", name);
                if (row->fenced && (row->flock || row->write == BOARD_LOCK_NOTHING))
                        fail_msg("%s: only the lock space's own write locks have fences", name);
                if (row->group_commit && (row->write == BOARD_LOCK_NOTHING || row->write_after_read))
                        fail_msg("%s: group commit needs a write lock taken before the read", name);
                if (row->upgrade_before_inplace && row->write != DIRLOCK_INTENT)
                        fail_msg("%s: only an intent lock upgrades", name);
                if (row->write_after_read && row->write == BOARD_LOCK_NOTHING)
                        fail_msg("%s: a lock taken after the read needs a lock", name);
        }
}

/* Each mode's name parses to the mode, and the message of a bad value
 * lists every name; the same for stores and write methods. */
static void test_names_round_trip_through_the_parser(void **state)
{
        (void)state;
        char text[256];
        struct board_config c;
        struct board_error e = BOARD_ERROR_INIT;
        for (int m = 0; m < BOARD_LOCK_MODES; m++) {
                snprintf(text, sizeof text, "data_dir = /x\nlock_mode = %s\n",
                         board_lock_mode_name((enum board_lock_mode)m));
                assert_int_equal(parse(text, &c, &e), 0);
                assert_int_equal(c.lock_mode, m);
                config_free(&c);
        }
        for (int k = 0; k < BOARD_STORES; k++) {
                const struct store_ops *ops = store_of((enum board_store_kind)k);
                assert_non_null(ops);
                snprintf(text, sizeof text, "data_dir = /x\nstore = %s\n", ops->name);
                assert_int_equal(parse(text, &c, &e), 0);
                assert_int_equal(c.store, k);
                assert_ptr_equal(store_for(&c), ops);
                config_free(&c);
        }
        const char *methods[] = {"rename", "inplace"};
        const enum board_write_method method_of[] = {BOARD_WRITE_RENAME, BOARD_WRITE_INPLACE};
        assert_int_equal(sizeof methods / sizeof methods[0], BOARD_WRITE_METHODS);
        for (int i = 0; i < BOARD_WRITE_METHODS; i++) {
                snprintf(text, sizeof text, "data_dir = /x\nwrite_method = %s\n", methods[i]);
                assert_int_equal(parse(text, &c, &e), 0);
                assert_int_equal(c.write_method, method_of[i]);
                config_free(&c);
        }
        assert_int_equal(parse("data_dir = /x\nlock_mode = spin\n", &c, &e), -1);
        assert_string_equal(e.msg, "board.conf:2: key 'lock_mode': bad value 'spin': "
                                   "must be none, wrong, mkdir, rw or flock");
        assert_int_equal(parse("data_dir = /x\nstore = csv\n", &c, &e), -1);
        assert_string_equal(e.msg, "board.conf:2: key 'store': bad value 'csv': must be log or sqlite");
        assert_int_equal(parse("data_dir = /x\nwrite_method = copy\n", &c, &e), -1);
        assert_string_equal(e.msg,
                            "board.conf:2: key 'write_method': bad value 'copy': must be rename or inplace");
}

/* ---- which lock each step takes, per mode ------------------------------- */

#define NOTHING BOARD_LOCK_NOTHING

/* What each mode's steps hold, written out here rather than read from
 * the table: the board's behaviour, which the table must reproduce. */
static const struct expected {
        const char *mode;
        bool flock;  /* flock(2) locks, not the lock space's */
        int read;    /* held by a page view */
        int write;   /* held after board_lock_write_begin */
        int commit;  /* held after board_lock_write_commit (rename write) */
        int inplace; /* ... before an in-place write */
        bool fenced; /* the write lock has a fence */
        bool side;   /* board_lock_named takes a lock */
        bool queued; /* group commit may run */
} expected[] = {
    {"none", false, NOTHING, NOTHING, NOTHING, NOTHING, false, false, false},
    {"wrong", false, NOTHING, NOTHING, DIRLOCK_EXCLUSIVE, DIRLOCK_EXCLUSIVE, false, false, false},
    {"mkdir", false, NOTHING, DIRLOCK_EXCLUSIVE, DIRLOCK_EXCLUSIVE, DIRLOCK_EXCLUSIVE, true, true, true},
    {"rw", false, DIRLOCK_SHARED, DIRLOCK_INTENT, DIRLOCK_INTENT, DIRLOCK_EXCLUSIVE, true, true, true},
    {"flock", true, DIRLOCK_SHARED, DIRLOCK_EXCLUSIVE, DIRLOCK_EXCLUSIVE, DIRLOCK_EXCLUSIVE, false, true,
     true},
};

/* Can an outside locker of the mode's kind take lock `name` exclusively
 * right now?  (Taken and let go at once.) */
static bool lock_free(const struct board_config *cfg, bool flock, const char *name)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *h = NULL;
        dirlock_error e;
        int rc = flock ? dirlock_flock_acquire(cfg->lock_dir, name, &o, &h, &e)
                       : dirlock_acquire(cfg->lock_space, name, &o, &h, &e);
        if (rc != DIRLOCK_OK) {
                assert_int_equal(rc, DIRLOCK_EBUSY);
                return false;
        }
        assert_int_equal(dirlock_release(h, &e), DIRLOCK_OK);
        return true;
}

/* `lk` holds `want` (a dirlock_mode, or nothing) on lock `name`. */
static void holds(const struct board_config *cfg, const struct expected *x, const struct board_lock *lk,
                  const char *name, int want, const char *step)
{
        if (want == NOTHING) {
                if (lk->handle != NULL)
                        fail_msg("%s, %s: holds a lock, expected none", x->mode, step);
                assert_true(lock_free(cfg, x->flock, name));
                return;
        }
        if (lk->handle == NULL)
                fail_msg("%s, %s: holds no lock, expected mode %d", x->mode, step, want);
        if (dirlock_mode_of(lk->handle) != want)
                fail_msg("%s, %s: holds mode %d, expected %d", x->mode, step, dirlock_mode_of(lk->handle),
                         want);
        assert_false(lock_free(cfg, x->flock, name));
}

static void steps_of(const struct expected *x)
{
        struct board_config cfg, inplace;
        board_in(&cfg, x->mode, "");
        board_in(&inplace, x->mode, "write_method = inplace\n");
        struct board_lock lk;
        struct board_error e = BOARD_ERROR_INIT;

        assert_int_equal(board_lock_read(&cfg, &lk, &e), 0);
        holds(&cfg, x, &lk, BOARD_LOCK_NAME, x->read, "page view");
        assert_int_equal(board_lock_release(&lk, &e), 0);

        assert_int_equal(board_lock_write_begin(&cfg, &lk, &e), 0);
        holds(&cfg, x, &lk, BOARD_LOCK_NAME, x->write, "write begun");
        if (x->fenced ? lk.fence == 0 : lk.fence != 0)
                fail_msg("%s: fence %llu, expected %s", x->mode, lk.fence, x->fenced ? "one" : "none");
        assert_int_equal(board_lock_write_commit(&lk, &e), 0);
        holds(&cfg, x, &lk, BOARD_LOCK_NAME, x->commit, "write committed");
        assert_int_equal(board_lock_make_exclusive(&lk, &e), 0);
        holds(&cfg, x, &lk, BOARD_LOCK_NAME, x->commit == NOTHING ? NOTHING : DIRLOCK_EXCLUSIVE, "renaming");
        board_lock_write_visible(&lk);
        holds(&cfg, x, &lk, BOARD_LOCK_NAME, x->commit, "renamed");
        assert_int_equal(board_lock_release(&lk, &e), 0);

        assert_int_equal(board_lock_write_begin(&inplace, &lk, &e), 0);
        assert_int_equal(board_lock_write_commit(&lk, &e), 0);
        holds(&inplace, x, &lk, BOARD_LOCK_NAME, x->inplace, "before an in-place write");
        assert_int_equal(board_lock_release(&lk, &e), 0);

        assert_int_equal(board_lock_named(&cfg, BOARD_RATE_LOCK_NAME, &lk, &e), 0);
        holds(&cfg, x, &lk, BOARD_RATE_LOCK_NAME, x->side ? DIRLOCK_EXCLUSIVE : NOTHING, "side file");
        assert_int_equal(board_lock_release(&lk, &e), 0);

        assert_int_equal(board_lock_mode_row(cfg.lock_mode)->group_commit, x->queued);
        config_free(&inplace);
        config_free(&cfg);
}

static void test_each_mode_takes_its_locks(void **state)
{
        (void)state;
        /* A mode added to the table needs its expectations here. */
        assert_int_equal(sizeof expected / sizeof expected[0], BOARD_LOCK_MODES);
        for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
                steps_of(&expected[i]);
}

/* ---- values no configuration gives ---------------------------------------- */

/* Run `fn` in a child, which must abort with `needle` on stderr. */
static void aborts_saying(void (*fn)(void), const char *needle)
{
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct rlimit none = {0, 0};
                (void)setrlimit(RLIMIT_CORE, &none); /* no core file from the abort */
                dup2(fds[1], 2);
                close(fds[0]);
                close(fds[1]);
                fn();
                _exit(0); /* not reached when fn aborts */
        }
        close(fds[1]);
        char said[512];
        size_t n = 0;
        ssize_t got;
        while (n < sizeof said - 1 && (got = read(fds[0], said + n, sizeof said - 1 - n)) > 0)
                n += (size_t)got;
        said[n] = '\0';
        close(fds[0]);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
                fail_msg("expected an abort saying '%s'; status %d, said '%s'", needle, status, said);
        if (!strstr(said, needle))
                fail_msg("the abort said '%s', not '%s'", said, needle);
}

static struct board_config bad_cfg; /* a valid board, then one field set out of range */

static void read_in_bad_mode(void)
{
        struct board_lock lk;
        struct board_error e = BOARD_ERROR_INIT;
        (void)board_lock_read(&bad_cfg, &lk, &e);
}

static void write_in_bad_mode(void)
{
        struct board_lock lk;
        struct board_error e = BOARD_ERROR_INIT;
        (void)board_lock_write_begin(&bad_cfg, &lk, &e);
}

static void commit_in_bad_mode(void)
{
        struct board_lock lk = {&bad_cfg, NULL, 0};
        struct board_error e = BOARD_ERROR_INIT;
        (void)board_lock_write_commit(&lk, &e);
}

static void side_lock_in_bad_mode(void)
{
        struct board_lock lk;
        struct board_error e = BOARD_ERROR_INIT;
        (void)board_lock_named(&bad_cfg, BOARD_RATE_LOCK_NAME, &lk, &e);
}

static void name_of_bad_mode(void)
{
        (void)board_lock_mode_name(bad_cfg.lock_mode);
}

static void test_unknown_lock_mode_aborts(void **state)
{
        (void)state;
        board_in(&bad_cfg, "mkdir", "");
        bad_cfg.lock_mode = (enum board_lock_mode)BOARD_LOCK_MODES;
        aborts_saying(read_in_bad_mode, "unknown lock mode 5");
        aborts_saying(write_in_bad_mode, "unknown lock mode 5");
        aborts_saying(commit_in_bad_mode, "unknown lock mode 5");
        aborts_saying(side_lock_in_bad_mode, "unknown lock mode 5");
        bad_cfg.lock_mode = (enum board_lock_mode) - 1;
        aborts_saying(name_of_bad_mode, "unknown lock mode -1");
        config_free(&bad_cfg);
}

static void write_in_bad_method(void)
{
        char path[128];
        snprintf(path, sizeof path, "%s/messages.log", dir);
        struct msglist l = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        (void)logfile_write(path, &l, 10, (enum board_write_method)7, 0, NULL, &e);
}

static void test_unknown_write_method_aborts(void **state)
{
        (void)state;
        aborts_saying(write_in_bad_method, "unknown write method 7");
}

static void test_unknown_store_is_an_error(void **state)
{
        (void)state;
        assert_null(store_of((enum board_store_kind)BOARD_STORES));
        assert_null(store_of((enum board_store_kind) - 1));
        struct board_config cfg;
        board_in(&cfg, "mkdir", "");
        cfg.store = (enum board_store_kind)7;
        assert_null(store_for(&cfg));
        enum board_store_kind unused;
        assert_int_equal(store_parse("csv", &unused), -1);

        struct board b;
        board_init(&b, &cfg);
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_check_store(&b, &e), -1);
        assert_int_equal(e.status, 500);
        assert_non_null(strstr(e.msg, "store 7"));
        struct msglist list = MSGLIST_INIT;
        board_error_clear(&e);
        assert_int_equal(board_list(&b, &list, &e), -1);
        assert_int_equal(e.status, 500);
        assert_non_null(strstr(e.msg, "store 7"));
        assert_int_equal(list.count, 0);
        struct logrecord msg;
        memset(&msg, 0, sizeof msg);
        board_error_clear(&e);
        assert_int_equal(board_post(&b, &msg, "127.0.0.1", 1000, &e), -1);
        assert_int_equal(e.status, 500);
        board_close(&b);
        /* Nothing was written as if it were the log store. */
        char path[128];
        snprintf(path, sizeof path, "%s/messages.log", dir);
        assert_int_equal(access(path, F_OK), -1);
        config_free(&cfg);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_every_mode_has_a_row),
            cmocka_unit_test(test_rows_keep_their_rules),
            cmocka_unit_test(test_names_round_trip_through_the_parser),
            cmocka_unit_test(test_each_mode_takes_its_locks),
            cmocka_unit_test(test_unknown_lock_mode_aborts),
            cmocka_unit_test(test_unknown_write_method_aborts),
            cmocka_unit_test(test_unknown_store_is_an_error),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
