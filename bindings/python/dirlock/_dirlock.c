/* _dirlock.c - the dirlock C library as a CPython extension module: the
 * Lock type (one name, a range of a name, or a set of names), the
 * functions that look at a lock space, and one exception class per error
 * code, made at import from the library's own names (dirlock_code_name),
 * under dirlock.Error.  dirlock/__init__.py re-exports it all.
 *
 * Threads.  Every library call runs with the GIL released, so a thread
 * waiting for a lock does not stall the others.  A Lock object must not
 * be used by two threads at once (the library's rule for a handle): a
 * call made while another thread is inside one of the same object's calls
 * raises RuntimeError rather than race (the flag is set and tested under
 * the GIL).
 *
 * Signals.  Python runs signal handlers in the main thread between
 * bytecodes, never inside a C call, so a wait in the main thread would
 * not end on Ctrl-C.  While the main thread waits (a timeout other than
 * 0), and no wakeup descriptor is set already (asyncio sets its own), the
 * signal module's wakeup descriptor is a pipe of ours that the wait also
 * watches as its cancel descriptor (through an epoll set, together with
 * the caller's cancel_fd if one was given).  A signal ends the wait with
 * DIRLOCK_ECANCELED; the handlers run (PyErr_CheckSignals): when one
 * raises (KeyboardInterrupt), that exception is the call's, otherwise the
 * wait goes on for the time that is left.
 *
 * Processes.  A handle belongs to the process that took it: after fork
 * the child's release, refresh and check raise ENOTOWNER, and a child's
 * object going away frees only the child's copy.
 *
 * Event loops.  _acquire_start and _upgrade_start begin the library's
 * pending acquire (dirlock_acquire_start, dirlock_upgrade_start) with
 * DIRLOCK_THREAD_FD: it has no descriptor of its own, and what they
 * return is the thread's, shared by every pending acquire of the thread.
 * When that descriptor is readable, _pending_next() runs the thread's
 * acquires that can go on (dirlock_pending_next: for about a millisecond
 * per call of the loop) and returns the Lock objects whose acquire ended,
 * one per call, then None; _pending_step then says how (False while it
 * waits; True, or the library's exception, when it is over).
 * _pending_cancel gives up; _pending_free drops one under way (finishing
 * it, which may block for its clean-up's own I/O).  The package's Lock
 * (dirlock/__init__.py) makes acquire_async, upgrade_async and `async
 * with` of them, with one asyncio reader per loop.  While one is under
 * way every other call of the object is refused, as while a thread is
 * inside one. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* CPython 3.9 (setup.py's python_requires) lacks two calls of 3.10. */
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o)
{
        Py_INCREF(o);
        return o;
}
static int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *value)
{
        Py_XINCREF(value);
        if (PyModule_AddObject(m, name, value) < 0) {
                Py_XDECREF(value);
                return -1;
        }
        return 0;
}
#endif

#include <dirlock.h>
#include <dirlock_async.h>
#include <dirlock_fence.h>
#include <dirlock_range.h>
#include <dirlock_rw.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

/* ---- exceptions ---------------------------------------------------------- */

static PyObject *Error;         /* dirlock.Error */
static PyObject **code_classes; /* dirlock.EBUSY ... by code number */
static int code_count;          /* codes the library names */

/* Raise the exception of `code`, with the library's message when it is
 * about this code (else the code's short text). */
static PyObject *raise_code(int code, int sys_errno, const char *message)
{
        PyObject *cls = code > 0 && code < code_count ? code_classes[code] : Error;
        if (message == NULL || message[0] == '\0')
                message = dirlock_strerror(code);
        PyObject *exc = PyObject_CallFunction(cls, "s", message);
        if (exc == NULL)
                return NULL;
        const char *name = dirlock_code_name(code);
        PyObject *code_obj = name ? PyUnicode_FromString(name) : PyUnicode_FromFormat("E%d", code);
        PyObject *number = PyLong_FromLong(code), *msg = PyUnicode_FromString(message);
        PyObject *err_no = PyLong_FromLong(sys_errno);
        if (code_obj && number && msg && err_no && PyObject_SetAttrString(exc, "code", code_obj) == 0 &&
            PyObject_SetAttrString(exc, "number", number) == 0 &&
            PyObject_SetAttrString(exc, "message", msg) == 0 &&
            PyObject_SetAttrString(exc, "errno", err_no) == 0)
                PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_XDECREF(code_obj);
        Py_XDECREF(number);
        Py_XDECREF(msg);
        Py_XDECREF(err_no);
        Py_DECREF(exc);
        return NULL;
}

static PyObject *raise_err(int code, const dirlock_error *err)
{
        return raise_code(code, err->code == code ? err->sys_errno : 0,
                          err->code == code ? err->message : NULL);
}

static PyObject *raise_invalid(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static PyObject *raise_invalid(const char *fmt, ...)
{
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        return raise_code(DIRLOCK_EINVAL, 0, msg);
}

/* ---- names of modes and policies ------------------------------------------ */

static const char *const mode_names[] = {
    [DIRLOCK_EXCLUSIVE] = "exclusive", [DIRLOCK_SHARED] = "shared", [DIRLOCK_INTENT] = "intent"};
static const char *const policy_names[] = {[DIRLOCK_POLICY_FAIR] = "fair",
                                           [DIRLOCK_POLICY_WRITER] = "writer",
                                           [DIRLOCK_POLICY_READER] = "reader",
                                           [DIRLOCK_POLICY_SIMPLE] = "simple"};
#define COUNT(a) ((int)(sizeof(a) / sizeof(a)[0]))

/* 0 and *out set, or -1 with dirlock.EINVAL raised. */
static int name_index(PyObject *value, const char *const names[], int n, const char *what, int *out)
{
        const char *s = PyUnicode_Check(value) ? PyUnicode_AsUTF8(value) : NULL;
        if (s == NULL) {
                PyErr_Clear();
                raise_invalid("%s must be a string", what);
                return -1;
        }
        for (int i = 0; i < n; i++)
                if (strcmp(s, names[i]) == 0) {
                        *out = i;
                        return 0;
                }
        char known[128] = "";
        for (int i = 0; i < n; i++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                         names[i]);
        raise_invalid("unknown %s '%s' (%s)", what, s, known);
        return -1;
}

static PyObject *mode_str(int mode)
{
        if (mode >= 0 && mode < COUNT(mode_names))
                return PyUnicode_FromString(mode_names[mode]);
        return PyLong_FromLong(mode);
}

/* A number of seconds, or None for `none_value`. */
static int seconds(PyObject *value, const char *what, double none_value, double *out)
{
        if (value == NULL || value == Py_None) {
                *out = none_value;
                return 0;
        }
        if (!PyNumber_Check(value) || PyUnicode_Check(value)) {
                raise_invalid("%s must be a number of seconds or None", what);
                return -1;
        }
        double v = PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred())
                return -1;
        if (isnan(v)) {
                raise_invalid("%s is not a number", what);
                return -1;
        }
        *out = v;
        return 0;
}

/* ---- signals during a wait (see the top of the file) --------------------- */

static int sig_r = -1, sig_w = -1; /* the pipe, made per process */
static pid_t sig_pid;
static PyObject *set_wakeup_fd; /* _signal.set_wakeup_fd */

static int sig_pipe(void)
{
        if (sig_r >= 0 && sig_pid == getpid())
                return 0;
        if (sig_r >= 0) { /* a forked child: its own pipe */
                close(sig_r);
                close(sig_w);
                sig_r = sig_w = -1;
        }
        int fds[2];
        if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
                return -1;
        sig_r = fds[0];
        sig_w = fds[1];
        sig_pid = getpid();
        return 0;
}

/* Point the wakeup descriptor at our pipe: 1 when done, 0 when the
 * caller is not the main thread (set_wakeup_fd refuses it: ValueError)
 * or one was set already (left alone). */
static int sig_catch(void)
{
        if (set_wakeup_fd == NULL || sig_pipe() != 0)
                return 0;
        PyObject *old = PyObject_CallFunction(set_wakeup_fd, "i", sig_w);
        if (old == NULL) {
                PyErr_Clear();
                return 0;
        }
        long prev = PyLong_AsLong(old);
        Py_DECREF(old);
        if (prev != -1) {
                PyObject *back = PyObject_CallFunction(set_wakeup_fd, "l", prev);
                Py_XDECREF(back);
                PyErr_Clear();
                return 0;
        }
        return 1;
}

static void sig_release(void)
{
        PyObject *r = PyObject_CallFunction(set_wakeup_fd, "i", -1);
        Py_XDECREF(r);
        PyErr_Clear();
}

/* Empty the pipe: 1 when a signal had written to it. */
static int sig_drain(void)
{
        char buf[64];
        int got = 0;
        while (read(sig_r, buf, sizeof buf) > 0)
                got = 1;
        return got;
}

static int fd_readable(int fd)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        return poll(&p, 1, 0) > 0;
}

static double now_s(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A library call that may wait, made without the GIL. */
typedef int (*waiting_call)(void *ctx, const dirlock_options *o, dirlock_error *err);

/* Runs fn with options `base`, ended early by signals as above.  0 and
 * *rc set, or -1 with a Python exception (a signal handler's) raised. */
static int run_waiting(waiting_call fn, void *ctx, const dirlock_options *base, dirlock_error *err, int *rc)
{
        dirlock_options o = *base;
        double deadline = base->timeout > 0 ? now_s() + base->timeout : -1;
        for (;;) {
                int ours = o.timeout != 0 && sig_catch();
                int epfd = -1;
                if (ours) {
                        if (base->flags & DIRLOCK_CANCEL_FD) {
                                epfd = epoll_create1(EPOLL_CLOEXEC);
                                struct epoll_event a = {.events = EPOLLIN}, b = {.events = EPOLLIN};
                                if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, sig_r, &a) != 0 ||
                                    epoll_ctl(epfd, EPOLL_CTL_ADD, base->cancel_fd, &b) != 0) {
                                        /* Not watchable together: the caller's alone. */
                                        if (epfd >= 0)
                                                close(epfd);
                                        epfd = -1;
                                        sig_release();
                                        ours = 0;
                                } else {
                                        o.cancel_fd = epfd;
                                }
                        } else {
                                o.flags |= DIRLOCK_CANCEL_FD;
                                o.cancel_fd = sig_r;
                        }
                }
                Py_BEGIN_ALLOW_THREADS *rc = fn(ctx, &o, err);
                Py_END_ALLOW_THREADS if (ours) sig_release();
                if (epfd >= 0)
                        close(epfd);
                if (!ours || *rc != DIRLOCK_ECANCELED || !sig_drain())
                        return 0;
                if (PyErr_CheckSignals() < 0)
                        return -1;
                if ((base->flags & DIRLOCK_CANCEL_FD) && fd_readable(base->cancel_fd))
                        return 0; /* the caller's descriptor too: canceled */
                o = *base;
                if (deadline >= 0) {
                        double left = deadline - now_s();
                        o.timeout = left > 1e-6 ? left : 1e-6;
                }
        }
}

/* ---- the Lock type --------------------------------------------------------- */

typedef struct {
        PyObject_HEAD PyObject *space; /* bytes: the space, as the file system encodes it */
        PyObject *names;               /* tuple of str; one for a lock, several for a set */
        int is_set;                    /* names given as a list: a set */
        dirlock_options opts;
        PyObject *cancel_obj; /* the cancel_fd object, kept alive */
        int ranged;
        double lo, hi;
        dirlock *h;               /* the handle of a lock (NULL while none) */
        dirlock_set *set;         /* the handle of a set (NULL while none) */
        unsigned holds;           /* holds of this object */
        pid_t pid;                /* the process that took `set` */
        int busy;                 /* a call of this object is running (GIL released) */
        dirlock_pending *pending; /* an acquire or upgrade an event loop drives */
        int pending_upgrade;      /* it is an upgrade (else an acquire) */
        PyObject *pending_cancel; /* the upgrade's cancel_fd object, kept alive */
} LockObject;

static PyTypeObject LockType;

static const char *lock_option_names[] = {
    "space",     "name",     "timeout",   "nonblocking", "stale_age", "mode",        "policy", "fifo",
    "reentrant", "no_mkdir", "no_notify", "no_deadlock", "cancel_fd", "partner_pid", "range",  NULL};

/* The cancel descriptor of an object (an int or anything with fileno()). */
static int cancel_option(PyObject *value, dirlock_options *o)
{
        if (value == NULL || value == Py_None)
                return 0;
        int fd = PyObject_AsFileDescriptor(value);
        if (fd < 0) {
                if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError)) {
                        PyErr_Clear();
                        raise_invalid("cancel_fd must be a descriptor number or have fileno()");
                }
                return -1;
        }
        o->cancel_fd = fd;
        o->flags |= DIRLOCK_CANCEL_FD;
        return 0;
}

static int timeout_options(PyObject *timeout, int nonblocking, dirlock_options *o)
{
        if (seconds(timeout, "timeout", -1.0, &o->timeout) < 0)
                return -1;
        if (o->timeout < 0)
                o->timeout = -1.0;
        if (nonblocking) {
                if (timeout != NULL && timeout != Py_None && o->timeout != 0) {
                        raise_invalid("nonblocking=True and timeout=%g contradict each other", o->timeout);
                        return -1;
                }
                o->timeout = 0;
        }
        return 0;
}

/* The names of a Lock: one str, or a list or tuple of str (a set);
 * none with a NUL (in C it would cut the name short, and the library
 * would lock another name than the one given).  0, or -1 raised. */
static int lock_names(LockObject *self, PyObject *name)
{
        if (PyUnicode_Check(name)) {
                self->is_set = 0;
                Py_XSETREF(self->names, PyTuple_Pack(1, name));
        } else if (PyList_Check(name) || PyTuple_Check(name)) {
                self->is_set = 1;
                Py_XSETREF(self->names, PySequence_Tuple(name));
                for (Py_ssize_t i = 0; self->names && i < PyTuple_GET_SIZE(self->names); i++)
                        if (!PyUnicode_Check(PyTuple_GET_ITEM(self->names, i))) {
                                PyErr_SetString(PyExc_TypeError, "lock names must be str");
                                return -1;
                        }
        } else {
                PyErr_SetString(PyExc_TypeError, "name must be a str or a list of str");
                return -1;
        }
        if (self->names == NULL)
                return -1;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->names); i++) {
                PyObject *n = PyTuple_GET_ITEM(self->names, i);
                if (PyUnicode_FindChar(n, 0, 0, PyUnicode_GET_LENGTH(n), 1) != -1) {
                        raise_code(DIRLOCK_ENAME, 0, "invalid lock name: it has a NUL character");
                        return -1;
                }
        }
        return 0;
}

/* The range option of a Lock: None, a pair (lo, hi), or the text "LO:HI"
 * (the command's grammar).  0, or -1 raised. */
static int lock_range(LockObject *self, PyObject *range)
{
        self->ranged = 0;
        if (range == NULL || range == Py_None)
                return 0;
        if (self->is_set) {
                raise_invalid("range locks are taken one name at a time");
                return -1;
        }
        if (PyUnicode_Check(range)) {
                Py_ssize_t len;
                const char *text = PyUnicode_AsUTF8AndSize(range, &len);
                if (text == NULL)
                        return -1;
                if (strlen(text) != (size_t)len) {
                        raise_invalid("range: a NUL character in the text");
                        return -1;
                }
                dirlock_error err;
                int rc = dirlock_range_parse(text, &self->lo, &self->hi, &err);
                if (rc != DIRLOCK_OK) {
                        raise_err(rc, &err);
                        return -1;
                }
                self->ranged = 1;
                return 0;
        }
        PyObject *seq = PySequence_Fast(range, "range must be a pair (lo, hi) or a string 'LO:HI'");
        if (seq == NULL)
                return -1;
        int bad = PySequence_Fast_GET_SIZE(seq) != 2 ||
                  seconds(PySequence_Fast_GET_ITEM(seq, 0), "range lo", 0, &self->lo) < 0 ||
                  seconds(PySequence_Fast_GET_ITEM(seq, 1), "range hi", 0, &self->hi) < 0;
        Py_DECREF(seq);
        if (bad) {
                if (!PyErr_Occurred())
                        raise_invalid("range must be a pair (lo, hi)");
                return -1;
        }
        self->ranged = 1;
        return 0;
}

static int Lock_init(LockObject *self, PyObject *args, PyObject *kwds)
{
        PyObject *space = NULL, *name = NULL, *timeout = NULL, *stale = NULL, *mode = NULL, *policy = NULL;
        PyObject *cancel = NULL, *partner = NULL, *range = NULL;
        int nonblocking = 0, fifo = 0, reentrant = 0, no_mkdir = 0, no_notify = 0, no_deadlock = 0;
        if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&O|$OpOOOpppppOOO:Lock", (char **)lock_option_names,
                                         PyUnicode_FSConverter, &space, &name, &timeout, &nonblocking, &stale,
                                         &mode, &policy, &fifo, &reentrant, &no_mkdir, &no_notify,
                                         &no_deadlock, &cancel, &partner, &range))
                return -1;
        if (self->busy || self->h != NULL || self->set != NULL) {
                Py_DECREF(space);
                PyErr_SetString(PyExc_RuntimeError, "Lock.__init__ on a lock that is held or in use");
                return -1;
        }
        Py_XSETREF(self->space, space);
        dirlock_options *o = &self->opts;
        dirlock_options_init(o);
        if (lock_names(self, name) < 0)
                return -1;
        if (timeout_options(timeout, nonblocking, o) < 0 ||
            seconds(stale, "stale_age", 0.0, &o->stale_age) < 0)
                return -1;
        if (mode != NULL && mode != Py_None &&
            name_index(mode, mode_names, COUNT(mode_names), "mode", &o->mode) < 0)
                return -1;
        if (policy != NULL && policy != Py_None &&
            name_index(policy, policy_names, COUNT(policy_names), "policy", &o->policy) < 0)
                return -1;
        o->flags |= (fifo ? DIRLOCK_FIFO : 0) | (reentrant ? DIRLOCK_REENTRANT : 0) |
                    (no_mkdir ? DIRLOCK_NO_MKDIR : 0) | (no_notify ? DIRLOCK_NO_NOTIFY : 0) |
                    (no_deadlock ? DIRLOCK_NO_DEADLOCK : 0);
        if (cancel_option(cancel, o) < 0)
                return -1;
        Py_XINCREF(cancel);
        Py_XSETREF(self->cancel_obj, cancel);
        if (partner != NULL && partner != Py_None) {
                int overflow;
                long pid = PyLong_AsLongAndOverflow(partner, &overflow);
                if (pid == -1 && PyErr_Occurred())
                        return -1;
                if (overflow != 0 || pid < 0 || pid > INT_MAX) {
                        raise_invalid("partner_pid must be a process id (0 to 2147483647)");
                        return -1;
                }
                o->partner_pid = (pid_t)pid;
        }
        return lock_range(self, range);
}

static void Lock_dealloc(LockObject *self)
{
        dirlock_error err;
        int rc = DIRLOCK_OK;
        const char *what = NULL;
        char name[DIRLOCK_NAME_MAX + 1] = "";
        if (self->pending != NULL) { /* canceled, finished, a lock it got let go */
                dirlock_pending *p = self->pending;
                self->pending = NULL;
                Py_BEGIN_ALLOW_THREADS dirlock_pending_free(p);
                Py_END_ALLOW_THREADS
        }
        if (self->h != NULL) {
                snprintf(name, sizeof name, "%s", dirlock_name(self->h));
                Py_BEGIN_ALLOW_THREADS rc = dirlock_free(self->h, &err);
                Py_END_ALLOW_THREADS what = "lock";
        } else if (self->set != NULL) {
                Py_BEGIN_ALLOW_THREADS rc = dirlock_release_many(self->set, &err);
                Py_END_ALLOW_THREADS what = "lock set";
        }
        /* Nobody else will hear of a lock that was broken while held. */
        if (rc != DIRLOCK_OK && rc != DIRLOCK_ENOTOWNER) {
                PyObject *type, *value, *tb;
                PyErr_Fetch(&type, &value, &tb);
                if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                                     "dirlock: %s %s released when its Lock went away: %s (%s)", what, name,
                                     err.code == rc ? err.message : dirlock_strerror(rc),
                                     dirlock_code_name(rc)) < 0)
                        PyErr_WriteUnraisable((PyObject *)self);
                PyErr_Restore(type, value, tb);
        }
        Py_XDECREF(self->space);
        Py_XDECREF(self->names);
        Py_XDECREF(self->cancel_obj);
        Py_XDECREF(self->pending_cancel);
        Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Enter/leave a call of the object (see "Threads" at the top). */
static int pending_refused(LockObject *self)
{
        if (self->pending == NULL)
                return 0;
        PyErr_SetString(PyExc_RuntimeError,
                        "an asynchronous acquire or upgrade of this dirlock.Lock is under way; "
                        "give each task a Lock object of its own");
        return -1;
}

static int enter(LockObject *self)
{
        if (pending_refused(self) < 0)
                return -1;
        if (self->busy) {
                PyErr_SetString(PyExc_RuntimeError,
                                "this dirlock.Lock is in use by another thread; give each "
                                "thread a Lock object of its own");
                return -1;
        }
        self->busy = 1;
        return 0;
}

static void leave(LockObject *self)
{
        self->busy = 0;
}

struct acquire_ctx {
        LockObject *self;
        const char *space;
        const char **names;
        size_t n;
        dirlock *h;
        dirlock_set *set;
};

static int do_acquire(void *p, const dirlock_options *o, dirlock_error *err)
{
        struct acquire_ctx *c = p;
        LockObject *self = c->self;
        if (self->is_set)
                return dirlock_acquire_many(c->space, c->names, c->n, o, &c->set, err);
        if (self->ranged)
                return dirlock_acquire_range(c->space, c->names[0], self->lo, self->hi, o, &c->h, err);
        return dirlock_acquire(c->space, c->names[0], o, &c->h, err);
}

static PyObject *Lock_acquire(LockObject *self, PyObject *unused)
{
        (void)unused;
        if (self->names == NULL) {
                PyErr_SetString(PyExc_RuntimeError, "Lock.__init__ was not called");
                return NULL;
        }
        if (enter(self) < 0)
                return NULL;
        dirlock_error err;
        int rc;
        if (self->h != NULL && (self->opts.flags & DIRLOCK_REENTRANT)) {
                /* The handle's own options: it keeps no cancel descriptor,
                 * so this wait is not ended by signals either. */
                dirlock *h = self->h;
                Py_BEGIN_ALLOW_THREADS rc = dirlock_reacquire(h, &err);
                Py_END_ALLOW_THREADS if (rc != DIRLOCK_OK) goto lib_fail;
                self->holds++;
                leave(self);
                Py_RETURN_NONE;
        }
        if (self->h != NULL || self->set != NULL) {
                leave(self);
                return raise_invalid("this Lock holds its lock already (reentrant=True counts holds)");
        }
        struct acquire_ctx c = {.self = self, .space = PyBytes_AS_STRING(self->space)};
        Py_ssize_t n = PyTuple_GET_SIZE(self->names);
        c.names = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *c.names);
        if (c.names == NULL) {
                leave(self);
                return PyErr_NoMemory();
        }
        c.n = (size_t)n;
        for (Py_ssize_t i = 0; i < n; i++)
                if ((c.names[i] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(self->names, i))) == NULL) {
                        PyMem_Free(c.names);
                        goto fail;
                }
        int r = run_waiting(do_acquire, &c, &self->opts, &err, &rc);
        PyMem_Free(c.names);
        if (r < 0) {
                /* A signal handler raised as the wait ended, maybe just
                 * after it got the lock: let it go. */
                if (c.h != NULL)
                        dirlock_free(c.h, NULL);
                if (c.set != NULL)
                        dirlock_release_many(c.set, NULL);
                goto fail;
        }
        if (rc != DIRLOCK_OK)
                goto lib_fail;
        self->h = c.h;
        self->set = c.set;
        self->pid = getpid();
        self->holds = 1;
        leave(self);
        Py_RETURN_NONE;
lib_fail:
        leave(self);
        return raise_err(rc, &err);
fail:
        leave(self);
        return NULL;
}

static PyObject *Lock_release(LockObject *self, PyObject *unused)
{
        (void)unused;
        if (enter(self) < 0)
                return NULL;
        if (self->h == NULL && self->set == NULL) {
                leave(self);
                return raise_code(DIRLOCK_EBALANCE, 0, "release of a Lock that holds nothing");
        }
        dirlock_error err;
        int rc;
        if (self->set != NULL) {
                dirlock_set *set = self->set;
                self->set = NULL;
                self->holds = 0;
                /* dirlock_release_many() in a forked child frees the
                 * child's copies and answers OK: the child is told, as
                 * for one lock. */
                if (self->pid != getpid()) {
                        dirlock_release_many(set, NULL);
                        leave(self);
                        char msg[256];
                        snprintf(msg, sizeof msg,
                                 "lock set of process %ld is not released by process %ld (a child after fork "
                                 "does not own its parent's locks)",
                                 (long)self->pid, (long)getpid());
                        return raise_code(DIRLOCK_ENOTOWNER, 0, msg);
                }
                Py_BEGIN_ALLOW_THREADS rc = dirlock_release_many(set, &err);
                Py_END_ALLOW_THREADS
        } else {
                dirlock *h = self->h;
                if (!(self->opts.flags & DIRLOCK_REENTRANT))
                        self->h = NULL; /* freed by the library, whatever it answers */
                Py_BEGIN_ALLOW_THREADS rc = dirlock_release(h, &err);
                Py_END_ALLOW_THREADS if (self->h == NULL) self->holds = 0;
                else if (rc != DIRLOCK_EBALANCE && rc != DIRLOCK_ENOTOWNER && self->holds > 0) self->holds =
                    rc == DIRLOCK_OK ? self->holds - 1 : 0;
        }
        leave(self);
        if (rc != DIRLOCK_OK)
                return raise_err(rc, &err);
        Py_RETURN_NONE;
}

/* The handle of a single lock that holds it, or NULL with an error. */
static dirlock *single(LockObject *self, const char *what)
{
        if (self->busy || self->pending != NULL) { /* the same answer as enter() gives */
                enter(self);
                return NULL;
        }
        if (self->set != NULL) {
                raise_invalid("%s() is for a lock of one name, not a set", what);
                return NULL;
        }
        if (self->h == NULL) {
                raise_code(DIRLOCK_ELOST, 0, "the Lock holds nothing (acquire it first)");
                return NULL;
        }
        return self->h;
}

#define SIMPLE_CALL(fn_call)                                                                                 \
        do {                                                                                                 \
                if (enter(self) < 0)                                                                         \
                        return NULL;                                                                         \
                dirlock_error err;                                                                           \
                int rc;                                                                                      \
                Py_BEGIN_ALLOW_THREADS rc = (fn_call);                                                       \
                Py_END_ALLOW_THREADS leave(self);                                                            \
                if (rc != DIRLOCK_OK)                                                                        \
                        return raise_err(rc, &err);                                                          \
        } while (0)

static PyObject *Lock_refresh(LockObject *self, PyObject *unused)
{
        (void)unused;
        if (self->set != NULL) {
                dirlock_set *set = self->set;
                SIMPLE_CALL(dirlock_refresh_many(set, &err));
                Py_RETURN_NONE;
        }
        dirlock *h = single(self, "refresh");
        if (h == NULL)
                return NULL;
        SIMPLE_CALL(dirlock_refresh(h, &err));
        Py_RETURN_NONE;
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

static PyObject *Lock_check(LockObject *self, PyObject *unused)
{
        (void)unused;
        if (self->set != NULL) {
                dirlock_set *set = self->set;
                SIMPLE_CALL(check_set(set, &err));
                Py_RETURN_TRUE;
        }
        dirlock *h = single(self, "check");
        if (h == NULL)
                return NULL;
        SIMPLE_CALL(dirlock_check(h, &err));
        Py_RETURN_TRUE;
}

static PyObject *Lock_fence(LockObject *self, PyObject *unused)
{
        (void)unused;
        dirlock *h = single(self, "fence");
        if (h == NULL)
                return NULL;
        unsigned long long f = 0;
        SIMPLE_CALL(dirlock_fence(h, &f, &err));
        return PyLong_FromUnsignedLongLong(f);
}

struct upgrade_ctx {
        dirlock *h;
        int given;
};

static int do_upgrade(void *p, const dirlock_options *o, dirlock_error *err)
{
        struct upgrade_ctx *c = p;
        return dirlock_upgrade(c->h, o, err);
}

/* The handle and options of an upgrade, from its keyword arguments
 * (timeout, nonblocking, cancel_fd; `fmt` names the method for
 * errors), and the cancel_fd object given (borrowed, or NULL): 0, or -1
 * with an exception set. */
static int upgrade_args(LockObject *self, PyObject *args, PyObject *kwds, const char *fmt, dirlock **h,
                        dirlock_options *o, PyObject **cancel_given)
{
        static const char *kw[] = {"timeout", "nonblocking", "cancel_fd", NULL};
        PyObject *timeout = NULL, *cancel = NULL;
        int nonblocking = 0;
        if (!PyArg_ParseTupleAndKeywords(args, kwds, fmt, (char **)kw, &timeout, &nonblocking, &cancel))
                return -1;
        *cancel_given = cancel;
        *h = single(self, "upgrade");
        if (*h == NULL)
                return -1;
        *o = self->opts;
        o->flags &= ~DIRLOCK_CANCEL_FD;
        o->cancel_fd = -1;
        if ((timeout != NULL || nonblocking) && timeout_options(timeout, nonblocking, o) < 0)
                return -1;
        return cancel_option(cancel, o);
}

static PyObject *Lock_upgrade(LockObject *self, PyObject *args, PyObject *kwds)
{
        dirlock *h;
        dirlock_options o;
        PyObject *cancel;
        if (upgrade_args(self, args, kwds, "|$OpO:upgrade", &h, &o, &cancel) < 0)
                return NULL;
        if (enter(self) < 0)
                return NULL;
        struct upgrade_ctx c = {.h = h};
        dirlock_error err;
        int rc;
        int r = run_waiting(do_upgrade, &c, &o, &err, &rc);
        leave(self);
        if (r < 0)
                return NULL;
        if (rc != DIRLOCK_OK)
                return raise_err(rc, &err);
        Py_RETURN_NONE;
}

static PyObject *Lock_downgrade(LockObject *self, PyObject *unused)
{
        (void)unused;
        dirlock *h = single(self, "downgrade");
        if (h == NULL)
                return NULL;
        SIMPLE_CALL(dirlock_downgrade(h, &err));
        Py_RETURN_NONE;
}

static PyObject *Lock_downgrade_intent(LockObject *self, PyObject *unused)
{
        (void)unused;
        dirlock *h = single(self, "downgrade_intent");
        if (h == NULL)
                return NULL;
        SIMPLE_CALL(dirlock_downgrade_intent(h, &err));
        Py_RETURN_NONE;
}

static PyObject *Lock_shrink(LockObject *self, PyObject *args)
{
        double lo, hi;
        if (!PyArg_ParseTuple(args, "dd:shrink", &lo, &hi))
                return NULL;
        dirlock *h = single(self, "shrink");
        if (h == NULL)
                return NULL;
        SIMPLE_CALL(dirlock_shrink(h, lo, hi, &err));
        Py_RETURN_NONE;
}

/* ---- driven by an event loop (see "Event loops" at the top) -------------- */

static PyObject *pending_begun(LockObject *self, dirlock_pending *p, int upgrade)
{
        self->pending = p;
        self->pending_upgrade = upgrade;
        dirlock_pending_set_data(p, self); /* for _pending_next; the object outlives p */
        return PyLong_FromLong(dirlock_pending_fd(p));
}

static PyObject *Lock_acquire_start(LockObject *self, PyObject *unused)
{
        (void)unused;
        if (self->names == NULL) {
                PyErr_SetString(PyExc_RuntimeError, "Lock.__init__ was not called");
                return NULL;
        }
        if (enter(self) < 0)
                return NULL;
        leave(self);
        dirlock_error err;
        int rc;
        if (self->h != NULL && (self->opts.flags & DIRLOCK_REENTRANT) && self->holds > 0) {
                rc = dirlock_reacquire(self->h, &err); /* one more hold: counted, no wait */
                if (rc != DIRLOCK_OK)
                        return raise_err(rc, &err);
                self->holds++;
                return PyLong_FromLong(-1);
        }
        if (self->h != NULL && (self->opts.flags & DIRLOCK_REENTRANT)) {
                /* Released to no hold: taken anew, by a pending acquire. */
                dirlock *h = self->h;
                self->h = NULL;
                Py_BEGIN_ALLOW_THREADS rc = dirlock_free(h, &err);
                Py_END_ALLOW_THREADS if (rc != DIRLOCK_OK) return raise_err(rc, &err);
        }
        if (self->h != NULL || self->set != NULL)
                return raise_invalid("this Lock holds its lock already (reentrant=True counts holds)");
        const char *space = PyBytes_AS_STRING(self->space);
        Py_ssize_t n = PyTuple_GET_SIZE(self->names);
        const char **names = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *names);
        if (names == NULL)
                return PyErr_NoMemory();
        for (Py_ssize_t i = 0; i < n; i++)
                if ((names[i] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(self->names, i))) == NULL) {
                        PyMem_Free(names);
                        return NULL;
                }
        dirlock_pending *p = NULL;
        dirlock_options o = self->opts;
        o.flags |= DIRLOCK_THREAD_FD;
        if (self->is_set)
                rc = dirlock_acquire_many_start(space, names, (size_t)n, &o, &p, &err);
        else if (self->ranged)
                rc = dirlock_acquire_range_start(space, names[0], self->lo, self->hi, &o, &p, &err);
        else
                rc = dirlock_acquire_start(space, names[0], &o, &p, &err);
        PyMem_Free(names);
        if (rc != DIRLOCK_OK)
                return raise_err(rc, &err);
        return pending_begun(self, p, 0);
}

static PyObject *Lock_upgrade_start(LockObject *self, PyObject *args, PyObject *kwds)
{
        dirlock *h;
        dirlock_options o;
        PyObject *cancel;
        if (upgrade_args(self, args, kwds, "|$OpO:upgrade_async", &h, &o, &cancel) < 0)
                return NULL;
        dirlock_pending *p = NULL;
        dirlock_error err;
        o.flags |= DIRLOCK_THREAD_FD;
        int rc = dirlock_upgrade_start(h, &o, &p, &err);
        if (rc != DIRLOCK_OK)
                return raise_err(rc, &err);
        Py_XINCREF(cancel);
        Py_XSETREF(self->pending_cancel, cancel);
        return pending_begun(self, p, 1);
}

static void pending_drop(LockObject *self)
{
        dirlock_pending *p = self->pending;
        self->pending = NULL;
        Py_BEGIN_ALLOW_THREADS dirlock_pending_free(p);
        Py_END_ALLOW_THREADS Py_CLEAR(self->pending_cancel);
}

static PyObject *Lock_pending_step(LockObject *self, PyObject *unused)
{
        (void)unused;
        if (self->pending == NULL) {
                PyErr_SetString(PyExc_RuntimeError,
                                "no asynchronous acquire or upgrade of this Lock is under way");
                return NULL;
        }
        dirlock_pending *p = self->pending;
        dirlock_error err;
        int rc;
        Py_BEGIN_ALLOW_THREADS rc = dirlock_pending_step(p, &err);
        Py_END_ALLOW_THREADS if (rc == DIRLOCK_EAGAIN) Py_RETURN_FALSE;
        if (rc == DIRLOCK_OK && !self->pending_upgrade) {
                self->h = dirlock_pending_lock(p);
                self->set = dirlock_pending_set(p);
                self->pid = getpid();
                self->holds = 1;
        }
        pending_drop(self); /* done: no waiting here */
        if (rc != DIRLOCK_OK)
                return raise_err(rc, &err);
        Py_RETURN_TRUE;
}

static PyObject *Lock_pending_cancel(LockObject *self, PyObject *unused)
{
        (void)unused;
        dirlock_pending_cancel(self->pending); /* NULL: nothing */
        Py_RETURN_NONE;
}

static PyObject *Lock_pending_free(LockObject *self, PyObject *unused)
{
        (void)unused;
        if (self->pending != NULL)
                pending_drop(self);
        Py_RETURN_NONE;
}

static PyObject *Lock_enter(LockObject *self, PyObject *unused)
{
        PyObject *r = Lock_acquire(self, unused);
        if (r == NULL)
                return NULL;
        Py_DECREF(r);
        Py_INCREF(self);
        return (PyObject *)self;
}

/* Releases; when the block raised, a failed release does not replace its
 * exception but is added to it as a note. */
static PyObject *Lock_exit(LockObject *self, PyObject *args)
{
        PyObject *type = PyTuple_Size(args) > 0 ? PyTuple_GET_ITEM(args, 0) : Py_None;
        PyObject *value = PyTuple_Size(args) > 1 ? PyTuple_GET_ITEM(args, 1) : Py_None;
        PyObject *r = Lock_release(self, NULL);
        if (r != NULL) {
                Py_DECREF(r);
                Py_RETURN_FALSE;
        }
        if (type == Py_None)
                return NULL;
        PyObject *etype, *evalue, *etb;
        PyErr_Fetch(&etype, &evalue, &etb);
        PyErr_NormalizeException(&etype, &evalue, &etb);
        PyObject *note = evalue ? PyUnicode_FromFormat("and the lock's release failed: %S", evalue) : NULL;
        if (note != NULL && value != Py_None) {
                PyObject *ok = PyObject_CallMethod(value, "add_note", "O", note); /* Python 3.11 on */
                Py_XDECREF(ok);
        }
        PyErr_Clear();
        Py_XDECREF(note);
        Py_XDECREF(etype);
        Py_XDECREF(evalue);
        Py_XDECREF(etb);
        Py_RETURN_FALSE;
}

static PyObject *Lock_get_name(LockObject *self, void *closure)
{
        (void)closure;
        if (self->names == NULL)
                Py_RETURN_NONE;
        PyObject *n = self->is_set ? self->names : PyTuple_GET_ITEM(self->names, 0);
        Py_INCREF(n);
        return n;
}

static PyObject *Lock_get_names(LockObject *self, void *closure)
{
        (void)closure;
        if (self->set != NULL) {
                size_t n = dirlock_set_count(self->set);
                PyObject *t = PyTuple_New((Py_ssize_t)n);
                for (size_t i = 0; t && i < n; i++) {
                        PyObject *s = PyUnicode_FromString(dirlock_name(dirlock_set_lock(self->set, i)));
                        if (s == NULL) {
                                Py_DECREF(t);
                                return NULL;
                        }
                        PyTuple_SET_ITEM(t, (Py_ssize_t)i, s);
                }
                return t;
        }
        if (self->names == NULL)
                return PyTuple_New(0);
        PyObject *sorted = PySequence_List(self->names);
        if (sorted != NULL && PyList_Sort(sorted) == 0) {
                PyObject *t = PyList_AsTuple(sorted);
                Py_DECREF(sorted);
                return t;
        }
        Py_XDECREF(sorted);
        return NULL;
}

static PyObject *Lock_get_space(LockObject *self, void *closure)
{
        (void)closure;
        if (self->space == NULL)
                Py_RETURN_NONE;
        return PyUnicode_DecodeFSDefaultAndSize(PyBytes_AS_STRING(self->space),
                                                PyBytes_GET_SIZE(self->space));
}

static PyObject *Lock_get_held(LockObject *self, void *closure)
{
        (void)closure;
        return PyBool_FromLong((self->h != NULL || self->set != NULL) && self->holds > 0);
}

static PyObject *Lock_get_token(LockObject *self, void *closure)
{
        (void)closure;
        if (self->h == NULL)
                Py_RETURN_NONE;
        return PyUnicode_FromString(dirlock_token(self->h));
}

static PyObject *Lock_get_mode(LockObject *self, void *closure)
{
        (void)closure;
        return mode_str(self->h != NULL ? dirlock_mode_of(self->h) : self->opts.mode);
}

static PyObject *Lock_get_range(LockObject *self, void *closure)
{
        (void)closure;
        double lo, hi;
        if (self->h != NULL && dirlock_range_of(self->h, &lo, &hi))
                return Py_BuildValue("(dd)", lo, hi);
        if (self->h == NULL && self->ranged)
                return Py_BuildValue("(dd)", self->lo, self->hi);
        Py_RETURN_NONE;
}

static PyObject *Lock_repr(LockObject *self)
{
        PyObject *name = Lock_get_name(self, NULL), *space = Lock_get_space(self, NULL);
        PyObject *r = NULL;
        if (name && space)
                r = PyUnicode_FromFormat("<dirlock.Lock %R in %R, %s>", name, space,
                                         (self->h || self->set) && self->holds ? "held" : "not held");
        Py_XDECREF(name);
        Py_XDECREF(space);
        return r;
}

static PyMethodDef Lock_methods[] = {
    {"acquire", (PyCFunction)Lock_acquire, METH_NOARGS,
     "acquire()\n--\n\nTake the lock (every name of a set, or none), waiting as the options say.\n"
     "Raises dirlock.EBUSY (one try, held elsewhere), dirlock.ETIMEDOUT, dirlock.ECANCELED, ...\n"
     "With reentrant=True, a Lock that holds it counts one more hold (or takes it\n"
     "again after its last release)."},
    {"release", (PyCFunction)Lock_release, METH_NOARGS,
     "release()\n--\n\nRelease the lock.  dirlock.ELOST when it had been broken meanwhile (another\n"
     "holder's lock is left alone); dirlock.ENOTOWNER in a child after fork (the\n"
     "parent keeps its lock); dirlock.EBALANCE when nothing is held."},
    {"refresh", (PyCFunction)Lock_refresh, METH_NOARGS,
     "refresh()\n--\n\nRenew the lock's age: a holder that refreshes at least every third of the\n"
     "stale age is never judged stale."},
    {"check", (PyCFunction)Lock_check, METH_NOARGS,
     "check()\n--\n\nTrue while we hold the lock; raises dirlock.ELOST when it was broken\n"
     "(dirlock.ENOTOWNER in a child after fork)."},
    {"fence", (PyCFunction)Lock_fence, METH_NOARGS,
     "fence()\n--\n\nA number for this acquisition, greater than that of every earlier\n"
     "acquisition of the same lock in the same space: pass it with every write\n"
     "to a store that refuses lower ones.  Not in flock: spaces (dirlock.EINVAL)."},
    {"upgrade", (PyCFunction)(void (*)(void))Lock_upgrade, METH_VARARGS | METH_KEYWORDS,
     "upgrade(*, timeout=None, nonblocking=False, cancel_fd=None)\n--\n\n"
     "Intent -> exclusive, waiting only for the readers present (by default with\n"
     "the acquire's timeout).  dirlock.EUPGRADE on a shared lock; on timeout the\n"
     "lock stays intent."},
    {"downgrade", (PyCFunction)Lock_downgrade, METH_NOARGS,
     "downgrade()\n--\n\nExclusive -> shared, with no writer let in between."},
    {"downgrade_intent", (PyCFunction)Lock_downgrade_intent, METH_NOARGS,
     "downgrade_intent()\n--\n\nAn upgraded intent lock back to intent: readers may enter again."},
    {"shrink", (PyCFunction)Lock_shrink, METH_VARARGS,
     "shrink(lo, hi)\n--\n\nNarrow a held range to [lo, hi), a part of it, at once."},
    {"_acquire_start", (PyCFunction)Lock_acquire_start, METH_NOARGS,
     "_acquire_start()\n--\n\nBegin an acquire an event loop drives (acquire_async): the thread's\n"
     "descriptor to watch for reading (see _pending_next), or -1 when a reentrant\n"
     "Lock only counted one more hold."},
    {"_upgrade_start", (PyCFunction)(void (*)(void))Lock_upgrade_start, METH_VARARGS | METH_KEYWORDS,
     "_upgrade_start(*, timeout=None, nonblocking=False, cancel_fd=None)\n--\n\n"
     "Begin an upgrade an event loop drives (upgrade_async): the descriptor to watch."},
    {"_pending_step", (PyCFunction)Lock_pending_step, METH_NOARGS,
     "_pending_step()\n--\n\nHow the acquire or upgrade under way is, without blocking: False while\n"
     "it waits (_pending_next reports its end), True when it is done; the\n"
     "library's exception when it ended without the lock."},
    {"_pending_cancel", (PyCFunction)Lock_pending_cancel, METH_NOARGS,
     "_pending_cancel()\n--\n\nGive up: the next step ends with dirlock.ECANCELED (or True, when it\n"
     "had the lock first)."},
    {"_pending_free", (PyCFunction)Lock_pending_free, METH_NOARGS,
     "_pending_free()\n--\n\nDrop the acquire or upgrade under way, finishing it here (which may\n"
     "block for its clean-up's own I/O); a lock it got meanwhile is let go."},
    {"__enter__", (PyCFunction)Lock_enter, METH_NOARGS, "Acquire; returns the Lock."},
    {"__exit__", (PyCFunction)Lock_exit, METH_VARARGS,
     "Release.  When the block raised, its exception goes on (a failed release\n"
     "is added to it as a note)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Lock_getset[] = {
    {"name", (getter)Lock_get_name, NULL, "The name given (a tuple of them for a set).", NULL},
    {"names", (getter)Lock_get_names, NULL, "Every name, once, in name order.", NULL},
    {"space", (getter)Lock_get_space, NULL, "The lock space.", NULL},
    {"held", (getter)Lock_get_held, NULL, "True while this Lock holds its lock.", NULL},
    {"token", (getter)Lock_get_token, NULL, "The 128-bit random token of this acquisition (hex), or None.",
     NULL},
    {"mode", (getter)Lock_get_mode, NULL, "'exclusive', 'shared' or 'intent' (as held now).", NULL},
    {"range", (getter)Lock_get_range, NULL, "(lo, hi) of a range lock, else None.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dirlock.Lock",
    .tp_basicsize = sizeof(LockObject),
    .tp_dealloc = (destructor)Lock_dealloc,
    .tp_repr = (reprfunc)Lock_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Lock(space, name, *, timeout=None, nonblocking=False, stale_age=None, mode='exclusive',\n"
              "     policy='fair', fifo=False, reentrant=False, no_mkdir=False, no_notify=False,\n"
              "     no_deadlock=False, cancel_fd=None, partner_pid=None, range=None)\n--\n\n"
              "A lock named `name` in lock space `space` (a directory, 'flock:DIR', or\n"
              "'redis://...'); a list of names is a set, taken all or none.  Nothing is\n"
              "taken until acquire() or `with`:\n\n"
              "    with dirlock.Lock('/var/lib/board/locks', 'messages', timeout=10):\n"
              "        ...  # read, modify, write\n\n"
              "timeout: seconds to wait (0 = one try, None or < 0 = forever);\n"
              "nonblocking: one try; stale_age: seconds after which an unrefreshed lock\n"
              "may be broken (180 by default); mode: 'exclusive', 'shared' or 'intent';\n"
              "policy: 'fair', 'writer', 'reader' or 'simple'; fifo: strict arrival order;\n"
              "reentrant: count holds; no_mkdir: do not make a missing lock directory;\n"
              "no_notify: poll, no inotify; no_deadlock: a hold another thread may let\n"
              "go, left out of deadlock detection; cancel_fd: a descriptor (or an object with\n"
              "fileno()) that ends the wait (dirlock.ECANCELED) when it turns readable;\n"
              "partner_pid: a process of this host holding the lock with us;\n"
              "range: (lo, hi) or 'LO:HI' (as dirlock --range takes it), lock that\n"
              "half-open range of the name.",
    .tp_methods = Lock_methods,
    .tp_getset = Lock_getset,
    .tp_init = (initproc)Lock_init,
    .tp_new = PyType_GenericNew,
};

/* ---- looking at a space --------------------------------------------------- */

static PyTypeObject *OwnerType, *RangeInfoType;

static PyStructSequence_Field owner_fields[] = {
    {"name", "the lock's name"},
    {"pid", "the holder's process id"},
    {"start_time", "the holder's start, clock ticks since boot"},
    {"host", "the holder's host"},
    {"token", "the token of the acquisition (hex)"},
    {"acquired", "when it was taken, seconds since the epoch"},
    {"age", "seconds since it was taken or last refreshed"},
    {"same_host", "recorded on this host, this boot"},
    {"owner_alive", "True, False, or None when it cannot be told (another host)"},
    {"stale", "would be broken now with the stale age given"},
    {"mode", "'exclusive', 'shared' or 'intent'"},
    {"readers", "shared and intent holders of the name"},
    {"partner", "0, or the process holding the lock with it"},
    {"ranges", "held ranges of the name"},
    {NULL, NULL},
};
static PyStructSequence_Desc owner_desc = {"dirlock.Owner", "The owner record of a lock (dirlock.inspect).",
                                           owner_fields, 14};

static PyStructSequence_Field range_fields[] = {
    {"lo", "the range's low end"},
    {"hi", "the range's high end (excluded)"},
    {"mode", "'exclusive', 'shared' or 'intent'"},
    {"waiting", "a waiter's reservation (else held)"},
    {"upgrading", "an intent holder upgrading to exclusive"},
    {"pid", "the process"},
    {"host", "its host"},
    {"age", "seconds since it was taken, queued or refreshed"},
    {NULL, NULL},
};
static PyStructSequence_Desc range_desc = {
    "dirlock.RangeInfo", "A range holder or waiter of a lock (dirlock.ranges).", range_fields, 8};

static PyObject *owner_obj(const dirlock_owner *o)
{
        PyObject *t = PyStructSequence_New(OwnerType);
        if (t == NULL)
                return NULL;
        PyObject *alive = o->owner_alive < 0 ? Py_None : o->owner_alive ? Py_True : Py_False;
        Py_INCREF(alive);
        PyObject *items[] = {PyUnicode_FromString(o->name),
                             PyLong_FromLong(o->pid),
                             PyLong_FromUnsignedLongLong(o->start_time),
                             PyUnicode_FromString(o->host),
                             PyUnicode_FromString(o->token),
                             PyFloat_FromDouble(o->acquired),
                             PyFloat_FromDouble(o->age),
                             PyBool_FromLong(o->same_host),
                             alive,
                             PyBool_FromLong(o->stale),
                             mode_str(o->mode),
                             PyLong_FromUnsignedLong(o->readers),
                             PyLong_FromLong(o->partner),
                             PyLong_FromUnsignedLong(o->ranges)};
        for (int i = 0; i < COUNT(items); i++) {
                if (items[i] == NULL) {
                        for (int j = i + 1; j < COUNT(items); j++)
                                Py_XDECREF(items[j]);
                        Py_DECREF(t);
                        return NULL;
                }
                PyStructSequence_SET_ITEM(t, i, items[i]);
        }
        return t;
}

static PyObject *range_obj(const dirlock_range_info *r)
{
        PyObject *t = PyStructSequence_New(RangeInfoType);
        if (t == NULL)
                return NULL;
        PyObject *items[] = {
            PyFloat_FromDouble(r->lo),     PyFloat_FromDouble(r->hi),     mode_str(r->mode),
            PyBool_FromLong(r->waiting),   PyBool_FromLong(r->upgrading), PyLong_FromLong(r->pid),
            PyUnicode_FromString(r->host), PyFloat_FromDouble(r->age)};
        for (int i = 0; i < COUNT(items); i++) {
                if (items[i] == NULL) {
                        for (int j = i + 1; j < COUNT(items); j++)
                                Py_XDECREF(items[j]);
                        Py_DECREF(t);
                        return NULL;
                }
                PyStructSequence_SET_ITEM(t, i, items[i]);
        }
        return t;
}

static PyObject *py_inspect(PyObject *mod, PyObject *args, PyObject *kwds)
{
        (void)mod;
        static const char *kw[] = {"space", "name", "stale_age", NULL};
        PyObject *space, *stale_obj = NULL;
        const char *name;
        double stale;
        if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&s|$O:inspect", (char **)kw, PyUnicode_FSConverter,
                                         &space, &name, &stale_obj))
                return NULL;
        dirlock_owner o;
        dirlock_error err;
        int rc = DIRLOCK_OK;
        if (seconds(stale_obj, "stale_age", 0, &stale) == 0) {
                Py_BEGIN_ALLOW_THREADS rc = dirlock_inspect(PyBytes_AS_STRING(space), name, stale, &o, &err);
                Py_END_ALLOW_THREADS
        }
        Py_DECREF(space);
        if (PyErr_Occurred())
                return NULL;
        if (rc == DIRLOCK_ENOLOCK)
                Py_RETURN_NONE;
        if (rc != DIRLOCK_OK)
                return raise_err(rc, &err);
        return owner_obj(&o);
}

static PyObject *py_list_locks(PyObject *mod, PyObject *args, PyObject *kwds)
{
        (void)mod;
        static const char *kw[] = {"space", "stale_age", NULL};
        PyObject *space, *stale_obj = NULL;
        double stale;
        if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|$O:list_locks", (char **)kw, PyUnicode_FSConverter,
                                         &space, &stale_obj))
                return NULL;
        dirlock_owner *owners = NULL;
        size_t n = 0;
        dirlock_error err;
        int rc = DIRLOCK_OK;
        if (seconds(stale_obj, "stale_age", 0, &stale) == 0) {
                Py_BEGIN_ALLOW_THREADS rc = dirlock_list(PyBytes_AS_STRING(space), stale, &owners, &n, &err);
                Py_END_ALLOW_THREADS
        }
        Py_DECREF(space);
        if (PyErr_Occurred())
                return NULL;
        if (rc != DIRLOCK_OK)
                return raise_err(rc, &err);
        PyObject *list = PyList_New((Py_ssize_t)n);
        for (size_t i = 0; list && i < n; i++) {
                PyObject *o = owner_obj(&owners[i]);
                if (o == NULL)
                        Py_CLEAR(list);
                else
                        PyList_SET_ITEM(list, (Py_ssize_t)i, o);
        }
        free(owners);
        return list;
}

static PyObject *py_break_lock(PyObject *mod, PyObject *args, PyObject *kwds)
{
        (void)mod;
        static const char *kw[] = {"space", "name", "force", "stale_age", NULL};
        PyObject *space, *stale_obj = NULL;
        const char *name;
        int force = 0;
        double stale;
        if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&s|$pO:break_lock", (char **)kw, PyUnicode_FSConverter,
                                         &space, &name, &force, &stale_obj))
                return NULL;
        dirlock_error err;
        int rc = DIRLOCK_OK;
        if (seconds(stale_obj, "stale_age", 0, &stale) == 0) {
                Py_BEGIN_ALLOW_THREADS rc = dirlock_break(PyBytes_AS_STRING(space), name, stale, force, &err);
                Py_END_ALLOW_THREADS
        }
        Py_DECREF(space);
        if (PyErr_Occurred())
                return NULL;
        if (rc != DIRLOCK_OK)
                return raise_err(rc, &err);
        Py_RETURN_NONE;
}

static PyObject *py_cleanup(PyObject *mod, PyObject *args)
{
        (void)mod;
        PyObject *space;
        if (!PyArg_ParseTuple(args, "O&:cleanup", PyUnicode_FSConverter, &space))
                return NULL;
        dirlock_error err;
        int rc;
        Py_BEGIN_ALLOW_THREADS rc = dirlock_cleanup(PyBytes_AS_STRING(space), &err);
        Py_END_ALLOW_THREADS Py_DECREF(space);
        if (rc != DIRLOCK_OK)
                return raise_err(rc, &err);
        Py_RETURN_NONE;
}

static PyObject *py_ranges(PyObject *mod, PyObject *args)
{
        (void)mod;
        PyObject *space;
        const char *name;
        if (!PyArg_ParseTuple(args, "O&s:ranges", PyUnicode_FSConverter, &space, &name))
                return NULL;
        dirlock_range_info *info = NULL;
        size_t n = 0;
        dirlock_error err;
        int rc;
        Py_BEGIN_ALLOW_THREADS rc = dirlock_ranges(PyBytes_AS_STRING(space), name, &info, &n, &err);
        Py_END_ALLOW_THREADS Py_DECREF(space);
        if (rc != DIRLOCK_OK)
                return raise_err(rc, &err);
        PyObject *list = PyList_New((Py_ssize_t)n);
        for (size_t i = 0; list && i < n; i++) {
                PyObject *o = range_obj(&info[i]);
                if (o == NULL)
                        Py_CLEAR(list);
                else
                        PyList_SET_ITEM(list, (Py_ssize_t)i, o);
        }
        free(info);
        return list;
}

static PyTypeObject *SpaceInfoType;

static PyStructSequence_Field space_fields[] = {
    {"backend", "'directory', 'flock', 'Redis', ..."},
    {"dir", "the directory of a space on this host, else None"},
    {"ranges", "range locks are offered"},
    {"fences", "fences are offered"},
    {"upgrade", "intent locks upgrade"},
    {"owner_records", "inspect() and list_locks() are offered"},
    {NULL, NULL},
};
static PyStructSequence_Desc space_desc = {"dirlock.SpaceInfo",
                                           "What a lock space string names (space_info).", space_fields, 6};

static PyObject *py_space_info(PyObject *mod, PyObject *args)
{
        (void)mod;
        PyObject *space;
        if (!PyArg_ParseTuple(args, "O&:space_info", PyUnicode_FSConverter, &space))
                return NULL;
        dirlock_space_info info;
        dirlock_error err;
        int rc = dirlock_space_query(PyBytes_AS_STRING(space), &info, &err);
        PyObject *t = NULL;
        if (rc != DIRLOCK_OK)
                raise_err(rc, &err);
        else if ((t = PyStructSequence_New(SpaceInfoType)) != NULL) {
                PyObject *dir = info.dir ? PyUnicode_DecodeFSDefault(info.dir) : Py_NewRef(Py_None);
                PyObject *items[] = {PyUnicode_FromString(info.backend), dir,
                                     PyBool_FromLong(info.ranges),       PyBool_FromLong(info.fences),
                                     PyBool_FromLong(info.upgrade),      PyBool_FromLong(info.owner_records)};
                for (int i = 0; i < COUNT(items); i++) {
                        if (items[i] == NULL) {
                                for (int j = i + 1; j < COUNT(items); j++)
                                        Py_XDECREF(items[j]);
                                Py_CLEAR(t);
                                break;
                        }
                        PyStructSequence_SET_ITEM(t, i, items[i]);
                }
        }
        Py_DECREF(space);
        return t;
}

static PyObject *py_space_forms(PyObject *mod, PyObject *unused)
{
        (void)mod;
        (void)unused;
        PyObject *list = PyList_New(0);
        const char *form;
        int built;
        for (size_t i = 0; list && (form = dirlock_space_form(i, &built)) != NULL; i++) {
                PyObject *pair = Py_BuildValue("(sO)", form, built ? Py_True : Py_False);
                if (pair == NULL || PyList_Append(list, pair) < 0)
                        Py_CLEAR(list);
                Py_XDECREF(pair);
        }
        return list;
}

static PyObject *py_code_name(PyObject *mod, PyObject *arg)
{
        (void)mod;
        long n = PyLong_AsLong(arg);
        if (n == -1 && PyErr_Occurred())
                return NULL;
        const char *s = n >= 0 && n <= 0x7fffffff ? dirlock_code_name((int)n) : NULL;
        if (s == NULL)
                Py_RETURN_NONE;
        return PyUnicode_FromString(s);
}

static PyObject *py_strerror(PyObject *mod, PyObject *arg)
{
        (void)mod;
        long n = PyLong_AsLong(arg);
        if (n == -1 && PyErr_Occurred())
                return NULL;
        return PyUnicode_FromString(dirlock_strerror(n >= -0x7fffffff && n <= 0x7fffffff ? (int)n : -1));
}

/* The next Lock of this thread whose acquire or upgrade ended (see "Event
 * loops" at the top), or None. */
static PyObject *py_pending_next(PyObject *mod, PyObject *unused)
{
        (void)mod;
        (void)unused;
        dirlock_pending *p;
        Py_BEGIN_ALLOW_THREADS p = dirlock_pending_next();
        Py_END_ALLOW_THREADS if (p == NULL) Py_RETURN_NONE;
        PyObject *lock = dirlock_pending_data(p);
        Py_INCREF(lock);
        return lock;
}

static PyMethodDef module_methods[] = {
    {"_pending_next", py_pending_next, METH_NOARGS,
     "_pending_next()\n--\n\nWhen the descriptor _acquire_start returned is readable: run this\n"
     "thread's asynchronous acquires that can go on, and return a Lock whose\n"
     "acquire or upgrade ended (call until None)."},
    {"inspect", (PyCFunction)(void (*)(void))py_inspect, METH_VARARGS | METH_KEYWORDS,
     "inspect(space, name, *, stale_age=None)\n--\n\n"
     "The owner record of lock `name` (a dirlock.Owner), or None when it is free.\n"
     "stale_age decides Owner.stale (180 s by default)."},
    {"list_locks", (PyCFunction)(void (*)(void))py_list_locks, METH_VARARGS | METH_KEYWORDS,
     "list_locks(space, *, stale_age=None)\n--\n\n"
     "Every lock of the space that exists (held, or with readers or waiters), as\n"
     "dirlock.Owner records, in name order."},
    {"break_lock", (PyCFunction)(void (*)(void))py_break_lock, METH_VARARGS | METH_KEYWORDS,
     "break_lock(space, name, *, force=False, stale_age=None)\n--\n\n"
     "Break the exclusive hold of lock `name` if it is stale (dirlock.ELIVE\n"
     "otherwise), or whatever its state with force.  Never removes a lock taken\n"
     "after the judgement it acted on.  dirlock.ENOLOCK when there is no such lock;\n"
     "dirlock.ELIVE too when no exclusive holder but readers, ranges or permits\n"
     "hold it (the next process that waits for one breaks it once dead or stale)."},
    {"cleanup", py_cleanup, METH_VARARGS,
     "cleanup(space)\n--\n\nRemove what crashed processes left behind.  Safe at any time."},
    {"ranges", py_ranges, METH_VARARGS,
     "ranges(space, name)\n--\n\nEvery range holder and waiter of lock `name` (dirlock.RangeInfo), by lo."},
    {"space_info", py_space_info, METH_VARARGS,
     "space_info(space)\n--\n\nWhat a lock space string names, without touching the space (a\n"
     "dirlock.SpaceInfo); dirlock.EINVAL for a kind this build does not have."},
    {"space_forms", py_space_forms, METH_NOARGS,
     "space_forms()\n--\n\nThe forms a lock space string may take, for usage texts: (form, built)\n"
     "pairs, built False for a kind this build of the library does not have."},
    {"code_name", py_code_name, METH_O,
     "code_name(number)\n--\n\nThe library's name of an error code ('EBUSY'), or None."},
    {"strerror", py_strerror, METH_O, "strerror(number)\n--\n\nThe short fixed text of an error code."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "dirlock._dirlock",
    .m_doc = "The dirlock C library (see the dirlock package).",
    .m_size = -1,
    .m_methods = module_methods,
};

/* dirlock.Error and one subclass per code the library names. */
static int add_exceptions(PyObject *m)
{
        Error = PyErr_NewExceptionWithDoc(
            "dirlock.Error",
            "A failure of the dirlock library.  Each code has its own subclass\n"
            "(dirlock.EBUSY, dirlock.ETIMEDOUT, ...), made at import from the library's\n"
            "names.  Attributes: code (the name, 'EBUSY'), number, message (the\n"
            "library's, naming the lock, the path and the holder) and errno (the\n"
            "system's, for EIO; else 0).",
            NULL, NULL);
        if (Error == NULL || PyModule_AddObjectRef(m, "Error", Error) < 0)
                return -1;
        int n = 0;
        while (dirlock_code_name(n) != NULL)
                n++;
        code_classes = PyMem_Calloc((size_t)n, sizeof *code_classes);
        if (code_classes == NULL)
                return -1;
        code_count = n;
        PyObject *names = PyTuple_New(n);
        if (names == NULL)
                return -1;
        for (int c = 0; c < n; c++) {
                const char *name = dirlock_code_name(c);
                PyTuple_SET_ITEM(names, c, PyUnicode_FromString(name));
                if (c == 0)
                        continue;
                char qual[96];
                snprintf(qual, sizeof qual, "dirlock.%s", name);
                code_classes[c] = PyErr_NewExceptionWithDoc(qual, dirlock_strerror(c), Error, NULL);
                if (code_classes[c] == NULL || PyModule_AddObjectRef(m, name, code_classes[c]) < 0)
                        return -1;
        }
        int rc = PyModule_AddObjectRef(m, "CODES", names);
        Py_DECREF(names);
        return rc;
}

PyMODINIT_FUNC PyInit__dirlock(void)
{
        PyObject *m = PyModule_Create(&module_def);
        if (m == NULL)
                return NULL;
        if (PyType_Ready(&LockType) < 0 || PyModule_AddObjectRef(m, "Lock", (PyObject *)&LockType) < 0)
                goto fail;
        OwnerType = PyStructSequence_NewType(&owner_desc);
        RangeInfoType = PyStructSequence_NewType(&range_desc);
        SpaceInfoType = PyStructSequence_NewType(&space_desc);
        if (OwnerType == NULL || RangeInfoType == NULL || SpaceInfoType == NULL ||
            PyModule_AddObjectRef(m, "SpaceInfo", (PyObject *)SpaceInfoType) < 0 ||
            PyModule_AddObjectRef(m, "Owner", (PyObject *)OwnerType) < 0 ||
            PyModule_AddObjectRef(m, "RangeInfo", (PyObject *)RangeInfoType) < 0)
                goto fail;
        if (add_exceptions(m) < 0 || PyModule_AddStringConstant(m, "LIBRARY_VERSION", DIRLOCK_VERSION) < 0)
                goto fail;
        /* signal.set_wakeup_fd, for waits (see the top), from the C module
         * under it: `signal` itself imports enum, a cost at every start. */
        PyObject *signal = PyImport_ImportModule("_signal");
        set_wakeup_fd = signal ? PyObject_GetAttrString(signal, "set_wakeup_fd") : NULL;
        Py_XDECREF(signal);
        if (PyErr_Occurred())
                goto fail;
        return m;
fail:
        Py_DECREF(m);
        return NULL;
}
