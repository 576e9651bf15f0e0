/* test_board_post_gate.c - the cap on the posts that wait for a board's
 * lock (config max_waiting_posts, board_post_gate in cgi-bin/locking.c):
 * with every permit of the gate taken, a post is refused at once with
 * 503 and Retry-After, and nothing is stored, queued or charged to the
 * post interval; a post given a permit gives it back; and 8 processes
 * posting at once while the board's lock is held: as many wait as the cap
 * allows and the others are refused at once, and every acknowledged post
 * is stored -- while without a cap all 8 wait (its twin: the cap is what
 * refuses them). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../cgi-bin/board.h"
#include "../../cgi-bin/config.h"
#include "../../cgi-bin/locking.h"
#include "../../cgi-bin/logrecord.h"
#include "dirlock.h"
#include "dirlock_permit.h"

#define POSTERS 8

static char dir[64];

static int setup(void **state)
{
        (void)state;
        strcpy(dir, "/tmp/test_board_post_gate_XXXXXX");
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
        (void)state;
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static double now_s(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A board of its own in dir/NAME, with `extra` settings. */
static void make_board(struct board_config *cfg, const char *name, const char *extra)
{
        char data[128], text[512];
        snprintf(data, sizeof data, "%s/%s", dir, name);
        assert_int_equal(mkdir(data, 0700), 0);
        int n = snprintf(text, sizeof text, "data_dir = %s\nlock_timeout = 30\n%s", data, extra);
        struct board_error e = BOARD_ERROR_INIT;
        assert_int_equal(config_parse(text, (size_t)n, "test.conf", cfg, &e), 0);
}

/* One post in a fresh process state: 0 stored, else its HTTP status. */
static int post(const struct board_config *cfg, const char *body, int *retry_after)
{
        struct logrecord m;
        memset(&m, 0, sizeof m);
        assert_int_equal(lr_text_set(&m.name, "n", 1), 0);
        assert_int_equal(lr_text_set(&m.subject, "s", 1), 0);
        assert_int_equal(lr_text_set(&m.body, body, strlen(body)), 0);
        struct board board;
        struct board_error e = BOARD_ERROR_INIT;
        board_init(&board, cfg);
        int rc = board_post(&board, &m, "192.0.2.7", (long long)time(NULL), &e);
        board_close(&board);
        logrecord_free(&m);
        if (retry_after != NULL)
                *retry_after = e.retry_after;
        return rc == 0 ? 0 : e.status;
}

static size_t stored(const struct board_config *cfg)
{
        struct board board;
        struct board_error e = BOARD_ERROR_INIT;
        struct msglist list = {0};
        board_init(&board, cfg);
        assert_int_equal(board_list(&board, &list, &e), 0);
        size_t n = list.count;
        msglist_free(&list);
        board_close(&board);
        return n;
}

/* Entries left in the board's pending queue. */
static int queued(const struct board_config *cfg)
{
        char path[256];
        snprintf(path, sizeof path, "%s/pending", cfg->data_dir);
        DIR *d = opendir(path);
        if (d == NULL)
                return 0;
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

static dirlock *gate_permit(const struct board_config *cfg)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *h = NULL;
        assert_int_equal(dirlock_acquire_permit(cfg->gate_space, BOARD_GATE_LOCK_NAME,
                                                (unsigned)cfg->max_waiting_posts, &o, &h, NULL),
                         DIRLOCK_OK);
        return h;
}

/* Every permit taken: refused at once, nothing stored, queued or
 * charged; one free: stored, and the permit back. */
static void test_refused_at_once(void **state)
{
        (void)state;
        struct board_config cfg;
        make_board(&cfg, "full", "max_waiting_posts = 2\nmin_post_interval = 60\n");
        dirlock *a = gate_permit(&cfg), *b = gate_permit(&cfg);
        int retry = 0;
        double t0 = now_s();
        assert_int_equal(post(&cfg, "refused", &retry), 503);
        assert_true(now_s() - t0 < 1.0);
        assert_int_equal(retry, 1);
        assert_int_equal(stored(&cfg), 0);
        assert_int_equal(queued(&cfg), 0);
        dirlock_release(b, NULL);
        /* Not charged to the post interval: the next one goes through. */
        assert_int_equal(post(&cfg, "stored", NULL), 0);
        assert_int_equal(stored(&cfg), 1);
        b = gate_permit(&cfg); /* given back by the post */
        dirlock_release(a, NULL);
        dirlock_release(b, NULL);
        config_free(&cfg);
}

/* POSTERS processes post at once while the board's lock is held: the
 * number that wait, the number refused at once, and whether every
 * acknowledged post was stored. */
static void storm(const struct board_config *cfg, int *waited, int *refused)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        dirlock *lock = NULL;
        assert_int_equal(dirlock_acquire(cfg->lock_space, BOARD_LOCK_NAME, &o, &lock, NULL), DIRLOCK_OK);
        int fds[POSTERS][2];
        pid_t pids[POSTERS];
        for (int i = 0; i < POSTERS; i++) {
                assert_int_equal(pipe(fds[i]), 0);
                pids[i] = fork();
                if (pids[i] == 0) {
                        char body[32];
                        snprintf(body, sizeof body, "post %d", i);
                        double t0 = now_s();
                        int st = post(cfg, body, NULL);
                        char line[64];
                        int n = snprintf(line, sizeof line, "%d %.3f\n", st, now_s() - t0);
                        _exit(write(fds[i][1], line, (size_t)n) == n ? 0 : 1);
                }
                close(fds[i][1]);
        }
        /* Let the refused ones answer and the others reach the lock. */
        struct timespec pause = {0, 500 * 1000000L};
        nanosleep(&pause, NULL);
        dirlock_release(lock, NULL);
        *waited = *refused = 0;
        int acknowledged = 0;
        for (int i = 0; i < POSTERS; i++) {
                char line[64] = "";
                ssize_t n = read(fds[i][0], line, sizeof line - 1);
                close(fds[i][0]);
                waitpid(pids[i], NULL, 0);
                assert_true(n > 0);
                int st;
                double took;
                assert_int_equal(sscanf(line, "%d %lf", &st, &took), 2);
                if (st == 503 && took < 0.4) {
                        (*refused)++;
                } else {
                        assert_int_equal(st, 0); /* waited for the lock, then stored */
                        assert_true(took >= 0.4);
                        (*waited)++;
                        acknowledged++;
                }
        }
        assert_int_equal(stored(cfg), (size_t)acknowledged);
        assert_int_equal(queued(cfg), 0);
}

static void test_storm_capped(void **state)
{
        (void)state;
        struct board_config cfg;
        make_board(&cfg, "capped", "max_waiting_posts = 3\n");
        int waited, refused;
        storm(&cfg, &waited, &refused);
        print_message("cap 3: %d waited, %d refused at once\n", waited, refused);
        assert_int_equal(waited, 3);
        assert_int_equal(refused, POSTERS - 3);
        config_free(&cfg);
}

/* The twin: without a cap every post waits for the lock. */
static void test_storm_uncapped(void **state)
{
        (void)state;
        struct board_config cfg;
        make_board(&cfg, "uncapped", "");
        int waited, refused;
        storm(&cfg, &waited, &refused);
        print_message("no cap: %d waited, %d refused at once\n", waited, refused);
        assert_int_equal(waited, POSTERS);
        assert_int_equal(refused, 0);
        config_free(&cfg);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_refused_at_once),
            cmocka_unit_test(test_storm_capped),
            cmocka_unit_test(test_storm_uncapped),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
