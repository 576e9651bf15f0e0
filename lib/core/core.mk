# lib/core/core.mk - the core: exclusive locks in a directory and the kit
# they need (dirlock.h).  Plain C11 and POSIX on Linux: it compiles and
# links alone, cc -std=c11 -D_GNU_SOURCE -Ilib/core lib/core/*.c prog.c
# -lpthread (tests/core-alone.t does), and every module builds on it.
#   adds to: LIB_SRCS, LIB_HEADERS (lib/lib.mk)

LIB_SRCS += $(sort $(wildcard lib/core/*.c))
LIB_HEADERS += lib/core/dirlock.h
