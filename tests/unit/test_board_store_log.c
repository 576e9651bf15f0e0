/* test_board_store_log.c - the flat log's file (logfile.h): read, write, cap, corrupt
 * lines, failed writes leave the old log and no temp files. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../cgi-bin/config.h"
#include "../../cgi-bin/logfile.h"

struct fixture {
        char dir[64];
        char path[128];
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof *f);
        strcpy(f->dir, "/tmp/test_board_store_XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        snprintf(f->path, sizeof f->path, "%s/messages.log", f->dir);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
        if (system(cmd) != 0)
                return -1;
        free(f);
        return 0;
}

static void add(struct msglist *l, long long no, const char *body)
{
        struct logrecord r;
        memset(&r, 0, sizeof r);
        r.no = no;
        r.time = 1000 + no;
        lr_text_set(&r.name, "anonymous", 9);
        lr_text_set(&r.subject, "", 0);
        lr_text_set(&r.body, body, strlen(body));
        lr_text_set(&r.pwhash, "", 0);
        assert_int_equal(msglist_push(l, &r), 0);
}

static size_t count_files(const char *dir)
{
        DIR *d = opendir(dir);
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d)))
                if (e->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}

static void write_text(const char *path, const char *text)
{
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs(text, fp);
        fclose(fp);
}

static void test_missing_is_empty(void **state)
{
        struct fixture *f = *state;
        struct msglist l = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(logfile_read(f->path, &l, &e), 0);
        assert_int_equal(l.count, 0);
        msglist_free(&l);
}

static void test_write_read(void **state)
{
        struct fixture *f = *state;
        struct msglist l = MSGLIST_INIT, back = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        add(&l, 1, "first\nline");
        add(&l, 2, "二番目\ttab\\");
        assert_int_equal(logfile_write(f->path, &l, 100, BOARD_WRITE_RENAME, 0, NULL, &e), 0);
        assert_int_equal(count_files(f->dir), 1); /* no temp file left */
        assert_int_equal(logfile_read(f->path, &back, &e), 0);
        assert_int_equal(back.count, 2);
        for (size_t i = 0; i < 2; i++)
                assert_true(logrecord_equal(&l.items[i], &back.items[i]));
        msglist_free(&back);
        /* in place gives the same file */
        add(&l, 5, "third");
        assert_int_equal(logfile_write(f->path, &l, 100, BOARD_WRITE_INPLACE, 1, NULL, &e), 0);
        assert_int_equal(logfile_read(f->path, &back, &e), 0);
        assert_int_equal(back.count, 3);
        assert_int_equal(msglist_max_no(&back), 5);
        msglist_free(&back);
        msglist_free(&l);
}

static void test_cap(void **state)
{
        struct fixture *f = *state;
        struct msglist l = MSGLIST_INIT, back = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        for (int i = 1; i <= 10; i++)
                add(&l, i, "m");
        assert_int_equal(logfile_write(f->path, &l, 3, BOARD_WRITE_RENAME, 0, NULL, &e), 0);
        assert_int_equal(logfile_read(f->path, &back, &e), 0);
        assert_int_equal(back.count, 3);
        assert_int_equal(back.items[0].no, 8);
        assert_int_equal(back.items[2].no, 10);
        msglist_free(&back);
        msglist_cap(&l, 2);
        assert_int_equal(l.count, 2);
        assert_int_equal(l.items[0].no, 9);
        msglist_free(&l);
}

static void test_corrupt_line(void **state)
{
        struct fixture *f = *state;
        struct msglist l = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        write_text(f->path, "1\t1\ta\tb\tc\t\n2\t1\ta\tb\tc\n3\t1\ta\tb\tc\t\n");
        assert_int_equal(logfile_read(f->path, &l, &e), -1);
        assert_int_equal(e.status, 500);
        assert_non_null(strstr(e.msg, "line 2 does not parse"));
        msglist_free(&l);

        write_text(f->path, "1\t1\ta\tb\tc\t\n2\t1\ta\tb\tc\t");
        assert_int_equal(logfile_read(f->path, &l, &e), -1);
        assert_non_null(strstr(e.msg, "line 2"));
        msglist_free(&l);

        write_text(f->path, "2\t1\ta\tb\tc\t\n2\t1\ta\tb\tc\t\n");
        assert_int_equal(logfile_read(f->path, &l, &e), -1);
        assert_non_null(strstr(e.msg, "line 2"));
        msglist_free(&l);
}

static int refuse(void *ctx, struct board_error *err)
{
        (*(int *)ctx)++;
        board_fail(err, 503, "lock lost");
        return -1;
}

/* The `done` step: records how many messages a reader saw at that point. */
struct seen {
        const char *path;
        int done_calls;
        long count;
};

static void count_on_done(void *ctx)
{
        struct seen *s = ctx;
        struct msglist l = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        s->done_calls++;
        s->count = logfile_read(s->path, &l, &e) == 0 ? (long)l.count : -1;
        msglist_free(&l);
}

static int refuse_seen(void *ctx, struct board_error *err)
{
        (void)ctx;
        return board_fail(err, 503, "lock lost");
}

static void test_check_cancels(void **state)
{
        struct fixture *f = *state;
        struct msglist l = MSGLIST_INIT, back = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        add(&l, 1, "old");
        assert_int_equal(logfile_write(f->path, &l, 10, BOARD_WRITE_RENAME, 0, NULL, &e), 0);
        add(&l, 2, "new");
        int called = 0;
        struct file_commit refusing = {refuse, NULL, &called};
        assert_int_equal(logfile_write(f->path, &l, 10, BOARD_WRITE_RENAME, 0, &refusing, &e), -1);
        assert_int_equal(called, 1);
        assert_int_equal(e.status, 503);
        assert_int_equal(count_files(f->dir), 1);
        assert_int_equal(logfile_read(f->path, &back, &e), 0);
        assert_int_equal(back.count, 1);
        msglist_free(&back);
        msglist_free(&l);
}

/* `done` runs once the new log is what readers get, once per write, in
 * both write methods; never when the check refused. */
static void test_done_after_visible(void **state)
{
        struct fixture *f = *state;
        struct msglist l = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        add(&l, 1, "one");
        struct seen seen = {f->path, 0, 0};
        struct file_commit c = {NULL, count_on_done, &seen};
        assert_int_equal(logfile_write(f->path, &l, 10, BOARD_WRITE_RENAME, 0, &c, &e), 0);
        assert_int_equal(seen.done_calls, 1);
        assert_int_equal(seen.count, 1);
        add(&l, 2, "two");
        assert_int_equal(logfile_write(f->path, &l, 10, BOARD_WRITE_INPLACE, 0, &c, &e), 0);
        assert_int_equal(seen.done_calls, 2);
        assert_int_equal(seen.count, 2);
        add(&l, 3, "three");
        struct file_commit refusing = {refuse_seen, count_on_done, &seen};
        assert_int_equal(logfile_write(f->path, &l, 10, BOARD_WRITE_RENAME, 0, &refusing, &e), -1);
        assert_int_equal(seen.done_calls, 2);
        assert_int_equal(logfile_write(f->path, &l, 10, BOARD_WRITE_INPLACE, 0, &refusing, &e), -1);
        assert_int_equal(seen.done_calls, 2);
        msglist_free(&l);
}

static void test_write_failure_keeps_old(void **state)
{
        struct fixture *f = *state;
        struct msglist l = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        add(&l, 1, "x");
        char bad[160];
        snprintf(bad, sizeof bad, "%s/missing-dir/messages.log", f->dir);
        assert_int_equal(logfile_write(bad, &l, 10, BOARD_WRITE_RENAME, 0, NULL, &e), -1);
        assert_int_equal(e.status, 500);
        assert_non_null(strstr(e.msg, "cannot create"));
        assert_int_equal(count_files(f->dir), 0);
        msglist_free(&l);
}

/* The high-water mark: written only when the highest number is no longer
 * in the file, read back into last_no, and refused anywhere but last. */
static void test_high_water_mark(void **state)
{
        struct fixture *f = *state;
        struct msglist l = MSGLIST_INIT, back = MSGLIST_INIT;
        struct board_error e = BOARD_ERROR_INIT;
        add(&l, 1, "one");
        add(&l, 2, "two");
        msglist_remove(&l, 1); /* the newest deleted */
        assert_int_equal(msglist_max_no(&l), 2);
        assert_int_equal(logfile_write(f->path, &l, 10, BOARD_WRITE_RENAME, 0, NULL, &e), 0);
        assert_int_equal(logfile_read(f->path, &back, &e), 0);
        assert_int_equal(back.count, 1);
        assert_int_equal(msglist_max_no(&back), 2);
        msglist_free(&back);
        msglist_remove(&l, 0); /* every message deleted */
        assert_int_equal(logfile_write(f->path, &l, 10, BOARD_WRITE_INPLACE, 0, NULL, &e), 0);
        assert_int_equal(logfile_read(f->path, &back, &e), 0);
        assert_int_equal(back.count, 0);
        assert_int_equal(msglist_max_no(&back), 2);
        msglist_free(&back);
        msglist_free(&l);
        write_text(f->path, "#last_no\t3\n4\t1\ta\tb\tc\t\n");
        assert_int_equal(logfile_read(f->path, &back, &e), -1);
        assert_non_null(strstr(e.msg, "line 1"));
        msglist_free(&back);
        write_text(f->path, "4\t1\ta\tb\tc\t\n#last_no\t4\n");
        assert_int_equal(logfile_read(f->path, &back, &e), -1);
        assert_non_null(strstr(e.msg, "line 2"));
        msglist_free(&back);
        write_text(f->path, "4\t1\ta\tb\tc\t\n#last_no\tx\n");
        assert_int_equal(logfile_read(f->path, &back, &e), -1);
        msglist_free(&back);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_missing_is_empty, setup, teardown),
            cmocka_unit_test_setup_teardown(test_write_read, setup, teardown),
            cmocka_unit_test_setup_teardown(test_cap, setup, teardown),
            cmocka_unit_test_setup_teardown(test_high_water_mark, setup, teardown),
            cmocka_unit_test_setup_teardown(test_corrupt_line, setup, teardown),
            cmocka_unit_test_setup_teardown(test_check_cancels, setup, teardown),
            cmocka_unit_test_setup_teardown(test_done_after_visible, setup, teardown),
            cmocka_unit_test_setup_teardown(test_write_failure_keeps_old, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
