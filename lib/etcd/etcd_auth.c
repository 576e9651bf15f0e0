/* etcd_auth.c - logging in to an etcd cluster's authentication (a space
 * with user=NAME), and the calls made as that user: every request of the
 * backend goes through dl_etcd_call or dl_etcd_watch_wait here, which add
 * the token to what etcd_http.c sends.
 *
 * THE TOKEN.  etcd's Authenticate (POST /v3/auth/authenticate, the user's
 * name and password) answers a token that every later request carries
 * ("Authorization:").  It costs the cluster a password hash and a write
 * through its log, so a process logs in once per cluster and user and
 * keeps the token, for all its threads, in a small table under the
 * cluster's key (dl_etcd_url_cluster: the members, the TLS files, the
 * user and where the password is -- never the password itself, which is
 * read from its file or variable at each log-in and wiped once sent).
 * A token lives until it expires (etcd's --auth-token-ttl, or a JWT's
 * expiry) or the member that keeps it restarts: the cluster then answers
 * Unauthenticated, and the call logs in again and is made once more --
 * the request was refused, not done, so asking again is asking once.
 * Two threads that find the same token refused log in once each; the
 * table keeps the newer.  A forked child goes on with its parent's
 * token (it is not bound to a connection).  A cluster whose
 * authentication is off answers the log-in "authentication is not
 * enabled": the space then sends no token. */
#include "etcd.h"
#include "secret.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Clusters (and users) whose token one process keeps. */
#define TOKENS 4
/* The longest password sent (bcrypt, etcd's hash, reads 72 bytes). */
#define PASSWORD_MAX 255

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static struct token {
        char key[DL_ETCD_CLUSTER_MAX]; /* "": unused */
        char token[DL_ETCD_TOKEN_MAX];
        unsigned long long used;
} tokens[TOKENS];
static unsigned long long uses;

/* The entry of `key`, or NULL; with `make`, the least recently used one
 * made its.  Under the mutex. */
static struct token *entry_of(const char *key, bool make)
{
        struct token *lru = &tokens[0];
        for (size_t i = 0; i < TOKENS; i++) {
                if (strcmp(tokens[i].key, key) == 0 && key[0] != '\0')
                        return &tokens[i];
                if (tokens[i].used < lru->used)
                        lru = &tokens[i];
        }
        if (!make)
                return NULL;
        dl_secret_wipe(lru->token, sizeof lru->token);
        snprintf(lru->key, sizeof lru->key, "%s", key);
        return lru;
}

/* Wipe what a request's JSON holds of the password: the serialized text
 * and the string. */
static void wipe_request(json_object *req, json_object *password)
{
        char *text = (char *)json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
        if (text != NULL)
                dl_secret_wipe(text, strlen(text));
        char *p = (char *)json_object_get_string(password);
        if (p != NULL)
                dl_secret_wipe(p, strlen(p));
}

/* Authenticate as u's user by `deadline`: the token into out ("" when
 * the cluster's authentication is off). */
static int log_in(const dl_etcd_url *u, const dl_time *deadline, char *out, size_t size, dirlock_error *err)
{
        char password[PASSWORD_MAX + 1], who[DL_ETCD_USER_MAX + 32];
        snprintf(who, sizeof who, "etcd user '%s'", u->user);
        int rc = dl_secret_read(u->password_file, u->password_env, password, sizeof password, who, err);
        if (rc != DIRLOCK_OK)
                return rc;
        json_object *req = json_object_new_object(), *pw = json_object_new_string(password);
        dl_secret_wipe(password, sizeof password);
        if (req == NULL || pw == NULL) {
                json_object_put(req);
                json_object_put(pw);
                return dl_fail(err, DIRLOCK_ENOMEM, 0, "out of memory");
        }
        json_object_object_add(req, "name", json_object_new_string(u->user));
        json_object_object_add(req, "password", json_object_get(pw));
        dl_etcd_reply r;
        rc = dl_etcd_post(u, "/v3/auth/authenticate", req, NULL, deadline, NULL, &r, NULL, err);
        wipe_request(req, pw);
        json_object_put(pw);
        json_object_put(req);
        if (rc != DIRLOCK_OK)
                return rc;
        out[0] = '\0';
        json_object *t;
        if (r.body == NULL && r.grpc_code == 9 && strstr(r.message, "not enabled") != NULL)
                return DIRLOCK_OK; /* authentication off: no token */
        if (r.body == NULL || !json_object_object_get_ex(r.body, "token", &t) ||
            strlen(json_object_get_string(t)) >= size) {
                rc = dl_fail(err, DIRLOCK_EDATA, 0, "etcd: the log-in of %s got no token it can keep: %s",
                             who, r.body == NULL ? r.message : "no token, or a longer one");
                dl_etcd_reply_free(&r);
                return rc;
        }
        snprintf(out, size, "%s", json_object_get_string(t));
        dl_etcd_reply_free(&r);
        return DIRLOCK_OK;
}

int dl_etcd_token(const dl_etcd_url *u, const char *stale, char *out, size_t size, dirlock_error *err)
{
        char refused[DL_ETCD_TOKEN_MAX];
        snprintf(refused, sizeof refused, "%s", stale != NULL ? stale : "");
        out[0] = '\0';
        if (u->user[0] == '\0')
                return DIRLOCK_OK;
        char key[DL_ETCD_CLUSTER_MAX];
        dl_etcd_url_cluster(u, key, sizeof key);
        pthread_mutex_lock(&mutex);
        struct token *e = entry_of(key, false);
        bool fresh = e != NULL && (stale == NULL || strcmp(e->token, refused) != 0);
        if (fresh) {
                /* Ours, or one another thread got after `stale` was refused. */
                snprintf(out, size, "%s", e->token);
                e->used = ++uses;
        }
        pthread_mutex_unlock(&mutex);
        dl_secret_wipe(refused, sizeof refused);
        if (fresh)
                return DIRLOCK_OK;
        dl_time login = dl_deadline(DL_ETCD_LOGIN_MS / 1e3);
        int rc = log_in(u, &login, out, size, err);
        if (rc != DIRLOCK_OK)
                return rc;
        pthread_mutex_lock(&mutex);
        e = entry_of(key, true);
        snprintf(e->token, sizeof e->token, "%s", out);
        e->used = ++uses;
        pthread_mutex_unlock(&mutex);
        return DIRLOCK_OK;
}

int dl_etcd_call(const dl_etcd_url *u, const char *path, json_object *request, const dl_time *deadline,
                 bool *sent, dl_etcd_reply *r, dirlock_error *err)
{
        char token[DL_ETCD_TOKEN_MAX];
        bool refused = false, again_sent = false;
        if (sent != NULL)
                *sent = false;
        int rc = dl_etcd_token(u, NULL, token, sizeof token, err);
        if (rc == DIRLOCK_OK)
                rc = dl_etcd_post(u, path, request, token, deadline, sent, r, &refused, err);
        if (rc == DIRLOCK_EAUTH && refused && u->user[0] != '\0') {
                rc = dl_etcd_token(u, token, token, sizeof token, err);
                if (rc == DIRLOCK_OK)
                        rc = dl_etcd_post(u, path, request, token, deadline, &again_sent, r, NULL, err);
                if (sent != NULL)
                        *sent = *sent || again_sent;
        }
        dl_secret_wipe(token, sizeof token);
        return rc;
}

int dl_etcd_watch_wait(const dl_etcd_url *u, json_object *request, const dl_time *until, int cancel_fd,
                       int pid_fd, dl_etcd_made_fn *made, void *arg, dl_etcd_woken *woken, dirlock_error *err)
{
        char token[DL_ETCD_TOKEN_MAX];
        bool refused = false;
        *woken = DL_ETCD_QUIET;
        int rc = dl_etcd_token(u, NULL, token, sizeof token, err);
        if (rc == DIRLOCK_OK)
                rc = dl_etcd_watch(u, token, request, until, cancel_fd, pid_fd, made, arg, woken, &refused,
                                   err);
        if (rc == DIRLOCK_EAUTH && refused && u->user[0] != '\0') {
                rc = dl_etcd_token(u, token, token, sizeof token, err);
                if (rc == DIRLOCK_OK)
                        rc = dl_etcd_watch(u, token, request, until, cancel_fd, pid_fd, made, arg, woken,
                                           &refused, err);
        }
        dl_secret_wipe(token, sizeof token);
        return rc;
}
