# tests/tests.mk - how `make test` finds and runs the tests, and the
# memcheck run (make valgrind).  tests/README.md says where a test goes.
#   provides: UNIT_BINS, PROG_BINS, test-build
#   uses:     BUILD, LIB_A, LIB_SRCS, LIB_LIBS, BACKEND_SRCS, BACKEND_LIBS
#             (lib/lib.mk), BOARD_LIB_OBJS and
#             BOARD_LIBS (cgi-bin/board.mk), PYTHON (bindings/bindings.mk)
#
#   tests/unit/test_NAME.c  cmocka unit tests (UNIT_TESTS); linked with the
#                           library, the board's objects (minus main) and
#                           their libraries.
#   tests/progs/NAME.c      helper programs of the multi-process tests
#                           (TEST_PROGS), built to $(BUILD)/tests/progs/NAME.
#   docs/examples/counter.c the C example, built to
#                           $(BUILD)/tests/examples/counter.
#   tests/*.t               TAP scripts (shell), run by prove; they find the
#                           helpers through $BUILD_DIR and the tree through
#                           $TOP.
#   bindings/perl/t/*.t     the Perl module's tests (prove -b) and
#   bindings/python/tests/  the Python package's (pytest), built by
#                           make bindings (bindings/bindings.mk).
# tests/run-all runs every unit test and every .t and prints one closing
# line "N passed, N failed".

UNIT_TESTS := conn_cache fsops core_api core_async core_cancel core_dead_try core_fence core_owner core_reentrant core_stale deadlock permits \
	range rw space unload waiters redis_url redis etcd \
	board_app board_config board_cookie board_csrf board_escape board_fence board_form board_locking \
	board_lockmode board_logrecord board_postqueue board_ratelimit board_signal board_store_log board_store_sqlite board_utf8 board_validate board_view \
	board_view_lock board_delete_limit board_post_gate
TEST_PROGS := deadlockrounds deadlockstress forkconn histcheck histworker lockworker permitstress rangestress rw_hold stress
# redis_scripts: the Redis backend's scripts as the server gets them, for
# tests/lint-lua.t (linked with the test build, for the no-lock twin's).
ifeq ($(REDIS),1)
TEST_PROGS += redis_scripts
endif
UNIT_BINS := $(UNIT_TESTS:%=$(BUILD)/tests/unit/test_%)
PROG_BINS := $(TEST_PROGS:%=$(BUILD)/tests/progs/%)
TEST_LIBS := -lcmocka $(LIB_LIBS) $(BOARD_LIBS) -lpthread

# The backends' archives are linked whole by LIB_LIBS, after the rest:
# prerequisites (a change relinks), left out of $^.
$(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(BOARD_LIB_OBJS) $(LIB_A) $(BACKEND_AS)
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter-out $(BACKEND_AS),$^) $(TEST_LIBS)

# test_unload loads the shared library with dlopen.
$(BUILD)/tests/unit/test_unload: | $(LIB_SO)

# The address parser is pure C: tested in every build, with Redis or not.
ifneq ($(REDIS),1)
$(BUILD)/tests/unit/test_redis_url: $(BUILD)/lib/redis/redis_url.o
endif

$(BUILD)/tests/progs/%: $(BUILD)/tests/progs/%.o $(LIB_A) $(BACKEND_AS)
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter-out $(BACKEND_AS),$^) $(LIB_LIBS)

# look_enoent.so: a preload of the tests (tests/progs/look_enoent.c),
# never built with a sanitizer (a test preloads ASan's runtime before it
# where the program has one).
PRELOADS := $(BUILD)/tests/progs/look_enoent.so
$(BUILD)/tests/progs/%.so: tests/progs/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 -fPIC -shared -o $@ $< -ldl

# Test seams (the list, and which test uses each: lib/core/test_hooks.h)
# exist only in a second build of the library and its backends, compiled
# with DIRLOCK_TEST_HOOKS, that the shipped library and programs never
# link: lockworker, histworker, rw_hold and redis_scripts link it.  One
# prelinked object, as libdirlock.a is, the backends in it.
HOOK_LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/hooks/%.o) $(BACKEND_SRCS:%.c=$(BUILD)/hooks/%.o)
HOOK_LIB_A := $(BUILD)/libdirlock-hooks.a
HOOK_LIBS := $(BACKEND_LIBS) -lpthread
$(BUILD)/hooks/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DDIRLOCK_TEST_HOOKS -DDIRLOCK_ASSERTS -MMD -MP -c -o $@ $<
$(HOOK_LIB_A): $(HOOK_LIB_OBJS)
	$(LD) -r -o $(BUILD)/hooks/libdirlock-hooks.o $^
	rm -f $@ && ar rcs $@ $(BUILD)/hooks/libdirlock-hooks.o
$(BUILD)/tests/progs/lockworker: $(BUILD)/tests/progs/lockworker.o $(HOOK_LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HOOK_LIBS)
$(BUILD)/tests/progs/histworker: $(BUILD)/tests/progs/histworker.o $(HOOK_LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HOOK_LIBS)
$(BUILD)/tests/progs/rw_hold: $(BUILD)/tests/progs/rw_hold.o $(HOOK_LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HOOK_LIBS)
$(BUILD)/tests/progs/redis_scripts: $(BUILD)/tests/progs/redis_scripts.o $(HOOK_LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HOOK_LIBS)

# board-hooks: the board linked from objects built the same way, for
# tests/http-cluster.t.
HOOK_BOARD_OBJS := $(BOARD_SRCS:%.c=$(BUILD)/hooks/%.o)
$(BUILD)/tests/progs/board-hooks: $(HOOK_BOARD_OBJS) $(HOOK_LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(BOARD_LIBS) $(HOOK_LIBS)

# test_board_view_lock: a unit test of the board's hooked objects.
HOOK_BOARD_LIB_OBJS := $(filter-out $(BUILD)/hooks/cgi-bin/main.o,$(HOOK_BOARD_OBJS))
$(BUILD)/tests/unit/test_board_view_lock: $(BUILD)/tests/unit/test_board_view_lock.o $(HOOK_BOARD_LIB_OBJS) \
		$(HOOK_LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka $(BOARD_LIBS) $(HOOK_LIBS)
# test_board_delete_limit: the same.
$(BUILD)/tests/unit/test_board_delete_limit: $(BUILD)/tests/unit/test_board_delete_limit.o \
		$(HOOK_BOARD_LIB_OBJS) $(HOOK_LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka $(BOARD_LIBS) $(HOOK_LIBS)

# dirlock-hooks: the command built the same way, for tests/core-signals.t.
$(BUILD)/tests/progs/dirlock-hooks: $(DIRLOCK_SRCS:%.c=$(BUILD)/hooks/%.o) $(HOOK_LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HOOK_LIBS)

# The C example of docs/examples/ (tests/http-cgi-examples.t runs each
# example as a CGI program).
EXAMPLE_BINS := $(BUILD)/tests/examples/counter
$(BUILD)/tests/examples/counter: docs/examples/counter.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIB_A) $(LIB_LIBS) -lpthread

test-build: all $(UNIT_BINS) $(PROG_BINS) $(EXAMPLE_BINS) $(PRELOADS) $(BUILD)/tests/progs/board-hooks $(BUILD)/tests/progs/dirlock-hooks
# The bindings' suites run against the normal build only (tests/run-all).
ifneq ($(SANITIZE),1)
test-build: bindings
endif

# make test installs what is missing first (tools/install-deps is quick
# when everything is there), so it works on a fresh Debian machine.
test:
	tools/install-deps
	$(MAKE) test-build
	BUILD_DIR=$(BUILD) SANITIZE=$(SANITIZE) PYTHON=$(PYTHON) tests/run-all $(TESTS)

.PHONY: test-build

# ---- valgrind memcheck over the unit tests (make valgrind) ---------------
#
# A test sees UNDER_VALGRIND=1 there (a load test skips itself: under
# valgrind its one process is too slow to be the load it means).
# Tests listed in VALGRIND_SKIP are not run (with the reason printed):
# those that start servers or time things tightly.  VALGRIND_TIMEOUT bounds
# each test.
VALGRIND ?= valgrind
VALGRIND_TIMEOUT ?= 600
VALGRIND_SKIP ?=
VALGRIND_FLAGS := --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1 \
	--track-fds=no --quiet --child-silent-after-fork=yes

valgrind: test-build
ifeq ($(SANITIZE),1)
	@echo "make valgrind: run it on the normal build (no SANITIZE=1): valgrind and ASan do not mix" >&2; exit 2
endif
	@command -v $(VALGRIND) >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
	@passed=0; failed=0; skipped=0; failures=; \
	for t in $(UNIT_BINS); do \
		n=$$(basename $$t); \
		case " $(VALGRIND_SKIP) " in *" $$n "*) echo "== $$n: skipped (VALGRIND_SKIP)"; skipped=$$((skipped + 1)); continue;; esac; \
		echo "== valgrind $$n"; \
		if BUILD_DIR=$(BUILD) TOP=$(CURDIR) UNDER_VALGRIND=1 timeout $(VALGRIND_TIMEOUT) $(VALGRIND) $(VALGRIND_FLAGS) \
			--log-file=$(BUILD)/tests/unit/$$n.valgrind $$t >$(BUILD)/tests/unit/$$n.valgrind.out 2>&1; then \
			passed=$$((passed + 1)); \
		else \
			st=$$?; failed=$$((failed + 1)); failures="$$failures $$n"; \
			[ $$st -eq 124 ] && echo "$$n: timed out after $(VALGRIND_TIMEOUT) s under valgrind"; \
			tail -n 30 $(BUILD)/tests/unit/$$n.valgrind.out; cat $(BUILD)/tests/unit/$$n.valgrind; \
		fi; \
	done; \
	[ -n "$$failures" ] && echo "failed:$$failures"; \
	echo "valgrind: $$passed passed, $$failed failed, $$skipped skipped"; \
	[ $$failed -eq 0 ]

.PHONY: valgrind
