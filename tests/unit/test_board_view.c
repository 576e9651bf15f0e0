/* test_board_view.c - page views through board_view(): the flat-log
 * store's per-process cache serves exactly what parsing the whole log would, whether the log
 * is unchanged, extended by posts, capped at the front, replaced by
 * something else, or broken. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../cgi-bin/board.h"
#include "../../cgi-bin/config.h"

static char dir[64];
static char logpath[128];
static struct board_config cfg;
static struct board board;

static int setup(void **state)
{
        (void)state;
        strcpy(dir, "/tmp/test_board_view_XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        snprintf(logpath, sizeof logpath, "%s/messages.log", dir);
        char text[256];
        int n = snprintf(text, sizeof text, "data_dir = %s\nlock_mode = mkdir\n", dir);
        struct board_error e = BOARD_ERROR_INIT;
        if (config_parse(text, (size_t)n, "test.conf", &cfg, &e) != 0)
                return -1;
        board_init(&board, &cfg);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        board_close(&board);
        config_free(&cfg);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

/* Replace the log (as a post does: a new file renamed into place) with
 * messages first..last, or with `raw` when given. */
static void write_log(long first, long last, const char *raw)
{
        char tmp[160];
        snprintf(tmp, sizeof tmp, "%s.new", logpath);
        FILE *f = fopen(tmp, "w");
        assert_non_null(f);
        if (raw)
                fputs(raw, f);
        for (long i = first; raw == NULL && i <= last; i++)
                fprintf(f, "%ld\t%ld\tname %ld\tsubject %ld\tbody\\nof %ld\t\n", i, 1700000000 + i, i, i, i);
        fclose(f);
        assert_int_equal(rename(tmp, logpath), 0);
}

static void expect(long first, long last)
{
        const struct msglist *l;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_view(&board, &l, NULL, &e), 0);
        assert_int_equal(l->count, (size_t)(last - first + 1));
        for (size_t i = 0; i < l->count; i++) {
                assert_int_equal(l->items[i].no, first + (long)i);
                char want[32];
                snprintf(want, sizeof want, "body\nof %ld", first + (long)i);
                assert_int_equal(l->items[i].body.len, strlen(want));
                assert_memory_equal(l->items[i].body.ptr, want, strlen(want));
        }
}

static void test_view_follows_the_log(void **state)
{
        (void)state;
        expect(1, 0); /* no log yet: no messages */
        write_log(1, 3, NULL);
        expect(1, 3);
        expect(1, 3); /* unchanged */
        write_log(1, 5, NULL);
        expect(1, 5); /* two posts appended */
        write_log(3, 6, NULL);
        expect(3, 6); /* capped: two dropped at the front, one added */
        write_log(3, 6, NULL);
        expect(3, 6); /* same content, new file */
        write_log(20, 21, NULL);
        expect(20, 21); /* something else altogether */
        write_log(0, 0, "20\t1700000020\tname 20\tsubject 20\tbody\\nof 20\t\n19\t1\tx\ty\tz\t\n");
        const struct msglist *l;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_view(&board, &l, NULL, &e), -1); /* numbers went back */
        assert_int_equal(e.status, 500);
        write_log(20, 22, NULL);
        expect(20, 22);
        write_log(0, 0, "20\t1700000020\tname 20\tsubject 20\tbody\\nof 20\t\n21\tbroken");
        e = (struct board_error)BOARD_ERROR_INIT;
        assert_int_equal(board_view(&board, &l, NULL, &e), -1); /* incomplete last line */
        write_log(1, 2, NULL);
        expect(1, 2);
        /* A log ending in the high-water mark, then one that (wrongly)
         * continues after it: the view refuses it as a full read does. */
        write_log(0, 0, "1\t1700000001\tname 1\tsubject 1\tbody\\nof 1\t\n#last_no\t3\n");
        expect(1, 1);
        write_log(0, 0,
                  "1\t1700000001\tname 1\tsubject 1\tbody\\nof 1\t\n#last_no\t3\n"
                  "4\t1700000004\tname 4\tsubject 4\tbody\\nof 4\t\n");
        e = (struct board_error)BOARD_ERROR_INIT;
        assert_int_equal(board_view(&board, &l, NULL, &e), -1);
        write_log(0, 0, "#last_no\t3\n");
        expect(1, 0);
        /* An empty log after a cached one (every line gone): no message,
         * and no undefined behaviour on the way (make test SANITIZE=1). */
        write_log(1, 2, NULL);
        expect(1, 2);
        write_log(0, 0, "");
        expect(1, 0);
        expect(1, 0);
        write_log(1, 1, NULL);
        expect(1, 1);
}

static unsigned long long generation(void)
{
        const struct msglist *l;
        unsigned long long g = 0;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_view(&board, &l, &g, &e), 0);
        return g;
}

/* The generation a view reports stays the same exactly while the list
 * does: it changes when another process rewrites the log, even to the
 * same size within one timestamp tick (the rewritten file given the old
 * one's times), and when the log is removed. */
static void test_generation_follows_the_log(void **state)
{
        (void)state;
        unlink(logpath);
        unsigned long long none = generation();
        assert_int_equal(generation(), none); /* still no log */
        write_log(1, 3, NULL);
        unsigned long long g1 = generation();
        assert_true(g1 != none);
        assert_int_equal(generation(), g1); /* unchanged */
        expect(1, 3);
        assert_int_equal(generation(), g1);

        /* Another process replaces message 2 with a message 2 of the same
         * length and gives the new file the old one's times. */
        struct stat before;
        assert_int_equal(stat(logpath, &before), 0);
        write_log(0, 0,
                  "1\t1700000001\tname 1\tsubject 1\tbody\\nof 1\t\n"
                  "2\t1700000002\tname 2\tsubject X\tbody\\nof 2\t\n"
                  "3\t1700000003\tname 3\tsubject 3\tbody\\nof 3\t\n");
        struct timespec times[2] = {before.st_atim, before.st_mtim};
        assert_int_equal(utimensat(AT_FDCWD, logpath, times, 0), 0);
        struct stat after;
        assert_int_equal(stat(logpath, &after), 0);
        assert_int_equal(after.st_size, before.st_size);
        assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
        unsigned long long g2 = generation();
        assert_true(g2 != g1);
        const struct msglist *l;
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(board_view(&board, &l, NULL, &e), 0);
        assert_int_equal(l->count, 3);
        assert_memory_equal(l->items[1].subject.ptr, "subject X", 9);
        assert_int_equal(generation(), g2);

        /* A delete (a new log without message 2). */
        write_log(0, 0,
                  "1\t1700000001\tname 1\tsubject 1\tbody\\nof 1\t\n"
                  "3\t1700000003\tname 3\tsubject 3\tbody\\nof 3\t\n");
        unsigned long long g3 = generation();
        assert_true(g3 != g2);
        assert_int_equal(board_view(&board, &l, NULL, &e), 0);
        assert_int_equal(l->count, 2);
        assert_int_equal(l->items[1].no, 3);

        /* The log removed: no messages, a new generation. */
        assert_int_equal(unlink(logpath), 0);
        unsigned long long g4 = generation();
        assert_true(g4 != g3);
        expect(1, 0);
        assert_int_equal(generation(), g4);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_view_follows_the_log),
            cmocka_unit_test(test_generation_follows_the_log),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
