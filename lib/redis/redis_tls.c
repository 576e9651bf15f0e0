/* redis_tls.c - the TLS kind of link of the Redis backend (rediss://,
 * redis_link.h), on OpenSSL, over a TCP connection redis_socket.c made.
 *
 * TRUST.  The server's certificate must chain to the CAs of the address's
 * cacert= file (or, without one, the system's: OpenSSL's default paths)
 * and name the host the address gives (a DNS name, checked by
 * SSL_set1_host, or an IP address); anything else ends the handshake and
 * the link is refused (DIRLOCK_EAUTH).  There is no way to turn the check
 * off.  With cert= and key= the link presents that client certificate to
 * a server that asks for one (tls-auth-clients); the key's file must not
 * be readable by every user (secret.c).  A context is made per
 * connection, so a renewed certificate or CA file is used by the next
 * connection; TLS 1.2 is the oldest version spoken.
 *
 * REFUSALS are told from breakage by OpenSSL's reason: the certificate
 * did not verify (our refusal), the server sent an alert (its refusal:
 * bad or missing client certificate, no common protocol), the server
 * offers only versions older than 1.2 (found on our side), or the server
 * answered something that is not TLS (a plain port) -- each is errno
 * EACCES with the words in l->detail, which the caller makes
 * DIRLOCK_EAUTH; a connection closed or reset is a broken link
 * (DIRLOCK_ESERVER, tried again by waits).  In TLS 1.3 the server judges
 * our certificate after our side of the handshake ended, so its refusal
 * comes as an alert at the first read: the same words then.
 *
 * SOCKETS.  The socket stays non-blocking; OpenSSL reads and writes it
 * through a BIO of our own that is the socket BIO with send(MSG_NOSIGNAL)
 * and recv() (a server gone away must not kill the caller with SIGPIPE;
 * OpenSSL's own socket BIO writes with write()).  Bytes OpenSSL has
 * decrypted but not handed out are `pending`: redis_conn.c reads them
 * before it polls.  Nothing is ever sent at close (no close_notify): a
 * forked child closes its copy of its parent's link, whose session the
 * parent goes on using, and the server needs none. */
#include "redis_link.h"
#include "secret.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the socket BIO ---------------------------------------------------------- */

static pthread_once_t bio_once = PTHREAD_ONCE_INIT;
static BIO_METHOD *bio_method;

static int bio_write(BIO *b, const char *buf, int len)
{
        BIO_clear_retry_flags(b);
        ssize_t n = send((int)BIO_get_fd(b, NULL), buf, (size_t)len, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                BIO_set_retry_write(b);
        return (int)n;
}

static int bio_read(BIO *b, char *buf, int len)
{
        BIO_clear_retry_flags(b);
        ssize_t n = recv((int)BIO_get_fd(b, NULL), buf, (size_t)len, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                BIO_set_retry_read(b);
        if (n == 0)
                BIO_set_flags(b, BIO_FLAGS_IN_EOF); /* as the socket BIO: an EOF OpenSSL may judge */
        return (int)n;
}

/* The socket BIO's control, creation and destruction, our read and write. */
static void bio_init(void)
{
        const BIO_METHOD *sock = BIO_s_socket();
        BIO_METHOD *m =
            BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "dirlock socket");
        if (m == NULL)
                return;
        if (!BIO_meth_set_write(m, bio_write) || !BIO_meth_set_read(m, bio_read) ||
            !BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(sock)) ||
            !BIO_meth_set_create(m, BIO_meth_get_create(sock)) ||
            !BIO_meth_set_destroy(m, BIO_meth_get_destroy(sock))) {
                BIO_meth_free(m);
                return;
        }
        bio_method = m;
}

/* ---- what went wrong ------------------------------------------------------------ */

/* OpenSSL's reason for the last failure of this thread, as text. */
static void last_reason(char *buf, size_t size)
{
        unsigned long e = ERR_peek_last_error();
        const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;
        snprintf(buf, size, "%s", r != NULL ? r : "unknown error");
}

/* The words for the server's alert `alert`, which ended the handshake
 * or the session; `cert` our client certificate's file ("": none, NULL:
 * not known any more). */
static void alert_words(int alert, const char *cert, char *detail, size_t size)
{
        /* OpenSSL 3.0 has no words for TLS 1.3's certificate_required. */
        const char *text =
            alert == SSL_AD_CERTIFICATE_REQUIRED ? "certificate required" : SSL_alert_desc_string_long(alert);
        if (alert == SSL_AD_CERTIFICATE_REQUIRED ||
            (cert != NULL && cert[0] == '\0' && alert == SSL_AD_HANDSHAKE_FAILURE))
                snprintf(detail, size,
                         "the server asks for a client certificate (cert=FILE&key=FILE; alert: %s)", text);
        else if (alert >= SSL_AD_BAD_CERTIFICATE && alert <= SSL_AD_ACCESS_DENIED)
                snprintf(detail, size, "the server refused our client certificate%s%.100s (alert: %s)",
                         cert != NULL && cert[0] ? " " : "", cert != NULL ? cert : "", text);
        else
                snprintf(detail, size, "the server ended the TLS session (alert: %s)", text);
}

/* Whether the last failure is a refusal (REFUSALS): the words into
 * `detail`; false for breakage.  u: the address, during the handshake;
 * NULL after it (only the server's alerts are refusals then). */
static bool refusal(SSL *ssl, const dl_redis_url *u, char *detail, size_t size)
{
        unsigned long e = ERR_peek_last_error();
        int reason = ERR_GET_LIB(e) == ERR_LIB_SSL ? ERR_GET_REASON(e) : 0;
        if (reason > SSL_AD_REASON_OFFSET) {
                alert_words(reason - SSL_AD_REASON_OFFSET, u != NULL ? u->cert : NULL, detail, size);
                return true;
        }
        if (u == NULL)
                return false;
        long v = SSL_get_verify_result(ssl);
        if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED) {
                if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
                        snprintf(detail, size, "the server's certificate does not name %.100s", u->host);
                else
                        snprintf(detail, size, "the server's certificate is not trusted (%s; CAs: %.100s)",
                                 X509_verify_cert_error_string(v), u->cacert[0] ? u->cacert : "the system's");
                return true;
        }
        if (reason == SSL_R_UNSUPPORTED_PROTOCOL) {
                snprintf(detail, size, "the server offers no TLS version this client takes (1.2 or later)");
                return true;
        }
        if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
            reason == SSL_R_UNKNOWN_PROTOCOL || reason == SSL_R_HTTP_REQUEST) {
                snprintf(detail, size,
                         "the server does not speak TLS on port %d (a plain port: redis:// there, or the "
                         "server's tls-port)",
                         u->port);
                return true;
        }
        return false;
}

/* ---- the kind --------------------------------------------------------------------- */

/* After SSL_read or SSL_write answered n <= 0: -1 with errno and want
 * set (redis_link.h), or 0 for a stream the server ended (recv). */
static ssize_t io_failed(dl_redis_link *l, int n, const dl_redis_url *u)
{
        SSL *ssl = l->tls;
        int saved = errno;
        switch (SSL_get_error(ssl, n)) {
        case SSL_ERROR_WANT_READ:
                l->want = POLLIN;
                errno = EAGAIN;
                return -1;
        case SSL_ERROR_WANT_WRITE:
                l->want = POLLOUT;
                errno = EAGAIN;
                return -1;
        case SSL_ERROR_ZERO_RETURN:
                return 0;
        case SSL_ERROR_SYSCALL:
                errno = saved != 0 ? saved : EPIPE;
                snprintf(l->detail, sizeof l->detail, "%s", strerror(errno));
                return saved == 0 && n == 0 ? 0 : -1;
        default:
                if (ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
                        return 0; /* closed without close_notify: killed, or it closed idle clients */
                if (refusal(ssl, u, l->detail, sizeof l->detail)) {
                        errno = EACCES;
                        return -1;
                }
                last_reason(l->detail, sizeof l->detail);
                errno = EPROTO;
                return -1;
        }
}

static ssize_t tls_send(dl_redis_link *l, const char *buf, size_t len)
{
        ERR_clear_error();
        errno = 0;
        int n = SSL_write(l->tls, buf, len > INT_MAX ? INT_MAX : (int)len);
        if (n > 0)
                return n;
        ssize_t r = io_failed(l, n, NULL);
        if (r < 0 && (errno == EPIPE || errno == ECONNRESET)) {
                /* A TLS 1.3 server that refuses our certificate sends its
                 * alert after the handshake and closes: the first send
                 * may meet the reset before the alert is read.  The alert
                 * is still in the socket's queue: read it, once, for the
                 * words of the refusal. */
                char detail[sizeof l->detail];
                int saved = errno;
                snprintf(detail, sizeof detail, "%s", l->detail);
                char byte;
                ERR_clear_error();
                errno = 0;
                int m = SSL_read(l->tls, &byte, 1);
                if (m <= 0 && io_failed(l, m, NULL) < 0 && errno == EACCES)
                        return -1;
                snprintf(l->detail, sizeof l->detail, "%s", detail);
                errno = saved;
        }
        return r;
}

static ssize_t tls_recv(dl_redis_link *l, char *buf, size_t len)
{
        ERR_clear_error();
        errno = 0;
        int n = SSL_read(l->tls, buf, len > INT_MAX ? INT_MAX : (int)len);
        return n > 0 ? n : io_failed(l, n, NULL);
}

static size_t tls_pending(const dl_redis_link *l)
{
        int n = SSL_pending(l->tls);
        return n > 0 ? (size_t)n : 0;
}

static void tls_close(dl_redis_link *l)
{
        SSL_free(l->tls); /* and its BIO, which leaves the socket open */
        l->tls = NULL;
        close(l->fd);
}

static const struct dl_redis_link_type tls_kind = {"TLS",    false,       false,    tls_send,
                                                   tls_recv, tls_pending, tls_close};

/* ---- the handshake ---------------------------------------------------------------- */

/* A key's pass phrase, asked for by OpenSSL when the key is encrypted
 * (dl_secret_check_key refuses one it can tell): none -- the library never
 * prompts on a terminal -- so the load fails. */
static int no_pass_phrase(char *buf, int size, int rwflag, void *data)
{
        (void)buf, (void)size, (void)rwflag, (void)data;
        return 0;
}

/* A client context for u, into *out: its CAs, its client certificate.
 * DIRLOCK_OK, DIRLOCK_EINVAL (a file that cannot be used),
 * DIRLOCK_ENOMEM. */
static int make_context(const dl_redis_url *u, const char *who, SSL_CTX **out, dirlock_error *err)
{
        *out = NULL;
        pthread_once(&bio_once, bio_init);
        ERR_clear_error();
        SSL_CTX *ctx = bio_method != NULL ? SSL_CTX_new(TLS_client_method()) : NULL;
        if (ctx == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory (TLS)");
        char why[160];
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
        SSL_CTX_set_default_passwd_cb(ctx, no_pass_phrase);
        if (u->cacert[0] != '\0' ? SSL_CTX_load_verify_locations(ctx, u->cacert, NULL) != 1
                                 : SSL_CTX_set_default_verify_paths(ctx) != 1) {
                last_reason(why, sizeof why);
                SSL_CTX_free(ctx);
                return dl_fail(err, DIRLOCK_EINVAL, 0,
                               "Redis server %.300s: TLS: cannot use the CA file '%.200s': %s", who,
                               u->cacert[0] ? u->cacert : "(the system's)", why);
        }
        int rc = u->cert[0] != '\0' ? dl_secret_check_key(u->key, who, err) : DIRLOCK_OK;
        if (rc != DIRLOCK_OK || u->cert[0] == '\0') {
                if (rc == DIRLOCK_OK)
                        *out = ctx;
                else
                        SSL_CTX_free(ctx);
                return rc;
        }
        const char *bad = SSL_CTX_use_certificate_chain_file(ctx, u->cert) != 1             ? u->cert
                          : SSL_CTX_use_PrivateKey_file(ctx, u->key, SSL_FILETYPE_PEM) != 1 ? u->key
                          : SSL_CTX_check_private_key(ctx) != 1                             ? u->key
                                                                                            : NULL;
        if (bad != NULL) {
                last_reason(why, sizeof why);
                SSL_CTX_free(ctx);
                return dl_fail(
                    err, DIRLOCK_EINVAL, 0,
                    "Redis server %.300s: TLS: cannot use the client certificate '%.200s' with its "
                    "key: '%.200s': %s",
                    who, u->cert, bad, why);
        }
        *out = ctx;
        return DIRLOCK_OK;
}

/* An SSL on fd for u's host: whose certificate must name it (TRUST). */
static SSL *make_ssl(SSL_CTX *ctx, int fd, const dl_redis_url *u)
{
        SSL *ssl = SSL_new(ctx);
        BIO *bio = ssl != NULL ? BIO_new(bio_method) : NULL;
        if (bio == NULL) {
                SSL_free(ssl);
                return NULL;
        }
        BIO_set_fd(bio, fd, BIO_NOCLOSE);
        SSL_set_bio(ssl, bio, bio);
        unsigned char addr[16];
        bool ip = inet_pton(AF_INET, u->host, addr) == 1 || inet_pton(AF_INET6, u->host, addr) == 1;
        int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), u->host)
                    : SSL_set_tlsext_host_name(ssl, u->host) == 1 && SSL_set1_host(ssl, u->host) == 1;
        if (!ok) {
                SSL_free(ssl);
                return NULL;
        }
        return ssl;
}

/* SSL_connect until it ends or the deadline: 1 done, 0 at the deadline,
 * -1 failed (io_failed's errno and detail in l). */
static int handshake(dl_redis_link *l, const dl_redis_url *u, const dl_time *deadline)
{
        for (;;) {
                ERR_clear_error();
                errno = 0;
                int r = SSL_connect(l->tls);
                if (r == 1)
                        return 1;
                if (io_failed(l, r, u) == 0) {
                        snprintf(l->detail, sizeof l->detail,
                                 "the server closed the connection during the TLS handshake");
                        errno = ECONNRESET;
                        return -1;
                }
                if (errno != EAGAIN)
                        return -1;
                int p = dl_redis_link_poll(l, l->want, NULL, 0, NULL, deadline);
                if (p == 0)
                        return 0;
                if (p < 0) {
                        snprintf(l->detail, sizeof l->detail, "%s", strerror(errno));
                        return -1;
                }
        }
}

int dl_redis_tls_start(dl_redis_link *l, const dl_redis_url *u, const dl_time *deadline, const char *who,
                       dirlock_error *err)
{
        SSL_CTX *ctx;
        int rc = make_context(u, who, &ctx, err);
        if (rc != DIRLOCK_OK)
                return rc;
        l->tls = make_ssl(ctx, l->fd, u);
        SSL_CTX_free(ctx); /* the SSL holds its own reference */
        if (l->tls == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory (TLS)");
        int r = handshake(l, u, deadline);
        if (r == 1) {
                l->type = &tls_kind;
                return DIRLOCK_OK;
        }
        int code = r < 0 && errno == EACCES ? DIRLOCK_EAUTH : DIRLOCK_ESERVER;
        rc = dl_fail(err, code, 0, "Redis server %.300s: TLS: %s", who,
                     r == 0 ? "no answer to the TLS handshake within the time left" : l->detail);
        SSL_free(l->tls);
        l->tls = NULL;
        return rc;
}

bool dl_redis_tls_probe(const dl_redis_url *u, const dl_time *deadline)
{
        char detail[200];
        pthread_once(&bio_once, bio_init);
        SSL_CTX *ctx = bio_method != NULL ? SSL_CTX_new(TLS_client_method()) : NULL;
        if (ctx == NULL)
                return false;
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL); /* it learns, trusts and sends nothing */
        int fd = dl_redis_tcp_connect(u, deadline, detail, sizeof detail);
        dl_redis_link l = {.fd = fd};
        l.tls = fd >= 0 ? make_ssl(ctx, fd, u) : NULL;
        SSL_CTX_free(ctx);
        bool tls = false;
        if (l.tls != NULL) {
                int r = handshake(&l, u, deadline);
                /* Done, or ended by the server's alert (it wants a
                 * certificate): a TLS server either way. */
                tls = r == 1 || (r < 0 && errno == EACCES &&
                                 ERR_GET_REASON(ERR_peek_last_error()) > SSL_AD_REASON_OFFSET);
                SSL_free(l.tls);
        }
        if (fd >= 0)
                close(fd);
        return tls;
}
