# lib/deadlock/deadlock.mk - the deadlock module: the wait register of a
# directory space, deadlock detection, the self-deadlock check of every
# space, and the list of waiters (dirlock_deadlock.h).  Needs the core,
# and the reader-writer (the mode table), range (range entries) and fence
# (its verdicts are a counter) modules.
#   adds to: LIB_SRCS, LIB_HEADERS (lib/lib.mk)

LIB_SRCS += lib/deadlock/deadlock.c lib/deadlock/dir_deadlock.c lib/deadlock/dir_register.c lib/deadlock/dir_wait_entry.c lib/deadlock/held.c \
	lib/deadlock/wait_record.c
LIB_HEADERS += lib/deadlock/dirlock_deadlock.h
