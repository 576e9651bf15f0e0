/* redis_scripts.c - writes every Lua script of the Redis backend, as the
 * server receives it (the parts of lib/redis/scripts/ put together by
 * lib/redis/redis_scripts.c), to DIR/NN-NAME.lua, for tests/lint-lua.t to
 * compile with Redis' Lua.  Linked with the test build of the library:
 * with DIRLOCK_TEST_REDIS_NO_LOCK set, the acquire script is the
 * no-lock twin's (lib/test_hooks.h).
 * Usage: redis_scripts DIR */
#include "redis.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
        if (argc != 2) {
                fprintf(stderr, "usage: %s DIR\n", argv[0]);
                return 2;
        }
        for (int id = 0; id < DL_RS_COUNT; id++) {
                char name[64], path[4096];
                snprintf(name, sizeof name, "%s", dl_redis_script_name(id));
                for (char *c = name; *c; c++)
                        if (*c == ' ')
                                *c = '_';
                snprintf(path, sizeof path, "%s/%02d-%s.lua", argv[1], id, name);
                FILE *f = fopen(path, "w");
                const char *src = dl_redis_script_source(id);
                if (f == NULL || fwrite(src, 1, strlen(src), f) != strlen(src) || fclose(f) != 0) {
                        perror(path);
                        return 1;
                }
        }
        return 0;
}
