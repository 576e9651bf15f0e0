/* core_fixture.h - what the unit tests of the exclusive lock share: a
 * private lock directory per test program (setup/teardown), a clock, a
 * short sleep, and a one-line acquire.  Included by tests/unit/test_core_*.c. */
#ifndef CORE_FIXTURE_H
#define CORE_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dir.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char lockdir[256];

static inline int setup(void **state)
{
        (void)state;
        snprintf(lockdir, sizeof lockdir, "%s/dirlock-unit.XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(lockdir) == NULL)
                return -1;
        return 0;
}

static inline int teardown(void **state)
{
        (void)state;
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", lockdir);
        return system(cmd) == 0 ? 0 : -1;
}

static inline double now_ms(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static inline dirlock *take(const char *name, double timeout)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = timeout;
        dirlock *h = NULL;
        dirlock_error e;
        int rc = dirlock_acquire(lockdir, name, &o, &h, &e);
        if (rc != DIRLOCK_OK)
                return NULL;
        return h;
}

/* A hold that stands for another thread's or process's: taken with
 * DIRLOCK_NO_DEADLOCK, so that this thread waiting behind it is no
 * deadlock (it is released by someone else, or the wait times out). */
static inline dirlock *take_other(const char *name)
{
        dirlock_options o = DIRLOCK_OPTIONS_INIT;
        o.timeout = 0;
        o.flags = DIRLOCK_NO_DEADLOCK;
        dirlock *h = NULL;
        dirlock_error e;
        return dirlock_acquire(lockdir, name, &o, &h, &e) == DIRLOCK_OK ? h : NULL;
}

static inline void sleep_ms(long ms)
{
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

#endif
