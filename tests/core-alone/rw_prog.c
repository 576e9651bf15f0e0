/* rw_prog.c - a program of the core and the reader-writer module alone
 * (tests/core-alone.t compiles it with the C files of lib/core and lib/rw): two
 * readers of one name hold it at once, a writer's try is refused while
 * they do, and taken once they are gone. */
#include "dirlock.h"
#include "dirlock_rw.h"

#include <stdio.h>

static int fail(const char *what, int rc, const dirlock_error *err)
{
        printf("%s: %s: %s\n", what, dirlock_code_name(rc), err->message);
        return 1;
}

int main(int argc, char **argv)
{
        if (argc != 2) {
                fprintf(stderr, "usage: rw_prog DIR\n");
                return 2;
        }
        dirlock_options shared = DIRLOCK_OPTIONS_INIT, try = DIRLOCK_OPTIONS_INIT;
        shared.mode = DIRLOCK_SHARED;
        shared.timeout = try.timeout = 0;
        dirlock *r1, *r2, *w;
        dirlock_error err;
        int rc;
        if ((rc = dirlock_acquire(argv[1], "doc", &shared, &r1, &err)) != DIRLOCK_OK)
                return fail("first reader", rc, &err);
        if ((rc = dirlock_acquire(argv[1], "doc", &shared, &r2, &err)) != DIRLOCK_OK)
                return fail("second reader beside the first", rc, &err);
        if ((rc = dirlock_acquire(argv[1], "doc", &try, &w, &err)) != DIRLOCK_EBUSY)
                return fail("a writer while two readers hold (not EBUSY)", rc, &err);
        if ((rc = dirlock_release(r1, &err)) != DIRLOCK_OK || (rc = dirlock_release(r2, &err)) != DIRLOCK_OK)
                return fail("release of the readers", rc, &err);
        if ((rc = dirlock_acquire(argv[1], "doc", &try, &w, &err)) != DIRLOCK_OK)
                return fail("the writer once the readers left", rc, &err);
        if ((rc = dirlock_release(w, &err)) != DIRLOCK_OK)
                return fail("release of the writer", rc, &err);
        puts("OK");
        return 0;
}
