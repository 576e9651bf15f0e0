/* etcd_http.c - the etcd backend's calls to the cluster's v3 JSON gateway
 * (the gRPC API as HTTP POSTs of JSON, on each member's client port):
 * libcurl does the HTTP (HTTPS for etcds://), json-c parses the answers;
 * what a request says (its JSON, the base64 of its byte fields) is
 * etcd_kv.c's, its TLS options and what a refusal means etcd_access.c's,
 * the log-in token it carries etcd_auth.c's (which calls this file).
 *
 * CONNECTIONS.  A connection is a libcurl multi handle with one easy
 * handle (the multi handle keeps the TCP connections to the members it
 * has talked to, reused from request to request), kept in the library's
 * per-thread connection cache (conn_cache.c, whose contract holds here)
 * under its cluster's address (dl_etcd_url_cluster: every prefix on one
 * cluster shares them).  A request or a watch checks one out for its
 * length and gives it back after: several pending acquires
 * (dirlock_acquire_start) may wait at once in one thread, each on its
 * own, and none may read another's answer.  A transfer that did not end
 * (a watch, a request given up on) is taken off its multi handle, which
 * closes its TCP connection: a connection given back never holds an
 * answer nobody will read.  Up to CONNS_PER_THREAD idle ones are kept
 * per thread and closed when it exits; a forked child closes its copies
 * of its parent's and makes its own.  That close must send nothing (the
 * parent goes on using the other copy of each socket): plain HTTP/1.1
 * sends nothing, but libcurl ends a TLS session with a close_notify, so
 * the child first points each socket's descriptor at /dev/null, and
 * what libcurl sends goes nowhere -- it opens and closes every socket
 * through our callbacks, which keep the list.
 *
 * Each thread also notes, for each of up to NOTES clusters, which member
 * answered last: calls go there first.  The note is not a connection's:
 * what one request learnt (the leader moved, a member died) serves every
 * connection of the thread to that cluster, idle or checked out by
 * another acquire, so it is kept here rather than in the cache, which
 * holds only idle connections.  Being a hint, a note is kept under a
 * hash of the cluster's address (a collision costs one member asked in
 * vain), and a forked child may keep its parent's.
 *
 * Every descriptor is close-on-exec: connections are opened so
 * (CURLOPT_OPENSOCKETFUNCTION), and the socket pair libcurl makes inside
 * curl_multi_init (to wake curl_multi_poll, never used here) is marked
 * so right after.
 *
 * MEMBERS IN TURN.  A call goes to the member that answered last; a
 * member that cannot be reached, does not answer in its share of the
 * time, or says it cannot serve now (no leader, leader changed, request
 * timed out, too many requests: gRPC codes Unavailable, DeadlineExceeded,
 * ResourceExhausted, ...) is passed over for the next one, and the next
 * call starts there; a round in which every member said no (an election
 * under way) is followed by a short pause and another round, until the
 * call's deadline.  A leader change or a dead member is so only latency
 * to the caller.  No member is given more than ATTEMPT_MS of a request,
 * so one silent member cannot use the whole call.
 *
 * WAITING.  drive() is the only place the backend waits on the network:
 * libcurl tells which sockets it wants watched and when it wants to be
 * called back (its socket and timer callbacks), and drive() waits for
 * those, the caller's cancel descriptor and pidfd, and the deadline, with
 * dl_poll -- so that a pending acquire suspends there instead of
 * blocking its loop.  A request of a waiting acquire (dl_etcd_url.wait)
 * watches its cancel descriptor, so a cluster that holds it without an
 * answer (no majority) does not hold up a canceled wait, and tells the
 * caller as soon as the silence has lasted DIRLOCK_SERVER_NOTICE_MS,
 * though a call goes on for up to DL_ETCD_IO_MS. */
#include "etcd.h"
#include "secret.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NOTES 4
/* The longest one member is given for one request when the call allows
 * more: a member that says nothing for that long (stopped, cut off) is
 * passed over. */
#define ATTEMPT_MS 1000.0
/* After a round in which every member said it cannot serve now. */
#define ROUND_PAUSE_MS   25.0
#define CONNS_PER_THREAD 8  /* idle ones kept; more in use at once are made and closed */
#define SOCKS            4  /* sockets one transfer may ask to be watched (a connection, a resolver) */
#define OPEN_SOCKS       16 /* sockets of a connection's handle kept track of (CONNECTIONS) */

/* A connection: a multi handle with its one easy handle, what its
 * requests send, and what libcurl asked drive() to watch for it (its
 * socket and timer callbacks). */
struct conn {
        CURLM *multi;
        CURL *easy;
        struct curl_slist *json_headers, *watch_headers;
        struct {
                curl_socket_t fd;
                int what; /* CURL_POLL_IN, _OUT, _INOUT */
        } socks[SOCKS];
        int nsocks;
        long timer_ms; /* when libcurl wants to be called back, -1: not */
        /* With a log-in (etcd_auth.c): the headers above with the token's
         * "Authorization:" line, made for the token they hold. */
        struct curl_slist *auth_json, *auth_watch;
        char token[DL_ETCD_TOKEN_MAX];
        char errbuf[CURL_ERROR_SIZE];   /* libcurl's words for the last failure */
        curl_socket_t open[OPEN_SOCKS]; /* the sockets libcurl has open for it */
        int nopen;
        char key[DL_ETCD_CLUSTER_MAX]; /* its cluster's address, its key in the cache */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init(void)
{
        curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* The cache's close: libcurl's cleanup closes the sockets; in a forked
 * child, after each descriptor was pointed at /dev/null, so that nothing
 * goes out (CONNECTIONS). */
static void conn_close(void *p, bool forked)
{
        struct conn *c = p;
        int null = forked && c->nopen > 0 ? open("/dev/null", O_RDWR | O_CLOEXEC) : -1;
        for (int k = 0; null >= 0 && k < c->nopen; k++)
                dup2(null, c->open[k]);
        if (null >= 0)
                close(null);
        if (c->multi != NULL && c->easy != NULL)
                curl_multi_remove_handle(c->multi, c->easy);
        if (c->easy != NULL)
                curl_easy_cleanup(c->easy);
        if (c->multi != NULL)
                curl_multi_cleanup(c->multi);
        curl_slist_free_all(c->json_headers);
        curl_slist_free_all(c->watch_headers);
        curl_slist_free_all(c->auth_json);
        curl_slist_free_all(c->auth_watch);
        dl_secret_wipe(c->token, sizeof c->token);
        free(c);
}

static const dl_conn_cache conns = {CONNS_PER_THREAD, conn_close};

/* libcurl's socket opening and closing: close-on-exec, and kept track of
 * (CONNECTIONS). */
static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
        (void)purpose;
        struct conn *c = arg;
        curl_socket_t fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
        if (fd >= 0 && c->nopen < OPEN_SOCKS)
                c->open[c->nopen++] = fd;
        return fd;
}

static int close_socket(void *arg, curl_socket_t fd)
{
        struct conn *c = arg;
        for (int k = 0; k < c->nopen; k++)
                if (c->open[k] == fd) {
                        c->open[k] = c->open[--c->nopen];
                        break;
                }
        return close(fd);
}

/* The descriptors open now, as a list ended by -1, or NULL. */
static int *open_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        if (d == NULL)
                return NULL;
        size_t n = 0, cap = 64;
        int *fds = malloc(cap * sizeof *fds);
        struct dirent *de;
        while (fds != NULL && (de = readdir(d)) != NULL) {
                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                if (n + 1 == cap) {
                        int *more = realloc(fds, (cap *= 2) * sizeof *fds);
                        if (more == NULL) {
                                free(fds);
                                fds = NULL;
                                break;
                        }
                        fds = more;
                }
                fds[n++] = atoi(de->d_name);
        }
        closedir(d);
        if (fds != NULL)
                fds[n] = -1;
        return fds;
}

/* Mark close-on-exec the descriptors that are open now and were not in
 * `before` (what curl_multi_init opened). */
static void cloexec_since(const int *before)
{
        int *now = open_fds();
        if (now == NULL || before == NULL) {
                free(now);
                return;
        }
        for (size_t i = 0; now[i] >= 0; i++) {
                bool old = false;
                for (size_t j = 0; before[j] >= 0 && !old; j++)
                        old = before[j] == now[i];
                int flags;
                if (!old && (flags = fcntl(now[i], F_GETFD)) >= 0 && !(flags & FD_CLOEXEC))
                        fcntl(now[i], F_SETFD, flags | FD_CLOEXEC);
        }
        free(now);
}

/* libcurl's socket callback: which sockets drive() watches, for what. */
static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
        (void)e;
        (void)socketp;
        struct conn *c = userp;
        int k = 0;
        while (k < c->nsocks && c->socks[k].fd != fd)
                k++;
        if (what == CURL_POLL_REMOVE) {
                if (k < c->nsocks)
                        c->socks[k] = c->socks[--c->nsocks];
                return 0;
        }
        if (k == c->nsocks) {
                if (c->nsocks == SOCKS)
                        return -1;
                c->nsocks++;
        }
        c->socks[k].fd = fd;
        c->socks[k].what = what;
        return 0;
}

/* libcurl's timer callback: when it wants to be called back. */
static int on_timer(CURLM *m, long timeout_ms, void *userp)
{
        (void)m;
        ((struct conn *)userp)->timer_ms = timeout_ms;
        return 0;
}

/* A new connection to cluster `key`, or NULL (out of memory). */
static struct conn *conn_new(const char *key)
{
        pthread_once(&curl_once, curl_init);
        struct conn *c = calloc(1, sizeof *c);
        if (c == NULL)
                return NULL;
        snprintf(c->key, sizeof c->key, "%s", key);
        int *before = open_fds();
        c->multi = curl_multi_init();
        cloexec_since(before);
        free(before);
        c->easy = curl_easy_init();
        c->timer_ms = -1;
        c->json_headers = curl_slist_append(NULL, "Content-Type: application/json");
        c->watch_headers = curl_slist_append(NULL, "Content-Type: application/json");
        /* A watch on a member that has lost its leader is ended by the
         * member ("etcdserver: no leader") instead of staying silent. */
        struct curl_slist *more =
            c->watch_headers ? curl_slist_append(c->watch_headers, "Grpc-Metadata-hasleader: true") : NULL;
        if (more != NULL)
                c->watch_headers = more;
        if (c->multi == NULL || c->easy == NULL || c->json_headers == NULL || more == NULL) {
                conn_close(c, false);
                return NULL;
        }
        curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
        curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
        curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
        curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
        return c;
}

/* Check out a connection to u's cluster, whose key is `key`: an idle one
 * of this thread, else a new one -- after a look at the client key's file
 * (it may not be readable by every user: secret.c).  DIRLOCK_OK,
 * DIRLOCK_EINVAL, DIRLOCK_ENOMEM. */
static int conn_get(const dl_etcd_url *u, const char *key, struct conn **out, dirlock_error *err)
{
        *out = dl_conn_get(&conns, key);
        if (*out != NULL)
                return DIRLOCK_OK;
        if (u->key[0] != '\0') {
                char who[DL_ETCD_HOST_MAX + 32];
                snprintf(who, sizeof who, "etcd member %s:%d", u->ep[0].host, u->ep[0].port);
                int rc = dl_secret_check_key(u->key, who, err);
                if (rc != DIRLOCK_OK)
                        return rc;
        }
        *out = conn_new(key);
        return *out != NULL ? DIRLOCK_OK : dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory (libcurl)");
}

/* A copy of `base` with `line` at its end; NULL: out of memory. */
static struct curl_slist *with_line(const struct curl_slist *base, const char *line)
{
        struct curl_slist *l = NULL;
        for (const struct curl_slist *h = base;; h = h->next) {
                struct curl_slist *more = curl_slist_append(l, h != NULL ? h->data : line);
                if (more == NULL) {
                        curl_slist_free_all(l);
                        return NULL;
                }
                l = more;
                if (h == NULL)
                        return l;
        }
}

/* The headers of a request on c: JSON, or a watch's; with `token` (not
 * empty) its "Authorization:" line.  NULL: out of memory. */
static struct curl_slist *headers_for(struct conn *c, bool watch, const char *token)
{
        if (token == NULL || token[0] == '\0')
                return watch ? c->watch_headers : c->json_headers;
        if (c->auth_json == NULL || c->auth_watch == NULL || strcmp(c->token, token) != 0) {
                curl_slist_free_all(c->auth_json);
                curl_slist_free_all(c->auth_watch);
                char line[DL_ETCD_TOKEN_MAX + 16];
                snprintf(line, sizeof line, "Authorization: %s", token);
                c->auth_json = with_line(c->json_headers, line);
                c->auth_watch = with_line(c->watch_headers, line);
                dl_secret_wipe(line, sizeof line);
                snprintf(c->token, sizeof c->token, "%s", token);
        }
        return watch ? c->auth_watch : c->auth_json;
}

static void conn_put(struct conn *c)
{
        dl_conn_put(&conns, c, c->key);
}

/* The thread's notes: which member of a cluster answered last. */
static _Thread_local struct note {
        unsigned long long cluster; /* the hash of its address, 0: unused */
        size_t current;
        unsigned long long used;
} notes[NOTES];
static _Thread_local unsigned long long notes_clock;

/* The note of cluster `key`: which member to ask first. */
static size_t *current_member(const char *key)
{
        unsigned long long h = 0xcbf29ce484222325ULL; /* FNV-1a */
        for (const char *c = key; *c; c++)
                h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
        h |= 1; /* never 0, the unused note */
        size_t lru = 0;
        for (size_t i = 0; i < NOTES; i++) {
                if (notes[i].cluster == h) {
                        notes[i].used = ++notes_clock;
                        return &notes[i].current;
                }
                if (notes[i].used < notes[lru].used)
                        lru = i;
        }
        notes[lru] = (struct note){h, 0, ++notes_clock};
        return &notes[lru].current;
}

dl_time dl_etcd_io_deadline(const dl_time *call)
{
        return dl_request_deadline(call, DL_ETCD_GRACE_MS, DL_ETCD_IO_MS);
}

long long dl_etcd_revision(const json_object *body)
{
        json_object *h, *v;
        if (body == NULL || !json_object_object_get_ex(body, "header", &h) ||
            !json_object_object_get_ex(h, "revision", &v))
                return 0;
        /* an int64 field: a decimal string (a number from older gateways) */
        if (json_object_is_type(v, json_type_string))
                return strtoll(json_object_get_string(v), NULL, 10);
        return json_object_get_int64(v);
}

/* ---- the transfer ------------------------------------------------------------ */

/* Where a transfer's answer goes.  A watch's stream is looked at line by
 * line as it comes: the first line with events, or one that ends the
 * watch, is what the waiter waits for. */
struct sink {
        char *buf;
        size_t len, cap;
        bool watch;
        size_t scanned;        /* watch: bytes of complete lines looked at */
        bool created;          /* watch: the member has made it */
        long long created_rev; /* ... at this revision */
        bool stop_on_created;  /* watch: drive() returns once it is made */
        bool changed;          /* watch: an event, or the server ended the watch */
        bool failed;           /* watch: an error line, or a refusal (fail_code) */
        int fail_code;         /* watch: the refusal's gRPC code (3, 7, 16), 0: none */
        char fail_text[160];   /* ... and its words */
        bool oom;
};

static void watch_line(struct sink *s, const char *line, size_t len)
{
        json_tokener *tok = json_tokener_new();
        json_object *o = tok ? json_tokener_parse_ex(tok, line, (int)len) : NULL;
        json_tokener_free(tok);
        if (o == NULL)
                return;
        json_object *res, *ev, *c, *why;
        if (json_object_object_get_ex(o, "error", &res)) {
                s->failed = true;
                if (json_object_object_get_ex(res, "grpc_code", &c))
                        s->fail_code = json_object_get_int(c);
                if (json_object_object_get_ex(res, "message", &why))
                        snprintf(s->fail_text, sizeof s->fail_text, "%s", json_object_get_string(why));
        } else if (json_object_object_get_ex(o, "result", &res)) {
                /* A watch the member refused (the user's permissions, its
                 * log-in) is made and canceled at once, saying why. */
                const char *reason =
                    json_object_object_get_ex(res, "cancel_reason", &why) ? json_object_get_string(why) : "";
                int code = strstr(reason, "code = PermissionDenied")  ? 7
                           : strstr(reason, "code = Unauthenticated") ? 16
                           : strstr(reason, "code = InvalidArgument") ? 3
                                                                      : 0;
                if (code != 0) {
                        s->failed = true;
                        s->fail_code = code;
                        const char *desc = strstr(reason, "desc = ");
                        snprintf(s->fail_text, sizeof s->fail_text, "%s", desc ? desc + 7 : reason);
                        json_object_put(o);
                        return;
                }
                if (json_object_object_get_ex(res, "created", &c) && json_object_get_boolean(c)) {
                        s->created = true;
                        s->created_rev = dl_etcd_revision(res);
                }
                if (json_object_object_get_ex(res, "events", &ev) && json_object_array_length(ev) > 0)
                        s->changed = true;
                if (json_object_object_get_ex(res, "canceled", &c) && json_object_get_boolean(c))
                        s->changed = true; /* compacted, or the member lost its leader: look again */
        }
        json_object_put(o);
}

static size_t sink_write(char *data, size_t size, size_t count, void *arg)
{
        struct sink *s = arg;
        size_t n = size * count;
        if (s->len + n + 1 > s->cap) {
                size_t cap = s->cap ? s->cap : 1024;
                while (cap < s->len + n + 1)
                        cap *= 2;
                char *b = realloc(s->buf, cap);
                if (b == NULL) {
                        s->oom = true;
                        return 0;
                }
                s->buf = b;
                s->cap = cap;
        }
        memcpy(s->buf + s->len, data, n);
        s->len += n;
        s->buf[s->len] = '\0';
        while (s->watch && !s->changed && !s->failed) {
                char *nl = memchr(s->buf + s->scanned, '\n', s->len - s->scanned);
                if (nl == NULL)
                        break;
                watch_line(s, s->buf + s->scanned, (size_t)(nl - (s->buf + s->scanned)));
                s->scanned = (size_t)(nl - s->buf) + 1;
        }
        return n;
}

/* How a drive ended. */
enum driven { DONE, STOPPED, TIMED_OUT, FD_FIRED };

/* Run the transfer of c (its easy handle, on its multi handle) until it
 * completes (DONE, *result its outcome), its watch sink has what it waits
 * for (STOPPED), `until` (TIMED_OUT) or one of fds[0..nfds-1] polls
 * readable (FD_FIRED, *which its index).  The only place the backend
 * waits on the network, through dl_poll. */
static enum driven drive(struct conn *c, struct sink *s, const dl_time *until, const int *fds, int nfds,
                         int *which, CURLcode *result)
{
        *which = -1;
        *result = CURLE_OK;
        for (;;) {
                CURLMsg *m;
                int left, running;
                while ((m = curl_multi_info_read(c->multi, &left)) != NULL)
                        if (m->msg == CURLMSG_DONE && m->easy_handle == c->easy) {
                                *result = m->data.result;
                                return DONE;
                        }
                if (s->changed || s->failed || s->oom || (s->stop_on_created && s->created))
                        return STOPPED;
                double ms = dl_remaining(until);
                if (ms <= 0)
                        return TIMED_OUT;
                if (c->timer_ms >= 0 && (double)c->timer_ms < ms)
                        ms = (double)c->timer_ms;
                struct pollfd p[SOCKS + 2];
                int n = 0, extra = 0;
                for (int k = 0; k < c->nsocks; k++)
                        p[n++] = (struct pollfd){
                            .fd = c->socks[k].fd,
                            .events = (short)((c->socks[k].what & CURL_POLL_IN ? POLLIN : 0) |
                                              (c->socks[k].what & CURL_POLL_OUT ? POLLOUT : 0))};
                int socks = n;
                for (int k = 0; k < nfds && extra < 2; k++)
                        if (fds[k] >= 0) {
                                p[n++] = (struct pollfd){.fd = fds[k], .events = POLLIN};
                                extra++;
                        }
                struct timespec ts = {(time_t)(ms / 1e3),
                                      (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
                int r = dl_poll(p, (unsigned long)n, &ts);
                if (r < 0 && errno != EINTR)
                        return TIMED_OUT;
                for (int k = socks, f = 0; r > 0 && k < n; k++, f++) {
                        while (fds[f] < 0)
                                f++;
                        if (p[k].revents != 0) {
                                *which = f;
                                return FD_FIRED;
                        }
                }
                bool acted = false;
                for (int k = 0; r > 0 && k < socks; k++) {
                        if (p[k].revents == 0)
                                continue;
                        int ev = (p[k].revents & POLLIN ? CURL_CSELECT_IN : 0) |
                                 (p[k].revents & POLLOUT ? CURL_CSELECT_OUT : 0) |
                                 (p[k].revents & (POLLERR | POLLHUP | POLLNVAL) ? CURL_CSELECT_ERR : 0);
                        curl_multi_socket_action(c->multi, p[k].fd, ev, &running);
                        acted = true;
                }
                if (!acted)
                        curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
}

/* Where a request goes: member i of u, the address with the path (url)
 * and the member without the scheme, for messages (member). */
struct target {
        char url[DL_ETCD_HOST_MAX + 64];
        const char *member;
};

/* The easy handle of c, set for a POST of `body` to path `path` of member
 * i of u with `headers` and u's TLS options, the answer going to s. */
static CURL *easy_setup(struct conn *c, const dl_etcd_url *u, size_t i, const char *path, const char *body,
                        struct curl_slist *headers, struct sink *s, struct target *t)
{
        dl_etcd_url_base(u, i, t->url, sizeof t->url);
        size_t bl = strlen(t->url);
        snprintf(t->url + bl, sizeof t->url - bl, "%s", path);
        t->member = strstr(t->url, "://") + 3;
        CURL *e = c->easy;
        curl_easy_reset(e);
        curl_easy_setopt(e, CURLOPT_URL, t->url);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1); /* what CONNECTIONS says */
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink_write);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, c);
        curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, close_socket);
        curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, c);
        curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
        dl_etcd_tls_options(e, u, c->errbuf);
        return e;
}

/* A transfer from start to end: on c's multi handle, driven, taken off
 * (one left unfinished closes its connection). */
static enum driven transfer(struct conn *c, struct sink *s, const dl_time *until, const int *fds, int nfds,
                            int *which, CURLcode *result)
{
        c->timer_ms = -1;
        if (curl_multi_add_handle(c->multi, c->easy) != CURLM_OK) {
                *result = CURLE_FAILED_INIT;
                return DONE;
        }
        enum driven how = drive(c, s, until, fds, nfds, which, result);
        curl_multi_remove_handle(c->multi, c->easy);
        return how;
}

/* ---- requests ----------------------------------------------------------------- */

void dl_etcd_reply_free(dl_etcd_reply *r)
{
        if (r->body != NULL)
                json_object_put(r->body);
        r->body = NULL;
}

/* Whether member i of u speaks TLS, asked when a plain request got no
 * answer at all (a TLS-only member closes a plain connection without
 * one): a TLS handshake on c's handle, by `until`, that trusts nothing
 * and sends nothing but the handshake. */
static bool speaks_tls(struct conn *c, const dl_etcd_url *u, size_t i, const dl_time *until)
{
        dl_etcd_url tls = *u;
        tls.tls = true;
        struct sink s = {0};
        struct target t;
        CURL *e = easy_setup(c, &tls, i, "/", NULL, c->json_headers, &s, &t);
        curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L); /* it only asks what the port speaks */
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)DL_ETCD_CONNECT_MS);
        int which;
        CURLcode result;
        enum driven how = transfer(c, &s, until, NULL, 0, &which, &result);
        free(s.buf);
        /* Done, or ended by the member's alert (it wants a certificate):
         * a TLS server either way. */
        return how == DONE &&
               (result == CURLE_OK || (result == CURLE_SSL_CONNECT_ERROR && strstr(c->errbuf, " alert ")));
}

/* The last answer this thread got from a member: when, and from which
 * (dl_etcd_answered_since). */
static _Thread_local struct {
        dl_time at;
        char member[DL_ETCD_HOST_MAX + 16];
} last_answer;

static void member_name(const dl_etcd_url *u, size_t i, char *out, size_t size)
{
        snprintf(out, size, "%s:%d", u->ep[i].host, u->ep[i].port);
}

static void note_answer(const dl_etcd_url *u, size_t i)
{
        last_answer.at = dl_now();
        member_name(u, i, last_answer.member, sizeof last_answer.member);
}

bool dl_etcd_answered_since(const dl_etcd_url *u, const dl_time *since)
{
        if (last_answer.member[0] == '\0' || dl_ms_since(&last_answer.at) > dl_ms_since(since))
                return false;
        for (size_t i = 0; i < u->n; i++) {
                char name[sizeof last_answer.member];
                member_name(u, i, name, sizeof name);
                if (strcmp(name, last_answer.member) == 0)
                        return true;
        }
        return false;
}

/* After a transfer that ended with `result`: DIRLOCK_OK, or the error,
 * with *next when another member may do better. */
static int transfer_failed(struct conn *c, const dl_etcd_url *u, size_t i, const struct target *t,
                           enum driven how, CURLcode result, bool *next, dirlock_error *err)
{
        if (how != DONE) {
                *next = true;
                return dl_fail(err, DIRLOCK_ESERVER, 0, "etcd member %s: no answer in time", t->member);
        }
        char words[CURL_ERROR_SIZE];
        snprintf(words, sizeof words, "%s", c->errbuf);
        if (result == CURLE_GOT_NOTHING && !u->tls) {
                dl_time until = dl_deadline(DL_ETCD_CONNECT_MS / 1e3);
                if (speaks_tls(c, u, i, &until)) {
                        *next = false;
                        return dl_fail(err, DIRLOCK_EAUTH, 0,
                                       "etcd member %s closed the connection without an answer: it speaks "
                                       "only TLS (etcds://, with cacert=FILE)",
                                       t->member);
                }
        }
        return dl_etcd_transfer_failed(u, t->member, result, words, next, err);
}

/* The answer of a POST, s, which was sent to t with HTTP status `status`,
 * into r (OK: JSON, or an error the caller handles), else the error with
 * *next and *token_refused (etcd_access.c). */
static int read_answer(const dl_etcd_url *u, const struct target *t, struct sink *s, long status, bool *next,
                       bool *token_refused, dl_etcd_reply *r, dirlock_error *err)
{
        *next = false;
        *token_refused = false;
        json_object *o = s->buf ? json_tokener_parse(s->buf) : NULL;
        if (o == NULL || !json_object_is_type(o, json_type_object)) {
                if (o != NULL)
                        json_object_put(o);
                return dl_etcd_not_json(t->member, status, s->buf, next, err);
        }
        json_object *code;
        if (json_object_object_get_ex(o, "code", &code) && !json_object_object_get_ex(o, "header", NULL)) {
                json_object *msg;
                const char *text = json_object_object_get_ex(o, "message", &msg) ? json_object_get_string(msg)
                                   : json_object_object_get_ex(o, "error", &msg) ? json_object_get_string(msg)
                                                                                 : "";
                int c = json_object_get_int(code);
                int rc = dl_etcd_grpc_error(u, t->member, c, text ? text : "", next, token_refused, err);
                if (rc == 0) {
                        r->body = NULL;
                        r->grpc_code = c;
                        snprintf(r->message, sizeof r->message, "%s", text ? text : "");
                }
                json_object_put(o); /* text was its */
                return rc == 0 ? DIRLOCK_OK : rc;
        }
        if (status != 200) {
                json_object_put(o);
                return dl_etcd_not_json(t->member, status, NULL, next, err);
        }
        r->body = o;
        r->grpc_code = 0;
        r->message[0] = '\0';
        return DIRLOCK_OK;
}

/* One POST to member i with `token`; DIRLOCK_OK with r filled (maybe a
 * handled error), or an error with *next (try another member) and
 * *token_refused; *sent whether the request went out. */
static int post_once(struct conn *c, const dl_etcd_url *u, size_t i, const char *path, const char *body,
                     const char *token, double limit_ms, bool *next, bool *token_refused, bool *sent,
                     dl_etcd_reply *r, dirlock_error *err)
{
        struct target t;
        struct sink s = {0};
        *token_refused = false;
        struct curl_slist *headers = headers_for(c, false, token);
        if (headers == NULL) {
                *next = false;
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory (libcurl)");
        }
        CURL *e = easy_setup(c, u, i, path, body, headers, &s, &t);
        long connect_ms = (long)(limit_ms < DL_ETCD_CONNECT_MS ? limit_ms : DL_ETCD_CONNECT_MS);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms > 0 ? connect_ms : 1L);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)limit_ms > 0 ? (long)limit_ms : 1L);
        dl_time until = dl_deadline(limit_ms / 1e3 + 0.05);
        int which;
        CURLcode result;
        int cancel[1] = {u->wait != NULL ? u->wait->cancel_fd : -1};
        enum driven how = transfer(c, &s, &until, cancel, 1, &which, &result);
        *next = true;
        if (how == FD_FIRED) {
                /* The caller's wait was canceled: no other member either. */
                free(s.buf);
                *next = false;
                *sent = true; /* it may have gone out */
                return dl_fail(err, DIRLOCK_ESERVER, 0, "etcd member %s: canceled before it answered",
                               t.member);
        }
        long status = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        if (how == DONE && result == CURLE_OK && status != 0)
                note_answer(u, i);
        long request_bytes = 0;
        curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &request_bytes);
        *sent = request_bytes > 0;
        int rc = s.oom ? dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory")
                 : how != DONE || result != CURLE_OK
                     ? transfer_failed(c, u, i, &t, how, result, next, err)
                     : read_answer(u, &t, &s, status, next, token_refused, r, err);
        if (s.oom)
                *next = false;
        free(s.buf);
        return rc;
}

int dl_etcd_post(const dl_etcd_url *u, const char *path, json_object *request, const char *token,
                 const dl_time *deadline, bool *sent, dl_etcd_reply *r, bool *token_refused,
                 dirlock_error *err)
{
        r->body = NULL;
        r->grpc_code = 0;
        r->message[0] = '\0';
        bool sent_local = false, refused_local = false;
        if (sent == NULL)
                sent = &sent_local;
        if (token_refused == NULL)
                token_refused = &refused_local;
        *sent = false;
        *token_refused = false;
        const char *body = json_object_to_json_string_ext(request, JSON_C_TO_STRING_PLAIN);
        if (body == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        char key[DL_ETCD_CLUSTER_MAX];
        dl_etcd_url_cluster(u, key, sizeof key);
        struct conn *c;
        int rc = conn_get(u, key, &c, err);
        if (rc != DIRLOCK_OK)
                return rc;
        /* From the member that answered last, each in turn; the next
         * call starts where this one found an answer, or after the last
         * one that failed. */
        size_t *current = current_member(key), first = *current;
        rc = DIRLOCK_ESERVER;
        double pause = ROUND_PAUSE_MS;
        for (size_t tried = 0;; tried++) {
                size_t i = (first + tried) % u->n;
                double left = dl_remaining(deadline);
                if (tried > 0 && left <= 0)
                        break;
                if (tried > 0 && tried % u->n == 0) {
                        /* Every member said no (an election under way): a
                         * short pause, then round again until the deadline
                         * (or the caller's cancel). */
                        if (dl_nap_ms(pause, deadline, u->wait != NULL ? u->wait->cancel_fd : -1) == 1)
                                break;
                        pause = pause * 2 > ATTEMPT_MS / 4 ? ATTEMPT_MS / 4 : pause * 2;
                        if (dl_deadline_passed(deadline))
                                break;
                        left = dl_remaining(deadline);
                }
                double share = left < ATTEMPT_MS ? left : ATTEMPT_MS;
                if (share < DL_ETCD_GRACE_MS)
                        share = DL_ETCD_GRACE_MS;
                bool next, reached = false;
                rc = post_once(c, u, i, path, body, token, share, &next, token_refused, &reached, r, err);
                if (rc == DIRLOCK_OK)
                        *current = i;
                else if (reached)
                        *sent = true;
                if (rc == DIRLOCK_ESERVER && u->wait != NULL && u->wait->silence != NULL)
                        dl_silence_failed(u->wait->silence, u->wait->h, err);
                if (!next)
                        break;
                *current = (i + 1) % u->n;
        }
        conn_put(c);
        return rc;
}

/* ---- watching ------------------------------------------------------------------ */

/* One watch stream on member i until it has what it waits for, `until`
 * or fds[0..1] (cancel, pidfd) fire: how it ended (drive), its sink in s.
 * Once the member has made the watch, at revision R, its caller says
 * whether the key changed before the watch could see it (made(arg, R));
 * meanwhile the stream waits in its socket, so nothing after R is
 * missed. */
static enum driven watch_member(struct conn *c, const dl_etcd_url *u, size_t i, const char *body,
                                const char *token, const dl_time *until, const int fds[2],
                                dl_etcd_made_fn *made, void *arg, struct sink *s, struct target *t,
                                int *which, CURLcode *result)
{
        struct curl_slist *headers = headers_for(c, true, token);
        if (headers == NULL) {
                s->oom = true;
                return DONE;
        }
        CURL *e = easy_setup(c, u, i, "/v3/watch", body, headers, s, t);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)DL_ETCD_CONNECT_MS);
        c->timer_ms = -1;
        *result = CURLE_FAILED_INIT;
        if (curl_multi_add_handle(c->multi, e) != CURLM_OK)
                return DONE;
        enum driven how = drive(c, s, until, fds, 2, which, result);
        if (how == STOPPED && !s->changed && !s->failed && s->created) {
                s->stop_on_created = false;
                if (made(arg, s->created_rev))
                        s->changed = true;
                else
                        how = drive(c, s, until, fds, 2, which, result);
        }
        curl_multi_remove_handle(c->multi, e);
        return how;
}

int dl_etcd_watch(const dl_etcd_url *u, const char *token, json_object *request, const dl_time *until,
                  int cancel_fd, int pid_fd, dl_etcd_made_fn *made, void *arg, dl_etcd_woken *woken,
                  bool *token_refused, dirlock_error *err)
{
        *woken = DL_ETCD_QUIET;
        *token_refused = false;
        const char *body = json_object_to_json_string_ext(request, JSON_C_TO_STRING_PLAIN);
        char cluster[DL_ETCD_CLUSTER_MAX];
        dl_etcd_url_cluster(u, cluster, sizeof cluster);
        struct conn *c;
        int rc = conn_get(u, cluster, &c, err);
        if (rc != DIRLOCK_OK)
                return rc;
        size_t *current = current_member(cluster), first = *current; /* as dl_etcd_post */
        rc = DIRLOCK_ESERVER;
        for (size_t tried = 0; tried < u->n; tried++) {
                size_t i = (first + tried) % u->n;
                struct target t;
                struct sink s = {.watch = true, .stop_on_created = true};
                int fds[2] = {cancel_fd, pid_fd}, which;
                CURLcode result;
                enum driven how =
                    watch_member(c, u, i, body, token, until, fds, made, arg, &s, &t, &which, &result);
                free(s.buf);
                bool next = true;
                if (s.oom)
                        rc = dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
                else if (s.failed && s.fail_code != 0)
                        rc = dl_etcd_grpc_error(u, t.member, s.fail_code, s.fail_text, &next, token_refused,
                                                err);
                else if (s.changed || how == TIMED_OUT || how == FD_FIRED)
                        rc = DIRLOCK_OK;
                else if (how == DONE && result != CURLE_OK)
                        rc = dl_etcd_transfer_failed(u, t.member, result, c->errbuf, &next, err);
                else /* The stream ended or failed: this member will not watch now. */
                        rc = dl_fail(err, DIRLOCK_ESERVER, 0, "etcd member %s: the watch %s", t.member,
                                     s.failed ? "was refused" : "ended");
                if (rc == DIRLOCK_OK && s.changed) {
                        *woken = DL_ETCD_CHANGED;
                        *current = i;
                }
                if (rc == DIRLOCK_OK && how == FD_FIRED)
                        *woken = which == 0 ? DL_ETCD_CANCELED : DL_ETCD_PID;
                if (rc != DIRLOCK_ESERVER || !next || s.oom)
                        break;
                *current = (i + 1) % u->n;
                if (dl_deadline_passed(until))
                        break;
        }
        conn_put(c);
        return rc;
}
