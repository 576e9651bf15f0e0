# lib/permit/permit.mk - the counting-lock module: at most N holders of a
# lock at once (dirlock_permit.h).  Needs the core.
#   adds to: LIB_SRCS, LIB_HEADERS (lib/lib.mk)

LIB_SRCS += lib/permit/dir_permit.c lib/permit/permit.c
LIB_HEADERS += lib/permit/dirlock_permit.h
