/* conn_cache.c - the connections a backend keeps open to its servers, per
 * thread, so that a lock does not pay a connect (and a handshake) each
 * time.  The backend owns what a connection is (a hiredis context, a
 * libcurl easy handle, ...); this file only keeps idle ones.  Used by the
 * Redis backend (redis/redis_conn.c) and the etcd backend
 * (etcd/etcd_http.c).
 *
 * CONTRACT.
 *   - A connection is either checked out -- the caller's alone -- or
 *     idle in the calling thread's cache.  dl_conn_get() checks out an
 *     idle connection of that thread to `key` (the most recently used),
 *     or returns NULL: then the caller makes one.  A connection checked
 *     out is handed to no other caller, in this thread or another, until
 *     it is given back with dl_conn_put(): several acquires of one thread
 *     may wait at once, each on its own connection (a BLPOP in flight).
 *   - `key` is the server's address as a string that tells apart every
 *     connection that must not be shared (credentials, database, ...).
 *     The string given to dl_conn_put() must live as long as the
 *     connection (keep it inside the connection).
 *   - A connection that failed, or holds a reply nobody will read, is
 *     not given back: its owner closes it.  A connection given back must
 *     be ready for the next request, as far as its owner knows; the next
 *     user may still find it closed by the server (and makes a new one).
 *   - At most `max_idle` connections of one cache are kept idle per
 *     thread: giving back one more closes the least recently used.
 *   - A thread's idle connections are closed when it exits (a thread-key
 *     destructor) with close(conn, false).
 *   - After fork() the child does not use its parent's connections: the
 *     first call in the child hands each idle one to close(conn, true),
 *     which must free it without sending anything on it (the parent still
 *     uses the other copy of its descriptor: a TLS close_notify or an
 *     HTTP/2 GOAWAY would break the parent's).  Connections checked out
 *     in the parent at the fork are the caller's, as before.
 *   - Threads never share a cache entry: no locking. */
#include "server.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The idle connections of one thread, of every cache. */
#define IDLE_SLOTS 16

struct idle {
        const dl_conn_cache *cache; /* NULL: a free slot */
        const char *key;
        void *conn;
        unsigned long long last_use;
};

struct thread_idle {
        pid_t pid; /* the process these connections belong to */
        unsigned long long clock;
        struct idle slot[IDLE_SLOTS];
};

static _Thread_local struct thread_idle *mine;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void close_slot(struct idle *s, bool forked)
{
        s->cache->close(s->conn, forked);
        s->cache = NULL;
        s->conn = NULL;
        s->key = NULL;
}

static void thread_exit(void *p)
{
        struct thread_idle *t = p;
        for (int i = 0; i < IDLE_SLOTS; i++)
                if (t->slot[i].cache != NULL)
                        close_slot(&t->slot[i], false);
        free(t);
        mine = NULL;
}

static void exit_key_create(void)
{
        dl_thread_key_create(&exit_key, thread_exit);
}

/* The calling thread's idle connections, or NULL (out of memory). */
static struct thread_idle *thread_idle(void)
{
        pid_t pid = dl_self_pid(); /* no system call but the first */
        struct thread_idle *t = mine;
        if (t != NULL && t->pid == pid)
                return t;
        if (t != NULL) {
                /* A forked child's copy of its parent's: never ours to use. */
                for (int i = 0; i < IDLE_SLOTS; i++)
                        if (t->slot[i].cache != NULL)
                                close_slot(&t->slot[i], true);
                t->pid = pid;
                return t;
        }
        pthread_once(&exit_once, exit_key_create);
        t = calloc(1, sizeof *t);
        if (t == NULL)
                return NULL;
        t->pid = pid;
        mine = t;
        pthread_setspecific(exit_key, t);
        return t;
}

void *dl_conn_get(const dl_conn_cache *cache, const char *key)
{
        struct thread_idle *t = thread_idle();
        struct idle *best = NULL;
        for (int i = 0; t != NULL && i < IDLE_SLOTS; i++) {
                struct idle *s = &t->slot[i];
                if (s->cache == cache && (best == NULL || s->last_use > best->last_use) &&
                    strcmp(s->key, key) == 0)
                        best = s;
        }
        if (best == NULL)
                return NULL;
        void *conn = best->conn;
        best->cache = NULL;
        best->conn = NULL;
        best->key = NULL;
        return conn;
}

/* Whether conn is idle in t already (given back twice, it would be handed
 * to two callers). */
static inline bool idle_already(const struct thread_idle *t, const void *conn)
{
        for (int i = 0; i < IDLE_SLOTS; i++)
                if (t->slot[i].cache != NULL && t->slot[i].conn == conn)
                        return true;
        return false;
}

void dl_conn_put(const dl_conn_cache *cache, void *conn, const char *key)
{
        if (conn == NULL)
                return;
        struct thread_idle *t = thread_idle();
        DL_ASSERT(key != NULL && (t == NULL || !idle_already(t, conn)));
        if (t == NULL || cache->max_idle == 0) {
                cache->close(conn, false);
                return;
        }
        /* A free slot; else the least recently used of this cache once it
         * keeps max_idle, or of all. */
        struct idle *free_slot = NULL, *oldest_mine = NULL, *oldest = NULL;
        unsigned kept = 0;
        for (int i = 0; i < IDLE_SLOTS; i++) {
                struct idle *s = &t->slot[i];
                if (s->cache == NULL) {
                        if (free_slot == NULL)
                                free_slot = s;
                        continue;
                }
                if (oldest == NULL || s->last_use < oldest->last_use)
                        oldest = s;
                if (s->cache == cache) {
                        kept++;
                        if (oldest_mine == NULL || s->last_use < oldest_mine->last_use)
                                oldest_mine = s;
                }
        }
        struct idle *slot = kept >= cache->max_idle && oldest_mine != NULL ? oldest_mine
                            : free_slot != NULL                            ? free_slot
                                                                           : oldest;
        if (slot->cache != NULL)
                close_slot(slot, false);
        *slot = (struct idle){cache, key, conn, ++t->clock};
}
