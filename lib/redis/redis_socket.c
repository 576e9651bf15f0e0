/* redis_socket.c - the sockets under every link of the Redis backend
 * (redis_link.h): connecting to a TCP address, and the one wait on a
 * link's socket.  Below both kinds of link: the plain ones
 * (redis_link.c) and TLS (redis_tls.c).
 *
 * CONNECTING.  Every socket is made close-on-exec and non-blocking, and
 * connect() is waited for with poll() until the caller's deadline (a
 * name's addresses in turn: getaddrinfo()'s order).  TCP links keep
 * Nagle off, as every request is one write, and keep-alive probes on
 * (a server whose host vanished is noticed by an idle kept connection). */
#include "redis_link.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* TCP keep-alive of a link: first probe after KEEPIDLE s idle, then every
 * KEEPINTVL s, KEEPCNT unanswered ones break it (hiredis' own). */
#define KEEPIDLE  15
#define KEEPINTVL 5
#define KEEPCNT   3

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

int dl_redis_connect_wait(int fd, const struct sockaddr *a, socklen_t alen, const dl_time *deadline)
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
                if (dl_redis_connect_wait(fd, a->ai_addr, a->ai_addrlen, deadline) != 0) {
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
