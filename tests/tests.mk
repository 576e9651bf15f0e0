# tests/tests.mk - how `make test` finds and runs the tests.
#
# Conventions (drop a file in, it is picked up):
#   tests/unit/test_*.c   cmocka unit tests; linked with the library, the
#                         board's objects (minus main) and their libraries.
#   tests/progs/*.c       helper programs for the multi-process tests,
#                         built to $(BUILD)/tests/progs/NAME.
#   tests/*.t             TAP scripts (shell), run by prove; they find the
#                         helpers through $BUILD_DIR and the tree through
#                         $TOP.
# tests/run-all runs every unit test and every .t and prints one closing
# line "N passed, N failed".

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)
PROG_SRCS := $(wildcard tests/progs/*.c)
PROG_BINS := $(PROG_SRCS:tests/progs/%.c=$(BUILD)/tests/progs/%)
TEST_LIBS := -lcmocka $(BOARD_LIBS) -lpthread

$(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(BOARD_LIB_OBJS) $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(TEST_LIBS)

$(BUILD)/tests/progs/%: $(BUILD)/tests/progs/%.o $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lpthread

test-build: all $(UNIT_BINS) $(PROG_BINS)

# make test installs what is missing first (tools/install-deps is quick
# when everything is there), so it works on a fresh Debian machine.
test:
	tools/install-deps
	$(MAKE) test-build
	BUILD_DIR=$(BUILD) SANITIZE=$(SANITIZE) tests/run-all $(TESTS)

.PHONY: test-build
