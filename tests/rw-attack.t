#!/bin/bash
# rw-attack.t - lock-out behaviour of the policies, in a lock directory and
# on each private server (tests/spaces-lib.sh).
# Read attack: two readers alternate (each holds 200 ms, overlapping by
# 100 ms) for the whole run; a writer arrives at 1 s.  `reader` and raw
# flock(2) lock it out until the attack ends; `writer` and `fair` let it in
# within about one read phase.  Write attack: two writers alternate (100 ms
# each); a reader arrives at 1 s: `writer` locks it out, `fair` does not.
# Timing bounds are loose (a loaded 2-core box); the qualitative difference
# is asserted strictly: let-in waits under half the lock-out ones.  The
# spaces' runs go on at once (each space's one after the other).
# shellcheck source=tests/rw-lib.sh
. "$(dirname "$0")/rw-lib.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
SECS=${RW_ATTACK_SECONDS:-3}
LOCKOUT=$(awk -v s="$SECS" 'BEGIN { print (s - 1) * 1000 * 0.8 }')
BOUND=${RW_ATTACK_BOUND_MS:-1000}
spaces_start || exit 1
echo "1..$((6 * $(spaces_count) + 1))"
w() { # w SPACE SCENARIO LOCK KEY: runs it, sets v to the value of KEY
	line=$("$DEMO" -d "$1" -s "$SECS" "$2" "$3")
	diag "$kind $2 $line"
	v=$(field "$line" "$4")
}
# attacks SPACE: the six runs in SPACE, one after the other (they share its
# lock names); prints "R STATUS DESCRIPTION" for each check and "# ..."
# for each diagnostic, for report below.
attacks() {
	ok() { echo "R $1 $2"; }
	kind=$(space_kind "$1")
	for lock in fair writer; do
		w "$1" read-attack "$lock" writer_wait_max_ms
		lt "$v" "$BOUND"; ok $? "$kind: read attack, $lock: writer gets in within one read phase (${v} ms; aim 300)"
	done
	w "$1" read-attack reader writer_wait_max_ms
	ge "$v" "$LOCKOUT"; ok $? "$kind: read attack, reader: writer locked out until the attack ends (${v} ms)"
	w "$1" write-attack writer reader_wait_max_ms
	ge "$v" "$LOCKOUT"; ok $? "$kind: write attack, writer: reader locked out (${v} ms)"
	w "$1" write-attack fair reader_wait_max_ms
	lt "$v" "$BOUND"; ok $? "$kind: write attack, fair: reader gets in within one write phase (${v} ms; aim 300)"
	w "$1" write-attack reader reader_wait_max_ms
	lt "$v" "$BOUND"; ok $? "$kind: write attack, reader: reader waits only for the active writer (${v} ms)"
}
# The control: the same attack under flock(2) on files in a directory.
control() {
	ok() { echo "R $1 $2"; }
	kind=flock
	w "$(space_sub "$SPACE_DIR" flock)" read-attack flock writer_wait_max_ms
	ge "$v" "$LOCKOUT"; ok $? "control: read attack locks a writer out under flock(2) (${v} ms)"
}
# The spaces are disjoint and the attackers sleep most of the time, so the
# spaces' runs and the control go on at once, each in a job of its own;
# their lines are reported in order.
jobs_out=()
k=0
for space in $(test_spaces); do
	k=$((k + 1))
	attacks "$space" >"$T/attacks-$k" 2>&1 &
	jobs_out+=("$T/attacks-$k")
	pids="${pids:-} $!"
done
control >"$T/control" 2>&1 &
jobs_out+=("$T/control")
# shellcheck disable=SC2086 # a list of pids
wait $pids $!
for f in "${jobs_out[@]}"; do
	while IFS= read -r l; do
		case $l in
		"R "*)
			l=${l#R }
			ok "${l%% *}" "${l#* }"
			;;
		"#"*) echo "$l" ;;
		*) diag "$l" ;;
		esac
	done <"$f"
done
[ "$fails" -eq 0 ]
