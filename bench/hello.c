/* bench/hello.c - the smallest useful FastCGI responder: answers every
 * request with a short text/html page.  The board benchmark runs it behind
 * the same nginx as the boards, as the upper limit of requests per second
 * through nginx + FastCGI on this machine.
 *
 * Runs under spawn-fcgi (socket on fd 0).  SIGTERM/SIGINT: an idle process
 * exits at once, a busy one after its request. */
#include <fcgiapp.h>
#include <signal.h>
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

int main(void)
{
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);

        if (FCGX_Init() != 0)
                return 1;
        FCGX_Request req;
        if (FCGX_InitRequest(&req, 0, 0) != 0)
                return 1;
        while (!stopping && FCGX_Accept_r(&req) >= 0) {
                FCGX_FPrintF(req.out, "Status: 200 OK\r\n"
                                      "Content-Type: text/html; charset=utf-8\r\n"
                                      "\r\n"
                                      "<!DOCTYPE html><title>hello</title><p>Hello, world</p>\n");
                FCGX_Finish_r(&req);
        }
        return 0;
}
