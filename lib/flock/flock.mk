# lib/flock/flock.mk - the flock backend: the kernel's flock(2) on files
# in a directory ("flock:DIR", dirlock_flock.h).  Built into the library:
# it needs nothing but the core.
#   adds to: LIB_SRCS, LIB_HEADERS (lib/lib.mk)

LIB_SRCS += lib/flock/flock.c
LIB_HEADERS += lib/flock/dirlock_flock.h
