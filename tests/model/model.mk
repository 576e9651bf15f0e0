# tests/model/model.mk - model checking with spin: make verify.
#
# Every tests/model/*.pml is checked.  A model that has its own rule
# (tests/model/rwlock.pml: `make verify-rw`, bench/rw.mk) is checked by
# that rule.  Any other model names its configurations in its header
# comment, one per line:
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

MODEL_SRCS := $(wildcard tests/model/*.pml)
MODELS ?= $(MODEL_SRCS:tests/model/%.pml=%)
MODEL_DIR := $(BUILD)/model
PAN_MEM ?= 2048
PAN_CC ?= $(if $(filter cc gcc clang,$(notdir $(CC))),$(CC),cc)
# Models checked by a rule of their own elsewhere: NAME=TARGET.
MODEL_RULES ?= rwlock=verify-rw

verify:
	@command -v spin >/dev/null || { echo "make verify: spin is not installed (apt-get install spin)" >&2; exit 2; }
	@set -e; for m in $(MODELS); do \
		rule=$$(for r in $(MODEL_RULES); do [ "$${r%%=*}" = "$$m" ] && echo "$${r#*=}"; done; true); \
		if [ -n "$$rule" ] && $(MAKE) --no-print-directory -n "$$rule" >/dev/null 2>&1; then \
			echo "== $$m: make $$rule"; $(MAKE) --no-print-directory "$$rule"; continue; \
		fi; \
		MODEL=$$m PAN_CC='$(PAN_CC)' PAN_MEM=$(PAN_MEM) DIR=$(MODEL_DIR)/$$m SRC=tests/model/$$m.pml \
			sh tests/model/check-model; \
	done
	@echo "verify: all models checked"

.PHONY: verify
