# bench/bench.mk - `make bench`: every benchmark, each printing a table and
# writing bench/results/.  Benchmarks report ratios against baselines
# measured in the same run; they assert nothing.

CORE_BENCH := $(BUILD)/bench/core_bench

$(CORE_BENCH): $(BUILD)/bench/core_bench.o $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^

bench-core: all $(CORE_BENCH)
	BUILD_DIR=$(BUILD) bench/core-run

# One after the other: running them at once would measure each other.
bench:
	$(MAKE) bench-core
	$(MAKE) bench-rw
	$(MAKE) bench-board

.PHONY: bench-core
