/* server.h - what every server backend shares (lib/redis, lib/etcd, and
 * whatever backend keeps its locks on a server next): the connections it
 * keeps per thread (conn_cache.c), how its waits bound each request and
 * give up when the server cannot be reached (server_wait.c), how it
 * tells its caller that the server does not answer (server_notice.c),
 * and the %-encoding of a value in a server's address (url_text.c).
 * docs/backends.md has the kit table. */
#ifndef DIRLOCK_SERVER_H
#define DIRLOCK_SERVER_H

#include "core.h"

/* How a lock server's address with a bad port is refused: the same words
 * for every scheme (redis_url.c, etcd_url.c). */
#define DL_PORT_RULE "the port must be a whole number from 1 to 65535"

/* ---- a value in a server's address, %-encoded (url_text.c) ------------- */

/* Whether byte c of a value may stand unencoded: each grammar's own rule
 * (a credential's, a file name's), passed to the calls below. */
typedef bool dl_url_plain(unsigned char c);
/* The value of hex digit c (0-9, a-f, A-F), or -1. */
int dl_url_hex_value(char c);
/* %-decode [s, e) into out (size bytes with the NUL): each %XX is its
 * byte, every other byte must be `plain`.  An empty value decodes to "".
 * 0, or -1 for a bad or short %XX, a %00, a byte that must be encoded, or
 * a value longer than out holds. */
int dl_url_decode(const char *s, const char *e, dl_url_plain *plain, char *out, size_t size);
/* %-encode in into out (size bytes with the NUL): the `plain` bytes as
 * they are, every other one as %XX (upper-case hex).  Its length, or -1
 * when it does not fit. */
int dl_url_encode(const char *in, dl_url_plain *plain, char *out, size_t size);
/* A server's address as a message may show it, into out (size bytes):
 * nothing of a credential, even in an address that does not parse -- the
 * user information (up to the last '@') as "***", and after the scheme
 * nothing at all when a query may hold a password ("etcds://..."). */
void dl_url_shown(const char *space, char *out, size_t size);

/* ---- connections kept per thread (conn_cache.c) ------------------------ */

/* A backend's idle connections to its servers, kept per thread: defined
 * once, statically, by the backend.  The contract (checked out or idle,
 * keys, threads, fork) is at the top of conn_cache.c. */
typedef struct dl_conn_cache {
        unsigned max_idle; /* idle connections kept per thread */
        /* Close and free conn.  `forked`: it is a forked child's copy of its
         * parent's connection; free it without sending anything on it. */
        void (*close)(void *conn, bool forked);
} dl_conn_cache;

/* Check out an idle connection of this thread to `key`, or NULL: then the
 * caller makes one.  It is the caller's until dl_conn_put(). */
void *dl_conn_get(const dl_conn_cache *cache, const char *key);
/* Give a working connection back as idle; `key` must live as long as conn
 * (kept inside it).  A broken one is closed by its owner instead. */
void dl_conn_put(const dl_conn_cache *cache, void *conn, const char *key);

/* ---- a wait on a server (server_wait.c) -------------------------------- */

/* The deadline of one request to a server within a call whose own
 * deadline is `call`: what is left of the call, but at least least_ms (a
 * try, or a last attempt at the deadline, still hears the answer) and at
 * most most_ms (a server that says nothing is given up on). */
dl_time dl_request_deadline(const dl_time *call, double least_ms, double most_ms);
/* An acquire (or upgrade) of `what` that ended because `server` (a
 * lock server, "the etcd cluster") could not be reached, err saying why
 * (DIRLOCK_ESERVER): DIRLOCK_ECANCELED when its cancel descriptor fired
 * meanwhile, "canceled waiting for WHAT while SERVER could not be
 * reached"; else DIRLOCK_ESERVER, err's message followed by " (gave up at
 * the timeout, T s)" when it waited (timeout not 0). */
int dl_gave_up_unreachable(dirlock_error *err, double timeout, bool canceled, const char *what,
                           const char *server);

/* ---- a server that does not answer a wait (server_notice.c) ------------ */

/* One waiting acquire's view of its server: since when it has had no
 * answer, and whether its caller was told (dirlock_options.server_notice). */
typedef struct dl_silence {
        dl_time since; /* the wait's start, or the last answer */
        bool told;
} dl_silence;
void dl_silence_begin(dl_silence *s);
/* An attempt of h's wait got no answer (why: its error): tell the caller
 * once the silence has lasted DIRLOCK_SERVER_NOTICE_MS. */
void dl_silence_failed(dl_silence *s, const dirlock *h, const dirlock_error *why);
/* An attempt was answered: tell the caller, if it was told of silence. */
void dl_silence_answered(dl_silence *s, const dirlock *h);

#endif
