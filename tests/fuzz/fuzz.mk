# tests/fuzz/fuzz.mk - fuzzing with libFuzzer, and the fuzz targets'
# replay in make test.
#   provides: FUZZ_REPLAY_BINS (added to test-build)
#   uses:     BUILD, CSTD, WARN, ALL_CFLAGS, ALL_LDFLAGS (Makefile)
#
#   make fuzz [FUZZ_SECONDS=60] [FUZZERS="form cookie logrecord owner redisurl range etcdurl"]
#       builds the libFuzzer targets with clang into build-fuzz/ and runs
#       each for FUZZ_SECONDS, starting from the seed corpus
#       tests/fuzz/corpus/NAME/ and the regression inputs
#       tests/fuzz/regress/NAME/.  New corpus entries go to
#       build-fuzz/corpus/NAME/, crashes to build-fuzz/artifacts/NAME/
#       (a crash fails the target; fix it, then keep the input in
#       tests/fuzz/regress/NAME/).
#   make fuzz-build      only build the targets.
#   make fuzz-replay     run the libFuzzer targets once over the seeds and
#                        regression inputs (no fuzzing).
#
# `make test` builds each harness with the normal compiler and
# tests/fuzz/replay.c into $(BUILD)/tests/fuzz/replay_NAME, and
# tests/fuzz-regress.t feeds them the seeds and regression inputs: the
# properties are checked on every test run, without clang.

FUZZ_NAMES := form cookie logrecord owner redisurl range etcdurl
FUZZERS ?= $(FUZZ_NAMES)
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_DIR := build-fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS = $(CSTD) $(WARN) -O1 -g -fno-omit-frame-pointer $(FUZZ_SAN) -fsanitize=fuzzer-no-link \
	$(LIB_INCLUDES) -Icgi-bin -Itests/fuzz

FUZZ_BINS := $(FUZZ_NAMES:%=$(FUZZ_DIR)/fuzz_%)

$(FUZZ_DIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

# What each harness needs besides itself.
$(FUZZ_DIR)/fuzz_form: $(FUZZ_DIR)/cgi-bin/form.o
$(FUZZ_DIR)/fuzz_cookie: $(FUZZ_DIR)/cgi-bin/cookie.o
$(FUZZ_DIR)/fuzz_logrecord: $(FUZZ_DIR)/cgi-bin/logrecord.o
# owner.c with what it calls (error.c, clock.c): not the whole library, so
# a half-edited file elsewhere in lib/core does not stop the fuzzer.
FUZZ_OWNER_SRCS := lib/core/owner.c lib/core/error.c lib/core/clock.c
$(FUZZ_DIR)/fuzz_owner: $(FUZZ_OWNER_SRCS:%.c=$(FUZZ_DIR)/%.o)
# The Redis address parser is pure: it needs only the %-encoding of the
# values in an address (nor hiredis).
FUZZ_REDISURL_SRCS := lib/redis/redis_url.c lib/server/url_text.c
$(FUZZ_DIR)/fuzz_redisurl: $(FUZZ_REDISURL_SRCS:%.c=$(FUZZ_DIR)/%.o)
# The range text parser, with the error helpers it fills errors with.
FUZZ_RANGE_SRCS := lib/range/range_text.c lib/core/error.c
$(FUZZ_DIR)/fuzz_range: $(FUZZ_RANGE_SRCS:%.c=$(FUZZ_DIR)/%.o)
# So is the etcd one (nor libcurl, nor json-c).
FUZZ_ETCDURL_SRCS := lib/etcd/etcd_url.c lib/server/url_text.c
$(FUZZ_DIR)/fuzz_etcdurl: $(FUZZ_ETCDURL_SRCS:%.c=$(FUZZ_DIR)/%.o)
$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/tests/fuzz/fuzz_%.o
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ -lpthread

-include $(wildcard $(FUZZ_DIR)/*/*.d $(FUZZ_DIR)/*/*/*.d)

# Keep the harness objects (make would delete them as intermediate).
.SECONDARY: $(FUZZ_NAMES:%=$(FUZZ_DIR)/tests/fuzz/fuzz_%.o) $(FUZZ_NAMES:%=$(BUILD)/tests/fuzz/fuzz_%.o) \
	$(BUILD)/tests/fuzz/replay.o

fuzz-build: $(FUZZERS:%=$(FUZZ_DIR)/fuzz_%)

# Each target: fresh working corpus seeded from the tree; -dict when
# tests/fuzz/NAME.dict exists.  The summary line per target gives the
# executions and the corpus size.
fuzz: fuzz-build
	@rc=0; for n in $(FUZZERS); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$n $(FUZZ_DIR)/artifacts/$$n; \
		dict=; [ -f tests/fuzz/$$n.dict ] && dict=-dict=tests/fuzz/$$n.dict; \
		dirs=$(FUZZ_DIR)/corpus/$$n; \
		for d in tests/fuzz/corpus/$$n tests/fuzz/regress/$$n; do [ -d $$d ] && dirs="$$dirs $$d"; done; \
		echo "== fuzz_$$n for $(FUZZ_SECONDS) s"; \
		if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
			$(FUZZ_DIR)/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=1024 \
			-print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/artifacts/$$n/ $$dict $$dirs \
			>$(FUZZ_DIR)/fuzz_$$n.log 2>&1; then \
			execs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_DIR)/fuzz_$$n.log); \
			cov=$$(grep -E '^#[0-9]+' $(FUZZ_DIR)/fuzz_$$n.log | tail -n 1 | grep -o 'cov: [0-9]*'); \
			echo "fuzz_$$n: ok, $$execs executions, $$cov, corpus $$(ls $(FUZZ_DIR)/corpus/$$n | wc -l) files"; \
		else \
			rc=1; tail -n 40 $(FUZZ_DIR)/fuzz_$$n.log; \
			echo "fuzz_$$n: FAILED (log $(FUZZ_DIR)/fuzz_$$n.log, inputs in $(FUZZ_DIR)/artifacts/$$n/)"; \
		fi; \
	done; exit $$rc

fuzz-replay: fuzz-build
	@rc=0; for n in $(FUZZERS); do \
		files=$$(find tests/fuzz/corpus/$$n tests/fuzz/regress/$$n -type f 2>/dev/null); \
		[ -n "$$files" ] || continue; \
		$(FUZZ_DIR)/fuzz_$$n $$files >$(FUZZ_DIR)/replay_$$n.log 2>&1 || { rc=1; tail -n 30 $(FUZZ_DIR)/replay_$$n.log; }; \
		echo "fuzz_$$n: replayed $$(echo "$$files" | wc -l) inputs"; \
	done; exit $$rc

# ---- the same harnesses in the normal build, for make test -------------

FUZZ_REPLAY_BINS := $(FUZZ_NAMES:%=$(BUILD)/tests/fuzz/replay_%)
$(BUILD)/tests/fuzz/%.o: ALL_CFLAGS += -Icgi-bin -Itests/fuzz

$(BUILD)/tests/fuzz/replay_form: $(BUILD)/cgi-bin/form.o
$(BUILD)/tests/fuzz/replay_cookie: $(BUILD)/cgi-bin/cookie.o
$(BUILD)/tests/fuzz/replay_logrecord: $(BUILD)/cgi-bin/logrecord.o
$(BUILD)/tests/fuzz/replay_owner: $(FUZZ_OWNER_SRCS:%.c=$(BUILD)/%.o)
$(BUILD)/tests/fuzz/replay_redisurl: $(FUZZ_REDISURL_SRCS:%.c=$(BUILD)/%.o)
$(BUILD)/tests/fuzz/replay_range: $(FUZZ_RANGE_SRCS:%.c=$(BUILD)/%.o)
$(BUILD)/tests/fuzz/replay_etcdurl: $(FUZZ_ETCDURL_SRCS:%.c=$(BUILD)/%.o)
$(BUILD)/tests/fuzz/replay_%: $(BUILD)/tests/fuzz/replay.o $(BUILD)/tests/fuzz/fuzz_%.o
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lpthread

test-build: $(FUZZ_REPLAY_BINS)

.PHONY: fuzz-build fuzz-replay fuzz
