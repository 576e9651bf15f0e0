# lib/lib.mk - the dirlock library: static and shared, its header and
# pkg-config file, and their installation.
#   provides: LIB_SRCS, LIB_OBJS, LIB_A, LIB_SO, LIB_LIBS (what everything
#             that links LIB_A must link after it), REDIS_SRCS
#   uses:     BUILD, CC, ALL_CFLAGS, ALL_LDFLAGS, PREFIX, DESTDIR (Makefile)
#
# The Redis backend (lib/redis_*.c) is built when pkg-config finds hiredis
# (Debian: libhiredis-dev), or never with REDIS=0; without it the library
# is plain C11 with no dependencies and redis:// spaces say so.

LIB_SRCS := lib/admin.c lib/clock.c lib/dir_backend.c lib/dir_fence.c lib/error.c lib/exclusive.c \
	lib/fifo.c lib/flock.c lib/handle.c lib/layout.c lib/multi.c lib/owner.c lib/path.c lib/range.c \
	lib/rw_entries.c lib/rwlock.c lib/space.c lib/wait.c
REDIS_SRCS := lib/redis_backend.c lib/redis_conn.c lib/redis_range.c lib/redis_scripts.c lib/redis_url.c
LIB_LIBS :=
PC_REQUIRES :=
REDIS ?= $(shell pkg-config --exists hiredis 2>/dev/null && echo 1 || echo 0)
ifeq ($(REDIS),1)
LIB_SRCS += $(REDIS_SRCS)
LIB_LIBS := $(shell pkg-config --libs hiredis)
PC_REQUIRES := Requires.private: hiredis
ALL_CFLAGS += -DDIRLOCK_WITH_REDIS
endif
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB_A := $(BUILD)/libdirlock.a
LIB_SO := $(BUILD)/libdirlock.so.1

all: $(LIB_A) $(LIB_SO)

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,libdirlock.so.1 $(ALL_LDFLAGS) -o $@ $^ $(LIB_LIBS)
	ln -sf libdirlock.so.1 $(BUILD)/libdirlock.so

install: install-lib
install-lib: $(LIB_A) $(LIB_SO)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(LIB_A) $(DESTDIR)$(PREFIX)/lib/libdirlock.a
	install -m 755 $(LIB_SO) $(DESTDIR)$(PREFIX)/lib/libdirlock.so.1
	ln -sf libdirlock.so.1 $(DESTDIR)$(PREFIX)/lib/libdirlock.so
	install -m 644 lib/dirlock.h $(DESTDIR)$(PREFIX)/include/dirlock.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|1.0.0|g' -e 's|@REQUIRES@|$(PC_REQUIRES)|' lib/dirlock.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/dirlock.pc

.PHONY: install install-lib
