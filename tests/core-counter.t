#!/bin/bash
# core-counter.t - 8 processes x 2,000 read-modify-write increments of one
# counter file under the exclusive lock must give exactly 16,000; the same
# run without a lock must lose increments (the test can fail).
. "$(dirname "$0")/tap.sh"
plan 3
N=${COUNTER_N:-2000}
P=8

run() { # run LOCKING -> prints the final counter
	echo 0 >"$T/counter.$1"
	pids=""
	for _ in $(seq $P); do
		"$PROGS/lockworker" counter "$T/locks" c "$T/counter.$1" "$N" "$1" >/dev/null &
		pids="$pids $!"
	done
	st=0
	for p in $pids; do wait "$p" || st=1; done
	echo "$(cat "$T/counter.$1") $st"
}

read -r got st <<<"$(run dirlock)"
is "$got" $((P * N)) "dirlock: $P x $N increments give $((P * N))"
is "$st" 0 "dirlock: every worker finished cleanly"
read -r got st <<<"$(run none)"
diag "no lock: counter $got of $((P * N))"
cmp_num "$got" -lt $((P * N)) "no lock: increments are lost ($got < $((P * N))), so this test can fail"
