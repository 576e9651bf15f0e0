/* loader.c - the shared library's backends, loaded on the first use of
 * their scheme (backend.h, THE REGISTRY).  Built into libdirlock.so
 * only: a backend module links libdirlock.so.1 itself, and loaded into a
 * program that has the library's static archive it would register into a
 * second copy of the library -- such a program links the backends it
 * uses instead.
 *
 * WHERE.  A scheme's backend is the shared object BASE.so, BASE the
 * scheme up to its first '+' (redis+unix:// is redis.so's) -- or, when
 * there is no BASE.so nor BASE.absent and BASE ends in 's', BASE without
 * it: the TLS form of a scheme is its module's too, as https is http's
 * (rediss:// is redis.so's, etcds:// etcd.so's) -- looked for
 * in the directory `dirlock` beside the file this library was loaded
 * from (build/dirlock/ in the source tree, LIBDIR/dirlock/ installed),
 * then in the directory the build named (DIRLOCK_MODULE_DIR, the
 * installed one); the environment variable DIRLOCK_MODULE_DIR, when set
 * (and the program is not set-id), is the only place looked in instead.
 * A module's constructor registers its table as dlopen loads it; it
 * stays loaded (RTLD_NODELETE).  A build that could not make a backend
 * (its client library was missing) leaves BASE.absent there instead,
 * saying what to install, and that is what a space of its scheme is
 * told; so does a package that ships a module apart (debian/rules), for
 * when that package is not installed: BASE.so, when there, wins.  With
 * neither, the space is told where BASE.so was looked for.
 *
 * Loading is serialised by a mutex; registrations happen inside it (or
 * before main), one at a time, as the registry requires. */
#include "backend.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef DIRLOCK_MODULE_DIR
#define DIRLOCK_MODULE_DIR NULL
#endif

/* The longest scheme base a module may have. */
#define BASE_MAX 32

static pthread_mutex_t load_mutex = PTHREAD_MUTEX_INITIALIZER;
static bool all_loaded;

/* The kinds this build knows of but could not make (BASE.absent files),
 * found by load_every_module: "BASE://...", and why. */
#define ABSENT_MAX 8
static struct absent_note {
        char form[BASE_MAX + 8];
        char why[240];
} notes[ABSENT_MAX];
static size_t nnotes;

/* The directories to look in (see WHERE): their number, at most 2. */
static size_t module_dirs(char dirs[2][PATH_MAX])
{
        const char *env = secure_getenv("DIRLOCK_MODULE_DIR");
        if (env != NULL && env[0] != '\0') {
                snprintf(dirs[0], PATH_MAX, "%s", env);
                return 1;
        }
        size_t n = 0;
        Dl_info self;
        const char *slash;
        if (dladdr((void *)module_dirs, &self) != 0 && self.dli_fname != NULL &&
            (slash = strrchr(self.dli_fname, '/')) != NULL)
                snprintf(dirs[n++], PATH_MAX, "%.*s/dirlock", (int)(slash - self.dli_fname), self.dli_fname);
        if (DIRLOCK_MODULE_DIR != NULL && (n == 0 || strcmp(dirs[0], DIRLOCK_MODULE_DIR) != 0))
                snprintf(dirs[n++], PATH_MAX, "%s", DIRLOCK_MODULE_DIR);
        return n;
}

/* The first line of file `path` into why; false when it cannot be read. */
static bool read_note(const char *path, char *why, size_t size)
{
        FILE *f = fopen(path, "re");
        if (f == NULL)
                return false;
        bool got = fgets(why, (int)size, f) != NULL;
        fclose(f);
        if (got)
                why[strcspn(why, "\n")] = '\0';
        return got;
}

/* Load module `path`: 1, or -1 with err saying why. */
static int open_module(const char *path, dirlock_error *err)
{
        if (dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) != NULL)
                return 1;
        const char *why = dlerror();
        dl_fail(err, DIRLOCK_EINVAL, 0, "cannot load backend module '%s': %s", path,
                why ? why : "unknown error");
        return -1;
}

/* Module BASE.so of one of dirs loaded, or BASE.absent's note in err:
 * 1, -1, or 0 when there is neither.  Under load_mutex. */
static int load_base(const char *base, char dirs[2][PATH_MAX], size_t ndirs, dirlock_error *err)
{
        char path[PATH_MAX + BASE_MAX + 16];
        int rc = 0;
        for (size_t d = 0; d < ndirs && rc == 0; d++) {
                snprintf(path, sizeof path, "%s/%s.so", dirs[d], base);
                if (access(path, F_OK) == 0)
                        rc = open_module(path, err);
        }
        for (size_t d = 0; d < ndirs && rc == 0; d++) {
                char why[240];
                snprintf(path, sizeof path, "%s/%s.absent", dirs[d], base);
                if (read_note(path, why, sizeof why)) {
                        dl_fail(err, DIRLOCK_EINVAL, 0, "%s", why);
                        rc = -1;
                }
        }
        return rc;
}

static int load_scheme(const char *scheme, dirlock_error *err)
{
        char base[BASE_MAX + 1], dirs[2][PATH_MAX];
        size_t n = strcspn(scheme, "+");
        if (n > BASE_MAX)
                return 0;
        for (size_t i = 0; i < n; i++)
                base[i] = (char)(scheme[i] >= 'A' && scheme[i] <= 'Z' ? scheme[i] - 'A' + 'a' : scheme[i]);
        base[n] = '\0';
        pthread_mutex_lock(&load_mutex);
        size_t ndirs = module_dirs(dirs);
        int rc = load_base(base, dirs, ndirs, err);
        if (rc == 0 && n > 1 && base[n - 1] == 's') {
                base[n - 1] = '\0'; /* the TLS form: its plain scheme's module (WHERE) */
                rc = load_base(base, dirs, ndirs, err);
                base[n - 1] = 's';
        }
        pthread_mutex_unlock(&load_mutex);
        if (rc == 0) /* where a module of it would have been */
                dl_fail(err, DIRLOCK_EINVAL, 0, "no backend module '%s.so' in %s%s%s", base,
                        ndirs > 0 ? dirs[0] : "(no directory)", ndirs > 1 ? " or " : "",
                        ndirs > 1 ? dirs[1] : "");
        return rc;
}

/* Whether directory `dir` has BASE.so, BASE the first `n` bytes of
 * `name`: a note for a module that is there is not read (a package may
 * ship the note of a module another package brings). */
static bool module_beside(const char *dir, const char *name, size_t n)
{
        char path[PATH_MAX + BASE_MAX + 8];
        snprintf(path, sizeof path, "%s/%.*s.so", dir, (int)n, name);
        return access(path, F_OK) == 0;
}

/* Every module of directory `dir` loaded, every .absent note kept but
 * those of a module that is there. */
static void load_dir(const char *dir)
{
        DIR *d = opendir(dir);
        if (d == NULL)
                return;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                size_t len = strlen(de->d_name);
                char path[PATH_MAX + NAME_MAX + 2];
                snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
                if (len > 3 && strcmp(de->d_name + len - 3, ".so") == 0) {
                        (void)open_module(path, NULL);
                } else if (len > 7 && len - 7 <= BASE_MAX && strcmp(de->d_name + len - 7, ".absent") == 0 &&
                           nnotes < ABSENT_MAX && !module_beside(dir, de->d_name, len - 7)) {
                        struct absent_note *a = &notes[nnotes];
                        snprintf(a->form, sizeof a->form, "%.*s://...", (int)(len - 7), de->d_name);
                        if (read_note(path, a->why, sizeof a->why))
                                nnotes++;
                }
        }
        closedir(d);
}

static void load_every_module(void)
{
        pthread_mutex_lock(&load_mutex);
        if (!all_loaded) {
                char dirs[2][PATH_MAX];
                size_t ndirs = module_dirs(dirs);
                for (size_t d = 0; d < ndirs; d++)
                        load_dir(dirs[d]);
                all_loaded = true;
        }
        pthread_mutex_unlock(&load_mutex);
}

static const char *absent_kind(size_t i, const char **why)
{
        if (i >= nnotes)
                return NULL;
        *why = notes[i].why;
        return notes[i].form;
}

static const dl_backend_loader module_loader = {load_scheme, load_every_module, absent_kind};

DL_ON_LOAD(loader_register)
{
        dl_backend_loader_set(&module_loader);
}
