# tests/model/model.mk - model checking with spin: make verify.
#
# Models: tests/model/stale.pml (the exclusive lock), permits.pml (counting
# locks), deadlock.pml (deadlock detection) and rwlock.pml (the
# reader-writer layer, its own rule: make verify-rw).  Every other model
# names its configurations in its header comment, one per line:
#     verify-config: SPIN-FLAGS          must verify without error
#     verify-expect-error: SPIN-FLAGS    a deliberately wrong variant: the
#                                        checker must find an error
# (no such line: one configuration without flags).  For each
# configuration: spin -a with the flags, then
#   - safety: pan compiled with -DSAFETY (and -DNOCLAIM when the model
#     has LTL formulas), run exhaustively: assertions, invalid end states;
#   - liveness, for each LTL formula / never claim of that configuration:
#     pan compiled for acceptance cycles, run with -a -f (weak fairness)
#     -N NAME.
# Work files go to $(BUILD)/model/NAME/.  Prints one line per check with
# the states stored; fails on the first check that does not pass.
#   make verify [MODELS="stale rwlock"] [PAN_MEM=1024] (megabytes)

MODELS ?= stale permits deadlock
MODEL_DIR := $(BUILD)/model
PAN_MEM ?= 2048
PAN_CC ?= $(if $(filter cc gcc clang,$(notdir $(CC))),$(CC),cc)

verify: verify-models verify-rw
	@echo "verify: all models checked"

verify-models:
	@command -v spin >/dev/null || { echo "make verify: spin is not installed (apt-get install spin)" >&2; exit 2; }
	@set -e; for m in $(MODELS); do \
		MODEL=$$m PAN_CC='$(PAN_CC)' PAN_MEM=$(PAN_MEM) DIR=$(MODEL_DIR)/$$m SRC=tests/model/$$m.pml \
			sh tests/model/check-model; \
	done

# rwlock.pml: safety (mutual exclusion, no deadlock) and, under weak
# fairness, no starvation of readers or writers (policy fair).  ~2 s.
RW_MODEL_DIR := $(BUILD)/model-rw
verify-rw:
	@rm -rf $(RW_MODEL_DIR) && mkdir -p $(RW_MODEL_DIR) && cp tests/model/rwlock.pml $(RW_MODEL_DIR)/
	cd $(RW_MODEL_DIR) && spin -DCONFIG_SAFETY -a rwlock.pml > /dev/null && \
		$(PAN_CC) -w -O2 -DSAFETY -DCOLLAPSE -o pan-safety pan.c && ./pan-safety -m2000000 > safety.out && \
		grep -q "errors: 0" safety.out && echo "verify-rw: mutual exclusion, no deadlock: ok"
	cd $(RW_MODEL_DIR) && spin -DCONFIG_LIVE -a rwlock.pml > /dev/null && \
		$(PAN_CC) -w -O2 -DCOLLAPSE -o pan-live pan.c && \
		./pan-live -m2000000 -a -f -N fair_reader > reader.out && grep -q "errors: 0" reader.out && \
		echo "verify-rw: fair: no reader starvation: ok" && \
		./pan-live -m2000000 -a -f -N fair_writer > writer.out && grep -q "errors: 0" writer.out && \
		echo "verify-rw: fair: no writer starvation: ok"

.PHONY: verify verify-models verify-rw
