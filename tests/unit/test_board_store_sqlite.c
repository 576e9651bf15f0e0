/* test_board_store_sqlite.c - the SQLite store (cgi-bin/store_sqlite.c)
 * through board.h: one connection kept per process; page views that see
 * every commit (another connection's, the board's own, a delete) although
 * the list is kept while the database is unchanged; a new database made
 * without waiting behind writers; a database of the
 * earlier schema upgraded in place; writers served in arrival order while
 * SQLite's lock is held elsewhere; and many concurrent posters with a
 * demonstration delay all stored within the lock timeout (the same harness
 * posting one at a time is refused, so it can fail). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "../../cgi-bin/board.h"
#include "../../cgi-bin/config.h"
#include "dirlock.h"
#include "open_fds.h"

static char dir[64];
static char db_path[96];

static int setup(void **state)
{
        (void)state;
        strcpy(dir, "/tmp/test_board_sqlite_XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        snprintf(db_path, sizeof db_path, "%s/board.db", dir);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static void config_for(struct board_config *cfg, const char *extra)
{
        char text[512];
        int n = snprintf(text, sizeof text, "data_dir = %s\nstore = sqlite\n%s", dir, extra);
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(config_parse(text, (size_t)n, "test.conf", cfg, &e), 0);
}

static struct logrecord message(const char *body)
{
        struct logrecord m;
        memset(&m, 0, sizeof m);
        assert_int_equal(lr_text_set(&m.name, "n", 1), 0);
        assert_int_equal(lr_text_set(&m.subject, "s", 1), 0);
        assert_int_equal(lr_text_set(&m.body, body, strlen(body)), 0);
        assert_int_equal(lr_text_set(&m.pwhash, "", 0), 0);
        return m;
}

static int post(struct board *b, const char *body, struct board_error *e)
{
        struct logrecord m = message(body);
        int rc = board_post(b, &m, "192.0.2.1", 1700000000, e);
        logrecord_free(&m);
        return rc;
}

static void post_ok(struct board *b, const char *body)
{
        struct board_error e = BOARD_ERROR_INIT;
        if (post(b, body, &e) != 0)
                fail_msg("post '%s': %d %s", body, e.status, e.msg);
}

/* The bodies of a view, newest last, joined by '|'. */
static void view_bodies(struct board *b, char *out, size_t n)
{
        const struct msglist *l;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_view(b, &l, NULL, &e), 0);
        size_t used = 0;
        out[0] = '\0';
        for (size_t i = 0; i < l->count && used < n; i++)
                used += (size_t)snprintf(out + used, n - used, "%s%s", i ? "|" : "", l->items[i].body.ptr);
}

/* The process keeps one connection: open after the first view, the same
 * one after many views and posts. */
static void test_one_connection(void **state)
{
        (void)state;
        struct board_config cfg;
        config_for(&cfg, "");
        struct board b;
        board_init(&b, &cfg);
        char got[256];
        view_bodies(&b, got, sizeof got);
        assert_int_equal(fds_open_on(db_path), 1);
        for (int i = 0; i < 20; i++) {
                post_ok(&b, "m");
                view_bodies(&b, got, sizeof got);
        }
        assert_int_equal(fds_open_on(db_path), 1);
        board_close(&b);
        assert_int_equal(fds_open_on(db_path), 0);
        config_free(&cfg);
}

/* A kept list is never stale: another connection's post and delete, and
 * this board's own post, all show in the next view. */
static void test_view_sees_every_commit(void **state)
{
        (void)state;
        struct board_config cfg;
        config_for(&cfg, "");
        struct board b;
        board_init(&b, &cfg);
        post_ok(&b, "own-1");
        char got[256];
        view_bodies(&b, got, sizeof got);
        assert_string_equal(got, "own-1");
        view_bodies(&b, got, sizeof got); /* unchanged: the kept list */
        assert_string_equal(got, "own-1");
        /* another connection's post */
        sqlite3 *db;
        assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db,
                                      "INSERT INTO messages (no, time, name, subject, body, pwhash)"
                                      " VALUES (2, 1700000000, 'n', 's', 'other-2', '')",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
        sqlite3_close(db);
        view_bodies(&b, got, sizeof got);
        assert_string_equal(got, "own-1|other-2");
        post_ok(&b, "own-3");
        view_bodies(&b, got, sizeof got);
        assert_string_equal(got, "own-1|other-2|own-3");
        /* a delete by another connection */
        assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "DELETE FROM messages WHERE no = 2", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        view_bodies(&b, got, sizeof got);
        assert_string_equal(got, "own-1|own-3");
        board_close(&b);
        config_free(&cfg);
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A new board's first view makes the database's tables without waiting
 * for the "messages" lock, which a batch of posts may hold for as long as
 * it writes: the schema has a lock of its own. */
static void test_new_database_not_behind_writers(void **state)
{
        (void)state;
        struct board_config cfg;
        config_for(&cfg, "lock_timeout = 4\n");
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *writer = NULL;
        assert_int_equal(dirlock_acquire(cfg.lock_space, "messages", &o, &writer, NULL), DIRLOCK_OK);
        struct board b;
        board_init(&b, &cfg);
        double t0 = now_s();
        char got[64];
        view_bodies(&b, got, sizeof got);
        assert_string_equal(got, "");
        assert_true(now_s() - t0 < 2); /* not the 4 s lock_timeout */
        dirlock_release(writer, NULL);
        post_ok(&b, "after");
        view_bodies(&b, got, sizeof got);
        assert_string_equal(got, "after");
        board_close(&b);
        config_free(&cfg);
}

/* A database made by the earlier schema (no post ids) is upgraded in
 * place: its messages stay, numbers go on from its high-water mark. */
static void test_earlier_schema(void **state)
{
        (void)state;
        sqlite3 *db;
        assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
        assert_int_equal(
            sqlite3_exec(db,
                         "PRAGMA journal_mode=WAL;"
                         "CREATE TABLE messages (no INTEGER PRIMARY KEY, time INTEGER NOT NULL,"
                         " name TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL,"
                         " pwhash TEXT NOT NULL);"
                         "CREATE TABLE board_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
                         "INSERT INTO messages VALUES (1, 1700000000, 'n', 's', 'old', '');"
                         "INSERT INTO board_meta VALUES ('last_no', 7);",
                         NULL, NULL, NULL),
            SQLITE_OK);
        sqlite3_close(db);
        struct board_config cfg;
        config_for(&cfg, "");
        struct board b;
        board_init(&b, &cfg);
        post_ok(&b, "new");
        const struct msglist *l;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_view(&b, &l, NULL, &e), 0);
        assert_int_equal(l->count, 2);
        assert_string_equal(l->items[0].body.ptr, "old");
        assert_int_equal(l->items[1].no, 8);
        board_close(&b);
        config_free(&cfg);
}

/* Child: post `body` on a board of its own; exit 0 stored, 3 refused with
 * 503, 1 otherwise. */
static void poster(const struct board_config *cfg, const char *body)
{
        struct board b;
        board_init(&b, cfg);
        struct board_error e = BOARD_ERROR_INIT;
        int rc = post(&b, body, &e);
        if (rc != 0)
                fprintf(stderr, "post %s at %ld: %d %s\n", body, (long)time(NULL), e.status, e.msg);
        board_close(&b);
        _exit(rc == 0 ? 0 : e.status == 503 ? 3 : 1);
}

/* A process holding SQLite's write lock (BEGIN IMMEDIATE) on its own
 * connection until a byte arrives on *release (a child: SQLite's
 * connections must not cross a fork, so the test process holds none while
 * it forks). */
static pid_t hold_sqlite_lock(int *release)
{
        int ready[2], go[2];
        assert_int_equal(pipe(ready), 0);
        assert_int_equal(pipe(go), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                sqlite3 *db;
                char c = 0;
                int ok = sqlite3_open(db_path, &db) == SQLITE_OK &&
                         sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
                if (write(ready[1], &c, 1) != 1 || !ok || read(go[0], &c, 1) != 1)
                        _exit(1);
                ok = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
                sqlite3_close(db);
                _exit(ok ? 0 : 1);
        }
        char c;
        assert_int_equal(read(ready[0], &c, 1), 1);
        close(ready[0]);
        close(ready[1]);
        close(go[0]);
        *release = go[1];
        return pid;
}

static void wait_ok(pid_t pid)
{
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* While SQLite's write lock is held by another connection, posters that
 * arrive one after another are stored in the order they arrived. */
static void test_arrival_order(void **state)
{
        (void)state;
        struct board_config cfg;
        config_for(&cfg, "lock_timeout = 20\n");
        struct board b;
        board_init(&b, &cfg);
        post_ok(&b, "first"); /* the database exists */
        board_close(&b);
        int release;
        pid_t holder = hold_sqlite_lock(&release);
        enum { N = 5 };
        pid_t pids[N];
        for (int i = 0; i < N; i++) {
                char body[16];
                snprintf(body, sizeof body, "p%d", i);
                pids[i] = fork();
                assert_true(pids[i] >= 0);
                if (pids[i] == 0)
                        poster(&cfg, body);
                usleep(150 * 1000); /* each has arrived and waits before the next starts */
        }
        usleep(300 * 1000);
        assert_int_equal(write(release, "x", 1), 1);
        close(release);
        wait_ok(holder);
        for (int i = 0; i < N; i++)
                wait_ok(pids[i]);
        board_init(&b, &cfg);
        char got[256];
        view_bodies(&b, got, sizeof got);
        print_message("stored in the order: %s\n", got);
        assert_string_equal(got, "first|p0|p1|p2|p3|p4");
        board_close(&b);
        config_free(&cfg);
}

/* `procs` posters at once on a board with a delay_ms window: how many were
 * refused (503); every stored one has its own number, 1..stored.  The
 * board's database is made first, as a running board's is: posters that
 * each found no schema would take the write lock in turn to make it
 * (store_sqlite.c, open_db), between the batches, and be stored one or two
 * a batch.  With group commit (`batched`) a post refused at its timeout
 * may have been stored all the same by the batch that held the lock; one
 * at a time, a refused post is never stored. */
static int contend(const char *extra, int procs, bool batched)
{
        struct board_config cfg;
        config_for(&cfg, extra);
        struct board made;
        board_init(&made, &cfg);
        const struct msglist *none;
        struct board_error made_err = BOARD_ERROR_INIT;
        assert_int_equal(board_view(&made, &none, NULL, &made_err), 0);
        assert_int_equal((int)none->count, 0);
        board_close(&made); /* no connection crosses the fork */
        pid_t pids[32];
        for (int i = 0; i < procs; i++) {
                char body[16];
                snprintf(body, sizeof body, "c%d", i);
                pids[i] = fork();
                assert_true(pids[i] >= 0);
                if (pids[i] == 0)
                        poster(&cfg, body);
        }
        int refused = 0;
        for (int i = 0; i < procs; i++) {
                int st;
                assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
                assert_true(WIFEXITED(st));
                assert_true(WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 3);
                refused += WEXITSTATUS(st) == 3;
        }
        struct board b;
        board_init(&b, &cfg);
        const struct msglist *l;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_view(&b, &l, NULL, &e), 0);
        if (batched) {
                assert_true((int)l->count >= procs - refused);
                assert_true((int)l->count <= procs);
        } else {
                assert_int_equal((int)l->count, procs - refused);
        }
        for (size_t i = 0; i < l->count; i++)
                assert_int_equal(l->items[i].no, (long long)i + 1);
        board_close(&b);
        config_free(&cfg);
        return refused;
}

/* 16 posters, each in a 300 ms window, 3 s to wait: stored in batches,
 * none refused.  Posting one at a time needs 4.8 s in a row, so the same
 * harness with group_commit = no refuses some: the test can fail. */
static void test_contention_within_timeout(void **state)
{
        (void)state;
        int refused = contend("delay_ms = 300\nlock_timeout = 3\n", 16, true);
        print_message("group commit: %d of 16 refused\n", refused);
        assert_int_equal(refused, 0);
        char path[400];
        snprintf(path, sizeof path, "rm -f '%s' '%s-wal' '%s-shm'", db_path, db_path, db_path);
        assert_int_equal(system(path), 0);
        refused = contend("delay_ms = 300\nlock_timeout = 3\ngroup_commit = no\n", 16, false);
        print_message("one at a time: %d of 16 refused\n", refused);
        assert_true(refused > 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_one_connection, setup, teardown),
            cmocka_unit_test_setup_teardown(test_view_sees_every_commit, setup, teardown),
            cmocka_unit_test_setup_teardown(test_new_database_not_behind_writers, setup, teardown),
            cmocka_unit_test_setup_teardown(test_earlier_schema, setup, teardown),
            cmocka_unit_test_setup_teardown(test_arrival_order, setup, teardown),
            cmocka_unit_test_setup_teardown(test_contention_within_timeout, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
