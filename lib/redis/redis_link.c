/* redis_link.c - the plain links of the Redis backend (redis_link.h): TCP
 * and unix sockets, how every link is opened, and the one wait on a
 * link's socket.  TLS is redis_tls.c's, on a TCP connection made here.
 *
 * CONNECTING.  Every socket is made close-on-exec and non-blocking, and
 * connect() is waited for with poll() until the caller's deadline (a
 * name's addresses in turn: getaddrinfo()'s order).  A connected plain
 * socket is made blocking again, with SO_RCVTIMEO (DL_REDIS_READ_SLICE_MS) on TCP:
 * a reply is then read by a blocking recv() a slice at a time, which
 * saves a poll() per round trip (redis_conn.c, I/O); sends never block
 * (MSG_DONTWAIT) and never raise SIGPIPE (MSG_NOSIGNAL).  TCP links keep
 * Nagle off, as every request is one write, and keep-alive probes on
 * (a server whose host vanished is noticed by an idle kept connection).
 * A TLS socket stays non-blocking: OpenSSL reads records that may come in
 * pieces, and each wait is a poll(). */
#include "redis_link.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* TCP keep-alive of a link: first probe after KEEPIDLE s idle, then every
 * KEEPINTVL s, KEEPCNT unanswered ones break it (hiredis' own). */
#define KEEPIDLE  15
#define KEEPINTVL 5
#define KEEPCNT   3

/* ---- the plain kinds ------------------------------------------------------- */

static ssize_t plain_send(dl_redis_link *l, const char *buf, size_t len)
{
        ssize_t n;
        do
                n = send(l->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno == EWOULDBLOCK)
                errno = EAGAIN;
        l->want = POLLOUT;
        return n;
}

static ssize_t plain_recv(dl_redis_link *l, char *buf, size_t len)
{
        ssize_t n = recv(l->fd, buf, len, 0);
        if (n < 0 && (errno == EWOULDBLOCK || errno == EINTR))
                errno = EAGAIN; /* the slice passed, or a signal: wait again */
        l->want = POLLIN;
        return n;
}

static size_t plain_pending(const dl_redis_link *l)
{
        (void)l;
        return 0;
}

static void plain_close(dl_redis_link *l)
{
        close(l->fd);
}

static const struct dl_redis_link_type tcp_kind = {"TCP",      true,          false,      plain_send,
                                                   plain_recv, plain_pending, plain_close};
static const struct dl_redis_link_type unix_kind = {"unix socket", false,         true,       plain_send,
                                                    plain_recv,    plain_pending, plain_close};

/* ---- waiting ------------------------------------------------------------------ */

int dl_redis_link_poll(const dl_redis_link *l, short events, const int *fds, int n, short *revents,
                       const dl_time *deadline)
{
        struct pollfd p[8];
        DL_ASSERT(n >= 0 && n < 8);
        p[0] = (struct pollfd){.fd = l->fd, .events = events};
        for (int i = 0; i < n; i++)
                p[i + 1] = (struct pollfd){.fd = fds[i], .events = POLLIN};
        for (;;) {
                double ms = dl_remaining(deadline);
                struct timespec ts = {(time_t)(ms / 1e3),
                                      (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
                int r = dl_poll(p, (nfds_t)n + 1, &ts);
                if (r >= 0 || errno != EINTR) {
                        for (int i = 0; r > 0 && i < n; i++)
                                revents[i] = p[i + 1].revents;
                        return r;
                }
                if (dl_remaining(deadline) <= 0)
                        return 0;
        }
}

/* ---- connecting ----------------------------------------------------------------- */

/* Wait for the non-blocking connect() of fd by the deadline: 0, or -1
 * with errno (ETIMEDOUT at the deadline). */
static int connect_wait(int fd, const struct sockaddr *a, socklen_t alen, const dl_time *deadline)
{
        if (connect(fd, a, alen) == 0)
                return 0;
        if (errno != EINPROGRESS && errno != EAGAIN && errno != EINTR)
                return -1;
        dl_redis_link probe = {.fd = fd};
        int r = dl_redis_link_poll(&probe, POLLOUT, NULL, 0, NULL, deadline);
        if (r == 0)
                errno = ETIMEDOUT;
        if (r <= 0)
                return -1;
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
                return -1;
        if (soerr != 0) {
                errno = soerr;
                return -1;
        }
        return 0;
}

int dl_redis_tcp_connect(const dl_redis_url *u, const dl_time *deadline, char *detail, size_t size)
{
        char port[8];
        snprintf(port, sizeof port, "%d", u->port);
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
        int g = getaddrinfo(u->host, port, &hints, &res);
        if (g != 0) {
                snprintf(detail, size, "cannot resolve host '%.100s': %s", u->host,
                         g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
                return -1;
        }
        int fd = -1, saved = 0;
        for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next) {
                fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
                if (fd < 0) {
                        saved = errno;
                        continue;
                }
                if (connect_wait(fd, a->ai_addr, a->ai_addrlen, deadline) != 0) {
                        saved = errno;
                        close(fd);
                        fd = -1;
                        if (dl_deadline_passed(deadline))
                                break;
                }
        }
        freeaddrinfo(res);
        if (fd < 0) {
                snprintf(detail, size, "%s",
                         saved == ETIMEDOUT ? "no answer within the time left" : strerror(saved));
                return -1;
        }
        int on = 1, idle = KEEPIDLE, intvl = KEEPINTVL, cnt = KEEPCNT;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
        return fd;
}

static int unix_connect(const dl_redis_url *u, const dl_time *deadline, char *detail, size_t size)
{
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s", u->path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || connect_wait(fd, (struct sockaddr *)&a, sizeof a, deadline) != 0) {
                snprintf(detail, size, "%s",
                         errno == ETIMEDOUT ? "no answer within the time left" : strerror(errno));
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        return fd;
}

/* A connected plain socket blocks again (CONNECTING); TCP reads a slice at
 * a time. */
static void make_plain(dl_redis_link *l, bool tcp)
{
        int flags = fcntl(l->fd, F_GETFL);
        if (flags >= 0)
                fcntl(l->fd, F_SETFL, flags & ~O_NONBLOCK);
        if (tcp) {
                struct timeval slice = {0, DL_REDIS_READ_SLICE_MS * 1000};
                setsockopt(l->fd, SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof slice);
        }
        l->type = tcp ? &tcp_kind : &unix_kind;
}

int dl_redis_link_open(dl_redis_link *l, const dl_redis_url *u, const dl_time *deadline, const char *who,
                       dirlock_error *err)
{
        *l = (dl_redis_link){.fd = -1};
        char detail[200];
        l->fd = u->unix_socket ? unix_connect(u, deadline, detail, sizeof detail)
                               : dl_redis_tcp_connect(u, deadline, detail, sizeof detail);
        if (l->fd < 0)
                return dl_fail(err, DIRLOCK_ESERVER, 0, "Redis server %.300s: cannot connect: %s", who,
                               detail);
        if (!u->tls) {
                make_plain(l, !u->unix_socket);
                return DIRLOCK_OK;
        }
        int rc = dl_redis_tls_start(l, u, deadline, who, err);
        if (rc != DIRLOCK_OK) {
                close(l->fd);
                l->fd = -1;
        }
        return rc;
}

void dl_redis_link_close(dl_redis_link *l)
{
        if (l->type != NULL)
                l->type->close(l);
        l->type = NULL;
        l->fd = -1;
}
