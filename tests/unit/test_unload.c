/* test_unload.c - the library loaded with dlopen by a thread, used, and
 * unloaded with dlclose before that thread exits, as Node does with an
 * addon when a worker thread ends (issue 39): the thread's exit runs the
 * library's thread-exit destructors (here the inotify hub's, registered by
 * a wait), which must still be there.  The library pins itself once it
 * registers one (lib/thread_key.c), and only then: the twin, a thread that
 * registers none, sees the library unloaded by its dlclose -- the hazard
 * is real, and the check can tell a pinned library from one that is not. */
#include "core_fixture.h"

#include <dlfcn.h>
#include <libgen.h>

static char so_path[4096];

/* BUILD/libdirlock.so.1, from BUILD/tests/unit/test_unload. */
static void find_library(void)
{
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        assert_true(n > 0);
        exe[n] = '\0';
        snprintf(so_path, sizeof so_path, "%s/../../libdirlock.so.1", dirname(exe));
        assert_int_equal(access(so_path, R_OK), 0);
}

static bool still_loaded(void)
{
        void *h = dlopen(so_path, RTLD_NOW | RTLD_NOLOAD);
        if (h != NULL)
                dlclose(h);
        return h != NULL;
}

struct run {
        bool wait;   /* take a lock that is held: the wait registers a destructor */
        int rc;      /* what the acquire returned                                  */
        bool loaded; /* the library was loaded by this thread                     */
};

static void *thread_main(void *arg)
{
        struct run *r = arg;
        void *lib = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
        r->loaded = lib != NULL;
        if (lib == NULL)
                return NULL;
        if (r->wait) {
                int (*acquire)(const char *, const char *, const dirlock_options *, dirlock **,
                               dirlock_error *) =
                    (int (*)(const char *, const char *, const dirlock_options *, dirlock **,
                             dirlock_error *))dlsym(lib, "dirlock_acquire");
                dirlock_options o = DIRLOCK_OPTIONS_INIT;
                o.timeout = 0.3; /* longer than the first try takes, even under valgrind */
                dirlock *h = NULL;
                r->rc = acquire != NULL ? acquire(lockdir, "held", &o, &h, NULL) : -1;
        } else {
                const char *(*strerror_fn)(int) = (const char *(*)(int))dlsym(lib, "dirlock_strerror");
                r->rc = strerror_fn != NULL && strerror_fn(DIRLOCK_OK) != NULL ? DIRLOCK_OK : -1;
        }
        dlclose(lib);
        return NULL; /* the thread's exit runs what the library registered */
}

static void run_thread(struct run *r)
{
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, thread_main, r), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_true(r->loaded);
}

/* First: nothing registered, so nothing pins it (the process has not
 * loaded it yet). */
static void test_twin_unloaded_when_nothing_registered(void **state)
{
        (void)state;
        find_library();
        struct run r = {.wait = false};
        run_thread(&r);
        assert_int_equal(r.rc, DIRLOCK_OK);
        assert_false(still_loaded());
}

static void test_thread_exit_after_dlclose(void **state)
{
        (void)state;
        find_library();
        dirlock *holder = take("held", 0);
        assert_non_null(holder);
        struct run r = {.wait = true};
        run_thread(&r); /* died of SIGSEGV here before the pin */
        assert_int_equal(r.rc, DIRLOCK_ETIMEDOUT);
        assert_true(still_loaded());
        /* And loaded again by another thread, it works. */
        r = (struct run){.wait = true};
        run_thread(&r);
        assert_int_equal(r.rc, DIRLOCK_ETIMEDOUT);
        assert_int_equal(dirlock_release(holder, NULL), DIRLOCK_OK);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_twin_unloaded_when_nothing_registered),
            cmocka_unit_test(test_thread_exit_after_dlclose),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
