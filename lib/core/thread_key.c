/* thread_key.c - the library's thread-exit destructors (the inotify hub,
 * lib/async's spare shells, lib/server's idle connections), made safe:
 * glibc runs a key's destructor wherever its code is by then, and a
 * library inside a dlopen'd object (a Node addon) may be unloaded while
 * threads that used it live on (SIGSEGV at their exit, issue 39).  So the
 * first registration pins the object the library's code is in (dlopen
 * RTLD_NOLOAD | RTLD_NODELETE, never closed), as OpenSSL does; a program
 * that registers none can still unload it, and in a program linked with
 * the library the pin is a no-op. */
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
