#!/bin/sh
# tests/fuzz-regress.t - the fuzz harnesses' properties over the seed
# corpora and the kept regression inputs (tests/fuzz/corpus/NAME/,
# tests/fuzz/regress/NAME/), through the harnesses built with the normal
# compiler ($BUILD_DIR/tests/fuzz/replay_NAME; make test builds them).
# With SANITIZE=1 they run under ASan+UBSan.  Fuzzing itself: make fuzz.
. "$(dirname "$0")/tap.sh"

names="form cookie logrecord owner redisurl range etcdurl"
plan 7
for n in $names; do
	bin=$BUILD_DIR/tests/fuzz/replay_$n
	if [ ! -x "$bin" ]; then
		skip "$n: $bin is not built (make test-build)"
		continue
	fi
	set --
	for d in "$TOP/tests/fuzz/corpus/$n" "$TOP/tests/fuzz/regress/$n"; do
		[ -d "$d" ] && set -- "$@" "$d"
	done
	if out=$("$bin" "$@" 2>&1); then
		ok 0 "$n: every seed and regression input keeps the properties ($(echo "$out" | tail -n 1))"
	else
		ok 1 "$n: every seed and regression input keeps the properties"
		echo "$out" | tail -n 20 | sed 's/^/# /'
	fi
done
[ "$tap_failed" -eq 0 ]
