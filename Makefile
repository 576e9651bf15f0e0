# Makefile - builds the dirlock library, the dirlock command and the board;
# runs the tests, benchmarks and demonstrations.  Each area keeps its rules
# in its own fragment (lib/lib.mk, cgi-bin/board.mk, tests/tests.mk, ...).

CC ?= cc
PREFIX ?= /usr/local
CSTD := -std=c11 -D_GNU_SOURCE
WARN := -Wall -Wextra -Werror
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
BIN_DIR := $(BUILD)/bin
BOARD_BIN := $(BUILD)/cgi-bin/board
endif

ALL_CFLAGS = $(CSTD) $(WARN) $(OPT) $(SANFLAGS) -fPIC -Ilib $(CFLAGS)
ALL_LDFLAGS = $(SANFLAGS) $(LDFLAGS)

.PHONY: all test bench install clean demo start stop fuzz verify check-format format deps
all:

include lib/lib.mk
-include cgi-bin/board.mk
-include tests/tests.mk
-include bench/bench.mk
-include bench/board.mk
-include bench/rw.mk
-include tools/deploy.mk
-include tests/fuzz/fuzz.mk
-include tests/model/model.mk

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

check-format:
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h')

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-san build-fuzz bin/dirlock bin/dirlock-demo cgi-bin/board tests/results
