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

# Test seams exist only in a second build of the library, compiled with
# DIRLOCK_TEST_HOOKS, that the shipped library and programs never link:
# lockworker uses it (DIRLOCK_TEST_STOP_BEFORE_BREAK, tests/core-crash.t).
HOOK_LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/hooks/%.o)
HOOK_LIB_A := $(BUILD)/libdirlock-hooks.a
$(BUILD)/hooks/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DDIRLOCK_TEST_HOOKS -MMD -MP -c -o $@ $<
$(HOOK_LIB_A): $(HOOK_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/tests/progs/lockworker: $(BUILD)/tests/progs/lockworker.o $(HOOK_LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lpthread

test-build: all $(UNIT_BINS) $(PROG_BINS)

# make test installs what is missing first (tools/install-deps is quick
# when everything is there), so it works on a fresh Debian machine.
test:
	tools/install-deps
	$(MAKE) test-build
	BUILD_DIR=$(BUILD) SANITIZE=$(SANITIZE) tests/run-all $(TESTS)

.PHONY: test-build
