/* test_board_signal.c - cgi-bin/board as a FastCGI server exits promptly on
 * SIGTERM and SIGINT while idle in accept(). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static const char *board_path(void)
{
        const char *board = getenv("BOARD"); /* a sanitizer build's own */
        if (board != NULL && board[0] != '\0')
                return board;
        const char *top = getenv("TOP");
        static char path[4096];
        snprintf(path, sizeof path, "%s/cgi-bin/board", top ? top : ".");
        return path;
}

static double now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void idle_exit_on(int sig)
{
        if (access(board_path(), X_OK) != 0) {
                skip();
                return;
        }
        char dir[] = "/tmp/test_board_signal_XXXXXX";
        assert_non_null(mkdtemp(dir));
        char conf[64];
        snprintf(conf, sizeof conf, "%s/board.conf", dir);
        FILE *fp = fopen(conf, "w");
        fprintf(fp, "data_dir = %s/data\n", dir);
        fclose(fp);

        int s = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(s >= 0);
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
        assert_int_equal(listen(s, 8), 0);

        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dup2(s, 0);
                close(s);
                setenv("BOARD_CONF", conf, 1);
                execl(board_path(), "board", (char *)NULL);
                _exit(127);
        }
        close(s);
        /* Let it reach accept(): the secret file appears on start-up. */
        char secret[80];
        snprintf(secret, sizeof secret, "%s/data/secret", dir);
        for (int i = 0; i < 200 && access(secret, F_OK) != 0; i++)
                usleep(10000);
        usleep(100000);
        double t0 = now();
        assert_int_equal(kill(pid, sig), 0);
        int status = 0;
        pid_t got = 0;
        while ((got = waitpid(pid, &status, WNOHANG)) == 0 && now() - t0 < 3)
                usleep(5000);
        double took = now() - t0;
        if (got == 0) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                fail_msg("board did not exit within 3 s of signal %d", sig);
        }
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_true(took < 1.0);
        char cmd[80];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

static void test_sigterm(void **state)
{
        (void)state;
        idle_exit_on(SIGTERM);
}

static void test_sigint(void **state)
{
        (void)state;
        idle_exit_on(SIGINT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_sigterm),
            cmocka_unit_test(test_sigint),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
