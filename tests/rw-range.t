#!/bin/bash
# rw-range.t - range locks under stress: 12 processes take random
# overlapping and disjoint ranges (and nested sub-intervals) of one lock in
# every mode and policy, shrinking and upgrading some, with a shared-memory
# checker (tests/progs/rangestress.c); then mixed with whole-lock holders;
# then with a holder SIGKILLed every 200 ms; the twin without a lock must
# show violations.  The command: --range, status listing the ranges.  And
# seed 002's use case (bin/dirlock-tree-demo): a nested-interval tree
# edited by 8 processes at once loses edits without a lock, none with
# range locks.
. "$(dirname "$0")/tap.sh"
SECS=${RANGE_SECONDS:-4}
plan 10

run() { # run NAME OPTIONS...
	out=$(timeout 120 "$PROGS/rangestress" "$T/$1" 12 "$SECS" "${@:2}" 2>"$T/$1.err")
	st=$?
	ok $st "$1: $out"
	head -n 5 "$T/$1.err" | while read -r l; do diag "$l"; done
}
run ranges
run with-whole --whole
run killed --kill
out=$("$PROGS/rangestress" "$T/twin" 12 2 --nolock 2>/dev/null)
[ $? -ne 0 ] && echo "$out" | grep -q 'violations=[1-9]'
ok $? "without a lock the checker sees overlaps: $out"

L="$T/cli"
"$DIRLOCK" -d "$L" --range 0:10 tree -- sleep 1.5 &
a=$!
"$DIRLOCK" -d "$L" -s --range 20:30 tree -- sleep 1.5 &
b=$!
sleep 0.4
"$DIRLOCK" -d "$L" -n --range 5:6 tree -- true 2>/dev/null
is "$?" 1 "an overlapping range is busy (-n exits 1)"
"$DIRLOCK" -d "$L" -n --range 10:20 tree -- true
is "$?" 0 "a range between two held ones is free"
"$DIRLOCK" status -d "$L" >"$T/status"
grep -q "range \[0, 10) exclusive" "$T/status" && grep -q "range \[20, 30) shared" "$T/status"
ok $? "status lists the held ranges: $(tr '\n' '|' <"$T/status")"
"$DIRLOCK" -d "$L" --range 5:1 tree -- true 2>"$T/err"
is "$?" 2 "a bad range is refused: $(cat "$T/err")"
wait $a $b

TREE_DEMO=${TREE_DEMO:-$TOP/bin/dirlock-tree-demo}
"$TREE_DEMO" -d "$T/tree" -p 8 -n 15 none range >"$T/tree.out" 2>&1
st=$?
grep '^| none' "$T/tree.out" | awk -F'|' '{ gsub(/[*]/, "", $6); exit !($6 + 0 > 0) }'
ok $? "tree demo: edits are lost without a lock: $(grep '^| none' "$T/tree.out")"
is "$st/$(grep '^| range' "$T/tree.out" | awk -F'|' '{ gsub(/[*]/, "", $6); print $6 + 0 }')" "0/0" \
	"tree demo: none lost with range locks: $(grep '^| range' "$T/tree.out")"
