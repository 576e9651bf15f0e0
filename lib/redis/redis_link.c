/* redis_link.c - the plain links of the Redis backend (redis_link.h): TCP
 * and unix sockets, and how every link is opened: plain, or TLS
 * (redis_tls.c), on a socket redis_socket.c connected.
 *
 * A connected plain socket is made blocking again, with SO_RCVTIMEO
 * (DL_REDIS_READ_SLICE_MS) on TCP: a reply is then read by a blocking
 * recv() a slice at a time, which saves a poll() per round trip
 * (redis_conn.c, I/O); sends never block (MSG_DONTWAIT) and never raise
 * SIGPIPE (MSG_NOSIGNAL).  A TLS socket stays non-blocking: OpenSSL reads
 * records that may come in pieces, and each wait is a poll(). */
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

static int unix_connect(const dl_redis_url *u, const dl_time *deadline, char *detail, size_t size)
{
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s", u->path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || dl_redis_connect_wait(fd, (struct sockaddr *)&a, sizeof a, deadline) != 0) {
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
