/* forkconn.c - whether a forked child leaves its parent's connections to
 * a lock server alone (lib/conn_cache.c: the child closes its copies and
 * must send nothing on them -- over TLS no close_notify, which would end
 * the parent's session on the server), for the TLS tests
 * (tests/core-redis-tls.t, tests/core-etcd-tls.t).
 *
 *   forkconn SPACE NAME
 *
 * The parent takes NAME (its connection is open and kept), notes its
 * sockets, forks; the child frees its copy of the handle, takes and
 * releases NAME.child on a connection of its own, and exits; the parent
 * then checks and releases NAME and notes its sockets again.  Prints
 * "same" when the parent's sockets are the ones it had (its connection
 * lived through the child's close), else "changed A -> B" (counts), and
 * exits 0; "error WHAT: MESSAGE" and 1 when a call failed. */
#include "dirlock.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SOCKETS_MAX 64

/* The inodes of this process's sockets. */
static size_t sockets(unsigned long *out)
{
        size_t n = 0;
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        while (d != NULL && (de = readdir(d)) != NULL && n < SOCKETS_MAX) {
                char path[300], target[64];
                snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
                ssize_t len = readlink(path, target, sizeof target - 1);
                if (len <= 0)
                        continue;
                target[len] = '\0';
                if (sscanf(target, "socket:[%lu]", &out[n]) == 1)
                        n++;
        }
        if (d != NULL)
                closedir(d);
        return n;
}

static bool same(const unsigned long *a, size_t na, const unsigned long *b, size_t nb)
{
        for (size_t i = 0; i < na; i++) {
                bool found = false;
                for (size_t j = 0; j < nb && !found; j++)
                        found = a[i] == b[j];
                if (!found)
                        return false;
        }
        return na == nb;
}

static int failed(const char *what, const dirlock_error *e)
{
        printf("error %s: %s\n", what, e->message);
        return 1;
}

int main(int argc, char **argv)
{
        if (argc != 3) {
                fprintf(stderr, "usage: forkconn SPACE NAME\n");
                return 2;
        }
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 10;
        dirlock *h;
        dirlock_error e;
        if (dirlock_acquire(argv[1], argv[2], &o, &h, &e) != DIRLOCK_OK)
                return failed("acquire", &e);
        unsigned long before[SOCKETS_MAX], after[SOCKETS_MAX];
        size_t nb = sockets(before);
        fflush(stdout);
        pid_t child = fork();
        if (child == 0) {
                dirlock_free(h, NULL);
                char name[128];
                snprintf(name, sizeof name, "%s.child", argv[2]);
                dirlock *c;
                bool ok = dirlock_acquire(argv[1], name, &o, &c, &e) == DIRLOCK_OK &&
                          dirlock_release(c, &e) == DIRLOCK_OK;
                if (!ok)
                        fprintf(stderr, "forkconn: child: %s\n", e.message);
                _exit(ok ? 0 : 1);
        }
        int st;
        if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                printf("error child: it failed\n");
                return 1;
        }
        if (dirlock_check(h, &e) != DIRLOCK_OK)
                return failed("check", &e);
        if (dirlock_release(h, &e) != DIRLOCK_OK)
                return failed("release", &e);
        size_t na = sockets(after);
        if (same(before, nb, after, na))
                printf("same\n");
        else
                printf("changed %zu -> %zu\n", nb, na);
        return 0;
}
