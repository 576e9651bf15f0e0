# Makefile - builds the dirlock library, the dirlock command and the board;
# runs the tests, benchmarks and demonstrations.  Each directory keeps the
# rules for what is in it in its own fragment, included below; each says
# at its top which variables it provides and uses.

CC ?= cc
PREFIX ?= /usr/local
CSTD := -std=c11 -D_GNU_SOURCE
WARN := -Wall -Wextra -Werror -Wmissing-prototypes
OPT ?= -O2 -g
CFLAGS ?=
LDFLAGS ?=
BUILD := build

# make test SANITIZE=1: AddressSanitizer + UndefinedBehaviorSanitizer build
# in its own build directory, so it never mixes with the normal objects.
# Programs go to bin/ and cgi-bin/, except in a sanitizer build, whose
# programs stay in its build directory; the tests find them through
# $DIRLOCK, $BOARD and $DEMO (tests/run-all).
BIN_DIR := bin
BOARD_BIN := cgi-bin/board
ifeq ($(SANITIZE),1)
BUILD := build-san
OPT := -O1 -g -fno-omit-frame-pointer
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all
# ... and with the protocols' assertions checked (DL_ASSERT, lib/internal.h).
ASSERTS := -DDIRLOCK_ASSERTS
BIN_DIR := $(BUILD)/bin
BOARD_BIN := $(BUILD)/cgi-bin/board
endif

ALL_CFLAGS = $(CSTD) $(WARN) $(OPT) $(SANFLAGS) $(ASSERTS) -fPIC $(LIB_INCLUDES) $(CFLAGS)
ALL_LDFLAGS = $(SANFLAGS) $(LDFLAGS)

.PHONY: all clean check-format check-style format
all:

include lib/lib.mk           # the library
include bin/bin.mk           # the dirlock command
include man/man.mk           # the manual pages: install-man, lint-man
include cgi-bin/board.mk     # the board
include tools/tools.mk       # dirlock-demo, deps, start/stop, demo, demo-rw
include bindings/bindings.mk # the Perl and Python bindings
include tests/tests.mk       # test, valgrind
include tests/fuzz/fuzz.mk   # fuzz
include tests/model/model.mk # verify
include bench/bench.mk       # bench
include tools/dist.mk        # deb, npm-pack

# make install: every fragment adds its install-NAME; once they are done,
# what a shell needs to use what is in PREFIX (tools/install-paths: PATH,
# PKG_CONFIG_PATH, PERL5LIB, PYTHONPATH; none for /usr/local on Debian,
# never LD_LIBRARY_PATH).  make install-env prints only that, as lines a
# shell can eval.
install_env = PERL=$(PERL) PYTHON=$(PYTHON) tools/install-paths env $(PREFIX) $(LIBDIR)
install:
	@[ -n "$(DESTDIR)" ] || { env=$$($(install_env)) && [ -z "$$env" ] || \
		printf 'make install: to use what is in %s, a shell needs:\n%s\n' "$(PREFIX)" "$$env"; }
install-env:
	@$(install_env)
.PHONY: install install-env

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

check-format:
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h')

# The conventions clang-format does not see: function length, sizes
# spelled out, `space` not `lockdir` (tools/check-style; docs/backends.md).
check-style:
	tools/check-style

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-san build-fuzz bin/dirlock bin/dirlock-demo bin/dirlock-tree-demo cgi-bin/board tests/results
