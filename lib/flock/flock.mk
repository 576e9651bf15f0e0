# lib/flock/flock.mk - the flock backend: the kernel's flock(2) on files in
# a directory ("flock:DIR", flock.c).  Always built.
#   adds to: LIB_SRCS (lib/lib.mk)

LIB_SRCS += lib/flock/flock.c
