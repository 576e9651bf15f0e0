# lib/loader/loader.mk - the shared library's loader of server backends
# (loader.c), which finds them in the build's LIBDIR/dirlock too.  In
# libdirlock.so only, never in the static archive.
#   provides: LOADER_OBJS (lib/lib.mk)

LOADER_OBJS := $(BUILD)/lib/loader/loader.o
$(LOADER_OBJS): ALL_CFLAGS += -DDIRLOCK_MODULE_DIR='"$(LIBDIR)/dirlock"'
