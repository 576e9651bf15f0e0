/* test_board_delete_limit.c - the failed-delete limit under concurrency
 * (board_delete, deletelimit.h): 40 processes delete one message at once
 * with wrong passwords, and at most delete_max_failures passwords are
 * hashed, whatever the lock mode or store; the right password is then
 * refused with 429, as documented, until the window has passed; a right
 * password is no failure.  Built with the board's test hooks
 * (lib/test_hooks.h): password.c counts every hash it runs in the file the
 * seam COUNT_HASHES names, and the twin, DELETE_LIMIT_UNLOCKED (board.c),
 * reserves attempts without the board's "deletelimit" lock -- and must
 * let more hashes through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../cgi-bin/board.h"
#include "../../cgi-bin/config.h"
#include "../../cgi-bin/logrecord.h"
#include "../../cgi-bin/password.h"

#define MAX_FAILURES 5
#define GUESSERS     40
#define NOW          1700000000LL

static char dir[64], counter[128];

static int setup(void **state)
{
        (void)state;
        strcpy(dir, "/tmp/test_board_delete_limit_XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        snprintf(counter, sizeof counter, "%s/hashes", dir);
        return setenv("DIRLOCK_TEST_COUNT_HASHES", counter, 1);
}

static int teardown(void **state)
{
        (void)state;
        unsetenv("DIRLOCK_TEST_COUNT_HASHES");
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

/* Passwords hashed since the counter was last cleared. */
static long hashes(void)
{
        struct stat st;
        return stat(counter, &st) == 0 ? (long)st.st_size : 0;
}

static void clear_hashes(void)
{
        unlink(counter);
}

/* A board of its own in dir/NAME, with `extra` settings. */
static void make_board(struct board_config *cfg, const char *name, const char *extra)
{
        char data[128], text[512];
        snprintf(data, sizeof data, "%s/%s", dir, name);
        assert_int_equal(mkdir(data, 0700), 0);
        int n = snprintf(text, sizeof text,
                         "data_dir = %s\nlock_timeout = 60\ndelete_max_failures = %d\n"
                         "delete_failure_window = 60\n%s",
                         data, MAX_FAILURES, extra);
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(config_parse(text, (size_t)n, "test.conf", cfg, &e), 0);
}

/* Post a message with delete password `password`; its number. */
static long long post(const struct board_config *cfg, const char *password)
{
        struct logrecord m;
        memset(&m, 0, sizeof m);
        char *hash = NULL;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(password_hash(password, &hash, &e), 0);
        assert_int_equal(lr_text_set(&m.name, "n", 1), 0);
        assert_int_equal(lr_text_set(&m.subject, "s", 1), 0);
        assert_int_equal(lr_text_set(&m.body, "guarded", 7), 0);
        assert_int_equal(lr_text_set(&m.pwhash, hash, strlen(hash)), 0);
        free(hash);
        struct board board;
        board_init(&board, cfg);
        assert_int_equal(board_post(&board, &m, "192.0.2.200", NOW, &e), 0);
        struct msglist list = {0};
        assert_int_equal(board_list(&board, &list, &e), 0); /* (group commit does not tell m.no) */
        long long no = msglist_max_no(&list);
        assert_true(no >= 1);
        msglist_free(&list);
        board_close(&board);
        logrecord_free(&m);
        return no;
}

/* One delete, in a fresh process state: its HTTP status (0: deleted). */
static int delete_as(const struct board_config *cfg, long long no, const char *password, const char *addr,
                     long long now)
{
        struct board board;
        struct board_error e = BOARD_ERROR_INIT;
        board_init(&board, cfg);
        int rc = board_delete(&board, no, password, addr, now, &e);
        board_close(&board);
        return rc == 0 ? 0 : e.status;
}

struct outcome {
        int wrong;   /* 403: a password hashed and refused */
        int limited; /* 429: refused before hashing        */
        int other;   /* anything else                      */
        long hashed; /* passwords hashed, by password.c's count */
};

/* GUESSERS processes, released at once, each deleting message `no` with
 * a wrong password, from one of 8 addresses. */
static struct outcome guess_at_once(const struct board_config *cfg, long long no)
{
        clear_hashes();
        int gate[2];
        assert_int_equal(pipe(gate), 0);
        pid_t kids[GUESSERS];
        for (int i = 0; i < GUESSERS; i++) {
                kids[i] = fork();
                assert_true(kids[i] >= 0);
                if (kids[i] == 0) {
                        close(gate[1]);
                        char c;
                        while (read(gate[0], &c, 1) > 0) /* until the gate opens (EOF) */
                                ;
                        char password[32], addr[32];
                        snprintf(password, sizeof password, "guess-%d", i);
                        snprintf(addr, sizeof addr, "198.51.100.%d", 1 + i % 8);
                        int status = delete_as(cfg, no, password, addr, NOW);
                        _exit(status == 403 ? 3 : status == 429 ? 4 : 5);
                }
        }
        close(gate[0]);
        close(gate[1]); /* all go */
        struct outcome o = {0, 0, 0, 0};
        for (int i = 0; i < GUESSERS; i++) {
                int st;
                assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
                int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
                if (code == 3)
                        o.wrong++;
                else if (code == 4)
                        o.limited++;
                else
                        o.other++;
        }
        o.hashed = hashes();
        return o;
}

static void limit_holds(const char *name, const char *extra)
{
        struct board_config cfg;
        make_board(&cfg, name, extra);
        long long no = post(&cfg, "right");
        struct outcome o = guess_at_once(&cfg, no);
        print_message("%s: %d wrong, %d limited, %d other; %ld hashed\n", name, o.wrong, o.limited, o.other,
                      o.hashed);
        assert_int_equal(o.other, 0);
        assert_true(o.hashed <= MAX_FAILURES); /* the promise: no more hashes than the limit */
        assert_int_equal(o.hashed, o.wrong);   /* each refused guess was hashed once, no other */
        assert_int_equal(o.wrong, MAX_FAILURES);
        assert_int_equal(o.limited, GUESSERS - MAX_FAILURES);
        /* The right password now: refused before hashing, as documented ... */
        clear_hashes();
        assert_int_equal(delete_as(&cfg, no, "right", "203.0.113.9", NOW + 1), 429);
        assert_int_equal(hashes(), 0);
        /* ... until the window has passed. */
        assert_int_equal(delete_as(&cfg, no, "right", "203.0.113.9", NOW + 61), 0);
        assert_int_equal(hashes(), 1);
        config_free(&cfg);
}

static void test_mkdir(void **state)
{
        (void)state;
        limit_holds("mkdir", "lock_mode = mkdir\n");
}

static void test_rw(void **state)
{
        (void)state;
        limit_holds("rw", "lock_mode = rw\n");
}

static void test_flock(void **state)
{
        (void)state;
        limit_holds("flock", "lock_mode = flock\n");
}

static void test_sqlite(void **state)
{
        (void)state;
        limit_holds("sqlite", "store = sqlite\n");
}

/* none and wrong lose posts on purpose; the delete limit still holds. */
static void test_none(void **state)
{
        (void)state;
        limit_holds("none", "lock_mode = none\n");
}

/* A right password is taken back from the count: one address deletes
 * more of its own messages than the limit, one after the other. */
static void test_right_passwords_do_not_count(void **state)
{
        (void)state;
        struct board_config cfg;
        make_board(&cfg, "owner", "lock_mode = mkdir\n");
        long long nos[MAX_FAILURES + 1];
        for (int i = 0; i <= MAX_FAILURES; i++)
                nos[i] = post(&cfg, "mine");
        for (int i = 0; i <= MAX_FAILURES; i++)
                assert_int_equal(delete_as(&cfg, nos[i], "mine", "192.0.2.50", NOW), 0);
        config_free(&cfg);
}

/* The twin: attempts reserved without the lock.  Guessers that read the
 * counts before any of them wrote all pass: more hashes than the limit
 * (in one of three rounds, so that a quiet moment cannot hide it). */
static void test_twin_without_lock(void **state)
{
        (void)state;
        assert_int_equal(setenv("DIRLOCK_TEST_DELETE_LIMIT_UNLOCKED", "1", 1), 0);
        long most = 0;
        for (int round = 0; round < 3 && most <= MAX_FAILURES; round++) {
                char name[32];
                snprintf(name, sizeof name, "twin%d", round);
                struct board_config cfg;
                make_board(&cfg, name, "lock_mode = mkdir\n");
                long long no = post(&cfg, "right");
                struct outcome o = guess_at_once(&cfg, no);
                print_message("twin round %d: %d wrong, %d limited; %ld hashed\n", round, o.wrong, o.limited,
                              o.hashed);
                if (o.hashed > most)
                        most = o.hashed;
                config_free(&cfg);
        }
        unsetenv("DIRLOCK_TEST_DELETE_LIMIT_UNLOCKED");
        assert_true(most > MAX_FAILURES);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_mkdir),
            cmocka_unit_test(test_rw),
            cmocka_unit_test(test_flock),
            cmocka_unit_test(test_sqlite),
            cmocka_unit_test(test_none),
            cmocka_unit_test(test_right_passwords_do_not_count),
            cmocka_unit_test(test_twin_without_lock),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
