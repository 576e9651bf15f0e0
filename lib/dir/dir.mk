# lib/dir/dir.mk - the directory backend: locks made of directories in a
# lock directory (dir.h; the protocols at the top of exclusive.c,
# rwlock.c, fifo.c and range.c).  Always built: plain C11 and POSIX.
#   adds to: LIB_SRCS (lib/lib.mk)

LIB_SRCS += lib/dir/deadlock.c lib/dir/dir_backend.c lib/dir/dir_fence.c lib/dir/exclusive.c lib/dir/fifo.c lib/dir/fsops.c \
	lib/dir/layout.c lib/dir/permits.c lib/dir/range.c lib/dir/range_entries.c lib/dir/rw_entries.c lib/dir/rwlock.c \
	lib/dir/waits.c
