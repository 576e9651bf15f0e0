/* etcd_kv.c - the requests of the etcd backend, typed: transactions
 * (compares and the operations of each branch), ranges, watches and
 * leases (grant, keep-alive, revoke, time to live), as JSON for the
 * gateway (etcd_http.c) and back.  The gateway's int64 fields are decimal
 * strings, its byte fields (keys, values) base64 (OpenSSL's codec), and
 * fields that hold their default (0, false, empty) are left out of its
 * answers. */
#include "etcd.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long long num(const json_object *o, const char *field)
{
        json_object *v;
        if (o == NULL || !json_object_object_get_ex(o, field, &v))
                return 0;
        if (json_object_is_type(v, json_type_string))
                return strtoll(json_object_get_string(v), NULL, 10);
        return json_object_get_int64(v);
}

static json_object *num_string(long long v)
{
        char s[24];
        snprintf(s, sizeof s, "%lld", v);
        return json_object_new_string(s);
}

static int bad_answer(dirlock_error *err, const char *what)
{
        return dl_fail(err, DIRLOCK_EDATA, 0, "unexpected answer from the etcd cluster to %s", what);
}

/* ---- base64 ---------------------------------------------------------------------- */

json_object *dl_etcd_b64(const char *bytes, size_t len)
{
        size_t out = 4 * ((len + 2) / 3) + 1;
        char small[512], *buf = out <= sizeof small ? small : malloc(out);
        if (buf == NULL)
                return NULL;
        EVP_EncodeBlock((unsigned char *)buf, (const unsigned char *)bytes, (int)len);
        json_object *o = json_object_new_string(buf);
        if (buf != small)
                free(buf);
        return o;
}

int dl_etcd_unb64(const char *text, char *buf, size_t size)
{
        size_t tl = strlen(text);
        if (tl % 4 != 0 || tl / 4 * 3 + 1 > size)
                return -1;
        int n = EVP_DecodeBlock((unsigned char *)buf, (const unsigned char *)text, (int)tl);
        if (n < 0)
                return -1;
        /* EVP_DecodeBlock counts the padding as zero bytes. */
        if (tl >= 1 && text[tl - 1] == '=')
                n--;
        if (tl >= 2 && text[tl - 2] == '=')
                n--;
        buf[n] = '\0';
        return n;
}

/* ---- keys -------------------------------------------------------------------- */

void dl_etcd_prefix_end(const char *prefix, char *buf, size_t size)
{
        snprintf(buf, size, "%s", prefix);
        size_t n = strlen(buf);
        if (n > 0)
                buf[n - 1]++; /* our prefixes end in '/': '0' follows */
}

void dl_etcd_queue_key(const dl_etcd_url *u, const char *name, char *buf, size_t size)
{
        if (name == NULL)
                snprintf(buf, size, "%s/q/", u->prefix);
        else
                snprintf(buf, size, "%s/q/%s/", u->prefix, name);
}

void dl_etcd_entry_key(const dl_etcd_url *u, const char *name, const char *token, char *buf, size_t size)
{
        snprintf(buf, size, "%s/q/%s/%s", u->prefix, name, token);
}

void dl_etcd_fence_key(const dl_etcd_url *u, const char *name, char *buf, size_t size)
{
        snprintf(buf, size, "%s/f/%s", u->prefix, name);
}

/* ---- transactions --------------------------------------------------------------- */

void dl_etcd_txn_init(dl_etcd_txn *t)
{
        t->compare = json_object_new_array();
        t->success = json_object_new_array();
        t->failure = json_object_new_array();
}

void dl_etcd_txn_free(dl_etcd_txn *t)
{
        json_object_put(t->compare);
        json_object_put(t->success);
        json_object_put(t->failure);
        t->compare = t->success = t->failure = NULL;
}

void dl_etcd_cmp_rev(dl_etcd_txn *t, const char *key, const char *range_end, const char *target,
                     const char *result, long long rev)
{
        json_object *c = json_object_new_object();
        json_object_object_add(c, "key", dl_etcd_b64(key, strlen(key)));
        if (range_end != NULL)
                json_object_object_add(c, "range_end", dl_etcd_b64(range_end, strlen(range_end)));
        json_object_object_add(c, "target", json_object_new_string(target));
        json_object_object_add(c, "result", json_object_new_string(result));
        const char *field = strcmp(target, "CREATE") == 0 ? "create_revision"
                            : strcmp(target, "MOD") == 0  ? "mod_revision"
                                                          : "version";
        json_object_object_add(c, field, num_string(rev));
        json_object_array_add(t->compare, c);
}

void dl_etcd_cmp_value(dl_etcd_txn *t, const char *key, const char *result, const char *value)
{
        json_object *c = json_object_new_object();
        json_object_object_add(c, "key", dl_etcd_b64(key, strlen(key)));
        json_object_object_add(c, "target", json_object_new_string("VALUE"));
        json_object_object_add(c, "result", json_object_new_string(result));
        json_object_object_add(c, "value", dl_etcd_b64(value, strlen(value)));
        json_object_array_add(t->compare, c);
}

void dl_etcd_op_put(dl_etcd_txn *t, bool then, const char *key, const char *value, long long lease)
{
        json_object *p = json_object_new_object(), *op = json_object_new_object();
        json_object_object_add(p, "key", dl_etcd_b64(key, strlen(key)));
        json_object_object_add(p, "value", dl_etcd_b64(value, strlen(value)));
        if (lease != 0)
                json_object_object_add(p, "lease", num_string(lease));
        json_object_object_add(op, "request_put", p);
        json_object_array_add(then ? t->success : t->failure, op);
}

void dl_etcd_op_range(dl_etcd_txn *t, bool then, const char *key, const char *range_end)
{
        json_object *r = json_object_new_object(), *op = json_object_new_object();
        json_object_object_add(r, "key", dl_etcd_b64(key, strlen(key)));
        if (range_end != NULL)
                json_object_object_add(r, "range_end", dl_etcd_b64(range_end, strlen(range_end)));
        json_object_object_add(op, "request_range", r);
        json_object_array_add(then ? t->success : t->failure, op);
}

int dl_etcd_txn_run(const dl_etcd_url *u, dl_etcd_txn *t, const dl_time *deadline, bool *succeeded,
                    long long *revision, dl_etcd_reply *reply, dirlock_error *err)
{
        json_object *req = json_object_new_object();
        json_object_object_add(req, "compare", json_object_get(t->compare));
        json_object_object_add(req, "success", json_object_get(t->success));
        json_object_object_add(req, "failure", json_object_get(t->failure));
        int rc = dl_etcd_call(u, "/v3/kv/txn", req, deadline, NULL, reply, err);
        json_object_put(req);
        if (rc != DIRLOCK_OK)
                return rc;
        if (reply->body == NULL) {
                int code = reply->grpc_code;
                char msg[sizeof reply->message];
                snprintf(msg, sizeof msg, "%s", reply->message);
                /* A put under a lease that is gone (expired or revoked meanwhile). */
                if (code == 5)
                        return dl_fail(err, DIRLOCK_ELOST, 0, "etcd: %s", msg);
                return dl_fail(err, DIRLOCK_EDATA, 0, "etcd refused a transaction: %s (gRPC code %d)", msg,
                               code);
        }
        json_object *s;
        *succeeded = json_object_object_get_ex(reply->body, "succeeded", &s) && json_object_get_boolean(s);
        *revision = dl_etcd_revision(reply->body);
        return DIRLOCK_OK;
}

static int parse_kv(json_object *o, dl_etcd_kv *kv)
{
        memset(kv, 0, sizeof *kv);
        json_object *k, *v;
        if (!json_object_object_get_ex(o, "key", &k) ||
            dl_etcd_unb64(json_object_get_string(k), kv->key, sizeof kv->key) < 0)
                return -1;
        if (json_object_object_get_ex(o, "value", &v) &&
            dl_etcd_unb64(json_object_get_string(v), kv->value, sizeof kv->value) < 0)
                return -1;
        kv->create_revision = num(o, "create_revision");
        kv->mod_revision = num(o, "mod_revision");
        kv->version = num(o, "version");
        kv->lease = num(o, "lease");
        return 0;
}

/* The kvs of a range response object, malloc'd. */
static int parse_range(json_object *rr, dl_etcd_kv **kvs, size_t *n, dirlock_error *err)
{
        *kvs = NULL;
        *n = 0;
        json_object *arr;
        if (!json_object_object_get_ex(rr, "kvs", &arr))
                return DIRLOCK_OK; /* none */
        size_t len = json_object_array_length(arr);
        dl_etcd_kv *out = calloc(len ? len : 1, sizeof *out);
        if (out == NULL)
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        size_t got = 0;
        for (size_t i = 0; i < len; i++)
                if (parse_kv(json_object_array_get_idx(arr, i), &out[got]) == 0)
                        got++; /* a key or value too long is none of ours */
        *kvs = out;
        *n = got;
        return DIRLOCK_OK;
}

int dl_etcd_txn_range(const dl_etcd_reply *reply, size_t i, dl_etcd_kv **kvs, size_t *n, dirlock_error *err)
{
        json_object *arr;
        if (reply->body == NULL || !json_object_object_get_ex(reply->body, "responses", &arr))
                return bad_answer(err, "a transaction");
        size_t len = json_object_array_length(arr), seen = 0;
        for (size_t k = 0; k < len; k++) {
                json_object *rr;
                if (!json_object_object_get_ex(json_object_array_get_idx(arr, k), "response_range", &rr))
                        continue;
                if (seen++ == i)
                        return parse_range(rr, kvs, n, err);
        }
        return bad_answer(err, "a transaction");
}

int dl_etcd_range(const dl_etcd_url *u, const char *key, const char *range_end, bool keys_only,
                  dl_etcd_kv **kvs, size_t *n, long long *revision, const dl_time *deadline,
                  dirlock_error *err)
{
        json_object *req = json_object_new_object();
        json_object_object_add(req, "key", dl_etcd_b64(key, strlen(key)));
        if (range_end != NULL)
                json_object_object_add(req, "range_end", dl_etcd_b64(range_end, strlen(range_end)));
        if (keys_only)
                json_object_object_add(req, "keys_only", json_object_new_boolean(1));
        dl_etcd_reply r;
        int rc = dl_etcd_call(u, "/v3/kv/range", req, deadline, NULL, &r, err);
        json_object_put(req);
        if (rc != DIRLOCK_OK)
                return rc;
        if (r.body == NULL)
                return dl_fail(err, DIRLOCK_EDATA, 0, "etcd refused a range: %s (gRPC code %d)", r.message,
                               r.grpc_code);
        if (revision != NULL)
                *revision = dl_etcd_revision(r.body);
        rc = parse_range(r.body, kvs, n, err);
        dl_etcd_reply_free(&r);
        return rc;
}

json_object *dl_etcd_watch_request(const char *key)
{
        json_object *req = json_object_new_object(), *cr = json_object_new_object();
        json_object_object_add(cr, "key", dl_etcd_b64(key, strlen(key)));
        json_object_object_add(req, "create_request", cr);
        return req;
}

/* ---- leases ---------------------------------------------------------------------- */

long long dl_etcd_new_lease_id(void)
{
        char t[DIRLOCK_TOKEN_LEN + 1];
        long long id = 0;
        if (dl_random_token(t, NULL) == DIRLOCK_OK) {
                t[15] = '\0';
                id = strtoll(t, NULL, 16);
        }
        return id != 0 ? id : (long long)dl_wall_ns() & 0x0fffffffffffffffLL;
}

static json_object *lease_request(long long id)
{
        json_object *req = json_object_new_object();
        json_object_object_add(req, "ID", num_string(id));
        return req;
}

int dl_etcd_lease_ttl(const dl_etcd_url *u, long long id, const dl_time *deadline, long long *granted,
                      long long *left, dirlock_error *err)
{
        json_object *req = lease_request(id);
        dl_etcd_reply r;
        int rc = dl_etcd_call(u, "/v3/lease/timetolive", req, deadline, NULL, &r, err);
        json_object_put(req);
        if (rc != DIRLOCK_OK)
                return rc;
        *granted = *left = -1;
        if (r.body != NULL) {
                *left = num(r.body, "TTL");
                *granted = num(r.body, "grantedTTL");
                if (*left < 0)
                        *granted = -1;
        }
        dl_etcd_reply_free(&r);
        return DIRLOCK_OK;
}

int dl_etcd_lease_grant(const dl_etcd_url *u, long long id, long long ttl, const dl_time *deadline,
                        long long *granted, dirlock_error *err)
{
        json_object *req = lease_request(id);
        json_object_object_add(req, "TTL", num_string(ttl));
        dl_etcd_reply r;
        int rc = dl_etcd_call(u, "/v3/lease/grant", req, deadline, NULL, &r, err);
        json_object_put(req);
        if (rc != DIRLOCK_OK)
                return rc;
        if (r.body == NULL && r.grpc_code == 9) {
                /* "lease already exists": ours, granted by a request whose
                 * answer was lost. */
                long long left;
                rc = dl_etcd_lease_ttl(u, id, deadline, granted, &left, err);
                if (rc == DIRLOCK_OK && *granted <= 0)
                        rc = bad_answer(err, "a lease grant");
                return rc;
        }
        if (r.body == NULL)
                return dl_fail(err, DIRLOCK_EDATA, 0, "etcd refused a lease: %s (gRPC code %d)", r.message,
                               r.grpc_code);
        json_object *e;
        if (json_object_object_get_ex(r.body, "error", &e) && json_object_get_string_len(e) > 0) {
                rc = dl_fail(err, DIRLOCK_EDATA, 0, "etcd refused a lease: %s", json_object_get_string(e));
                dl_etcd_reply_free(&r);
                return rc;
        }
        *granted = num(r.body, "TTL");
        dl_etcd_reply_free(&r);
        return *granted > 0 ? DIRLOCK_OK : bad_answer(err, "a lease grant");
}

int dl_etcd_lease_keepalive(const dl_etcd_url *u, long long id, const dl_time *deadline, long long *ttl_left,
                            dirlock_error *err)
{
        json_object *req = lease_request(id);
        dl_etcd_reply r;
        int rc = dl_etcd_call(u, "/v3/lease/keepalive", req, deadline, NULL, &r, err);
        json_object_put(req);
        if (rc != DIRLOCK_OK)
                return rc;
        *ttl_left = 0;
        json_object *res;
        if (r.body != NULL && json_object_object_get_ex(r.body, "result", &res))
                *ttl_left = num(res, "TTL");
        else if (r.body != NULL && json_object_object_get_ex(r.body, "error", NULL))
                rc = dl_fail(err, DIRLOCK_ESERVER, 0, "etcd: the keep-alive of a lease was refused");
        dl_etcd_reply_free(&r);
        return rc;
}

int dl_etcd_lease_revoke(const dl_etcd_url *u, long long id, const dl_time *deadline, bool *found,
                         bool *resent, dirlock_error *err)
{
        json_object *req = lease_request(id);
        dl_etcd_reply r;
        int rc = dl_etcd_call(u, "/v3/lease/revoke", req, deadline, resent, &r, err);
        json_object_put(req);
        if (rc != DIRLOCK_OK)
                return rc;
        *found = r.body != NULL;
        if (r.body == NULL && r.grpc_code != 5)
                rc = dl_fail(err, DIRLOCK_EDATA, 0, "etcd refused to revoke a lease: %s (gRPC code %d)",
                             r.message, r.grpc_code);
        dl_etcd_reply_free(&r);
        return rc;
}
