# bindings/bindings.mk - the Perl module (bindings/perl, ExtUtils::MakeMaker)
# over the library, built with its language's own tools.
#   make bindings           in place: bindings/perl/blib (so that
#                           perl -Mblib=bindings/perl -MDirlock works from
#                           here)
#   make install            installs it too (install-bindings)
# Bindings find the library with pkg-config.  In the tree that is
# $(BUILD)/pkgconfig/dirlock.pc, made here from lib/dirlock.pc.in: the
# uninstalled library, whose static archive (position-independent, like
# every object of the build) is linked into the binding, so a binding
# built here needs no libdirlock.so at run time, installed or not.
#   provides: BINDINGS_PC, PERL
#   uses:     BUILD, LIB_A, LIB_LIBS, PC_REQUIRES (lib/lib.mk), PREFIX, DESTDIR

PERL ?= perl
BINDINGS_PC := $(BUILD)/pkgconfig/dirlock.pc
bindings_pc_path := $(CURDIR)/$(BUILD)/pkgconfig
# The bindings' own build systems read make variables of their own names
# (CC, PREFIX, DESTDIR...): none of ours leak into them through MAKEFLAGS.
bindings_make := env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL PKG_CONFIG_PATH=$(bindings_pc_path) $(MAKE)
dirlock_version = $(shell sed -n 's/^\#define DIRLOCK_VERSION "\(.*\)"/\1/p' lib/dirlock.h)

$(BINDINGS_PC): lib/dirlock.pc.in lib/dirlock.h
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(CURDIR)|' -e 's|^libdir=.*|libdir=$(CURDIR)/$(BUILD)|' \
		-e 's|^includedir=.*|includedir=$(CURDIR)/lib|' -e 's|@VERSION@|$(dirlock_version)|' \
		-e 's|@REQUIRES@|$(subst Requires.private,Requires,$(PC_REQUIRES))|' \
		-e 's|^Libs:.*|Libs: $${libdir}/libdirlock.a|' \
		-e 's|^Description:.*|&, uninstalled (the source tree)|' $< >$@

bindings/perl/Makefile: bindings/perl/Makefile.PL $(BINDINGS_PC)
	cd bindings/perl && PKG_CONFIG_PATH=$(bindings_pc_path) $(PERL) Makefile.PL

bindings-perl: bindings/perl/Makefile $(LIB_A)
	$(bindings_make) -C bindings/perl

bindings: bindings-perl

# Perl: into the site directories of PREFIX (MakeMaker's PREFIX, given to
# Makefile.PL for the install and taken back after), under DESTDIR.

install: install-bindings
install-bindings: bindings
	cd bindings/perl && PKG_CONFIG_PATH=$(bindings_pc_path) $(PERL) Makefile.PL PREFIX=$(PREFIX) INSTALLDIRS=site >/dev/null
	$(bindings_make) -C bindings/perl pure_install DESTDIR=$(DESTDIR)
	cd bindings/perl && PKG_CONFIG_PATH=$(bindings_pc_path) $(PERL) Makefile.PL >/dev/null

clean: clean-bindings
clean-bindings:
	[ ! -f bindings/perl/Makefile ] || $(bindings_make) -C bindings/perl realclean >/dev/null

.PHONY: bindings bindings-perl install-bindings clean-bindings
