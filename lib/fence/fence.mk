# lib/fence/fence.mk - the fence module: a number for each acquisition
# (dirlock_fence.h), and a directory space's counters.  Needs the core.
#   adds to: LIB_SRCS, LIB_HEADERS (lib/lib.mk)

LIB_SRCS += lib/fence/dir_counter.c lib/fence/dir_fence.c lib/fence/fence.c
LIB_HEADERS += lib/fence/dirlock_fence.h
