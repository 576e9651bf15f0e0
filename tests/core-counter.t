#!/bin/bash
# core-counter.t - 16 processes x 1,000 read-modify-write increments of one
# counter file under the exclusive lock on each private server
# (tests/spaces-lib.sh) must give exactly 16,000, and 16 x 500 in a lock
# directory exactly 8,000 (half as many: a directory hand-off costs more
# on a loaded 2-core machine, and the suite's time is bounded; a server
# whose hand-offs cost far more gets fewer: space_rounds); twice as many
# under TESTS_LONG=1 (COUNTER_N=N: N everywhere); the same run
# without a lock must lose increments, and so must each server's run with
# a test build whose locks take without looking (space_no_lock: Redis's
# DIRLOCK_TEST_REDIS_NO_LOCK, ...): the test can fail.  The twins pause
# TWIN_PAUSE_US between the read and the write, so that a slow build (a
# sanitizer's) or a server's round trips cannot space the unlocked
# increments apart by chance and lose none; with the pause a fifth of
# the rounds is plenty (twin_n).
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
P=${COUNTER_PROCS:-16}
N_DIR=${COUNTER_N:-$(soak 500 1000)}
N_SERVER=${COUNTER_N:-$(soak 1000 2000)}
spaces_start || exit 1
twins=1
for space in $(test_spaces); do space_no_lock "$space" >/dev/null && twins=$((twins + 1)); done
plan $((2 * $(spaces_count) + twins))

TWIN_PAUSE_US=2000
run() { # run SPACE LOCKING N [PAUSE_US] -> prints the final counter and whether every worker finished
	echo 0 >"$T/counter"
	pids=""
	for _ in $(seq "$P"); do
		"$PROGS/lockworker" counter "$1" c "$T/counter" "$3" "$2" "${4:-0}" >/dev/null &
		pids="$pids $!"
	done
	st=0
	for p in $pids; do wait "$p" || st=1; done
	echo "$(cat "$T/counter") $st"
}

for space in $(test_spaces); do
	kind=$(space_kind "$space") N=$N_DIR
	space_is_server "$space" && N=$(space_rounds "$space" "$N_SERVER")
	t0=$(date +%s)
	read -r got st <<<"$(run "$space" dirlock "$N")"
	is "$got" $((P * N)) "$kind: $P x $N increments give $((P * N)) ($(($(date +%s) - t0)) s)"
	is "$st" 0 "$kind: every worker finished cleanly"
done
twin_n() { echo $(($1 / 5 > 20 ? $1 / 5 : 20)); }
N=$(twin_n "$N_DIR")
read -r got st <<<"$(run "$SPACE_DIR" none "$N" "$TWIN_PAUSE_US")"
diag "no lock: counter $got of $((P * N))"
cmp_num "$got" -lt $((P * N)) "no lock: increments are lost ($got < $((P * N))), so this test can fail"
for space in $(test_spaces); do
	seam=$(space_no_lock "$space") || continue
	N=$(twin_n "$(space_rounds "$space" "$N_SERVER")")
	read -r got st <<<"$(export "${seam?}" && run "$space" dirlock "$N" "$TWIN_PAUSE_US")"
	cmp_num "$got" -lt $((P * N)) "$(space_kind "$space"), locks that take without looking ($seam): increments are lost ($got < $((P * N)))"
done
