#!/bin/bash
# rw-attack.t - lock-out behaviour of the policies, in a lock directory and
# on each private server (tests/spaces-lib.sh).
# Read attack: two readers alternate (each holds 200 ms, overlapping by
# 100 ms) for the whole run; a writer arrives at 1 s.  `reader` and raw
# flock(2) lock it out until the attack ends; `writer` and `fair` let it in
# within about one read phase.  Write attack: two writers alternate (100 ms
# each); a reader arrives at 1 s: `writer` locks it out, `fair` does not.
# Timing bounds are loose (a loaded 2-core box); the qualitative difference
# is asserted strictly: let-in waits under half the lock-out ones.
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
for space in $(test_spaces); do
	kind=$(space_kind "$space")
	for lock in fair writer; do
		w "$space" read-attack "$lock" writer_wait_max_ms
		lt "$v" "$BOUND"; ok $? "$kind: read attack, $lock: writer gets in within one read phase (${v} ms; aim 300)"
	done
	w "$space" read-attack reader writer_wait_max_ms
	ge "$v" "$LOCKOUT"; ok $? "$kind: read attack, reader: writer locked out until the attack ends (${v} ms)"
	w "$space" write-attack writer reader_wait_max_ms
	ge "$v" "$LOCKOUT"; ok $? "$kind: write attack, writer: reader locked out (${v} ms)"
	w "$space" write-attack fair reader_wait_max_ms
	lt "$v" "$BOUND"; ok $? "$kind: write attack, fair: reader gets in within one write phase (${v} ms; aim 300)"
	w "$space" write-attack reader reader_wait_max_ms
	lt "$v" "$BOUND"; ok $? "$kind: write attack, reader: reader waits only for the active writer (${v} ms)"
done
# The control: the same attack under flock(2) on files in a directory.
kind=flock
w "$SPACE_DIR" read-attack flock writer_wait_max_ms
ge "$v" "$LOCKOUT"; ok $? "control: read attack locks a writer out under flock(2) (${v} ms)"
[ "$fails" -eq 0 ]
