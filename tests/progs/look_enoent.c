/* look_enoent.c - a preload (LD_PRELOAD) that answers ENOENT to the first
 * LOOK_ENOENT_TIMES looks at a lock directory's attributes through its
 * descriptor (statx(fd, "", AT_EMPTY_PATH) on a directory named *.lock):
 * what a network filesystem's client answers for a lock directory removed
 * as it was read, on any filesystem (tests/netfs-look.t).  Each answer is
 * logged as a line "ENOENT PATH" to LOOK_ENOENT_LOG when it is set.
 * Single-threaded callers only (dirlock(1)). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int statx_fn(int, const char *, int, unsigned, struct statx *);

/* Whether descriptor fd is a directory named *.lock; its path in path. */
static int is_lock_dir(int fd, char *path, size_t size)
{
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, path, size - 1);
        if (n < 6)
                return 0;
        path[n] = '\0';
        return strcmp(path + n - 5, ".lock") == 0;
}

int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *sx)
{
        static statx_fn *real;
        static long left = -1;
        if (real == NULL)
                real = (statx_fn *)dlsym(RTLD_NEXT, "statx");
        if (left < 0) {
                const char *n = getenv("LOOK_ENOENT_TIMES");
                left = n != NULL ? atol(n) : 0;
        }
        char dir[4096];
        if (left > 0 && path[0] == '\0' && (flags & AT_EMPTY_PATH) && is_lock_dir(dirfd, dir, sizeof dir)) {
                left--;
                const char *log = getenv("LOOK_ENOENT_LOG");
                FILE *f = log != NULL ? fopen(log, "a") : NULL;
                if (f != NULL) {
                        fprintf(f, "ENOENT %s\n", dir);
                        fclose(f);
                }
                errno = ENOENT;
                return -1;
        }
        return real(dirfd, path, flags, mask, sx);
}
