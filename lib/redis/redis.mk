# lib/redis/redis.mk - the Redis backend: lock spaces on a Redis server
# shared by several hosts (redis://, redis+unix://; redis.h).
#   adds to: LIB_SRCS, LIB_LIBS, PC_REQUIRES, ALL_CFLAGS (lib/lib.mk)
#   provides: REDIS (1 when built), REDIS_SRCS
#
# Built when pkg-config finds hiredis (Debian: libhiredis-dev), or never
# with REDIS=0; without it only the placeholder is (redis_absent.c), and
# redis:// spaces say that this build has none.

REDIS_SRCS := lib/redis/redis_backend.c lib/redis/redis_conn.c lib/redis/redis_deadlock.c \
	lib/redis/redis_handle.c \
	lib/redis/redis_permits.c lib/redis/redis_range.c lib/redis/redis_scripts.c lib/redis/redis_url.c \
	lib/redis/redis_wait.c lib/redis/redis_whole.c
REDIS ?= $(shell pkg-config --exists hiredis 2>/dev/null && echo 1 || echo 0)
ifeq ($(REDIS),1)
LIB_SRCS += $(REDIS_SRCS)
LIB_LIBS += $(shell pkg-config --libs hiredis)
# One Requires.private line for every backend that adds one.
PC_REQUIRES += $(if $(findstring Requires.private:,$(PC_REQUIRES)),,Requires.private:) hiredis
ALL_CFLAGS += -DDIRLOCK_WITH_REDIS
else
LIB_SRCS += lib/redis/redis_absent.c
endif
