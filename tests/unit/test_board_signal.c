/* test_board_signal.c - cgi-bin/board as a FastCGI server exits promptly on
 * SIGTERM and SIGINT while idle in accept(), and a request it has
 * accepted is answered in full even when the signal comes before the
 * request is under way (then it exits). */
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

/* A private board serving FastCGI on a loopback socket: its directory,
 * its pid, and the socket's address. */
struct server {
        char dir[64];
        pid_t pid;
        struct sockaddr_in addr;
};

static void server_start(struct server *sv)
{
        strcpy(sv->dir, "/tmp/test_board_signal_XXXXXX");
        assert_non_null(mkdtemp(sv->dir));
        char conf[96];
        snprintf(conf, sizeof conf, "%s/board.conf", sv->dir);
        FILE *fp = fopen(conf, "w");
        fprintf(fp, "data_dir = %s/data\n", sv->dir);
        fclose(fp);

        int s = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(s >= 0);
        memset(&sv->addr, 0, sizeof sv->addr);
        sv->addr.sin_family = AF_INET;
        sv->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(bind(s, (struct sockaddr *)&sv->addr, sizeof sv->addr), 0);
        socklen_t len = sizeof sv->addr;
        assert_int_equal(getsockname(s, (struct sockaddr *)&sv->addr, &len), 0);
        assert_int_equal(listen(s, 8), 0);

        sv->pid = fork();
        assert_true(sv->pid >= 0);
        if (sv->pid == 0) {
                dup2(s, 0);
                close(s);
                setenv("BOARD_CONF", conf, 1);
                execl(board_path(), "board", (char *)NULL);
                _exit(127);
        }
        close(s);
        /* Let it reach accept(): the secret file appears on start-up. */
        char secret[96];
        snprintf(secret, sizeof secret, "%s/data/secret", sv->dir);
        for (int i = 0; i < 200 && access(secret, F_OK) != 0; i++)
                usleep(10000);
        usleep(100000);
}

/* Wait up to 3 s for the board to exit; its wait status, or -1 (killed). */
static int server_wait(struct server *sv)
{
        double t0 = now();
        int status = 0;
        pid_t got = 0;
        while ((got = waitpid(sv->pid, &status, WNOHANG)) == 0 && now() - t0 < 3)
                usleep(5000);
        if (got == 0) {
                kill(sv->pid, SIGKILL);
                waitpid(sv->pid, &status, 0);
                return -1;
        }
        return status;
}

static void server_remove(struct server *sv)
{
        char cmd[96];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", sv->dir);
        assert_int_equal(system(cmd), 0);
}

static void idle_exit_on(int sig)
{
        if (access(board_path(), X_OK) != 0) {
                skip();
                return;
        }
        struct server sv;
        server_start(&sv);
        double t0 = now();
        assert_int_equal(kill(sv.pid, sig), 0);
        int status = server_wait(&sv);
        double took = now() - t0;
        if (status == -1)
                fail_msg("board did not exit within 3 s of signal %d", sig);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_true(took < 1.0);
        server_remove(&sv);
}

/* ---- a minimal FastCGI client ------------------------------------------ */

enum { FCGI_BEGIN_REQUEST = 1, FCGI_END_REQUEST = 3, FCGI_PARAMS = 4, FCGI_STDIN = 5, FCGI_STDOUT = 6 };

/* One record; 0, or -1 when the board has closed the connection. */
static int send_record(int fd, int type, const void *body, size_t len)
{
        unsigned char h[8] = {1, (unsigned char)type, 0, 1, (unsigned char)(len >> 8), (unsigned char)len, 0,
                              0};
        if (write(fd, h, sizeof h) != (ssize_t)sizeof h)
                return -1;
        if (len > 0 && write(fd, body, len) != (ssize_t)len)
                return -1;
        return 0;
}

/* One name-value pair (both shorter than 128 bytes) appended at *p. */
static size_t put_param(unsigned char *p, const char *name, const char *value)
{
        size_t n = strlen(name), v = strlen(value);
        p[0] = (unsigned char)n;
        p[1] = (unsigned char)v;
        memcpy(p + 2, name, n);
        memcpy(p + 2 + n, value, v);
        return 2 + n + v;
}

/* Read records until END_REQUEST or EOF; the STDOUT bytes into out. */
static int read_response(int fd, char *out, size_t cap, size_t *got)
{
        *got = 0;
        for (;;) {
                unsigned char h[8];
                size_t have = 0;
                while (have < sizeof h) {
                        ssize_t n = read(fd, h + have, sizeof h - have);
                        if (n <= 0)
                                return 0; /* closed without END_REQUEST */
                        have += (size_t)n;
                }
                size_t len = ((size_t)h[4] << 8 | h[5]) + h[6];
                unsigned char body[65536 + 256];
                have = 0;
                while (have < len) {
                        ssize_t n = read(fd, body + have, len - have);
                        if (n <= 0)
                                return 0;
                        have += (size_t)n;
                }
                size_t content = (size_t)h[4] << 8 | h[5];
                if (h[1] == FCGI_STDOUT && *got + content < cap) {
                        memcpy(out + *got, body, content);
                        *got += content;
                        out[*got] = '\0';
                }
                if (h[1] == FCGI_END_REQUEST)
                        return 1;
        }
}

/* SIGTERM (or SIGINT) after the board accepted a connection, while it is
 * still reading the request's parameters, before it has marked itself
 * busy: it must answer that request in full and only then exit. */
static void accepted_request_answered_on(int sig)
{
        if (access(board_path(), X_OK) != 0) {
                skip();
                return;
        }
        struct server sv;
        server_start(&sv);
        int c = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(c >= 0);
        assert_int_equal(connect(c, (struct sockaddr *)&sv.addr, sizeof sv.addr), 0);
        unsigned char begin[8] = {0, 1, 0, 0, 0, 0, 0, 0}; /* responder, close the connection after */
        assert_int_equal(send_record(c, FCGI_BEGIN_REQUEST, begin, sizeof begin), 0);
        unsigned char params[512];
        size_t n = put_param(params, "REQUEST_METHOD", "GET");
        assert_int_equal(send_record(c, FCGI_PARAMS, params, n), 0);
        usleep(200000); /* accepted, and reading the parameters */
        assert_int_equal(kill(sv.pid, sig), 0);
        usleep(200000);
        n = put_param(params, "DOCUMENT_URI", "/api/info");
        /* (these fail when the board has dropped the connection) */
        if (send_record(c, FCGI_PARAMS, params, n) == 0 && send_record(c, FCGI_PARAMS, NULL, 0) == 0)
                send_record(c, FCGI_STDIN, NULL, 0);
        static char out[70000];
        size_t got = 0;
        int ended = read_response(c, out, sizeof out, &got);
        close(c);
        int status = server_wait(&sv);
        print_message("signal %d mid-request: %s, %zu bytes of answer: %.40s\n", sig,
                      ended ? "answered" : "connection closed unanswered", got, got ? out : "");
        assert_true(ended);
        assert_non_null(strstr(out, "Status: 200"));
        assert_non_null(strstr(out, "\"mode\":\"mkdir\""));
        assert_true(status != -1 && WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        server_remove(&sv);
}

static void test_sigterm_mid_request(void **state)
{
        (void)state;
        accepted_request_answered_on(SIGTERM);
}

static void test_sigint_mid_request(void **state)
{
        (void)state;
        accepted_request_answered_on(SIGINT);
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
        signal(SIGPIPE, SIG_IGN); /* a board that drops a connection must not end the test */
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_sigterm),
            cmocka_unit_test(test_sigint),
            cmocka_unit_test(test_sigterm_mid_request),
            cmocka_unit_test(test_sigint_mid_request),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
