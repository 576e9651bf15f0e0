# lib/lib.mk - the dirlock library: static and shared, its header and
# pkg-config file, and their installation.
#   provides: LIB_SRCS, LIB_OBJS, LIB_A, LIB_SO, LIB_LIBS (what everything
#             that links LIB_A must link after it), PC_REQUIRES, LIBDIR
#             and INCLUDEDIR (where install-lib puts them)
#   uses:     BUILD, CC, ALL_CFLAGS, ALL_LDFLAGS, PREFIX, DESTDIR (Makefile)
#
# The backend-neutral layer is in lib/ itself; each backend keeps its
# sources and the rule that decides whether it is built in its own folder,
# in lib/NAME/NAME.mk, all included below (docs/backends.md).  A fragment adds
# its sources to LIB_SRCS and, when it needs libraries, to LIB_LIBS and
# PC_REQUIRES, and defines DIRLOCK_WITH_NAME in ALL_CFLAGS when it is built.

LIB_SRCS := lib/admin.c lib/backoff.c lib/clock.c lib/conn_cache.c lib/error.c lib/fence.c lib/fiber.c \
	lib/handle.c lib/held.c lib/modes.c lib/multi.c lib/netfs.c lib/notify.c lib/owner.c lib/path.c lib/pending.c \
	lib/range_text.c lib/server_notice.c lib/space.c lib/thread_key.c lib/wait.c lib/wait_record.c
LIB_LIBS :=
PC_REQUIRES :=

# Every backend's fragment: lib/dir/dir.mk (lock directories), lib/flock/
# flock.mk (flock(2) on files), lib/redis/redis.mk (Redis servers, when
# hiredis is there), and whatever backend is added next to them.
include $(sort $(wildcard lib/*/*.mk))

# The version, as lib/dirlock.h states it (its one home).
DIRLOCK_VERSION := $(shell sed -n 's/^\#define DIRLOCK_VERSION "\(.*\)"$$/\1/p' lib/dirlock.h)

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

# Where it goes: LIBDIR and INCLUDEDIR, under PREFIX unless given (a
# multiarch LIBDIR, /usr/lib/x86_64-linux-gnu, for instance).  The
# installed dirlock.pc tells how to link with it and where programs find
# it at run time: in a directory the dynamic linker searches by itself
# (one of ldconfig's, from /etc/ld.so.conf and the system's own, such as
# /usr/lib and, on Debian, /usr/local/lib) there is nothing to say, and
# ldconfig is run to add the new library to its cache (installing as
# root, with no DESTDIR); anywhere else its Libs carry a runpath,
# -Wl,-rpath,LIBDIR, so that what is linked with it needs no
# LD_LIBRARY_PATH.
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
LDCONFIG ?= $(firstword $(wildcard /sbin/ldconfig /usr/sbin/ldconfig) ldconfig)
# A shell test: is $(LIBDIR) one of the dynamic linker's directories
# (compared by real path: /lib is /usr/lib on a merged /usr)?
ld_searches_libdir = $(LDCONFIG) -v -N -X 2>/dev/null | sed -n 's|^\(/[^:]*\):.*|\1|p' | \
	xargs -r realpath -m | grep -qxF "$$(realpath -m $(LIBDIR))"

install: install-lib
install-lib: $(LIB_A) $(LIB_SO)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libdirlock.a
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/libdirlock.so.1
	ln -sf libdirlock.so.1 $(DESTDIR)$(LIBDIR)/libdirlock.so
	install -m 644 lib/dirlock.h $(DESTDIR)$(INCLUDEDIR)/dirlock.h
	if $(ld_searches_libdir); then rpath=; else rpath=' -Wl,-rpath,$${libdir}'; fi; \
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
		-e 's|@VERSION@|$(DIRLOCK_VERSION)|g' -e 's|@REQUIRES@|$(PC_REQUIRES)|' -e "s|@RPATH@|$$rpath|" \
		lib/dirlock.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/dirlock.pc
	@[ -z "$(DESTDIR)" ] && $(ld_searches_libdir) && { $(LDCONFIG) || \
		echo "make install: $(LDCONFIG) failed: run it as root, so that programs find $(LIBDIR)/libdirlock.so.1" >&2; } || :

.PHONY: install install-lib
