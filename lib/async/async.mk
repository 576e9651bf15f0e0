# lib/async/async.mk - the pending-acquire module: acquires an event loop
# drives, on fibers (dirlock_async.h).  Needs the core, and for its
# range, permit and upgrade acquires those modules.
#   adds to: LIB_SRCS, LIB_HEADERS (lib/lib.mk)

LIB_SRCS += lib/async/fiber.c lib/async/pending.c
LIB_HEADERS += lib/async/dirlock_async.h
