/* redis_link.h - the byte stream under a connection of the Redis backend:
 * plain TCP, a unix socket, or TLS over TCP (rediss://), behind one small
 * table of operations, as Redis' own connection.h has it.  A link moves
 * bytes and nothing else: redis_conn.c formats the commands and parses
 * the replies (hiredis' redisFormatCommandArgv and redisReader) the same
 * way over every kind.  Plain links are redis_link.c's, TLS is
 * redis_tls.c's (OpenSSL), both on the sockets of redis_socket.c. */
#ifndef DIRLOCK_REDIS_LINK_H
#define DIRLOCK_REDIS_LINK_H

#include "core.h"
#include "redis_url.h"

#include <sys/socket.h>

#include <sys/types.h>

typedef struct dl_redis_link dl_redis_link;

/* SO_RCVTIMEO of a plain TCP link: a reply is read a slice at a time by
 * a blocking recv() (redis_conn.c, I/O). */
#define DL_REDIS_READ_SLICE_MS 100

/* The operations of one kind of link.  send and recv never block on a
 * socket that is not ready, except recv on a kind with blocking_reads;
 * they return -1 with errno:
 *   EAGAIN   wait until the socket polls l->want (POLLIN or POLLOUT), then
 *            call again;
 *   EACCES   the peer refused us or we refused it (TLS: a certificate, an
 *            alert): l->detail says which; the link is useless;
 *   other    the link broke (EPIPE, ECONNRESET, EPROTO); l->detail may say
 *            more. */
struct dl_redis_link_type {
        const char *name; /* "TCP", "unix socket", "TLS", for messages */
        /* recv() may block in the socket for up to its SO_RCVTIMEO, which
         * saves a poll() per reply (plain TCP: redis_conn.c, I/O). */
        bool blocking_reads;
        /* Polling the socket before sending is useless: a send to a peer
         * that closed fails before any byte goes out (a unix socket). */
        bool send_fails_closed;
        ssize_t (*send)(dl_redis_link *l, const char *buf, size_t len);
        /* 0: the peer closed the stream. */
        ssize_t (*recv)(dl_redis_link *l, char *buf, size_t len);
        /* Bytes received and ready to be read that a poll() on the socket
         * does not show (TLS: decrypted, in the library's buffer). */
        size_t (*pending)(const dl_redis_link *l);
        /* Free everything and close the socket, sending nothing (no TLS
         * close_notify): fit for a forked child's copy of its parent's
         * link, whose session the parent goes on using. */
        void (*close)(dl_redis_link *l);
};

struct dl_redis_link {
        const struct dl_redis_link_type *type; /* NULL: closed */
        int fd;
        void *tls;        /* the TLS kind's SSL */
        short want;       /* after EAGAIN: the poll() event to wait for */
        char detail[200]; /* after a failure: what the kind says of it */
};

/* Open a link to u's server by `deadline`: connect (TCP: to each address
 * the host name resolves to, in turn), close-on-exec, and for rediss://
 * the TLS handshake, the server's certificate verified against u's CAs
 * and host.  `who` names the server in messages.  DIRLOCK_OK;
 * DIRLOCK_ESERVER (cannot connect, no answer in time, the connection
 * broke); DIRLOCK_EAUTH (TLS: the server's certificate is not trusted or
 * does not name the host, the server refused our certificate or asks for
 * one, it does not speak TLS); DIRLOCK_EINVAL (a file the address names
 * cannot be used); DIRLOCK_ENOMEM.  On failure nothing is left open. */
int dl_redis_link_open(dl_redis_link *l, const dl_redis_url *u, const dl_time *deadline, const char *who,
                       dirlock_error *err);

/* Close l (the kind's close); a closed link stays closed. */
void dl_redis_link_close(dl_redis_link *l);

/* Wait until l's socket polls `events`, or one of fds[0..n-1] (< 0:
 * ignored) polls readable, or the deadline: poll()'s answer (0 at the
 * deadline, -1 with errno), fds' revents in `revents` (n entries). */
int dl_redis_link_poll(const dl_redis_link *l, short events, const int *fds, int n, short *revents,
                       const dl_time *deadline);

/* ---- for redis_tls.c ------------------------------------------------------ */

/* Make l, connected on l->fd to u's server, a TLS link: the handshake by
 * `deadline`, with the errors of dl_redis_link_open. */
int dl_redis_tls_start(dl_redis_link *l, const dl_redis_url *u, const dl_time *deadline, const char *who,
                       dirlock_error *err);

/* Whether the server at u's host and port speaks TLS: a handshake on a
 * new connection, by `deadline`, that trusts nothing and sends nothing
 * but the handshake; asked when a plain connection was closed before its
 * first answer (a TLS-only port closes a plain one). */
bool dl_redis_tls_probe(const dl_redis_url *u, const dl_time *deadline);

/* ---- the sockets (redis_socket.c) ---- */

/* A TCP connection to u's server by the deadline (non-blocking,
 * close-on-exec), or -1 with `detail` set. */
int dl_redis_tcp_connect(const dl_redis_url *u, const dl_time *deadline, char *detail, size_t size);

/* connect() of the non-blocking socket fd to a, waited for by the
 * deadline: 0, or -1 with errno (ETIMEDOUT at the deadline). */
int dl_redis_connect_wait(int fd, const struct sockaddr *a, socklen_t alen, const dl_time *deadline);

#endif
