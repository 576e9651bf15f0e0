/* etcd.h - what the files of the etcd backend share: the space's address
 * (etcd_url.h), the calls to the cluster's v3 JSON gateway (etcd_http.c:
 * libcurl and json-c, endpoints tried in turn), how they get in (TLS
 * options and what refusals mean: etcd_access.c; the log-in and the calls
 * made as the space's user: etcd_auth.c), the typed requests
 * (etcd_kv.c: leases, ranges, transactions, watches, as JSON with its
 * base64), a lock's queue and
 * the rules that say who may hold (etcd_queue.c), and what the protocol
 * (etcd_backend.c) lends the administration (etcd_admin.c).  The protocol
 * and its invariants are at the top of etcd_backend.c.  Only built when
 * libcurl and json-c are (etcd.mk: DIRLOCK_WITH_ETCD). */
#ifndef DIRLOCK_ETCD_H
#define DIRLOCK_ETCD_H

#include "dirlock_deadlock.h"
#include "dirlock_permit.h"
#include "dirlock_rw.h"
#include "etcd_url.h"
#include "fence.h"
#include "range.h"
#include "server.h"

#include <curl/curl.h>
#include <json-c/json.h>

/* ---- time budgets ---------------------------------------------------------- */

/* The longest one call (a request, asked of the members in turn until
 * one answers) may take when the caller allows more: long enough for an
 * election (a lost leader is replaced within two election timeouts, 2 s
 * with etcd's defaults); a cluster that answers nothing by then counts as
 * unreachable. */
#define DL_ETCD_IO_MS 3000.0
/* Connecting to one member. */
#define DL_ETCD_CONNECT_MS 500.0
/* The least one request is given, even at timeout 0 or at a deadline. */
#define DL_ETCD_GRACE_MS 250.0
/* What a log-in is given (etcd_auth.c), whatever the deadline of the call
 * that needs it: the cluster answers it after a password hash
 * (bcrypt: tens of ms of a core) and a write through its log, once per
 * process, and several processes starting at once queue for it. */
#define DL_ETCD_LOGIN_MS 2000.0

/* ---- calls to the gateway (etcd_http.c) ------------------------------------- */

/* An acquire's wait, which the calls made through its handles' addresses
 * (dl_etcd_url.wait) serve while it lasts: its cancel descriptor (-1:
 * none) ends a call at once, and a call that goes on without an answer
 * tells the caller as the wait would (its silence, for its handle h). */
struct dl_etcd_wait {
        int cancel_fd;
        dl_silence *silence;
        const dirlock *h;
};

/* A reply: the parsed JSON body, or the gateway's error. */
typedef struct dl_etcd_reply {
        json_object *body; /* owned; NULL on error */
        int grpc_code;     /* 0, or the error's gRPC code (5: not found, 9: failed precondition, ...) */
        char message[200]; /* the error's message */
} dl_etcd_reply;

/* The calls made as the space's user (etcd_auth.c): dl_etcd_post() with
 * the log-in's token (none when the address has no user), the token got
 * again and the call made again once when the cluster refuses it (it
 * expired).  POST `request` (JSON, not consumed) to `path`
 * ("/v3/kv/range") on the space's members by `deadline`: the thread's
 * current member first, then the next ones, until one answers.
 * DIRLOCK_OK with *r filled (body, or grpc_code for the errors a caller
 * handles: not found, failed precondition, out of range);
 * DIRLOCK_ESERVER when no member answered (or each said it cannot serve
 * now: no leader, timed out, too many requests); DIRLOCK_EAUTH (TLS or
 * the log-in refused), DIRLOCK_EPERM (the user may not touch the
 * prefix), DIRLOCK_EINVAL (a file of the address cannot be used): the
 * refusals of etcd_access.c; DIRLOCK_EDATA (anything else the gateway
 * refused).  *sent (may be NULL) tells whether a request that got no
 * answer may have reached a member before the one that answered: a
 * caller for whom asking twice is not the same as asking once (a revoke)
 * must know. */
int dl_etcd_call(const dl_etcd_url *u, const char *path, json_object *request, const dl_time *deadline,
                 bool *sent, dl_etcd_reply *r, dirlock_error *err);
void dl_etcd_reply_free(dl_etcd_reply *r);

/* What ended a wait on a watch (dl_etcd_watch_wait). */
typedef enum dl_etcd_woken {
        DL_ETCD_CHANGED,  /* the key changed or went (or the server ended the watch) */
        DL_ETCD_QUIET,    /* nothing happened by the time given */
        DL_ETCD_CANCELED, /* the cancel descriptor polled readable */
        DL_ETCD_PID,      /* the watched owner process died */
} dl_etcd_woken;

/* Asked by a watch once a member has made it, at revision `made`: did
 * the key change before the watch could see it?  (The caller knows what
 * it read; a read of the key here goes on another connection while the
 * watch's stream waits in its socket.)  True is a wake-up. */
typedef bool dl_etcd_made_fn(void *arg, long long made);

/* Watch as `request` asks (dl_etcd_watch_request: one key, from the
 * store's current revision) until `until`, the cancel descriptor or the
 * pidfd (either may be -1), asking made(arg, R) once the watch is made at
 * R: a watch made at the current revision is served at once as the store
 * changes, where one made from an older revision is replayed by the
 * member's catching-up loop, every 100 ms, which a hand-off would wait
 * for; what changed before R is so the caller's to read.  The one
 * blocking wait of the backend that is not a request: a stream on the
 * current member, closed when the wait ends.  DIRLOCK_ESERVER when no
 * member would watch; the refusals of dl_etcd_call (etcd_auth.c: with the
 * log-in's token, got again once when refused). */
int dl_etcd_watch_wait(const dl_etcd_url *u, json_object *request, const dl_time *until, int cancel_fd,
                       int pid_fd, dl_etcd_made_fn *made, void *arg, dl_etcd_woken *woken,
                       dirlock_error *err);

/* The gateway itself (etcd_http.c): dl_etcd_call and dl_etcd_watch_wait
 * with the token given (NULL or "": none) and no second try;
 * *token_refused (may be NULL) tells that the cluster refused the token
 * (DIRLOCK_EAUTH). */
int dl_etcd_post(const dl_etcd_url *u, const char *path, json_object *request, const char *token,
                 const dl_time *deadline, bool *sent, dl_etcd_reply *r, bool *token_refused,
                 dirlock_error *err);
int dl_etcd_watch(const dl_etcd_url *u, const char *token, json_object *request, const dl_time *until,
                  int cancel_fd, int pid_fd, dl_etcd_made_fn *made, void *arg, dl_etcd_woken *woken,
                  bool *token_refused, dirlock_error *err);

/* ---- getting in (etcd_access.c, etcd_auth.c) ---------------------------------- */

/* The longest log-in token kept: etcd's simple tokens are ~20 bytes, its
 * JWTs a few hundred. */
#define DL_ETCD_TOKEN_MAX 2048

/* Set the TLS options of an etcds:// request on e (its CAs, its client
 * certificate, verification always on); libcurl's words of a failure go
 * to errbuf (CURL_ERROR_SIZE bytes), for every request. */
void dl_etcd_tls_options(CURL *e, const dl_etcd_url *u, char *errbuf);
/* A transfer to `member` (host:port/path) that failed with `result`
 * (libcurl's words in errbuf): DIRLOCK_EAUTH for a TLS refusal,
 * DIRLOCK_EINVAL for a file that cannot be used, else DIRLOCK_ESERVER with
 * *next (another member may do better). */
int dl_etcd_transfer_failed(const dl_etcd_url *u, const char *member, CURLcode result, const char *errbuf,
                            bool *next, dirlock_error *err);
/* An answer that is not the gateway's JSON (HTTP `status`, `body` or
 * NULL): its refusal of a client certificate with a Common Name
 * (DIRLOCK_EAUTH), a failing member (>= 500: DIRLOCK_ESERVER, *next), or
 * DIRLOCK_EDATA. */
int dl_etcd_not_json(const char *member, long status, const char *body, bool *next, dirlock_error *err);
/* The gateway's error answer, gRPC `code` and `text`: 0 when the caller
 * handles it (not found, failed precondition, out of range), else the
 * dirlock code with its words in err: DIRLOCK_ESERVER with *next (cannot
 * serve now), DIRLOCK_EAUTH (the log-in: none given, a wrong password, a
 * token refused -- *token_refused), DIRLOCK_EPERM (permission denied
 * under the prefix), DIRLOCK_EDATA. */
int dl_etcd_grpc_error(const dl_etcd_url *u, const char *member, int code, const char *text, bool *next,
                       bool *token_refused, dirlock_error *err);

/* The log-in token this process sends to u's cluster as u's user into
 * out: the one it got before, or, when it has none or `stale` is the one
 * the cluster refused, a new one (Authenticate, with the password read
 * from its file or variable now, given DL_ETCD_LOGIN_MS).  "" when u has
 * no user, or the
 * cluster's authentication is off.  DIRLOCK_OK, or the refusals of
 * dl_etcd_call (DIRLOCK_EAUTH: a wrong user or password; DIRLOCK_EINVAL:
 * the password's file or variable), DIRLOCK_ESERVER. */
int dl_etcd_token(const dl_etcd_url *u, const char *stale, char *out, size_t size, dirlock_error *err);

/* Header revision of a reply (0 when missing). */
long long dl_etcd_revision(const json_object *body);

/* Whether a member of u answered a request of this thread (any HTTP
 * answer) at or after `since`: the cluster was there, whatever one
 * request's fate.  Only the last answer is remembered, per thread. */
bool dl_etcd_answered_since(const dl_etcd_url *u, const dl_time *since);

/* The deadline of one request within a call whose own deadline is `call`:
 * min(now + DL_ETCD_IO_MS, max(call, now + DL_ETCD_GRACE_MS)), by
 * dl_request_deadline. */
dl_time dl_etcd_io_deadline(const dl_time *call);

/* ---- typed requests (etcd_kv.c) --------------------------------------------- */

/* Base64 of the gateway's byte fields (OpenSSL's codec).  Encode into a
 * new json string; decode into buf (NUL-terminated), -1 when it is not
 * base64 or does not fit. */
json_object *dl_etcd_b64(const char *bytes, size_t len);
int dl_etcd_unb64(const char *text, char *buf, size_t size);

/* A key of a range reply. */
typedef struct dl_etcd_kv {
        char key[DL_ETCD_PREFIX_MAX + DIRLOCK_NAME_MAX + 48];
        char value[DL_RECORD_MAX + 160];
        long long create_revision, mod_revision, version, lease;
} dl_etcd_kv;

/* A transaction being built: compares, then the operations of each
 * branch.  Keys are plain strings (encoded here). */
typedef struct dl_etcd_txn {
        json_object *compare, *success, *failure;
} dl_etcd_txn;

void dl_etcd_txn_init(dl_etcd_txn *t);
void dl_etcd_txn_free(dl_etcd_txn *t);
/* Compare `target` ("CREATE", "MOD", "VALUE") of key (or of every key of
 * [key, range_end) when range_end is not NULL) with `result` ("EQUAL",
 * "LESS", ...) against a revision or a value. */
void dl_etcd_cmp_rev(dl_etcd_txn *t, const char *key, const char *range_end, const char *target,
                     const char *result, long long rev);
void dl_etcd_cmp_value(dl_etcd_txn *t, const char *key, const char *result, const char *value);
/* Operations of the success (`then` true) or failure branch. */
void dl_etcd_op_put(dl_etcd_txn *t, bool then, const char *key, const char *value, long long lease);
void dl_etcd_op_range(dl_etcd_txn *t, bool then, const char *key, const char *range_end);
/* The end of the range of keys starting with `prefix` (its last byte + 1). */
void dl_etcd_prefix_end(const char *prefix, char *buf, size_t size);

/* Run t; *succeeded tells the branch taken, *revision the store's revision
 * after it; the range results, in order, are kept in *reply for
 * dl_etcd_txn_range(). */
int dl_etcd_txn_run(const dl_etcd_url *u, dl_etcd_txn *t, const dl_time *deadline, bool *succeeded,
                    long long *revision, dl_etcd_reply *reply, dirlock_error *err);
/* The i-th range result of a transaction's reply (the operations of the
 * branch taken, counted among ranges only): its keys, malloc'd, into
 * *kvs[0..*n-1] (free() it).  DIRLOCK_EDATA when the reply has no such
 * range or is malformed, DIRLOCK_ENOMEM. */
int dl_etcd_txn_range(const dl_etcd_reply *reply, size_t i, dl_etcd_kv **kvs, size_t *n, dirlock_error *err);
/* The keys of [key, range_end), keys only or with values, malloc'd into
 * *kvs[0..*n-1]; *revision (may be NULL) the revision read at. */
int dl_etcd_range(const dl_etcd_url *u, const char *key, const char *range_end, bool keys_only,
                  dl_etcd_kv **kvs, size_t *n, long long *revision, const dl_time *deadline,
                  dirlock_error *err);
/* A watch of `key` from the store's current revision, for
 * dl_etcd_watch_wait (json_object_put it after). */
json_object *dl_etcd_watch_request(const char *key);

/* Leases.  Grant lease `id` (chosen by the caller: a lost answer is asked
 * again under the same id) for ttl seconds: *granted the TTL the cluster
 * gave (at least its smallest).  keepalive: *ttl_left, 0 when it is gone.
 * revoke: *found false when there was no such lease (expired or revoked
 * by someone else); a lost answer is asked again once (*resent), and the
 * second asking cannot tell "revoked by us" from "gone". */
int dl_etcd_lease_grant(const dl_etcd_url *u, long long id, long long ttl, const dl_time *deadline,
                        long long *granted, dirlock_error *err);
int dl_etcd_lease_keepalive(const dl_etcd_url *u, long long id, const dl_time *deadline, long long *ttl_left,
                            dirlock_error *err);
int dl_etcd_lease_revoke(const dl_etcd_url *u, long long id, const dl_time *deadline, bool *found,
                         bool *resent, dirlock_error *err);
/* TTL granted and left of lease id (-1, -1 when it is gone). */
int dl_etcd_lease_ttl(const dl_etcd_url *u, long long id, const dl_time *deadline, long long *granted,
                      long long *left, dirlock_error *err);
/* A random lease id: 62 bits, never 0. */
long long dl_etcd_new_lease_id(void);

/* ---- a lock's queue (etcd_queue.c) -------------------------------------------
 *
 * Every holder or waiter of lock NAME is one key, PREFIX/q/NAME/TOKEN,
 * bound to its acquisition's lease, whose value is
 *
 *   dl1 <state><mode> <policy> <names> <seq> <lo> <hi> <fence> <owner record>
 *
 * state: w (waiting) or h (held); mode: x (exclusive), s (shared), i
 * (intent), u (intent, upgrading or upgraded: holds newcomers off as an
 * exclusive lock does); policy 0-3 (dirlock_policy); names: how many names
 * the acquisition takes at once (a set is only ever taken whole); seq: the
 * arrival of a set that joined this queue after its first (the revision
 * of its first key), 0 for "my own create_revision"; lo, hi:
 * a range lock's ends (C99 hex floats), "-" for a whole lock; fence: the
 * holder's, 0 while it waits; the owner record is owner.c's text.  An
 * entry's place in the queue is its seq, or its key's create_revision. */
typedef struct dl_etcd_entry {
        char token[DIRLOCK_TOKEN_LEN + 1];
        long long rev;   /* its key's create_revision, 0: not in the queue */
        long long seq;   /* its arrival, when not rev (a set that joined late) */
        long long lease; /* its acquisition's lease */
        char state;      /* 'w' or 'h' */
        char mode;       /* 'x', 's', 'i', 'u' */
        int policy;
        int names;
        bool ranged;
        double lo, hi;
        unsigned long long fence;
        char record[DL_RECORD_MAX];
} dl_etcd_entry;

/* A name's state read at one revision: its entries in arrival order and
 * its fence key. */
typedef struct dl_etcd_queue {
        dl_etcd_entry *e;
        size_t n, cap;
        long long f_mod;         /* mod_revision of PREFIX/f/NAME, 0: none yet */
        unsigned long long last; /* the last fence drawn (its value) */
        bool f_bad;              /* the fence key holds no fence (not what dirlock wrote) */
        long long revision;      /* of the read */
} dl_etcd_queue;

int dl_etcd_entry_format(const dl_etcd_entry *e, char *buf, size_t size);
/* Parse a value; 0 or -1 (not one of ours). */
int dl_etcd_entry_parse(const char *value, dl_etcd_entry *e);
/* Fill q from a range of the name's keys and its fence key's (either may
 * be n == 0).  Keys that are not entries are skipped.  DIRLOCK_ENOMEM. */
int dl_etcd_queue_load(dl_etcd_queue *q, const dl_etcd_kv *kvs, size_t n, const dl_etcd_kv *f, size_t nf,
                       long long revision, dirlock_error *err);
void dl_etcd_queue_free(dl_etcd_queue *q);
/* The index of token t in q, or -1. */
long dl_etcd_queue_find(const dl_etcd_queue *q, const char *t);

/* May `me` (an entry of q, or a newcomer not in it yet) hold now?  Yes
 * when every other entry that overlaps it lets it: a holder by the
 * compatibility of modes, a waiter by the policies (the rules at the top
 * of etcd_queue.c).  No: *blocker the index of the entry to watch -- the
 * nearest one ahead of me that keeps me out, else the first behind. */
bool dl_etcd_may_hold(const dl_etcd_queue *q, const dl_etcd_entry *me, size_t *blocker);
/* For messages: a holder that `me` waits behind -- the first held entry
 * that overlaps it and keeps it out (*conflicts), else the first that
 * overlaps it at all (it waits behind a waiter then) -- or -1 when
 * nobody holds what it asks for. */
long dl_etcd_holder_of(const dl_etcd_queue *q, const dl_etcd_entry *me, bool *conflicts);
/* An intent holder upgrading: the index of a reader still in its way
 * (a held shared entry that overlaps it), or -1. */
long dl_etcd_reader_in_way(const dl_etcd_queue *q, const dl_etcd_entry *me);
/* Mark `me` held, then every other single-name waiter, in arrival order,
 * that may hold beside it and everyone marked so far; their indices go
 * to idx[0..*count-1] (me not included).  q's entries are changed. */
void dl_etcd_grant_pass(dl_etcd_queue *q, long me, size_t *idx, size_t *count);

/* ---- the keys of a space ------------------------------------------------------ */

#define DL_ETCD_KEY_MAX (DL_ETCD_PREFIX_MAX + DIRLOCK_NAME_MAX + 48)

/* PREFIX/q/NAME/ (the queue), PREFIX/q/NAME/TOKEN (an entry),
 * PREFIX/f/NAME (the fence), PREFIX/q/ (every queue). */
void dl_etcd_queue_key(const dl_etcd_url *u, const char *name, char *buf, size_t size);
void dl_etcd_entry_key(const dl_etcd_url *u, const char *name, const char *token, char *buf, size_t size);
void dl_etcd_fence_key(const dl_etcd_url *u, const char *name, char *buf, size_t size);

/* ---- what etcd_backend.c lends etcd_admin.c ------------------------------------ */

/* Space string -> address, or DIRLOCK_EINVAL naming what is wrong. */
int dl_etcd_parse_space(const char *spec, dl_etcd_url *u, dirlock_error *err);
/* Read the queue and fence of `name` at one revision. */
int dl_etcd_read_queue(const dl_etcd_url *u, const char *name, const dl_time *deadline, dl_etcd_queue *q,
                       dirlock_error *err);

/* ---- the space from outside its holders (etcd_admin.c) ------------------------- */

int dl_etcd_inspect(const char *spec, const char *name, double stale_age, dirlock_owner *owner,
                    dirlock_error *err);
int dl_etcd_break(const char *spec, const char *name, double stale_age, int force, dirlock_error *err);
int dl_etcd_cleanup(const char *spec, dirlock_error *err);
int dl_etcd_list(const char *spec, char ***names, size_t *count, dirlock_error *err);
int dl_etcd_ranges(const char *spec, const char *name, dirlock_range_info **out, size_t *count,
                   dirlock_error *err);
int dl_etcd_holders(const char *spec, const char *name, double stale_age, dirlock_owner **out, size_t *count,
                    dirlock_error *err);
int dl_etcd_waiters(const char *spec, const char *name, dirlock_waiter **out, size_t *count,
                    dirlock_error *err);

#endif
