/* redis_scripts.c - the Lua scripts of the Redis backend: which parts
 * make each one, and their names for messages.  The scripts themselves,
 * with what each does and the invariants they keep (M, E, Q, W, F at the
 * top of scripts/common.lua), are lib/redis/scripts/NAME.lua; the build
 * makes each a C string, DL_LUA_NAME in redis_lua.h, and prints
 * constants.lua from the C headers (lib/redis/redis.mk).  A script is
 * what the server compiles: constants, the common part, the part its
 * kind shares (permits, ranges), then its own (tests/lint-lua.t compiles
 * each with Redis' Lua). */
#include "redis.h"
#include "redis_lua.h"
#include "test_hooks.h"

#define COMMON        DL_LUA_CONSTANTS DL_LUA_COMMON
#define PERMIT_COMMON COMMON DL_LUA_PERMIT_COMMON
#define RANGE_COMMON  COMMON DL_LUA_RANGE_COMMON

static const struct {
        const char *name;
        const char *src;
} scripts[DL_RS_COUNT] = {
    [DL_RS_ACQUIRE] = {"acquire", COMMON DL_LUA_ACQUIRE},
    [DL_RS_RELEASE] = {"release", COMMON DL_LUA_RELEASE},
    [DL_RS_REFRESH] = {"refresh", COMMON DL_LUA_REFRESH},
    [DL_RS_CHECK] = {"check", COMMON DL_LUA_CHECK},
    [DL_RS_UPGRADE] = {"upgrade", COMMON DL_LUA_UPGRADE},
    [DL_RS_DOWNGRADE] = {"downgrade", COMMON DL_LUA_DOWNGRADE},
    [DL_RS_DOWNGRADE_INTENT] = {"downgrade to intent", COMMON DL_LUA_DOWNGRADE_INTENT},
    [DL_RS_BREAK] = {"break", PERMIT_COMMON DL_LUA_BREAK},
    [DL_RS_INSPECT] = {"inspect", COMMON DL_LUA_INSPECT},
    [DL_RS_TIDY] = {"tidy", PERMIT_COMMON DL_LUA_TIDY},
    [DL_RS_RANGE_ACQUIRE] = {"range acquire", RANGE_COMMON DL_LUA_RANGE_ACQUIRE},
    [DL_RS_RANGE_RELEASE] = {"range release", RANGE_COMMON DL_LUA_RANGE_RELEASE},
    [DL_RS_RANGE_SHRINK] = {"range shrink", RANGE_COMMON DL_LUA_RANGE_SHRINK},
    [DL_RS_RANGE_REFRESH] = {"range refresh", RANGE_COMMON DL_LUA_RANGE_REFRESH},
    [DL_RS_RANGE_CHECK] = {"range check", RANGE_COMMON DL_LUA_RANGE_CHECK},
    [DL_RS_RANGE_UPGRADE] = {"range upgrade", RANGE_COMMON DL_LUA_RANGE_UPGRADE},
    [DL_RS_RANGE_DOWNGRADE] = {"range downgrade", RANGE_COMMON DL_LUA_RANGE_DOWNGRADE},
    [DL_RS_RANGE_DOWNGRADE_INTENT] = {"range downgrade to intent",
                                      RANGE_COMMON DL_LUA_RANGE_DOWNGRADE_INTENT},
    [DL_RS_RANGE_LIST] = {"range list", RANGE_COMMON DL_LUA_RANGE_LIST},
    [DL_RS_PERMIT_ACQUIRE] = {"permit acquire", PERMIT_COMMON DL_LUA_PERMIT_ACQUIRE},
    [DL_RS_PERMIT_RELEASE] = {"permit release", PERMIT_COMMON DL_LUA_PERMIT_RELEASE},
    [DL_RS_PERMIT_REFRESH] = {"permit refresh", PERMIT_COMMON DL_LUA_PERMIT_REFRESH},
    [DL_RS_PERMIT_CHECK] = {"permit check", COMMON DL_LUA_PERMIT_CHECK},
    [DL_RS_HOLDERS] = {"holders", PERMIT_COMMON DL_LUA_HOLDERS},
    [DL_RS_WAITERS] = {"waiters", PERMIT_COMMON DL_LUA_WAITERS},
    [DL_RS_DEADLOCK] = {"deadlock", COMMON DL_LUA_DEADLOCK},
};

#ifdef DIRLOCK_TEST_HOOKS
/* Test builds only: the no-lock twin's ACQUIRE (lib/test_hooks.h). */
static const char no_lock_acquire_src[] = COMMON DL_LUA_NO_LOCK_ACQUIRE;
#endif

const char *dl_redis_script_source(dl_redis_script_id id)
{
#ifdef DIRLOCK_TEST_HOOKS
        if (id == DL_RS_ACQUIRE && dl_test_hook(REDIS_NO_LOCK) != NULL)
                return no_lock_acquire_src;
#endif
        return scripts[id].src;
}

const char *dl_redis_script_name(dl_redis_script_id id)
{
        return scripts[id].name;
}
