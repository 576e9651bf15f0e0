/* space_fixture.h - the two kinds of lock space a unit test runs the same
 * cases against, as two cmocka groups: a private lock directory
 * (dir_setup) and a private redis-server on a unix socket in that
 * directory (redis_setup), started by the group and killed at its end
 * (redis_teardown).  The Redis group is skipped, saying why (NEED_SPACE),
 * when redis-server is not installed or the library was built without
 * Redis support.  `fresh` empties the space before each test, whatever a
 * failed test left held.  Included by tests/unit/test_range.c and
 * test_core_dead_try.c. */
#ifndef SPACE_FIXTURE_H
#define SPACE_FIXTURE_H

#include "core_fixture.h"
#include "redis_server.h"

static const char *space; /* the group's lock space */
static char redis_space[400], redis_sock[300];
static pid_t redis_server = -1;
static const char *skip_why;

#define NEED_SPACE()                                                                                         \
        do {                                                                                                 \
                if (skip_why != NULL) {                                                                      \
                        print_message("skipped: %s\n", skip_why);                                            \
                        skip();                                                                              \
                }                                                                                            \
        } while (0)

static inline int dir_setup(void **state)
{
        skip_why = NULL;
        int rc = setup(state);
        space = lockdir;
        return rc;
}

/* A private redis-server in the group's directory, or skip_why. */
static inline int redis_setup(void **state)
{
        if (setup(state) != 0)
                return -1;
        snprintf(redis_sock, sizeof redis_sock, "%s/redis.sock", lockdir);
        snprintf(redis_space, sizeof redis_space, "redis+unix://%s", redis_sock);
        space = redis_space;
        skip_why = NULL;
        dirlock_owner o;
        dirlock_error e;
        if (system("command -v redis-server >/dev/null 2>&1") != 0) {
                skip_why = "redis-server is not installed";
                return 0;
        }
        if (dirlock_inspect("redis+unix:///nonexistent", "x", 0, &o, &e) == DIRLOCK_EINVAL &&
            strstr(e.message, "no Redis support") != NULL) {
                skip_why = "the library was built without Redis support";
                return 0;
        }
        return redis_server_start(redis_sock, lockdir, &redis_server);
}

/* Before each test: an empty space, whatever a failed test left held. */
static inline int fresh(void **state)
{
        (void)state;
        char cmd[700];
        if (space == redis_space && skip_why == NULL)
                snprintf(cmd, sizeof cmd, "redis-cli -s '%s' flushall >/dev/null", redis_sock);
        else
                snprintf(cmd, sizeof cmd,
                         "find '%s' -mindepth 1 -maxdepth 1 ! -name 'redis*' -exec rm -rf {} +", lockdir);
        return system(cmd) == 0 ? 0 : -1;
}

static inline int redis_teardown(void **state)
{
        if (redis_server > 0) {
                kill(redis_server, SIGKILL);
                waitpid(redis_server, NULL, 0);
        }
        redis_server = -1;
        return teardown(state);
}

#endif
