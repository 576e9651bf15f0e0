# lib/fifo/fifo.mk - the queue module: waiters of a directory space's
# locks queue in arrival order, a release wakes one of them, and
# DIRLOCK_FIFO serves them strictly in that order.  No call of its own.
# Needs the core.
#   adds to: LIB_SRCS (lib/lib.mk)

LIB_SRCS += lib/fifo/dir_fifo.c lib/fifo/dir_fifo_view.c lib/fifo/dir_ticket.c
