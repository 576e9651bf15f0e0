/* main.c - the board's process: FastCGI accept loop or a single plain CGI
 * request, and shutdown on SIGTERM/SIGINT (an idle process exits at once,
 * a busy one after finishing its request); and `board --check`, which
 * says whether a configuration can run where its data directory is.
 *
 * The handler only sets a flag and, while the process serves FastCGI,
 * puts /dev/null in place of its listening socket (dup2, in this process
 * only: the socket itself, shared with the other board processes, stays
 * open for them).  It is installed with SA_RESTART, so whatever system
 * call the signal interrupts is resumed:
 *   - blocked in accept(), or about to call it: the accept is made again
 *     on /dev/null and fails at once (ENOTSOCK), FCGX_Accept_r() returns
 *     an error and the loop ends;
 *   - a connection already accepted (FCGX_Accept_r() reading its
 *     parameters, or returned and not yet serving it): the reads resume,
 *     the request is served in full, and the loop ends on the flag;
 *   - serving a request: it finishes (reads of its body, waits and writes
 *     resume), then the loop ends.
 * No request a web server handed to this process is dropped, and nothing
 * depends on when, between accept and serving, the signal came.  (A web
 * server that keeps FastCGI connections open between requests would hold
 * an idle process until it closes the connection; the configurations in
 * conf/ do not.) */
#include <errno.h>
#include <fcgiapp.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "cgi.h"
#include "config.h"
#include "dirlock.h"

extern char **environ;

static volatile sig_atomic_t stop_requested;
/* While serving FastCGI: the listening socket, else -1; and /dev/null,
 * opened beforehand, to put in its place. */
static volatile sig_atomic_t listen_fd = -1;
static int null_fd = -1;

static void on_signal(int sig)
{
        (void)sig;
        int saved = errno;
        stop_requested = 1;
        if (listen_fd >= 0) {
                /* No more accepts in this process (see the top of the file). */
                if (null_fd < 0 || dup2(null_fd, listen_fd) < 0)
                        close(listen_fd);
        }
        errno = saved;
}

static int install_signals(void)
{
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART; /* resume what was interrupted (see the top of the file) */
        if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0)
                return -1;
        /* A write past RLIMIT_FSIZE fails with EFBIG, said as an error like
         * a full disk's, instead of killing the board mid-request (SIGXFSZ:
         * no answer, and its queued post stored by the next writer). */
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        return sigaction(SIGPIPE, &ign, NULL) < 0 || sigaction(SIGXFSZ, &ign, NULL) < 0 ? -1 : 0;
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
        null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        listen_fd = req.listen_sock;
        while (!stop_requested) {
                if (FCGX_Accept_r(&req) < 0)
                        break;
                /* A request accepted is served, whenever a signal came. */
                struct buf out = BUF_INIT;
                app_handle(app, req.envp, fcgi_read, req.in, &out);
                if (out.len)
                        FCGX_PutStr(out.data, (int)out.len, req.out);
                buf_free(&out);
                FCGX_Finish_r(&req);
        }
        FCGX_Free(&req, 1);
        return 0;
}

/* Exit statuses of `board --check` (check_only). */
enum { CHECK_OK = 0, CHECK_BAD_CONFIG = 1, CHECK_USAGE = 2, CHECK_NOT_HERE = 3 };

/* board --check: read the configuration BOARD_CONF names and judge its
 * data directory as a start would (config_check_storage: a network
 * filesystem refuses the sqlite store, and group commit when it is
 * asked for), creating nothing and serving nothing, so that a deployment
 * (tools/deploy) can start the boards that can run and say why the
 * others cannot: CHECK_OK; CHECK_BAD_CONFIG, a mistake in the file;
 * CHECK_NOT_HERE, a sound configuration this data directory cannot
 * hold.  The reason goes to stderr, one line. */
static int check_only(void)
{
        const char *conf = getenv("BOARD_CONF");
        if (!conf || !*conf) {
                fprintf(stderr, "board: BOARD_CONF is not set\n");
                return CHECK_USAGE;
        }
        struct board_config cfg;
        struct board_error e = BOARD_ERROR_INIT;
        if (config_load(conf, &cfg, &e) < 0) {
                fprintf(stderr, "board: %s\n", e.msg);
                return CHECK_BAD_CONFIG;
        }
        int rc = CHECK_OK;
        if (config_check_storage(conf, &cfg, &e) < 0) {
                fprintf(stderr, "board: %s\n", e.msg);
                rc = CHECK_NOT_HERE;
        }
        config_free(&cfg);
        return rc;
}

int main(int argc, char **argv)
{
        if (argc == 2 && strcmp(argv[1], "--check") == 0)
                return check_only();
        if (argc > 1) {
                fprintf(stderr, "usage: board (run by a web server as FastCGI or CGI; configuration file "
                                "named by BOARD_CONF)\n       board --check (is BOARD_CONF's board able to "
                                "run on its data directory: 0 yes, 1 bad configuration, 3 not there)\n");
                return CHECK_USAGE;
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
                dirlock_cleanup(b->cfg.lock_space, NULL);
        }
        int rc;
        if (fastcgi) {
                rc = serve_fastcgi(&app);
        } else {
                int status = board_run_cgi(&app, environ, 0, 1);
                rc = status < 0 || status >= 500 ? 1 : 0;
        }
        app_free(&app);
        return rc;
}
