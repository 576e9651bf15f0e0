# bindings/bindings.mk - the Perl module (bindings/perl, ExtUtils::MakeMaker),
# the Python package (bindings/python, setuptools) and the Node.js addon
# (bindings/node, node-gyp) over the library, each built with its
# language's own tools.
#   make bindings           all three, in place: bindings/perl/blib (so that
#                           perl -Mblib=bindings/perl -MDirlock works from
#                           here), bindings/python/dirlock/_dirlock*.so
#                           (PYTHONPATH=bindings/python) and
#                           bindings/node/build/Release/dirlock.node
#                           (require('./bindings/node'))
#   make install            installs the Perl and Python ones too
#                           (install-bindings); a Node package is installed
#                           per project, with npm (docs/bindings.md)
# Bindings find the library with pkg-config.  In the tree that is
# $(BUILD)/pkgconfig/dirlock.pc, made here from lib/dirlock.pc.in: the
# uninstalled library, its headers in the tree's lib/ folders and its
# shared object in the build directory, which each binding links with a
# runpath to it -- the shared library, which loads the server backends
# it meets.  `make install` builds the Perl and Python ones again, against
# the installed library ($(BUILD)/install/pkgconfig/dirlock.pc: the
# library where DESTDIR puts it, and the installed LIBDIR as the runpath).
#   provides: BINDINGS_PC, PERL, PYTHON, NODE, NODE_GYP
#   uses:     BUILD, LIB_SO, LIB_INCLUDES, make_pc, install_rpath, LIBDIR,
#             INCLUDEDIR (lib/lib.mk), MANDIR (man/man.mk), PREFIX, DESTDIR

PERL ?= perl
# Debian's interpreter by default: the one python3-dev, python3-pytest and
# python3-setuptools are for (another one on PATH may lack them).
PYTHON ?= /usr/bin/python3
BINDINGS_PC := $(BUILD)/pkgconfig/dirlock.pc
bindings_pc_path := $(CURDIR)/$(BUILD)/pkgconfig
# The bindings' own build systems read make variables of their own names
# (CC, PREFIX, DESTDIR...): none of ours leak into them through MAKEFLAGS.
bindings_env := env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL PKG_CONFIG_PATH=$(bindings_pc_path)
bindings_make := $(bindings_env) $(MAKE)

$(BINDINGS_PC): lib/dirlock.pc.in lib/core/dirlock.h lib/lib.mk
	@mkdir -p $(dir $@)
	$(call make_pc,$(CURDIR)/$(BUILD),$(CURDIR)/lib/core, -Wl$(comma)-rpath$(comma)$${libdir},$(LIB_INCLUDES:-I%=-I$(CURDIR)/%)) | \
		sed -e 's|^Description:.*|&, uninstalled (the source tree)|' >$@
# The installed library, where DESTDIR puts it, for `make install`'s builds.
INSTALL_PC_PATH := $(CURDIR)/$(BUILD)/install/pkgconfig
$(INSTALL_PC_PATH)/dirlock.pc: lib/dirlock.pc.in lib/core/dirlock.h lib/lib.mk FORCE
	@mkdir -p $(dir $@)
	$(call make_pc,$(DESTDIR)$(LIBDIR),$(DESTDIR)$(INCLUDEDIR),$(if $(install_rpath), $(install_rpath)),-I$${includedir}) >$@
FORCE:

# Node: node-gyp, offline.  --nodedir names the Node.js whose headers
# (NODE_DIR/include/node: node_api.h, uv.h, common.gypi) the addon is
# built against -- by default the one that runs NODE, whose prefix has
# them (Debian's libnode-dev, or a nodejs package that ships them) --
# so that node-gyp never downloads a headers tarball.  node-gyp is
# Debian's (the node-gyp package, which Debian's npm needs) when it is
# installed, else the one npm ships inside a nodejs package that bundles
# npm (NodeSource's), whose node-gyp Debian's cannot be installed beside.
NODE ?= node
NODE_DIR ?= $(shell $(NODE) -p 'require("path").resolve(process.execPath, "..", "..")' 2>/dev/null)
node_gyp_js := $(firstword $(realpath $(shell command -v node-gyp 2>/dev/null) \
	$(dir $(realpath $(shell command -v $(NODE) 2>/dev/null)))../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js))
NODE_GYP ?= $(NODE) $(node_gyp_js)
BINDINGS_NODE := bindings/node/build/Release/dirlock.node

# perl, python and node cannot load code built with AddressSanitizer: a
# sanitizer build (SANITIZE=1, BUILD=build-san) makes no bindings.
ifeq ($(SANITIZE),1)
bindings bindings-perl bindings-python bindings-node install-bindings:
	@echo "make $@: the bindings are built without SANITIZE=1 (perl, python and node cannot load ASan-built code)" >&2
	@exit 2
else
bindings/perl/Makefile: bindings/perl/Makefile.PL $(BINDINGS_PC)
	cd bindings/perl && PKG_CONFIG_PATH=$(bindings_pc_path) $(PERL) Makefile.PL

bindings-perl: bindings/perl/Makefile $(LIB_SO)
	$(bindings_make) -C bindings/perl

bindings-python: $(BINDINGS_PC) $(LIB_SO)
	cd bindings/python && PKG_CONFIG_PATH=$(bindings_pc_path) $(PYTHON) setup.py -q build_ext --inplace \
		--build-temp $(CURDIR)/$(BUILD)/bindings/python --build-lib $(CURDIR)/$(BUILD)/bindings/python/lib

# rebuild, not build: node-gyp's makefile does not know the library's
# archive, and a new one must be linked in.
$(BINDINGS_NODE): bindings/node/binding.gyp bindings/node/src/dirlock_node.c bindings/node/tools/dirlock-config.js \
		bindings/node/tools/source-tree.js $(BINDINGS_PC) $(LIB_SO)
	@[ -n "$(node_gyp_js)" ] || { echo "make bindings-node: no node-gyp (apt-get install npm; docs/bindings.md)" >&2; exit 2; }
	@[ -f "$(NODE_DIR)/include/node/node_api.h" ] || \
		{ echo "make bindings-node: no Node.js headers in $(NODE_DIR)/include/node (apt-get install npm; NODE_DIR=...)" >&2; exit 2; }
	cd bindings/node && $(bindings_env) $(NODE_GYP) rebuild --nodedir=$(NODE_DIR) --loglevel=warn

bindings-node: $(BINDINGS_NODE)

bindings: bindings-perl bindings-python bindings-node

# Perl: built again in $(BUILD)/install/perl, a copy of bindings/perl,
# against the installed library (INSTALL_PC_PATH), and installed with
# MakeMaker's own install into the directory tools/install-paths names
# for PREFIX, its .pm beside its XS library, and its page in
# MANDIR/man3, with no LD_RUN_PATH (MakeMaker's would be the library's
# directory under DESTDIR; the runpath, where one is needed, is the
# dirlock.pc's).  Python: by pip, from this directory, with no package index
# and no build isolation (nothing is downloaded: Debian's setuptools and
# wheel build it), against the installed library too, into the directory
# tools/install-paths names.  Both under DESTDIR, after the library.
# (The copy carries the in-place build: its realclean, where MakeMaker
# finds its Makefile older than the copied Makefile.PL, makes the Makefile
# again and asks to be run once more.)
install: install-bindings
install-bindings: install-lib $(INSTALL_PC_PATH)/dirlock.pc
	rm -rf $(BUILD)/install/perl && mkdir -p $(BUILD)/install && cp -r bindings/perl $(BUILD)/install/perl
	cd $(BUILD)/install/perl && perl_env="env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL PKG_CONFIG_PATH=$(INSTALL_PC_PATH)" && \
		{ [ ! -f Makefile ] || $$perl_env $(MAKE) -s realclean >/dev/null 2>&1 || \
		  $$perl_env $(MAKE) -s realclean >/dev/null; } && $$perl_env $(PERL) Makefile.PL >/dev/null
	dir=$$(PERL=$(PERL) tools/install-paths perl $(PREFIX)) && \
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $(MAKE) -C $(BUILD)/install/perl pure_site_install DESTDIR=$(DESTDIR) LD_RUN_PATH= \
		INSTALLSITEARCH="$$dir" INSTALLSITELIB="$$dir" INSTALLSITEBIN=$(PREFIX)/bin \
		INSTALLSITESCRIPT=$(PREFIX)/bin INSTALLSITEMAN1DIR=$(MANDIR)/man1 INSTALLSITEMAN3DIR=$(MANDIR)/man3
	dir=$$(PYTHON=$(PYTHON) tools/install-paths python $(PREFIX)) && \
	PKG_CONFIG_PATH=$(INSTALL_PC_PATH) $(PYTHON) -m pip install --quiet --no-index \
		--no-build-isolation --no-deps --upgrade --root-user-action=ignore --target "$(DESTDIR)$$dir" ./bindings/python

endif

clean: clean-bindings
clean-bindings:
	[ ! -f bindings/perl/Makefile ] || $(bindings_make) -C bindings/perl realclean >/dev/null
	rm -rf bindings/python/build bindings/python/*.egg-info bindings/python/dirlock/_dirlock*.so \
		bindings/python/.pytest_cache
	find bindings/python -name __pycache__ -prune -exec rm -rf {} +
	rm -rf bindings/node/build bindings/node/*.tgz

.PHONY: bindings bindings-perl bindings-python bindings-node install-bindings clean-bindings
