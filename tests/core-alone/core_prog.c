/* core_prog.c - a program of the core alone (tests/core-alone.t compiles
 * it with the C files of lib/core and nothing else): the exclusive lock in a
 * directory, as a program that copies lib/core into its tree uses it.
 *
 *   core_prog count DIR NAME FILE N [nolock]
 *       N times: take NAME, read the number in FILE, write it + 1, release
 *       ("nolock": the same without the lock, the twin that must lose)
 *   core_prog try DIR NAME        one try; prints "OK" or "CODE: message"
 *   core_prog tour DIR            take, refresh, check, inspect, a
 *                                 multi-lock, break a dead holder's lock
 *   core_prog list DIR            the names of the locks, one a line
 *   core_prog cleanup DIR         dirlock_cleanup */
#include "dirlock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what, int rc, const dirlock_error *err)
{
        printf("%s: %s: %s\n", what, dirlock_code_name(rc), err->message);
        return 1;
}

static int bump(const char *file)
{
        FILE *f = fopen(file, "r");
        long n = 0;
        if (f != NULL) {
                if (fscanf(f, "%ld", &n) != 1)
                        n = 0;
                fclose(f);
        }
        usleep(200); /* widen the window a twin without the lock loses in */
        f = fopen(file, "w");
        if (f == NULL)
                return -1;
        fprintf(f, "%ld\n", n + 1);
        return fclose(f);
}

static int count(const char *dir, const char *name, const char *file, int n, int lock)
{
        dirlock_error err;
        for (int i = 0; i < n; i++) {
                dirlock *l = NULL;
                int rc = lock ? dirlock_acquire(dir, name, NULL, &l, &err) : DIRLOCK_OK;
                if (rc != DIRLOCK_OK)
                        return fail("acquire", rc, &err);
                if (bump(file) != 0) {
                        perror(file);
                        return 1;
                }
                if (lock && (rc = dirlock_release(l, &err)) != DIRLOCK_OK)
                        return fail("release", rc, &err);
        }
        return 0;
}

static int try_once(const char *dir, const char *name)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        dirlock *l;
        dirlock_error err;
        int rc = dirlock_acquire(dir, name, &o, &l, &err);
        if (rc != DIRLOCK_OK)
                return fail("try", rc, &err) + 1;
        puts("OK");
        return dirlock_release(l, &err) == DIRLOCK_OK ? 0 : 1;
}

/* Each call the core offers, on its own locks. */
static int tour(const char *dir)
{
        dirlock_error err;
        dirlock *l;
        dirlock_owner o;
        int rc;
        if ((rc = dirlock_acquire(dir, "t", NULL, &l, &err)) != DIRLOCK_OK)
                return fail("acquire", rc, &err);
        if ((rc = dirlock_refresh(l, &err)) != DIRLOCK_OK || (rc = dirlock_check(l, &err)) != DIRLOCK_OK)
                return fail("refresh/check", rc, &err);
        if ((rc = dirlock_inspect(dir, "t", 0, &o, &err)) != DIRLOCK_OK)
                return fail("inspect", rc, &err);
        if (o.pid != getpid() || strcmp(o.token, dirlock_token(l)) != 0 || o.owner_alive != 1) {
                printf("inspect: pid %ld, alive %d: not this holder\n", (long)o.pid, o.owner_alive);
                return 1;
        }
        if ((rc = dirlock_break(dir, "t", 0, 0, &err)) != DIRLOCK_ELIVE)
                return fail("break of a live holder's lock", rc, &err);
        if ((rc = dirlock_release(l, &err)) != DIRLOCK_OK)
                return fail("release", rc, &err);
        const char *names[] = {"m2", "m1", "m2"};
        dirlock_set *set;
        if ((rc = dirlock_acquire_many(dir, names, 3, NULL, &set, &err)) != DIRLOCK_OK)
                return fail("acquire_many", rc, &err);
        if (dirlock_set_count(set) != 2 || strcmp(dirlock_name(dirlock_set_lock(set, 0)), "m1") != 0) {
                puts("acquire_many: not the two names in order");
                return 1;
        }
        if ((rc = dirlock_release_many(set, &err)) != DIRLOCK_OK)
                return fail("release_many", rc, &err);
        puts("OK");
        return 0;
}

static int list(const char *dir)
{
        dirlock_owner *owners;
        size_t n;
        dirlock_error err;
        int rc = dirlock_list(dir, 0, &owners, &n, &err);
        if (rc != DIRLOCK_OK)
                return fail("list", rc, &err);
        for (size_t i = 0; i < n; i++)
                printf("%s readers=%u ranges=%u\n", owners[i].name, owners[i].readers, owners[i].ranges);
        free(owners);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc >= 6 && strcmp(argv[1], "count") == 0)
                return count(argv[2], argv[3], argv[4], atoi(argv[5]),
                             argc < 7 || strcmp(argv[6], "nolock") != 0);
        if (argc == 4 && strcmp(argv[1], "try") == 0)
                return try_once(argv[2], argv[3]);
        if (argc == 3 && strcmp(argv[1], "tour") == 0)
                return tour(argv[2]);
        if (argc == 3 && strcmp(argv[1], "list") == 0)
                return list(argv[2]);
        if (argc == 3 && strcmp(argv[1], "cleanup") == 0) {
                dirlock_error err;
                int rc = dirlock_cleanup(argv[2], &err);
                return rc == DIRLOCK_OK ? 0 : fail("cleanup", rc, &err);
        }
        fprintf(stderr, "usage: core_prog count|try|tour|list|cleanup DIR ...\n");
        return 2;
}
