/* thread_key.c - the library's thread-exit destructors (pthread keys: the
 * inotify hub of notify.c, the spare shells of pending.c, the idle
 * connections of conn_cache.c), and what makes them safe to register: the
 * code they run stays loaded for as long as a thread may still run it.
 *
 * THE HAZARD.  glibc calls a key's destructor when a thread whose value for
 * the key is set exits (__nptl_deallocate_tsd), wherever the destructor's
 * code is by then.  A library linked into an object that is loaded with
 * dlopen -- a Node addon, a Python extension, a Perl XS module -- may be
 * unloaded by dlclose while threads that used it live on: Node unloads an
 * addon when the worker thread that loaded it ends, before that thread
 * exits, and the thread's exit then jumped into unmapped memory (SIGSEGV,
 * issue 39).  pthread_key_delete in a destructor function of the library
 * (run at dlclose) is no cure: it races a thread exiting at that moment,
 * and what other threads hold (their inotify instance, connections) could
 * then never be closed.  Linking with -z nodelete is a property of the
 * final object (the addon, the extension), which a static library linked
 * into it cannot set.
 *
 * THE RULE.  The first time the library registers a destructor, it pins
 * the object its own code is in (found with dladdr): dlopen with
 * RTLD_NOLOAD | RTLD_NODELETE, whose handle is never closed, so that no
 * later dlclose unmaps it.  Python and Perl never unload an extension
 * anyway; OpenSSL pins itself the same way for the same reason.  A program
 * that never registers one (no wait, no pending acquire, no connection)
 * can still unload the library.  In a program linked with the library (its
 * static archive, or libdirlock.so named at link time) the pin is a no-op:
 * such an object is never unloaded. */
#include "core.h"

#include <dlfcn.h>
#include <pthread.h>

static pthread_once_t pin_once = PTHREAD_ONCE_INIT;

static void pin(void)
{
        Dl_info where;
        if (dladdr((void *)&pin, &where) == 0 || where.dli_fname == NULL)
                return;
        /* NULL for the main program (it has no name to load it by) and
         * when the object cannot be found again by its name: then there is
         * nothing to pin, or nothing better to do. */
        void *self = dlopen(where.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        (void)self; /* kept open for good: the point */
}

int dl_thread_key_create(pthread_key_t *key, void (*destructor)(void *))
{
        pthread_once(&pin_once, pin);
        return pthread_key_create(key, destructor);
}
