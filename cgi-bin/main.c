/* main.c - the board's process: FastCGI accept loop or a single plain CGI
 * request, and shutdown on SIGTERM/SIGINT (an idle process exits at once,
 * a busy one after finishing its request).
 *
 * The handler is installed without SA_RESTART and the request is set up
 * with FCGI_FAIL_ACCEPT_ON_INTR, so a signal makes a blocked accept()
 * return and the loop ends on the flag.  Because a signal can also arrive
 * just before accept() blocks, the handler itself calls _exit(0) when no
 * request is being served (nothing is held then: no lock, no open
 * transaction). */
#include <errno.h>
#include <fcgiapp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "cgi.h"
#include "dirlock.h"

extern char **environ;

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t busy;

static void on_signal(int sig)
{
        (void)sig;
        stop_requested = 1;
        if (!busy)
                _exit(0);
}

static int install_signals(void)
{
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = 0; /* no SA_RESTART: a blocked accept() returns EINTR */
        if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0)
                return -1;
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        return sigaction(SIGPIPE, &ign, NULL);
}

static long fcgi_read(void *ctx, char *dst, size_t n)
{
        FCGX_Stream *in = ctx;
        int got = FCGX_GetStr(dst, n > 65536 ? 65536 : (int)n, in);
        return got;
}

static int serve_fastcgi(struct app *app)
{
        FCGX_Request req;
        if (FCGX_InitRequest(&req, 0, FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
                fprintf(stderr, "board: cannot initialize the FastCGI request\n");
                return 1;
        }
        while (!stop_requested) {
                if (FCGX_Accept_r(&req) < 0)
                        break;
                busy = 1;
                struct buf out = BUF_INIT;
                app_handle(app, req.envp, fcgi_read, req.in, &out);
                if (out.len)
                        FCGX_PutStr(out.data, (int)out.len, req.out);
                buf_free(&out);
                FCGX_Finish_r(&req);
                busy = 0;
        }
        FCGX_Free(&req, 1);
        return 0;
}

int main(int argc, char **argv)
{
        (void)argv;
        if (argc > 1) {
                fprintf(stderr, "usage: board (run by a web server as FastCGI or CGI; configuration file "
                                "named by BOARD_CONF)\n");
                return 2;
        }
        if (install_signals() < 0) {
                fprintf(stderr, "board: cannot install signal handlers: %s\n", strerror(errno));
                return 1;
        }
        if (FCGX_Init() != 0) {
                fprintf(stderr, "board: cannot initialize libfcgi\n");
                return 1;
        }
        struct app app = APP_INIT;
        int fastcgi = !FCGX_IsCGI();
        const char *conf = getenv("BOARD_CONF");
        if (fastcgi && conf && *conf) {
                /* Check the configuration and create the secret before
                 * serving anything. */
                struct board_error e = BOARD_ERROR_INIT;
                struct app_board *b;
                if (app_load(&app, conf, &b, &e) < 0) {
                        fprintf(stderr, "board: %s\n", e.msg);
                        return 1;
                }
                /* What processes killed mid-acquire left in the lock
                 * directory (prepared lock directories, dead readers). */
                char locks[4096];
                snprintf(locks, sizeof locks, "%s/locks", b->cfg.data_dir);
                dirlock_cleanup(locks, NULL);
        }
        int rc;
        if (fastcgi) {
                rc = serve_fastcgi(&app);
        } else {
                busy = 1;
                int status = board_run_cgi(&app, environ, 0, 1);
                rc = status < 0 || status >= 500 ? 1 : 0;
        }
        app_free(&app);
        return rc;
}
