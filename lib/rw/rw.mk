# lib/rw/rw.mk - the reader-writer module: shared and intent modes, the
# policies writer and reader, upgrade and downgrade (dirlock_rw.h), and
# the mode table every backend judges by (modes.c).  Needs the core.
#   adds to: LIB_SRCS, LIB_HEADERS (lib/lib.mk)

LIB_SRCS += lib/rw/dir_rw.c lib/rw/modes.c lib/rw/rw.c
LIB_HEADERS += lib/rw/dirlock_rw.h
