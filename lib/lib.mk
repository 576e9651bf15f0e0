# lib/lib.mk - the dirlock library: its core and modules (static and
# shared), the server backends (shared objects of their own, and static
# archives), the headers and pkg-config file, and their installation.
#   provides: LIB_INCLUDES (-I for every folder of lib/), LIB_SRCS,
#             LIB_OBJS, LIB_A, LIB_SO, LIB_HEADERS, BACKENDS,
#             BACKEND_SRCS, BACKEND_LIBS, BACKEND_SOS, LIB_LIBS (what a
#             program that links LIB_A links after it, to have the
#             backends too), LIB_SHARED
#             (how a program links LIB_SO, with the runpath RPATH),
#             RPATH, LIB_ABI, LIB_SONAME, LIBDIR, INCLUDEDIR, and the
#             backend template
#   uses:     BUILD, CC, ALL_CFLAGS, ALL_LDFLAGS, PREFIX, DESTDIR (Makefile)
#
# Every folder of lib/ keeps its sources, and the rule that decides
# whether it is built, in lib/NAME/NAME.mk, all included below
# (docs/library.md, docs/backends.md): the core (lib/core) and each
# module add their sources to LIB_SRCS and their public headers to
# LIB_HEADERS; a server backend calls the backend template.  Adding a
# module or a backend is a folder, and no line here.
#
# What is made:
#   libdirlock.so.1  the core and every module; it needs libc alone.  The
#                    server backends are loaded by it, on the first use
#                    of their scheme (lib/loader), from dirlock/NAME.so
#                    beside it.
#   libdirlock.a     the same as one prelinked object (ld -r), so that a
#                    static program gets every module's registration
#                    (a constructor: DL_ON_LOAD) even where it names no
#                    symbol of it; no loader: such a program links the
#                    backends it uses, libdirlock-NAME.a, whole
#                    (LIB_LIBS does for the tree's programs).
#   dirlock/NAME.so  a server backend, linked with libdirlock.so.1 and
#                    its client libraries; or dirlock/NAME.absent, what to
#                    install, where the build lacked them.

LIB_SRCS :=
LIB_HEADERS :=
BACKENDS :=
BACKENDS_ABSENT :=
LIB_INCLUDES := $(addprefix -I,$(patsubst %/,%,$(sort $(dir $(wildcard lib/*/*.h)))))
# The shared library's ABI number, its soname's: raised when a call or a
# structure of the public headers changes so that a program built before
# would break (a symbol that goes fails the Debian build: debian/
# libdirlock1.symbols), and the runtime package's name follows it
# (libdirlock1).  Named before the folders' fragments: the backend
# template makes each backend's rule there, and links it with LIB_SO.
LIB_ABI := 1
LIB_SONAME := libdirlock.so.$(LIB_ABI)
LIB_SO := $(BUILD)/$(LIB_SONAME)

# The backend template: $(eval $(call backend,NAME,SOURCES,LIBRARIES)) in
# lib/NAME/NAME.mk when its client libraries are there, $(eval $(call
# backend_absent,NAME,WHY)) when they are not.
define backend
BACKENDS += $(1)
BACKEND_SRCS_$(1) := $(2)
BACKEND_OBJS_$(1) := $$(patsubst %.c,$$(BUILD)/%.o,$(2))
BACKEND_LIBS_$(1) := $(3)
$$(BUILD)/dirlock/$(1).so: $$(BACKEND_OBJS_$(1)) $$(LIB_SO)
	@mkdir -p $$(dir $$@)
	$$(CC) -shared $$(ALL_LDFLAGS) -o $$@ $$(BACKEND_OBJS_$(1)) $$(LIB_SO) $(3)
$$(BUILD)/libdirlock-$(1).a: $$(BACKEND_OBJS_$(1))
	$$(LD) -r -o $$(BUILD)/lib/$(1)/$(1)-backend.o $$^
	rm -f $$@ && ar rcs $$@ $$(BUILD)/lib/$(1)/$(1)-backend.o
endef
define backend_absent
BACKENDS_ABSENT += $(1)
$$(BUILD)/dirlock/$(1).absent: lib/$(1)/$(1).mk
	@mkdir -p $$(dir $$@)
	echo '$(2)' >$$@
endef

include $(sort $(wildcard lib/*/*.mk))

# The version, as lib/core/dirlock.h states it (its one home).
DIRLOCK_VERSION := $(shell sed -n 's/^\#define DIRLOCK_VERSION "\(.*\)"$$/\1/p' lib/core/dirlock.h)

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB_A := $(BUILD)/libdirlock.a
BACKEND_SOS := $(BACKENDS:%=$(BUILD)/dirlock/%.so) $(BACKENDS_ABSENT:%=$(BUILD)/dirlock/%.absent)
BACKEND_AS := $(BACKENDS:%=$(BUILD)/libdirlock-%.a)

# A program linked with the static archive gets every backend this build
# has by linking these after it: their archives, whole (nothing names a
# backend: its registration must be linked all the same), and their
# client libraries (BACKEND_LIBS).
BACKEND_SRCS := $(foreach b,$(BACKENDS),$(BACKEND_SRCS_$(b)))
BACKEND_LIBS := $(foreach b,$(BACKENDS),$(BACKEND_LIBS_$(b)))
LIB_LIBS := -Wl,--whole-archive $(BACKEND_AS) -Wl,--no-whole-archive $(LIB_A) $(BACKEND_LIBS) -lpthread
# A program linked with the shared library finds it through its runpath:
# the tree's build directory by default; `make install` links the
# installed command again with the installed LIBDIR (RPATH empty for
# none, as a package that installs into ld.so's own directories wants).
RPATH ?= $(CURDIR)/$(BUILD)
LIB_SHARED = $(LIB_SO) $(if $(RPATH),-Wl$(comma)-rpath$(comma)$(RPATH))
comma := ,

all: $(LIB_A) $(LIB_SO) $(BACKEND_SOS) $(BACKEND_AS)

# Whoever links the static archive may link the backends' (LIB_LIBS).
$(LIB_A): $(LIB_OBJS) | $(BACKEND_AS)
	@mkdir -p $(dir $@)
	$(LD) -r -o $(BUILD)/libdirlock.o $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $(BUILD)/libdirlock.o

$(LIB_SO): $(LIB_OBJS) $(LOADER_OBJS)
	$(CC) -shared -Wl,-soname,$(LIB_SONAME) -Wl,--no-undefined $(ALL_LDFLAGS) -o $@ $^
	ln -sf $(LIB_SONAME) $(BUILD)/libdirlock.so

# Where it goes: LIBDIR and INCLUDEDIR, under PREFIX unless given (a
# multiarch LIBDIR, /usr/lib/x86_64-linux-gnu, for instance).  The
# installed dirlock.pc tells how to link with it and where programs find
# it at run time: in a directory the dynamic linker searches by itself
# (one of ldconfig's, from /etc/ld.so.conf and the system's own, such as
# /usr/lib and, on Debian, /usr/local/lib) there is nothing to say, and
# ldconfig is run to add the new library to its cache (installing as
# root, with no DESTDIR); anywhere else its Libs carry a runpath,
# -Wl,-rpath,LIBDIR, so that what is linked with it needs no
# LD_LIBRARY_PATH.  The backends go to LIBDIR/dirlock, where the library
# looks for them.
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
LDCONFIG ?= $(firstword $(wildcard /sbin/ldconfig /usr/sbin/ldconfig) ldconfig)
# A shell test: is $(LIBDIR) one of the dynamic linker's directories
# (compared by real path: /lib is /usr/lib on a merged /usr)?
ld_searches_libdir = $(LDCONFIG) -v -N -X 2>/dev/null | sed -n 's|^\(/[^:]*\):.*|\1|p' | \
	xargs -r realpath -m | grep -qxF "$$(realpath -m $(LIBDIR))"
# The runpath an installed program needs (none in the linker's own).
install_rpath = $(shell if $(ld_searches_libdir); then :; else echo '-Wl,-rpath,$(LIBDIR)'; fi)
# dirlock.pc from lib/dirlock.pc.in: $(call make_pc,LIBDIR,INCLUDEDIR,RPATH,CFLAGS),
# RPATH the words after -ldirlock (" -Wl,-rpath,${libdir}", or nothing).
make_pc = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(1)|g' -e 's|@INCLUDEDIR@|$(2)|g' \
	-e 's|@RPATH@|$(3)|' -e 's|@CFLAGS@|$(4)|' -e 's|@VERSION@|$(DIRLOCK_VERSION)|g' lib/dirlock.pc.in

install: install-lib
install-lib: $(LIB_A) $(LIB_SO) $(BACKEND_SOS) $(BACKEND_AS)
	install -d $(DESTDIR)$(LIBDIR)/dirlock $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 644 $(LIB_A) $(BACKEND_AS) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libdirlock.so
	install -m 644 $(BACKEND_SOS) $(DESTDIR)$(LIBDIR)/dirlock/
	install -m 644 $(LIB_HEADERS) $(DESTDIR)$(INCLUDEDIR)/
	$(call make_pc,$(LIBDIR),$(INCLUDEDIR),$(if $(install_rpath), -Wl$(comma)-rpath$(comma)$${libdir}),-I$${includedir}) \
		>$(DESTDIR)$(LIBDIR)/pkgconfig/dirlock.pc
	@[ -z "$(DESTDIR)" ] && $(ld_searches_libdir) && { $(LDCONFIG) || \
		echo "make install: $(LDCONFIG) failed: run it as root, so that programs find $(LIBDIR)/$(LIB_SONAME)" >&2; } || :

.PHONY: install install-lib
