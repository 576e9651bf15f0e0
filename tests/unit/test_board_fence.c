/* test_board_fence.c - fencing in the stores (cgi-bin/fence.h).  The flat
 * log: a post records its lock's fence in the log, and announces it in
 * the gate's file before it reads (the file written whole; empty is none,
 * anything else an error); a holder whose lock was broken and taken by a
 * later writer is refused by the fence gate (503), also when it comes
 * between the later writer's read and its write, and a later one is
 * admitted; each of the log's read-modify-writes (a post, a delete, a
 * group-commit batch) announces before it reads; a gate held too long
 * (its holder stopped inside it) is a 503, never a wait for ever; the
 * fence line round-trips and does not disturb views.
 * SQLite: a post records its fence in board_meta in its own transaction,
 * and a write whose fence is below the recorded one is refused (503) with
 * nothing written. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "../../cgi-bin/board.h"
#include "../../cgi-bin/config.h"
#include "../../cgi-bin/delay.h"
#include "../../cgi-bin/fence.h"
#include "../../cgi-bin/locking.h"
#include "../../cgi-bin/logfile.h"
#include "../../cgi-bin/password.h"
#include "../../cgi-bin/store.h"
#include "dirlock.h"

static char dir[64];
static char log_path[128];
static struct board_config cfg;

/* A board in a new directory, with `settings` after its data_dir. */
static int setup_with(const char *settings)
{
        strcpy(dir, "/tmp/test_board_fence_XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        snprintf(log_path, sizeof log_path, "%s/messages.log", dir);
        char text[256];
        int n = snprintf(text, sizeof text, "data_dir = %s\n%s%sstale_age = 1\n", dir, settings,
                         strstr(settings, "group_commit") ? "" : "group_commit = no\n");
        struct board_error e = BOARD_ERROR_INIT;
        return config_parse(text, (size_t)n, "test.conf", &cfg, &e);
}

static int setup(void **state)
{
        (void)state;
        return setup_with("lock_mode = mkdir\n");
}

/* The same board with store = sqlite. */
static int setup_sqlite(void **state)
{
        (void)state;
        return setup_with("store = sqlite\nlock_mode = mkdir\n");
}

/* The same board with group_commit = yes: posts stored in batches. */
static int setup_group(void **state)
{
        (void)state;
        return setup_with("lock_mode = mkdir\ngroup_commit = yes\n");
}

/* The same board with lock_mode = rw. */
static int setup_rw(void **state)
{
        (void)state;
        return setup_with("lock_mode = rw\n");
}

static int teardown(void **state)
{
        (void)state;
        config_free(&cfg);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

/* A post's status: 0 when stored, else its error status, with the message
 * in `msg`. */
static int post_status(const char *body, char *msg, size_t size)
{
        struct logrecord m;
        memset(&m, 0, sizeof m);
        assert_int_equal(lr_text_set(&m.name, "n", 1), 0);
        assert_int_equal(lr_text_set(&m.subject, "s", 1), 0);
        assert_int_equal(lr_text_set(&m.body, body, strlen(body)), 0);
        assert_int_equal(lr_text_set(&m.pwhash, "", 0), 0);
        struct board board;
        struct board_error e = BOARD_ERROR_INIT;
        board_init(&board, &cfg);
        int rc = board_post(&board, &m, "127.0.0.1", 1700000000, &e);
        snprintf(msg, size, "%s", rc < 0 ? e.msg : "");
        board_close(&board);
        logrecord_free(&m);
        return rc < 0 ? e.status : 0;
}

static int last_status; /* the error status of post()'s last failure */

/* A post that must be stored (want 0) or refused for its fence (-1). */
static void post(const char *body, int want)
{
        char msg[512];
        int status = post_status(body, msg, sizeof msg);
        int rc = status == 0 ? 0 : -1;
        if (rc != want)
                print_message("post '%s': %d (%d %s)\n", body, rc, status, msg);
        if (rc < 0) {
                last_status = status;
                assert_non_null(strstr(msg, "is below the store's"));
        }
        assert_int_equal(rc, want);
}

static unsigned long long recorded(void)
{
        unsigned long long f = 0;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(logfile_read_fence(log_path, &f, &e), 0);
        return f;
}

/* The fence a post announced before its read (data_dir/fence.lock). */
static unsigned long long announced(void)
{
        char path[160], text[32] = "";
        snprintf(path, sizeof path, "%s/fence.lock", dir);
        FILE *f = fopen(path, "r");
        if (f == NULL)
                return 0;
        if (fgets(text, sizeof text, f) == NULL)
                text[0] = '\0';
        fclose(f);
        return strtoull(text, NULL, 10);
}

static void test_admit(void **state)
{
        (void)state;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(fence_admit(0, 0, &e), 0);
        assert_int_equal(fence_admit(5, 0, &e), 0); /* no fence: nothing to compare */
        assert_int_equal(fence_admit(5, 5, &e), 0);
        assert_int_equal(fence_admit(5, 6, &e), 0);
        assert_int_equal(fence_admit(6, 5, &e), -1);
        assert_int_equal(e.status, 503);
        assert_int_equal(e.retry_after, 1);
        assert_non_null(strstr(e.msg, "nothing was written"));
}

/* Every post records its fence, and the fences grow. */
static void test_post_records_fence(void **state)
{
        (void)state;
        assert_int_equal(recorded(), 0);
        post("one", 0);
        unsigned long long f1 = recorded();
        assert_true(f1 > 0);
        post("two", 0);
        unsigned long long f2 = recorded();
        assert_true(f2 > f1);
        assert_true(announced() == f2); /* announced before its read */
        struct msglist l = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(logfile_read(log_path, &l, &e), 0);
        assert_int_equal(l.count, 2);
        assert_true(l.fence == f2);
        msglist_free(&l);
}

/* A holds the lock and its fence; the lock is broken (A paused past its
 * stale age) and B posts with a higher fence.  A's late write is refused
 * by the gate and leaves the log alone; B's fence is admitted. */
static void test_late_holder_refused(void **state)
{
        (void)state;
        struct board_lock a;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_lock_write_begin(&cfg, &a, &e), 0);
        assert_true(a.fence > 0);
        unsigned long long fa = a.fence;
        dirlock_error de;
        assert_int_equal(dirlock_break(cfg.lock_space, BOARD_LOCK_NAME, 0.1, 1, &de), DIRLOCK_OK);
        post("from B", 0);
        unsigned long long fb = recorded();
        assert_true(fb > fa);

        struct fence_gate g = FENCE_GATE_INIT;
        assert_int_equal(fence_gate_enter(&g, dir, log_path, fa, 1, &e), -1);
        assert_int_equal(e.status, 503);
        assert_int_equal(g.fd, -1);
        fence_gate_leave(&g);
        assert_int_equal(fence_gate_enter(&g, dir, log_path, fb, 1, &e), 0);
        fence_gate_leave(&g);

        (void)board_lock_release(&a, &e);
}

/* A late writer that renamed between its successor's read and its
 * successor's write would be told its post is stored, and then be written
 * over by a log read before it.  The successor announces its fence before
 * it reads (fence.h, step 0): the late writer's gate is refused although
 * the log still records an older fence, and so is a late read. */
static void test_late_write_after_successor_read(void **state)
{
        (void)state;
        post("first", 0);
        struct board_lock a, b;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_lock_write_begin(&cfg, &a, &e), 0);
        dirlock_error de;
        assert_int_equal(dirlock_break(cfg.lock_space, BOARD_LOCK_NAME, 0.1, 1, &de), DIRLOCK_OK);
        assert_int_equal(board_lock_write_begin(&cfg, &b, &e), 0);
        assert_true(b.fence > a.fence);
        assert_int_equal(fence_announce(dir, b.fence, 1, &e), 0); /* B reads next */
        assert_true(recorded() < a.fence);

        struct fence_gate g = FENCE_GATE_INIT;
        assert_int_equal(fence_gate_enter(&g, dir, log_path, a.fence, 1, &e), -1);
        assert_int_equal(e.status, 503);
        assert_int_equal(g.fd, -1);
        assert_int_equal(fence_announce(dir, a.fence, 1, &e), -1);
        assert_int_equal(e.status, 503);
        assert_int_equal(fence_gate_enter(&g, dir, log_path, b.fence, 1, &e), 0);
        fence_gate_leave(&g);

        (void)board_lock_release(&b, &e);
        (void)board_lock_release(&a, &e);
}

static void set_gate_file(const char *text)
{
        char path[160];
        snprintf(path, sizeof path, "%s/fence.lock", dir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static size_t log_count(void)
{
        struct msglist l = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(logfile_read(log_path, &l, &e), 0);
        size_t n = l.count;
        msglist_free(&l);
        return n;
}

/* The gate's file: written whole (20 digits and a newline) by every post;
 * empty (never announced) is no announcement; a fence announced above the
 * post's own refuses the post before it reads (503, nothing written);
 * anything else is an error naming the file (500, nothing written), never
 * read as "none announced". */
static void test_gate_file(void **state)
{
        (void)state;
        char msg[512];
        assert_int_equal(post_status("one", msg, sizeof msg), 0);
        char path[160];
        snprintf(path, sizeof path, "%s/fence.lock", dir);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_size, 21);
        assert_true(announced() == recorded());

        set_gate_file("");
        assert_int_equal(post_status("two", msg, sizeof msg), 0);
        assert_int_equal(log_count(), 2);

        char text[32]; /* a fence above every one drawn */
        snprintf(text, sizeof text, "%020llu\n", 9007199254740991ULL);
        set_gate_file(text);
        assert_int_equal(post_status("three", msg, sizeof msg), 503);
        assert_non_null(strstr(msg, "nothing was written"));
        assert_int_equal(log_count(), 2);

        const char *bad[] = {"-1\n", "12\n", "0000000000000000000x\n", "000000000000000000012\n", NULL};
        for (int i = 0; bad[i]; i++) {
                set_gate_file(bad[i]);
                assert_int_equal(post_status("four", msg, sizeof msg), 500);
                assert_non_null(strstr(msg, "fence.lock holds no fence"));
                assert_int_equal(log_count(), 2);
        }
}

/* A post announces its fence before it reads the log (read_to_write in
 * store_log.c): with a higher fence announced and a log that does not
 * parse, the post is refused for its fence (503), never for the log
 * (500), which it would meet only by reading first. */
static void test_announce_before_read(void **state)
{
        (void)state;
        char msg[512];
        assert_int_equal(post_status("one", msg, sizeof msg), 0);
        FILE *f = fopen(log_path, "a");
        assert_non_null(f);
        fputs("broken line\n", f);
        fclose(f);
        assert_int_equal(post_status("two", msg, sizeof msg), 500); /* the log does not parse */
        char text[32];
        snprintf(text, sizeof text, "%020llu\n", 9007199254740991ULL);
        set_gate_file(text);
        assert_int_equal(post_status("three", msg, sizeof msg), 503);
        assert_non_null(strstr(msg, "is below the store's"));
}

/* A log that does not parse, and a fence announced above every one drawn. */
static void break_log_and_announce_high(void)
{
        FILE *f = fopen(log_path, "a");
        assert_non_null(f);
        fputs("broken line\n", f);
        fclose(f);
        char text[32];
        snprintf(text, sizeof text, "%020llu\n", 9007199254740991ULL);
        set_gate_file(text);
}

/* The log's other read-modify-writes announce before they read too: a
 * delete (the store's own step, after board_delete checked the password)
 * and a batch of group commit are refused for their fence (503), never
 * for the log they would meet only by reading first (500). */
static void test_delete_announces_before_read(void **state)
{
        (void)state;
        char msg[512];
        assert_int_equal(post_status("one", msg, sizeof msg), 0);
        break_log_and_announce_high();
        struct board board;
        struct board_error e = BOARD_ERROR_INIT;
        board_init(&board, &cfg);
        assert_int_equal(board.store->open(&cfg, &board.state, &e), 0);
        struct store_write w = {"127.0.0.1", 1700000000};
        assert_int_equal(board.store->delete (board.state, 1, "", &w, &e), -1);
        assert_int_equal(e.status, 503);
        assert_non_null(strstr(e.msg, "is below the store's"));
        board_close(&board);
}

static void test_batch_announces_before_read(void **state)
{
        (void)state;
        char msg[512];
        assert_int_equal(post_status("one", msg, sizeof msg), 0);
        assert_int_equal(log_count(), 1);
        break_log_and_announce_high();
        assert_int_equal(post_status("two", msg, sizeof msg), 503);
        assert_non_null(strstr(msg, "is below the store's"));
}

/* A holder stopped inside the gate keeps it until it runs again, and the
 * gate cannot be broken (fence.h): a writer waits for it a bounded time
 * (the lock timeout, 1 s at least: it looks again meanwhile, it does not
 * give up at the first look), then gets a 503 that says why, with nothing
 * announced -- it never blocks for ever (SIGALRM ends the test if it
 * does).  A holder that lets go while a writer waits lets it in. */
static void test_gate_held_too_long(void **state)
{
        (void)state;
        char msg[512];
        assert_int_equal(post_status("one", msg, sizeof msg), 0);
        unsigned long long before = announced();
        char path[160];
        snprintf(path, sizeof path, "%s/fence.lock", dir);
        int holder = open(path, O_RDWR | O_CLOEXEC); /* its own open file: its own flock */
        assert_true(holder >= 0);
        assert_int_equal(flock(holder, LOCK_EX), 0);

        alarm(60);
        struct board_error e = BOARD_ERROR_INIT;
        double t0 = monotonic_seconds();
        assert_int_equal(fence_announce(dir, before + 1, 0, &e), -1);
        double waited = monotonic_seconds() - t0; /* the bound: 1 s, at least */
        assert_int_equal(e.status, 503);
        assert_int_equal(e.retry_after, 1);
        assert_non_null(strstr(e.msg, "write gate"));
        assert_true(announced() == before);
        struct fence_gate g = FENCE_GATE_INIT;
        t0 = monotonic_seconds();
        assert_int_equal(fence_gate_enter(&g, dir, log_path, before + 1, 1.5, &e), -1);
        double waited_enter = monotonic_seconds() - t0; /* lock_timeout 1.5 s */
        assert_int_equal(e.status, 503);
        assert_int_equal(g.fd, -1);
        alarm(0);
        if (waited < 1.0 || waited_enter < 1.5)
                print_message("waited %.3f s (bound 1) and %.3f s (bound 1.5)\n", waited, waited_enter);
        assert_true(waited >= 1.0 && waited_enter >= 1.5); /* a wait, not one look */

        /* Let go while a writer waits: it gets in, without an error. */
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                usleep(300 * 1000);
                _exit(close(holder) == 0 ? 0 : 1); /* the last copy of that open file */
        }
        close(holder);
        alarm(60);
        assert_int_equal(fence_announce(dir, before + 1, 30, &e), 0);
        alarm(0);
        int status;
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(announced() == before + 1);
        assert_int_equal(fence_gate_enter(&g, dir, log_path, before + 1, 0, &e), 0);
        fence_gate_leave(&g);
}

/* Whether a lock of `mode` on the board's lock is free right now. */
static int try_board_lock(int mode)
{
        dirlock_options o;
        dirlock_options_init(&o);
        o.timeout = 0;
        o.mode = mode;
        dirlock *h = NULL;
        dirlock_error de;
        int rc = dirlock_acquire(cfg.lock_space, BOARD_LOCK_NAME, &o, &h, &de);
        if (rc == DIRLOCK_OK)
                dirlock_release(h, NULL);
        return rc;
}

/* rw: the writer holds readers off from its upgrade to the moment the new
 * log is visible, and from there only writers (board_lock_write_visible);
 * the other modes keep what they hold. */
static void test_rw_readers_back_after_rename(void **state)
{
        (void)state;
        struct board_lock w;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_lock_write_begin(&cfg, &w, &e), 0);
        assert_int_equal(try_board_lock(DIRLOCK_SHARED), DIRLOCK_OK); /* intent: readers go on */
        assert_int_equal(board_lock_make_exclusive(&w, &e), 0);
        assert_int_equal(try_board_lock(DIRLOCK_SHARED), DIRLOCK_EBUSY);
        board_lock_write_visible(&w);
        assert_int_equal(try_board_lock(DIRLOCK_SHARED), DIRLOCK_OK);
        assert_int_equal(try_board_lock(DIRLOCK_INTENT), DIRLOCK_EBUSY);
        assert_int_equal(try_board_lock(DIRLOCK_EXCLUSIVE), DIRLOCK_EBUSY);
        assert_int_equal(board_lock_release(&w, &e), 0);
        assert_int_equal(try_board_lock(DIRLOCK_EXCLUSIVE), DIRLOCK_OK);
        /* and a whole post leaves the lock free and the post in the log */
        post("through rw", 0);
        assert_int_equal(try_board_lock(DIRLOCK_EXCLUSIVE), DIRLOCK_OK);
}

/* mkdir: board_lock_write_visible changes nothing; the writer stays
 * exclusive to its release. */
static void test_mkdir_keeps_exclusive(void **state)
{
        (void)state;
        struct board_lock w;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_lock_write_begin(&cfg, &w, &e), 0);
        board_lock_write_visible(&w);
        assert_int_equal(try_board_lock(DIRLOCK_EXCLUSIVE), DIRLOCK_EBUSY);
        assert_int_equal(board_lock_release(&w, &e), 0);
}

/* The fence line round-trips and is not a message; a log without one has
 * fence 0. */
static void test_fence_line(void **state)
{
        (void)state;
        const char *text = "#fence\t1234567890123\n1\t1700000000\tn\ts\tb\t\n";
        struct msglist l = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(logfile_parse(text, strlen(text), "x", &l, &e), 0);
        assert_int_equal(l.count, 1);
        assert_true(l.fence == 1234567890123ULL);
        assert_int_equal(logfile_write(log_path, &l, 10, BOARD_WRITE_RENAME, 0, NULL, &e), 0);
        assert_true(recorded() == 1234567890123ULL);
        msglist_free(&l);
        unsigned long long f = 7;
        assert_int_equal(logfile_fence_line("1\t17\tn\ts\tb\t\n", 13, &f), 0);
        assert_int_equal(logfile_fence_line("#fence\t\n", 8, &f), 0);
        assert_true(f == 7);
}

/* One integer from board.db (the test's own connection). */
static long long db_int(const char *sql)
{
        char path[160];
        snprintf(path, sizeof path, "%s/board.db", dir);
        sqlite3 *db;
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        long long v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return v;
}

static void db_exec(const char *sql)
{
        char path[160];
        snprintf(path, sizeof path, "%s/board.db", dir);
        sqlite3 *db;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
}

#define SQL_FENCE "SELECT COALESCE((SELECT value FROM board_meta WHERE key = 'fence'), 0)"
#define SQL_COUNT "SELECT COUNT(*) FROM messages"

/* Every post records its fence in board_meta, and the fences grow. */
static void test_sqlite_post_records_fence(void **state)
{
        (void)state;
        post("one", 0);
        long long f1 = db_int(SQL_FENCE);
        assert_true(f1 > 0);
        post("two", 0);
        long long f2 = db_int(SQL_FENCE);
        assert_true(f2 > f1);
        assert_int_equal(db_int(SQL_COUNT), 2);
}

/* A later holder has recorded a higher fence than the next acquisition
 * draws (as when this writer's lock was broken while it was paused and
 * another host wrote): the post and a delete are refused with 503, and
 * nothing is written -- no message, no number, the recorded fence stays. */
static void test_sqlite_lower_fence_refused(void **state)
{
        (void)state;
        post("one", 0);
        long long high = db_int(SQL_FENCE) + 1000000000000LL;
        char sql[160];
        snprintf(sql, sizeof sql, "UPDATE board_meta SET value = %lld WHERE key = 'fence'", high);
        db_exec(sql);

        post("late", -1);
        assert_int_equal(last_status, 503);
        assert_int_equal(db_int(SQL_COUNT), 1);
        assert_int_equal(db_int("SELECT value FROM board_meta WHERE key = 'last_no'"), 1);
        assert_true(db_int(SQL_FENCE) == high);

        struct board board;
        struct board_error e = BOARD_ERROR_INIT;
        board_init(&board, &cfg);
        char *hash = NULL;
        assert_int_equal(password_hash("pw", &hash, &e), 0);
        snprintf(sql, sizeof sql, "UPDATE messages SET pwhash = '%s' WHERE no = 1", hash);
        free(hash);
        db_exec(sql);
        assert_int_equal(board_delete(&board, 1, "pw", "127.0.0.1", 1700000100, &e), -1);
        assert_int_equal(e.status, 503);
        assert_non_null(strstr(e.msg, "is below the store's"));
        board_close(&board);
        assert_int_equal(db_int(SQL_COUNT), 1);

        db_exec("UPDATE board_meta SET value = 1 WHERE key = 'fence'");
        post("in time", 0); /* a fence above the recorded one is admitted */
        assert_int_equal(db_int(SQL_COUNT), 2);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_admit),
            cmocka_unit_test_setup_teardown(test_post_records_fence, setup, teardown),
            cmocka_unit_test_setup_teardown(test_late_holder_refused, setup, teardown),
            cmocka_unit_test_setup_teardown(test_late_write_after_successor_read, setup, teardown),
            cmocka_unit_test_setup_teardown(test_gate_file, setup, teardown),
            cmocka_unit_test_setup_teardown(test_announce_before_read, setup, teardown),
            cmocka_unit_test_setup_teardown(test_delete_announces_before_read, setup, teardown),
            cmocka_unit_test_setup_teardown(test_batch_announces_before_read, setup_group, teardown),
            cmocka_unit_test_setup_teardown(test_gate_held_too_long, setup, teardown),
            cmocka_unit_test_setup_teardown(test_fence_line, setup, teardown),
            cmocka_unit_test_setup_teardown(test_rw_readers_back_after_rename, setup_rw, teardown),
            cmocka_unit_test_setup_teardown(test_mkdir_keeps_exclusive, setup, teardown),
            cmocka_unit_test_setup_teardown(test_sqlite_post_records_fence, setup_sqlite, teardown),
            cmocka_unit_test_setup_teardown(test_sqlite_lower_fence_refused, setup_sqlite, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
