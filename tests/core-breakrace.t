#!/bin/bash
# core-breakrace.t - many breakers, one stale lock: 16 processes released
# at once against a lock whose owner is dead, 120 rounds (200 under
# TESTS_LONG=1; BREAKRACE_ROUNDS=N: N); inside the
# critical section each proves it is alone with an O_EXCL marker file.  The
# twin run takes no lock and must collide (the test can fail).
. "$(dirname "$0")/tap.sh"
plan 3
ROUNDS=${BREAKRACE_ROUNDS:-$(soak 120 200)}
P=16
L="$T/locks"
mkdir -p "$L"
host=$(hostname)

round() { # round LOCKING -> exit status: 0 all alone, 3 someone was not
	# The starting gun: a FIFO held open read-write here, so every
	# contender's open succeeds at once and each blocks in read() until
	# the shot: one byte each, written together.
	mkfifo "$T/gun"
	exec 3<>"$T/gun"
	pids=""
	for _ in $(seq $P); do
		"$PROGS/lockworker" alone "$L" race "$T/marker" 60 "$1" <"$T/gun" 2>>"$T/err" &
		pids="$pids $!"
	done
	sleep 0.05
	printf '%*s' $P '' >&3
	st=0
	for p in $pids; do
		wait "$p"
		r=$?
		[ $r -ne 0 ] && st=$r
	done
	exec 3>&-
	rm -f "$T/gun" "$T/marker"
	return $st
}

double=0
other=0
for r in $(seq "$ROUNDS"); do
	forge_lock "$L" race "$(dead_pid)" "$host"
	round dirlock
	case $? in
	0) ;;
	3) double=$((double + 1)) ;;
	*) other=$((other + 1)) ;;
	esac
	rm -rf "$L/race.lock"
done
is "$double" 0 "$ROUNDS rounds x $P breakers at once: never two holders"
is "$other" 0 "every contender got the lock and released it cleanly"

collisions=0
for r in $(seq 20); do
	round none
	[ $? -eq 3 ] && collisions=$((collisions + 1))
done
diag "without a lock: $collisions of 20 rounds had two processes inside at once"
cmp_num "$collisions" -gt 0 "without a lock the same race puts two processes inside (test can fail)"
