# lib/range/range.mk - the range module: locks on ranges [lo, hi) of a
# lock (dirlock_range.h).  Needs the core and the reader-writer module.
#   adds to: LIB_SRCS, LIB_HEADERS (lib/lib.mk)

LIB_SRCS += lib/range/dir_range.c lib/range/dir_range_entries.c lib/range/range.c lib/range/range_text.c
LIB_HEADERS += lib/range/dirlock_range.h
