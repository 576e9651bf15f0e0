/* bench/hello.c - the smallest useful FastCGI responder: answers every
 * request with a short text/html page.  The board benchmark runs it behind
 * the same nginx as the boards, as the upper limit of requests per second
 * through nginx + FastCGI on this machine.
 *
 * With HELLO_RESPONSE_FILE=PATH in its environment it answers instead
 * with that file as is (a complete CGI response: headers, blank line,
 * body), read once, at the first request that finds the file (before it
 * exists: the short page).  The benchmark gives it the board's own first
 * page, headers and all, to measure what carrying a page of that size
 * costs nginx and FastCGI apart from the work of making it.
 *
 * Runs under spawn-fcgi (socket on fd 0).  SIGTERM/SIGINT: an idle process
 * exits at once, a busy one after its request. */
#include <fcgiapp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
        (void)sig;
        stopping = 1;
        /* Interrupts accept(); FCGX_Accept_r then returns < 0. */
        close(0);
}

/* The whole of file `path` (at most 1 MB) in a new buffer, or NULL. */
static char *read_response(const char *path, int *len)
{
        FILE *fp = fopen(path, "rb");
        if (!fp)
                return NULL;
        char *data = malloc(1 << 20);
        size_t n = data ? fread(data, 1, 1 << 20, fp) : 0;
        fclose(fp);
        if (n == 0 || n == 1 << 20) {
                free(data);
                return NULL;
        }
        *len = (int)n;
        return data;
}

int main(void)
{
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);

        const char *response_file = getenv("HELLO_RESPONSE_FILE");
        char *response = NULL;
        int response_len = 0;
        if (FCGX_Init() != 0)
                return 1;
        FCGX_Request req;
        if (FCGX_InitRequest(&req, 0, 0) != 0)
                return 1;
        while (!stopping && FCGX_Accept_r(&req) >= 0) {
                if (response_file && !response)
                        response = read_response(response_file, &response_len);
                if (response)
                        FCGX_PutStr(response, response_len, req.out);
                else
                        FCGX_FPrintF(req.out, "Status: 200 OK\r\n"
                                              "Content-Type: text/html; charset=utf-8\r\n"
                                              "\r\n"
                                              "<!DOCTYPE html><title>hello</title><p>Hello, world</p>\n");
                FCGX_Finish_r(&req);
        }
        free(response);
        return 0;
}
