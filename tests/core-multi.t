#!/bin/bash
# core-multi.t - the all-or-nothing multi-lock cannot deadlock: one group
# locks {P, Q}, another {Q, P}, again and again; both progress, and nothing
# is left held -- in a lock directory (names taken one by one in sorted
# order) and on each private server (tests/spaces-lib.sh; Redis takes all
# names in one atomic step, so a set waiting for Q holds no P).  The twin
# takes the same locks by hand in the order given and deadlocks (rounds
# that time out holding one lock while waiting for the other).
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
spaces_start || exit 1
SECS=${MULTI_SECONDS:-10}
[ "$(spaces_count)" -eq 1 ] || SECS=${MULTI_SECONDS:-6}
extra=0
space_of redis >/dev/null && extra=1
plan $((4 * $(spaces_count) + 1 + extra))

for space in $(test_spaces); do
	kind=$(space_kind "$space")
	"$PROGS/lockworker" multi "$space" "$SECS" P Q >"$T/a" &
	a=$!
	"$PROGS/lockworker" multi "$space" "$SECS" Q P >"$T/b" &
	b=$!
	wait $a; sa=$?
	wait $b; sb=$?
	is "$sa/$sb" "0/0" "$kind: {P,Q} and {Q,P} for $SECS s: no acquire timed out"
	cmp_num "$(cat "$T/a")" -gt 0 "$kind: group {P,Q} progressed ($(cat "$T/a") rounds)"
	cmp_num "$(cat "$T/b")" -gt 0 "$kind: group {Q,P} progressed ($(cat "$T/b") rounds)"
	left=$(space_leftovers "$space")
	[ -z "$left" ] || diag "left: $(echo "$left" | tr '\n' ' ')"
	[ -z "$left" ]
	ok $? "$kind: nothing is left held afterwards"
done

if R=$(space_of redis); then
	# Atomic: while a set waits for Q, P stays free for a single-name taker.
	"$PROGS/lockworker" hold "$R" Q 1.5 >/dev/null &
	h=$!
	sleep 0.2
	"$PROGS/lockworker" multi "$R" 0.1 P Q >/dev/null &
	m=$!
	sleep 0.2
	read -r code _ <<<"$("$PROGS/lockworker" wait "$R" P 0)"
	is "$code" 0 "Redis: a set waiting for Q holds none of its names (P can be taken alone)"
	wait $h $m
fi

"$PROGS/lockworker" naive "$SPACE_DIR" 3 P Q >"$T/c" &
c=$!
"$PROGS/lockworker" naive "$SPACE_DIR" 3 Q P >"$T/d" &
d=$!
wait $c $d
dl=$(($(cut -d' ' -f2 "$T/c") + $(cut -d' ' -f2 "$T/d")))
diag "by hand, P->Q against Q->P: $dl deadlocked rounds in 3 s"
cmp_num "$dl" -gt 0 "taking the locks by hand in opposite orders deadlocks (test can fail)"
