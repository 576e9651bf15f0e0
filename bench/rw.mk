# bench/rw.mk - the reader-writer lock's demonstration command, benchmark
# and model check.
#   bin/dirlock-demo   replays torn reads, read and write attacks per policy
#   make demo-rw       runs it (5 s per run) and writes the trace of the
#                      attacks that htdocs/rw-timeline.html draws
#   make bench-rw      throughput and wait benchmark -> bench/results/rw-*.md
#   make verify-rw     checks tests/model/rwlock.pml with spin

DEMO_BIN := $(BIN_DIR)/dirlock-demo
RW_BENCH_BIN := $(BUILD)/bench/rw_bench

all: $(DEMO_BIN)

$(DEMO_BIN): $(BUILD)/tools/dirlock-demo.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^

$(RW_BENCH_BIN): $(BUILD)/bench/rw_bench.o $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lm

RW_TRACE ?= htdocs/rw-trace.json

demo-rw: $(DEMO_BIN)
	$(DEMO_BIN) -s 5 --trace $(RW_TRACE)

bench-rw: $(RW_BENCH_BIN) $(DEMO_BIN)
	bench/rw-run $(RW_BENCH_BIN)

# Model check: safety (mutual exclusion, no deadlock) and, under weak
# fairness, no starvation of readers or writers (policy fair).  ~2 s.
RW_MODEL_DIR := $(BUILD)/model-rw
verify-rw:
	@rm -rf $(RW_MODEL_DIR) && mkdir -p $(RW_MODEL_DIR) && cp tests/model/rwlock.pml $(RW_MODEL_DIR)/
	cd $(RW_MODEL_DIR) && spin -DCONFIG_SAFETY -a rwlock.pml > /dev/null && \
		cc -w -O2 -DSAFETY -DCOLLAPSE -o pan-safety pan.c && ./pan-safety -m2000000 > safety.out && \
		grep -q "errors: 0" safety.out && echo "verify-rw: mutual exclusion, no deadlock: ok"
	cd $(RW_MODEL_DIR) && spin -DCONFIG_LIVE -a rwlock.pml > /dev/null && \
		cc -w -O2 -DCOLLAPSE -o pan-live pan.c && \
		./pan-live -m2000000 -a -f -N fair_reader > reader.out && grep -q "errors: 0" reader.out && \
		echo "verify-rw: fair: no reader starvation: ok" && \
		./pan-live -m2000000 -a -f -N fair_writer > writer.out && grep -q "errors: 0" writer.out && \
		echo "verify-rw: fair: no writer starvation: ok"

.PHONY: demo-rw bench-rw verify-rw
