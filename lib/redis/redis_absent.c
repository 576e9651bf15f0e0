/* redis_absent.c - the Redis backend's placeholder in a build without
 * hiredis (redis.mk): its name and forms, and why its spaces are refused
 * (backend.h, THE CONTRACT). */
#include "backend.h"
#include "redis_url.h"

static const char *const redis_forms[] = {DL_REDIS_SPACE_FORMS, NULL};

const dl_backend dl_redis_backend = {
    .name = "Redis",
    .forms = redis_forms,
    .spec_has_scheme = true,
    .absent = "this build of dirlock has no Redis support (install libhiredis-dev and rebuild)",
};
