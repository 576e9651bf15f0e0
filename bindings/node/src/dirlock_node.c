/* dirlock_node.c - the dirlock C library as a Node.js addon (Node-API, C):
 * acquires that never block the event loop, the calls on a held lock, and
 * the few that look at a lock space.  index.js builds the public API on
 * it (Lock, LockError, the release function); this file owns how a
 * pending acquire meets libuv.
 *
 * WAITING.  An acquire is the library's pending acquire (lib/pending.c)
 * with DIRLOCK_THREAD_FD: it has no descriptor of its own.  start() runs
 * it to its first wait at once (a free lock is taken there) -- or, when
 * this turn of the loop has started many already, queues it -- and the
 * thread's descriptor, shared by all of them, is in this thread's libuv
 * loop with one uv_poll while any acquire waits.  Each time it is readable
 * the poll callback runs the acquires that can go on
 * (dirlock_pending_next: about a millisecond of them per turn, so that
 * timers and I/O run in between) and calls back those that ended.  The
 * result always comes from the loop, on its next turn at the earliest: a
 * program that acquires and releases in a loop of its own gives the event
 * loop -- timers, I/O, this process's other waiters -- a turn between two
 * acquires.  The loop never waits inside the library, and no thread pool
 * is used: any number of acquires may wait at once, each costing memory
 * (a fiber's stack, mostly unused) and no descriptor.  The acquire's
 * deadline wakes it in the library (no timer here), and cancel() makes it
 * end with ECANCELED.
 *
 * STATES of a struct pending:
 *
 *   start() --> WAITING --dirlock_pending_next returns it--> the callback
 *                         called; freed (dirlock_pending_free)
 *
 *   A pending is in the addon's list (and findable by its id) exactly
 *   while WAITING; its JS callback is called exactly once, through
 *   napi_make_callback (so that promises settled there run their
 *   reactions before the loop goes on).  The poll runs while the list is
 *   not empty, so that a loop with no acquire waiting may end.
 *
 * HOLDS.  A lock the addon handed out is a `struct hold` behind a JS
 * external.  The addon keeps a strong reference to the external while the
 * lock is held, so a lock is never released behind its holder's back by
 * the garbage collector: it stays held until release() (or until the
 * environment -- the process, a worker thread -- ends, when the cleanup
 * hook releases it).  An upgrade in flight marks its hold busy; every
 * other call on a busy hold is refused.
 *
 * THREADS.  Each environment (the main thread, each worker thread) loads
 * its own instance of the addon with its own lists; the library's
 * per-thread state (its inotify hub, connections) belongs to that thread,
 * as a pending acquire must (it is started, stepped and freed by one
 * thread). */
#define NAPI_VERSION 8
#include <node_api.h>
#include <uv.h>

#include <dirlock.h>
#include <dirlock_async.h>
#include <dirlock_fence.h>
#include <dirlock_range.h>
#include <dirlock_rw.h>

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the addon's state, one per environment ------------------------------ */

struct pending;
struct hold;

struct addon {
        napi_env env;
        uv_loop_t *loop;
        napi_ref error_class;    /* LockError, given by index.js (init) */
        struct pending *waiting; /* the pendings in state WAITING */
        struct hold *held;       /* the holds that hold a lock */
        uv_poll_t *poll;         /* on the thread's descriptor, or NULL */
        bool poll_active;
        double next_id;
        bool closing; /* the environment is going away */
};

enum kind { KIND_ACQUIRE, KIND_RANGE, KIND_MANY, KIND_UPGRADE };

struct pending {
        struct addon *a;
        dirlock_pending *p;
        double id;
        enum kind kind;
        napi_ref callback;
        napi_async_context context;
        struct hold *hold; /* KIND_UPGRADE: the hold being upgraded */
        struct pending *next;
};

struct hold {
        struct addon *a;
        dirlock *h;       /* one lock (or a range) ...                */
        dirlock_set *set; /* ... or a set of names; both NULL: released */
        napi_ref self;    /* strong reference to the external while held */
        bool upgrading;   /* an upgrade in flight: no other call       */
        struct hold *prev, *next;
};

/* ---- errors ------------------------------------------------------------------ */

/* Make a LockError of `code` with `message` (the code's short text when
 * empty), with .code (the library's name), .number and .errno. */
static napi_value lock_error(napi_env env, struct addon *a, int code, int sys_errno, const char *message)
{
        if (message == NULL || message[0] == '\0')
                message = dirlock_strerror(code);
        const char *name = dirlock_code_name(code);
        char fallback[32];
        if (name == NULL) {
                snprintf(fallback, sizeof fallback, "E%d", code);
                name = fallback;
        }
        napi_value msg, cls, err = NULL, code_v, number_v, errno_v;
        if (napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &msg) != napi_ok)
                return NULL;
        if (a != NULL && a->error_class != NULL &&
            napi_get_reference_value(env, a->error_class, &cls) == napi_ok && cls != NULL)
                napi_new_instance(env, cls, 1, &msg, &err);
        if (err == NULL) {
                napi_value code_s;
                napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code_s);
                napi_create_error(env, code_s, msg, &err);
        }
        if (err == NULL)
                return NULL;
        napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code_v);
        napi_create_int32(env, code, &number_v);
        napi_create_int32(env, sys_errno, &errno_v);
        napi_set_named_property(env, err, "code", code_v);
        napi_set_named_property(env, err, "number", number_v);
        napi_set_named_property(env, err, "errno", errno_v);
        return err;
}

static napi_value error_of(napi_env env, struct addon *a, int rc, const dirlock_error *err)
{
        bool about = err != NULL && err->code == rc;
        return lock_error(env, a, rc, about ? err->sys_errno : 0, about ? err->message : NULL);
}

/* Throw the library's error; returns NULL for the caller to return. */
static napi_value throw_code(napi_env env, struct addon *a, int rc, const dirlock_error *err)
{
        napi_value e = error_of(env, a, rc, err);
        if (e != NULL)
                napi_throw(env, e);
        return NULL;
}

static napi_value throw_invalid(napi_env env, struct addon *a, const char *message)
{
        napi_value e = lock_error(env, a, DIRLOCK_EINVAL, 0, message);
        if (e != NULL)
                napi_throw(env, e);
        return NULL;
}

/* A failed Node-API call: throw what it left, or a plain Error. */
static napi_value napi_failed(napi_env env, const char *what)
{
        bool pending = false;
        napi_is_exception_pending(env, &pending);
        if (!pending)
                napi_throw_error(env, NULL, what);
        return NULL;
}

#define CHECK(env, call)                                                                                     \
        do {                                                                                                 \
                if ((call) != napi_ok)                                                                       \
                        return napi_failed((env), #call);                                                    \
        } while (0)

/* ---- arguments --------------------------------------------------------------- */

static struct addon *args_of(napi_env env, napi_callback_info info, size_t want, napi_value *argv)
{
        size_t argc = want;
        void *data = NULL;
        if (napi_get_cb_info(env, info, &argc, argv, NULL, &data) != napi_ok)
                return NULL;
        for (size_t i = argc; i < want; i++)
                napi_get_undefined(env, &argv[i]);
        return data;
}

/* A JS string as a malloc'd C string; NULL with a TypeError thrown. */
static char *string_arg(napi_env env, napi_value v, const char *what)
{
        size_t len;
        if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) {
                char msg[96];
                snprintf(msg, sizeof msg, "%s must be a string", what);
                napi_throw_type_error(env, NULL, msg);
                return NULL;
        }
        char *s = malloc(len + 1);
        if (s == NULL) {
                napi_throw_error(env, NULL, "out of memory");
                return NULL;
        }
        napi_get_value_string_utf8(env, v, s, len + 1, &len);
        /* A NUL inside would cut the string short in C: another name. */
        if (strlen(s) != len) {
                free(s);
                char msg[96];
                snprintf(msg, sizeof msg, "%s has a NUL character", what);
                napi_throw_type_error(env, NULL, msg);
                return NULL;
        }
        return s;
}

static bool number_prop(napi_env env, napi_value obj, const char *key, double *out)
{
        napi_value v;
        return napi_get_named_property(env, obj, key, &v) == napi_ok &&
               napi_get_value_double(env, v, out) == napi_ok;
}

/* The options index.js has checked and converted: {timeout (seconds, < 0
 * forever), staleAge (seconds, 0 the default), flags, mode, policy}. */
static bool options_arg(napi_env env, napi_value obj, dirlock_options *o)
{
        dirlock_options_init(o);
        double flags, mode, policy;
        if (!number_prop(env, obj, "timeout", &o->timeout) ||
            !number_prop(env, obj, "staleAge", &o->stale_age) || !number_prop(env, obj, "flags", &flags) ||
            !number_prop(env, obj, "mode", &mode) || !number_prop(env, obj, "policy", &policy)) {
                napi_throw_type_error(env, NULL,
                                      "internal: options must be {timeout, staleAge, flags, mode, policy}");
                return false;
        }
        o->flags = (unsigned)flags & ~DIRLOCK_CANCEL_FD; /* cancel() is the way here */
        o->mode = (int)mode;
        o->policy = (int)policy;
        return true;
}

/* ---- holds --------------------------------------------------------------------- */

static void hold_unlink(struct hold *h)
{
        if (h->a == NULL)
                return;
        if (h->prev != NULL)
                h->prev->next = h->next;
        else
                h->a->held = h->next;
        if (h->next != NULL)
                h->next->prev = h->prev;
        h->prev = h->next = NULL;
        h->a = NULL;
}

/* Release what a hold holds, in any state; the library's result. */
static int hold_let_go(struct hold *h, dirlock_error *err)
{
        int rc = DIRLOCK_OK;
        if (h->h != NULL)
                rc = dirlock_release(h->h, err);
        else if (h->set != NULL)
                rc = dirlock_release_many(h->set, err);
        h->h = NULL;
        h->set = NULL;
        hold_unlink(h);
        return rc;
}

/* The external's finalizer: the garbage collector let go of it, which it
 * only can once the lock was released (the strong reference is gone), or
 * when the environment ends. */
static void hold_finalize(napi_env env, void *data, void *hint)
{
        (void)env;
        (void)hint;
        struct hold *h = data;
        hold_let_go(h, NULL);
        free(h);
}

/* A new hold of `lock` or `set`, as an external the addon references. */
static napi_value hold_new(napi_env env, struct addon *a, dirlock *lock, dirlock_set *set)
{
        struct hold *h = calloc(1, sizeof *h);
        napi_value ext;
        if (h == NULL || napi_create_external(env, h, hold_finalize, NULL, &ext) != napi_ok) {
                free(h);
                if (lock != NULL)
                        dirlock_free(lock, NULL);
                if (set != NULL)
                        dirlock_release_many(set, NULL);
                return napi_failed(env, "cannot make a lock's handle");
        }
        h->a = a;
        h->h = lock;
        h->set = set;
        h->next = a->held;
        if (a->held != NULL)
                a->held->prev = h;
        a->held = h;
        if (napi_create_reference(env, ext, 1, &h->self) != napi_ok)
                h->self = NULL; /* then the garbage collector may free it */
        return ext;
}

/* The hold behind an external; NULL with an error thrown.  `single`: the
 * call needs one lock, not a set.  A busy or released hold is refused. */
static struct hold *hold_arg(napi_env env, struct addon *a, napi_value v, bool single, const char *what)
{
        void *data = NULL;
        napi_valuetype t;
        if (napi_typeof(env, v, &t) != napi_ok || t != napi_external ||
            napi_get_value_external(env, v, &data) != napi_ok || data == NULL) {
                napi_throw_type_error(env, NULL, "internal: not a lock's handle");
                return NULL;
        }
        struct hold *h = data;
        char msg[160];
        if (h->h == NULL && h->set == NULL) {
                snprintf(msg, sizeof msg, "%s: the lock was released already", what);
                napi_value e = lock_error(env, a, DIRLOCK_EBALANCE, 0, msg);
                if (e != NULL)
                        napi_throw(env, e);
                return NULL;
        }
        if (h->upgrading) {
                snprintf(msg, sizeof msg,
                         "%s: an upgrade of this lock is under way (await it, or abort it with its signal)",
                         what);
                throw_invalid(env, a, msg);
                return NULL;
        }
        if (single && h->set == NULL)
                return h;
        if (single) {
                snprintf(msg, sizeof msg, "%s is for a lock of one name, not a set of names", what);
                throw_invalid(env, a, msg);
                return NULL;
        }
        return h;
}

static void hold_forget(napi_env env, struct hold *h)
{
        if (h->self != NULL) {
                napi_delete_reference(env, h->self);
                h->self = NULL;
        }
}

/* ---- pending acquires ------------------------------------------------------------ */

static void pending_unlink(struct pending *pe)
{
        for (struct pending **q = &pe->a->waiting; *q != NULL; q = &(*q)->next)
                if (*q == pe) {
                        *q = pe->next;
                        break;
                }
        pe->next = NULL;
}

/* The arguments the JS callback gets for a finished step: (error) or
 * (null, hold).  An acquire that ends without a lock takes none. */
static void pending_result(napi_env env, struct pending *pe, int rc, const dirlock_error *err,
                           napi_value argv[2], size_t *argc)
{
        napi_get_null(env, &argv[0]);
        *argc = 1;
        if (pe->kind == KIND_UPGRADE) {
                pe->hold->upgrading = false;
                if (rc != DIRLOCK_OK)
                        argv[0] = error_of(env, pe->a, rc, err);
                return;
        }
        if (rc != DIRLOCK_OK) {
                argv[0] = error_of(env, pe->a, rc, err);
                return;
        }
        dirlock *lock = pe->kind == KIND_MANY ? NULL : dirlock_pending_lock(pe->p);
        dirlock_set *set = pe->kind == KIND_MANY ? dirlock_pending_set(pe->p) : NULL;
        argv[1] = hold_new(env, pe->a, lock, set);
        if (argv[1] == NULL) {
                napi_value e;
                napi_get_and_clear_last_exception(env, &e);
                argv[0] = e;
                return;
        }
        *argc = 2;
}

static void pending_release_refs(napi_env env, struct pending *pe)
{
        if (pe->callback != NULL)
                napi_delete_reference(env, pe->callback);
        pe->callback = NULL;
        if (pe->context != NULL)
                napi_async_destroy(env, pe->context);
        pe->context = NULL;
}

/* Call the pending's JS callback once, with what the step ended with,
 * from the loop: an exception the callback throws is the process's
 * uncaught exception. */
static void pending_call_back(napi_env env, struct pending *pe, int rc, const dirlock_error *err)
{
        napi_handle_scope scope;
        if (napi_open_handle_scope(env, &scope) != napi_ok)
                return;
        napi_value argv[2], cb, recv, result;
        size_t argc;
        pending_result(env, pe, rc, err, argv, &argc);
        if (napi_get_reference_value(env, pe->callback, &cb) == napi_ok && cb != NULL &&
            napi_get_global(env, &recv) == napi_ok) {
                napi_status st = napi_make_callback(env, pe->context, recv, cb, argc, argv, &result);
                if (st == napi_pending_exception) {
                        napi_value e;
                        if (napi_get_and_clear_last_exception(env, &e) == napi_ok)
                                napi_fatal_exception(env, e);
                }
        }
        pending_release_refs(env, pe);
        napi_close_handle_scope(env, scope);
}

/* The poll callback: run the thread's acquires, then call back those that
 * ended.  Gathered first: an acquire that a callback starts, and that
 * ends at once (a free lock), is called back on the loop's next turn, not
 * in this one -- a loop of acquires and releases still gives the event
 * loop a turn between two. */
static void thread_ready(uv_poll_t *poll, int status, int events)
{
        (void)status;
        (void)events;
        struct addon *a = poll->data;
        struct pending *ended = NULL, **tail = &ended;
        dirlock_pending *p;
        while ((p = dirlock_pending_next()) != NULL) {
                struct pending *pe = dirlock_pending_data(p);
                pending_unlink(pe);
                *tail = pe;
                tail = &pe->next;
        }
        while (ended != NULL) {
                struct pending *pe = ended;
                ended = pe->next;
                pe->next = NULL;
                dirlock_error err;
                int rc = dirlock_pending_step(pe->p, &err);
                pending_call_back(a->env, pe, rc, &err);
                dirlock_pending_free(pe->p);
                free(pe);
        }
        if (a->waiting == NULL && a->poll_active) {
                uv_poll_stop(a->poll);
                a->poll_active = false;
        }
}

static void poll_closed(uv_handle_t *handle)
{
        free(handle);
}

/* Keep the addon loaded for good.  Its poll handle is closed by its
 * environment's clean-up, and libuv calls poll_closed on the loop's next
 * turn: after Node has unloaded the addon when the worker thread that
 * loaded it was its last user, a call into unmapped memory (SIGSEGV at
 * the worker's exit, test/worker-exit.test.js).  So the first handle pins
 * the object this code is in, as the library pins itself before it
 * registers a thread-exit destructor (lib/core/thread_key.c). */
static void pin_addon(void)
{
        Dl_info where;
        if (dladdr((void *)&pin_addon, &where) != 0 && where.dli_fname != NULL)
                (void)dlopen(where.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE); /* never closed */
}

/* The thread's descriptor polled in the loop: 0 or a libuv error. */
static int poll_start(struct addon *a, int fd)
{
        static pthread_once_t pinned = PTHREAD_ONCE_INIT;
        pthread_once(&pinned, pin_addon);
        if (a->poll == NULL) {
                uv_poll_t *poll = calloc(1, sizeof *poll);
                if (poll == NULL)
                        return UV_ENOMEM;
                int uv = uv_poll_init(a->loop, poll, fd);
                if (uv != 0) {
                        free(poll);
                        return uv;
                }
                poll->data = a;
                a->poll = poll;
        }
        if (a->poll_active)
                return 0;
        int uv = uv_poll_start(a->poll, UV_READABLE, thread_ready);
        a->poll_active = uv == 0;
        return uv;
}

/* A started pending acquire, run from the loop from here on: even one that
 * is done already (a free lock, or EBUSY) is called back from the loop,
 * whose next turn finds the thread's descriptor readable -- never from
 * inside start(), where a promise settled at once would let a loop of
 * acquires and releases run as microtasks and starve the event loop.
 * Returns its id. */
static napi_value pending_begin(napi_env env, struct addon *a, dirlock_pending *p, enum kind kind,
                                struct hold *hold, napi_value callback)
{
        struct pending *pe = calloc(1, sizeof *pe);
        napi_value name, id;
        if (pe == NULL || napi_create_reference(env, callback, 1, &pe->callback) != napi_ok ||
            napi_create_string_utf8(env, kind == KIND_UPGRADE ? "dirlock.upgrade" : "dirlock.acquire",
                                    NAPI_AUTO_LENGTH, &name) != napi_ok ||
            napi_async_init(env, NULL, name, &pe->context) != napi_ok) {
                if (pe != NULL)
                        pending_release_refs(env, pe);
                free(pe);
                dirlock_pending_free(p);
                return napi_failed(env, "cannot start an acquire");
        }
        pe->a = a;
        pe->p = p;
        pe->kind = kind;
        pe->hold = hold;
        if (hold != NULL)
                hold->upgrading = true;
        int uv = poll_start(a, dirlock_pending_fd(p));
        if (uv != 0) {
                char msg[160];
                snprintf(msg, sizeof msg, "cannot poll the acquires' descriptor in the event loop: %s",
                         uv_strerror(uv));
                if (hold != NULL)
                        hold->upgrading = false;
                pending_release_refs(env, pe);
                dirlock_pending_cancel(p);
                dirlock_pending_free(p);
                free(pe);
                napi_value e = lock_error(env, a, DIRLOCK_EIO, -uv, msg);
                if (e != NULL)
                        napi_throw(env, e);
                return NULL;
        }
        dirlock_pending_set_data(p, pe);
        pe->id = ++a->next_id;
        pe->next = a->waiting;
        a->waiting = pe;
        CHECK(env, napi_create_double(env, pe->id, &id));
        return id;
}

/* start(kind, space, name | names, lo, hi, options, callback) -> id
 * Starts an acquire of kind 0 (one name), 1 (a range of it) or 2 (a list
 * of names, all or none); callback(error) or callback(null, hold) is
 * called exactly once, from the loop. */
static napi_value js_start(napi_env env, napi_callback_info info)
{
        napi_value argv[7];
        struct addon *a = args_of(env, info, 7, argv);
        int32_t kind;
        napi_valuetype cb_type;
        CHECK(env, napi_get_value_int32(env, argv[0], &kind));
        CHECK(env, napi_typeof(env, argv[6], &cb_type));
        if (kind < KIND_ACQUIRE || kind > KIND_MANY || cb_type != napi_function) {
                napi_throw_type_error(env, NULL,
                                      "internal: start(kind, space, name, lo, hi, options, callback)");
                return NULL;
        }
        dirlock_options o;
        double lo = 0, hi = 0;
        if (!options_arg(env, argv[5], &o))
                return NULL;
        o.flags |= DIRLOCK_THREAD_FD;
        if (kind == KIND_RANGE && (napi_get_value_double(env, argv[3], &lo) != napi_ok ||
                                   napi_get_value_double(env, argv[4], &hi) != napi_ok)) {
                napi_throw_type_error(env, NULL, "internal: a range is two numbers");
                return NULL;
        }
        char *space = string_arg(env, argv[1], "the lock space");
        if (space == NULL)
                return NULL;
        uint32_t n = 1;
        char **names = NULL;
        bool ok = true;
        if (kind == KIND_MANY) {
                bool is_array = false;
                if (napi_is_array(env, argv[2], &is_array) != napi_ok || !is_array ||
                    napi_get_array_length(env, argv[2], &n) != napi_ok) {
                        napi_throw_type_error(env, NULL, "internal: the names must be an array");
                        ok = false;
                }
        }
        if (ok && (names = calloc(n ? n : 1, sizeof *names)) == NULL) {
                napi_throw_error(env, NULL, "out of memory");
                ok = false;
        }
        for (uint32_t i = 0; ok && i < n; i++) {
                napi_value v = argv[2];
                if (kind == KIND_MANY && napi_get_element(env, argv[2], i, &v) != napi_ok)
                        ok = false;
                else if ((names[i] = string_arg(env, v, "a lock name")) == NULL)
                        ok = false;
        }
        dirlock_pending *p = NULL;
        dirlock_error err;
        int rc = DIRLOCK_OK;
        if (ok) {
                if (kind == KIND_MANY)
                        rc = dirlock_acquire_many_start(space, (const char *const *)names, n, &o, &p, &err);
                else if (kind == KIND_RANGE)
                        rc = dirlock_acquire_range_start(space, names[0], lo, hi, &o, &p, &err);
                else
                        rc = dirlock_acquire_start(space, names[0], &o, &p, &err);
        }
        for (uint32_t i = 0; names != NULL && i < n; i++)
                free(names[i]);
        free(names);
        free(space);
        if (!ok)
                return NULL;
        if (rc != DIRLOCK_OK)
                return throw_code(env, a, rc, &err);
        return pending_begin(env, a, p, (enum kind)kind, NULL, argv[6]);
}

/* upgrade(hold, options, callback) -> id: intent -> exclusive, as start. */
static napi_value js_upgrade(napi_env env, napi_callback_info info)
{
        napi_value argv[3];
        struct addon *a = args_of(env, info, 3, argv);
        napi_valuetype cb_type;
        CHECK(env, napi_typeof(env, argv[2], &cb_type));
        if (cb_type != napi_function) {
                napi_throw_type_error(env, NULL, "internal: upgrade(hold, options, callback)");
                return NULL;
        }
        dirlock_options o;
        if (!options_arg(env, argv[1], &o))
                return NULL;
        o.flags |= DIRLOCK_THREAD_FD;
        struct hold *h = hold_arg(env, a, argv[0], true, "upgrade()");
        if (h == NULL)
                return NULL;
        dirlock_pending *p = NULL;
        dirlock_error err;
        int rc = dirlock_upgrade_start(h->h, &o, &p, &err);
        if (rc != DIRLOCK_OK)
                return throw_code(env, a, rc, &err);
        return pending_begin(env, a, p, KIND_UPGRADE, h, argv[2]);
}

/* cancel(id): the acquire ends at its next step with ECANCELED (or with
 * the lock, when it had it first).  Nothing for an id that is done. */
static napi_value js_cancel(napi_env env, napi_callback_info info)
{
        napi_value argv[1];
        struct addon *a = args_of(env, info, 1, argv);
        double id;
        CHECK(env, napi_get_value_double(env, argv[0], &id));
        for (struct pending *pe = a->waiting; pe != NULL; pe = pe->next)
                if (pe->id == id) {
                        dirlock_pending_cancel(pe->p);
                        break;
                }
        return NULL;
}

/* ---- calls on a held lock ------------------------------------------------------ */

static napi_value js_release(napi_env env, napi_callback_info info)
{
        napi_value argv[1];
        struct addon *a = args_of(env, info, 1, argv);
        struct hold *h = hold_arg(env, a, argv[0], false, "release()");
        if (h == NULL)
                return NULL;
        dirlock_error err;
        int rc = hold_let_go(h, &err);
        hold_forget(env, h);
        if (rc != DIRLOCK_OK)
                return throw_code(env, a, rc, &err);
        return NULL;
}

static int check_set(dirlock_set *set, dirlock_error *err)
{
        for (size_t i = 0; i < dirlock_set_count(set); i++) {
                int rc = dirlock_check(dirlock_set_lock(set, i), err);
                if (rc != DIRLOCK_OK)
                        return rc;
        }
        return DIRLOCK_OK;
}

static napi_value js_check(napi_env env, napi_callback_info info)
{
        napi_value argv[1], t;
        struct addon *a = args_of(env, info, 1, argv);
        struct hold *h = hold_arg(env, a, argv[0], false, "check()");
        if (h == NULL)
                return NULL;
        dirlock_error err;
        int rc = h->set != NULL ? check_set(h->set, &err) : dirlock_check(h->h, &err);
        if (rc != DIRLOCK_OK)
                return throw_code(env, a, rc, &err);
        CHECK(env, napi_get_boolean(env, true, &t));
        return t;
}

static napi_value js_refresh(napi_env env, napi_callback_info info)
{
        napi_value argv[1];
        struct addon *a = args_of(env, info, 1, argv);
        struct hold *h = hold_arg(env, a, argv[0], false, "refresh()");
        if (h == NULL)
                return NULL;
        dirlock_error err;
        int rc = h->set != NULL ? dirlock_refresh_many(h->set, &err) : dirlock_refresh(h->h, &err);
        if (rc != DIRLOCK_OK)
                return throw_code(env, a, rc, &err);
        return NULL;
}

/* fence(hold) -> number: exact, fences being at most 2^53 - 1. */
static napi_value js_fence(napi_env env, napi_callback_info info)
{
        napi_value argv[1], v;
        struct addon *a = args_of(env, info, 1, argv);
        struct hold *h = hold_arg(env, a, argv[0], true, "fence()");
        if (h == NULL)
                return NULL;
        dirlock_error err;
        unsigned long long fence = 0;
        int rc = dirlock_fence(h->h, &fence, &err);
        if (rc != DIRLOCK_OK)
                return throw_code(env, a, rc, &err);
        CHECK(env, napi_create_double(env, (double)fence, &v));
        return v;
}

static napi_value js_downgrade(napi_env env, napi_callback_info info)
{
        napi_value argv[1];
        struct addon *a = args_of(env, info, 1, argv);
        struct hold *h = hold_arg(env, a, argv[0], true, "downgrade()");
        if (h == NULL)
                return NULL;
        dirlock_error err;
        int rc = dirlock_downgrade(h->h, &err);
        if (rc != DIRLOCK_OK)
                return throw_code(env, a, rc, &err);
        return NULL;
}

static napi_value js_downgrade_intent(napi_env env, napi_callback_info info)
{
        napi_value argv[1];
        struct addon *a = args_of(env, info, 1, argv);
        struct hold *h = hold_arg(env, a, argv[0], true, "downgradeIntent()");
        if (h == NULL)
                return NULL;
        dirlock_error err;
        int rc = dirlock_downgrade_intent(h->h, &err);
        if (rc != DIRLOCK_OK)
                return throw_code(env, a, rc, &err);
        return NULL;
}

static napi_value js_shrink(napi_env env, napi_callback_info info)
{
        napi_value argv[3];
        struct addon *a = args_of(env, info, 3, argv);
        double lo, hi;
        if (napi_get_value_double(env, argv[1], &lo) != napi_ok ||
            napi_get_value_double(env, argv[2], &hi) != napi_ok) {
                napi_throw_type_error(env, NULL, "shrink(lo, hi) takes two numbers");
                return NULL;
        }
        struct hold *h = hold_arg(env, a, argv[0], true, "shrink()");
        if (h == NULL)
                return NULL;
        dirlock_error err;
        int rc = dirlock_shrink(h->h, lo, hi, &err);
        if (rc != DIRLOCK_OK)
                return throw_code(env, a, rc, &err);
        return NULL;
}

static napi_value string_or_null(napi_env env, const char *s)
{
        napi_value v;
        if (s == NULL)
                napi_get_null(env, &v);
        else
                napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
        return v;
}

static napi_value number(napi_env env, double d)
{
        napi_value v;
        napi_create_double(env, d, &v);
        return v;
}

static napi_value boolean(napi_env env, bool b)
{
        napi_value v;
        napi_get_boolean(env, b, &v);
        return v;
}

/* info(hold) -> {names, token, mode, range} as held now, or null once
 * released. */
static napi_value js_info(napi_env env, napi_callback_info info)
{
        napi_value argv[1], o, names, range;
        args_of(env, info, 1, argv);
        void *data = NULL;
        CHECK(env, napi_get_value_external(env, argv[0], &data));
        struct hold *h = data;
        if (h->h == NULL && h->set == NULL) {
                napi_value null;
                napi_get_null(env, &null);
                return null;
        }
        size_t n = h->set != NULL ? dirlock_set_count(h->set) : 1;
        CHECK(env, napi_create_object(env, &o));
        CHECK(env, napi_create_array_with_length(env, n, &names));
        for (size_t i = 0; i < n; i++) {
                dirlock *l = h->set != NULL ? dirlock_set_lock(h->set, i) : h->h;
                CHECK(env, napi_set_element(env, names, (uint32_t)i, string_or_null(env, dirlock_name(l))));
        }
        double lo, hi;
        if (h->h != NULL && dirlock_range_of(h->h, &lo, &hi)) {
                CHECK(env, napi_create_array_with_length(env, 2, &range));
                CHECK(env, napi_set_element(env, range, 0, number(env, lo)));
                CHECK(env, napi_set_element(env, range, 1, number(env, hi)));
        } else {
                CHECK(env, napi_get_null(env, &range));
        }
        dirlock *one = h->h != NULL ? h->h : dirlock_set_lock(h->set, 0);
        CHECK(env, napi_set_named_property(env, o, "names", names));
        CHECK(env, napi_set_named_property(env, o, "token",
                                           string_or_null(env, h->h ? dirlock_token(h->h) : NULL)));
        CHECK(env, napi_set_named_property(env, o, "mode", number(env, one ? dirlock_mode_of(one) : 0)));
        CHECK(env, napi_set_named_property(env, o, "range", range));
        return o;
}

/* ---- looking at a lock space ------------------------------------------------------- */

/* inspect(space, name, staleAge seconds) -> owner record or null (free). */
static napi_value js_inspect(napi_env env, napi_callback_info info)
{
        napi_value argv[3], o;
        struct addon *a = args_of(env, info, 3, argv);
        double stale;
        if (napi_get_value_double(env, argv[2], &stale) != napi_ok)
                stale = 0;
        char *space = string_arg(env, argv[0], "the lock space");
        char *name = space ? string_arg(env, argv[1], "the lock name") : NULL;
        if (name == NULL) {
                free(space);
                return NULL;
        }
        dirlock_owner w;
        dirlock_error err;
        int rc = dirlock_inspect(space, name, stale, &w, &err);
        free(space);
        free(name);
        if (rc == DIRLOCK_ENOLOCK) {
                napi_get_null(env, &o);
                return o;
        }
        if (rc != DIRLOCK_OK)
                return throw_code(env, a, rc, &err);
        napi_value alive;
        if (w.owner_alive < 0)
                napi_get_null(env, &alive);
        else
                alive = boolean(env, w.owner_alive);
        CHECK(env, napi_create_object(env, &o));
        const struct {
                const char *key;
                napi_value v;
        } fields[] = {
            {"name", string_or_null(env, w.name)},
            {"pid", number(env, w.pid)},
            {"startTime", number(env, (double)w.start_time)},
            {"host", string_or_null(env, w.host)},
            {"token", string_or_null(env, w.token)},
            {"acquired", number(env, w.acquired * 1000)},
            {"age", number(env, w.age * 1000)},
            {"sameHost", boolean(env, w.same_host)},
            {"ownerAlive", alive},
            {"stale", boolean(env, w.stale)},
            {"mode", number(env, w.mode)},
            {"readers", number(env, w.readers)},
            {"partner", number(env, w.partner)},
            {"ranges", number(env, w.ranges)},
        };
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
                CHECK(env, napi_set_named_property(env, o, fields[i].key, fields[i].v));
        return o;
}

/* spaceInfo(space) -> what the string names, without touching it. */
static napi_value js_space_info(napi_env env, napi_callback_info info)
{
        napi_value argv[1], o;
        struct addon *a = args_of(env, info, 1, argv);
        char *space = string_arg(env, argv[0], "the lock space");
        if (space == NULL)
                return NULL;
        dirlock_space_info si;
        dirlock_error err;
        int rc = dirlock_space_query(space, &si, &err);
        if (rc != DIRLOCK_OK) {
                free(space);
                return throw_code(env, a, rc, &err);
        }
        napi_status st = napi_create_object(env, &o);
        if (st == napi_ok) {
                napi_set_named_property(env, o, "backend", string_or_null(env, si.backend));
                napi_set_named_property(env, o, "dir", string_or_null(env, si.dir));
                napi_set_named_property(env, o, "ranges", boolean(env, si.ranges));
                napi_set_named_property(env, o, "fences", boolean(env, si.fences));
                napi_set_named_property(env, o, "upgrade", boolean(env, si.upgrade));
                napi_set_named_property(env, o, "ownerRecords", boolean(env, si.owner_records));
        }
        free(space); /* si.dir points into it: copied above */
        CHECK(env, st);
        return o;
}

/* parseRange(text) -> [lo, hi], the dirlock command's grammar. */
static napi_value js_parse_range(napi_env env, napi_callback_info info)
{
        napi_value argv[1], r;
        struct addon *a = args_of(env, info, 1, argv);
        char *text = string_arg(env, argv[0], "a range");
        if (text == NULL)
                return NULL;
        double lo, hi;
        dirlock_error err;
        int rc = dirlock_range_parse(text, &lo, &hi, &err);
        free(text);
        if (rc != DIRLOCK_OK)
                return throw_code(env, a, rc, &err);
        CHECK(env, napi_create_array_with_length(env, 2, &r));
        CHECK(env, napi_set_element(env, r, 0, number(env, lo)));
        CHECK(env, napi_set_element(env, r, 1, number(env, hi)));
        return r;
}

/* init(LockError): the class every error of the library is made of. */
static napi_value js_init(napi_env env, napi_callback_info info)
{
        napi_value argv[1];
        struct addon *a = args_of(env, info, 1, argv);
        if (a->error_class != NULL)
                napi_delete_reference(env, a->error_class);
        CHECK(env, napi_create_reference(env, argv[0], 1, &a->error_class));
        return NULL;
}

/* ---- the environment's end ------------------------------------------------------------ */

/* Let go of everything: pending acquires are canceled and finished (their
 * callbacks are not called: there is no JS left to call), held locks
 * released, the poll closed (its memory goes when libuv has closed it). */
static void addon_cleanup(void *arg)
{
        struct addon *a = arg;
        a->closing = true;
        while (a->waiting != NULL) {
                struct pending *pe = a->waiting;
                a->waiting = pe->next;
                pe->next = NULL;
                /* Finished now, not when the loop next runs (it may not):
                 * a FIFO ticket or a waiter's entry must not outlive a
                 * worker thread. */
                dirlock_pending_free(pe->p);
                if (pe->hold != NULL)
                        pe->hold->upgrading = false;
                pending_release_refs(a->env, pe);
                free(pe);
        }
        if (a->poll != NULL) {
                uv_close((uv_handle_t *)a->poll, poll_closed);
                a->poll = NULL;
                a->poll_active = false;
        }
        while (a->held != NULL) {
                struct hold *h = a->held;
                hold_let_go(h, NULL);
                hold_forget(a->env, h);
        }
}

static void addon_finalize(napi_env env, void *data, void *hint)
{
        (void)hint;
        struct addon *a = data;
        if (a->error_class != NULL)
                napi_delete_reference(env, a->error_class);
        free(a);
}

/* ---- the module --------------------------------------------------------------------------- */

static const char *const mode_names[] = {
    [DIRLOCK_EXCLUSIVE] = "exclusive", [DIRLOCK_SHARED] = "shared", [DIRLOCK_INTENT] = "intent"};
static const char *const policy_names[] = {[DIRLOCK_POLICY_FAIR] = "fair",
                                           [DIRLOCK_POLICY_WRITER] = "writer",
                                           [DIRLOCK_POLICY_READER] = "reader",
                                           [DIRLOCK_POLICY_SIMPLE] = "simple"};
#define COUNT(a) (sizeof(a) / sizeof(a)[0])

static napi_value string_array(napi_env env, const char *const *s, size_t n)
{
        napi_value arr;
        if (napi_create_array_with_length(env, n, &arr) != napi_ok)
                return NULL;
        for (size_t i = 0; i < n; i++)
                napi_set_element(env, arr, (uint32_t)i, string_or_null(env, s[i]));
        return arr;
}

NAPI_MODULE_INIT()
{
        struct addon *a = calloc(1, sizeof *a);
        if (a == NULL) {
                napi_throw_error(env, NULL, "out of memory");
                return NULL;
        }
        a->env = env;
        if (napi_get_uv_event_loop(env, &a->loop) != napi_ok ||
            napi_set_instance_data(env, a, addon_finalize, NULL) != napi_ok) {
                free(a);
                return napi_failed(env, "cannot set up the dirlock addon");
        }
        CHECK(env, napi_add_env_cleanup_hook(env, addon_cleanup, a));
        const struct {
                const char *name;
                napi_callback fn;
        } fns[] = {
            {"init", js_init},
            {"start", js_start},
            {"upgrade", js_upgrade},
            {"cancel", js_cancel},
            {"release", js_release},
            {"check", js_check},
            {"refresh", js_refresh},
            {"fence", js_fence},
            {"downgrade", js_downgrade},
            {"downgradeIntent", js_downgrade_intent},
            {"shrink", js_shrink},
            {"info", js_info},
            {"inspect", js_inspect},
            {"spaceInfo", js_space_info},
            {"parseRange", js_parse_range},
        };
        for (size_t i = 0; i < COUNT(fns); i++) {
                napi_value f;
                CHECK(env, napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, a, &f));
                CHECK(env, napi_set_named_property(env, exports, fns[i].name, f));
        }
        /* The codes, by number, as the library names them (its one list). */
        size_t ncodes = 0;
        while (dirlock_code_name((int)ncodes) != NULL)
                ncodes++;
        const char **codes = calloc(ncodes ? ncodes : 1, sizeof *codes);
        if (codes == NULL)
                return napi_failed(env, "out of memory");
        for (size_t i = 0; i < ncodes; i++)
                codes[i] = dirlock_code_name((int)i);
        napi_value codes_v = string_array(env, codes, ncodes);
        free(codes);
        napi_value flags;
        CHECK(env, napi_create_object(env, &flags));
        CHECK(env, napi_set_named_property(env, flags, "fifo", number(env, DIRLOCK_FIFO)));
        CHECK(env, napi_set_named_property(env, flags, "noMkdir", number(env, DIRLOCK_NO_MKDIR)));
        CHECK(env, napi_set_named_property(env, flags, "noNotify", number(env, DIRLOCK_NO_NOTIFY)));
        CHECK(env, napi_set_named_property(env, exports, "codes", codes_v));
        CHECK(env, napi_set_named_property(env, exports, "modes",
                                           string_array(env, mode_names, COUNT(mode_names))));
        CHECK(env, napi_set_named_property(env, exports, "policies",
                                           string_array(env, policy_names, COUNT(policy_names))));
        CHECK(env, napi_set_named_property(env, exports, "flags", flags));
        CHECK(env, napi_set_named_property(env, exports, "version", string_or_null(env, DIRLOCK_VERSION)));
        CHECK(env, napi_set_named_property(env, exports, "defaultStaleAge",
                                           number(env, DIRLOCK_DEFAULT_STALE_AGE)));
        CHECK(env, napi_set_named_property(env, exports, "minStaleAge", number(env, DIRLOCK_MIN_STALE_AGE)));
        return exports;
}
