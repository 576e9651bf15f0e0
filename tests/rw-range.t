#!/bin/bash
# rw-range.t - range locks under stress: 12 processes take random
# overlapping and disjoint ranges (and nested sub-intervals) of one lock in
# every mode and policy, shrinking and upgrading some, with a shared-memory
# checker (tests/progs/rangestress.c); then mixed with whole-lock holders;
# then with a holder SIGKILLed every 200 ms; the twin without a lock must
# show violations.  The command: --range (read as dirlock_range_parse
# reads it), status listing the ranges.  And
# seed 002's use case (bin/dirlock-tree-demo): a nested-interval tree
# edited by 8 processes at once loses edits without a lock, none with
# range locks.  All of it in a lock directory and on each private server
# (tests/spaces-lib.sh); on Redis (lib/redis/redis_range.c) also the whole
# lock busy while ranges are held, and a SIGKILLed range holder freed at
# once.  Each checker run lasts 2 s (4 s under TESTS_LONG=1;
# RANGE_SECONDS=N: N s).
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
SECS=${RANGE_SECONDS:-$(soak 2 4)}
TREE_DEMO=${TREE_DEMO:-$TOP/bin/dirlock-tree-demo}
spaces_start || exit 1
extra=0
space_of redis >/dev/null && extra=3
plan $((8 * $(spaces_count) + 4 + extra))

run() { # run NAME OPTIONS...  (in a space of its own beside $space, the i-th)
	out=$(timeout 120 "$PROGS/rangestress" "$(space_sub "$space" "$1")" 12 "$SECS" "${@:2}" 2>"$T/$i-$1.err")
	st=$?
	ok $st "$kind: $1: $out"
	head -n 5 "$T/$i-$1.err" | while read -r l; do diag "$l"; done
}

i=0
for space in $(test_spaces); do
	i=$((i + 1))
	kind=$(space_kind "$space")
	run ranges
	run with-whole --whole
	run killed --kill

	L=$(space_sub "$space" cli)
	"$DIRLOCK" -d "$L" --range 0:10 tree -- sleep 1.5 &
	a=$!
	"$DIRLOCK" -d "$L" -s --range 20:30 tree -- sleep 1.5 &
	b=$!
	sleep 0.4
	"$DIRLOCK" -d "$L" -n --range 5:6 tree -- true 2>"$T/err"
	is "$?" 1 "$kind: an overlapping range is busy (-n exits 1): $(cat "$T/err")"
	"$DIRLOCK" -d "$L" -n --range 10:20 tree -- true
	is "$?" 0 "$kind: a range between two held ones is free"
	"$DIRLOCK" status -d "$L" >"$T/status"
	grep -q "range \[0, 10) exclusive" "$T/status" && grep -q "range \[20, 30) shared" "$T/status"
	ok $? "$kind: status lists the held ranges: $(tr '\n' '|' <"$T/status")"
	wait $a $b

	out="$T/tree-$i.out"
	"$TREE_DEMO" -d "$T/tree-$i" -s "$(space_sub "$space" tree)" -p 8 -n 15 none range >"$out" 2>&1
	st=$?
	sed 's/^/# /' "$out"
	grep '^| none' "$out" | awk -F'|' '{ gsub(/[*]/, "", $6); lost = $6 + 0; n++ } END { exit !(n == 1 && lost > 0) }'
	ok $? "$kind: tree demo: edits are lost without a lock: $(grep '^| none' "$out")"
	is "$st/$(grep '^| range' "$out" | awk -F'|' '{ gsub(/[*]/, "", $6); print $6 + 0 }')" "0/0" \
		"$kind: tree demo: none lost with range locks: $(grep '^| range' "$out")"
done

out=$("$PROGS/rangestress" "$(space_sub "$SPACE_DIR" twin)" 12 2 --nolock 2>/dev/null)
st=$?
[ "$st" -ne 0 ] && echo "$out" | grep -q 'violations=[1-9]'
ok $? "without a lock the checker sees overlaps: $out"
"$DIRLOCK" -d "$SPACE_DIR" --range 5:1 tree -- true 2>"$T/err"
is "$?" 2 "a bad range is refused: $(cat "$T/err")"
# --range reads its text as the library does (dirlock_range_parse): a
# subnormal end is a range like any other, a space around it is not.
"$DIRLOCK" -d "$SPACE_DIR" -n --range 1e-320:2e-320 tree -- true 2>"$T/err"
is "$?/$(cat "$T/err")" "0/" "--range 1e-320:2e-320 (subnormal ends) is taken"
bad=""
for r in " 1:2" "1:2 " "1 :2" "0x1:2" "inf:1"; do
	"$DIRLOCK" -d "$SPACE_DIR" -n --range "$r" tree -- true 2>"$T/err"
	st=$?
	[ "$st" = 2 ] && grep -q "^dirlock: invalid range '$r'" "$T/err" || bad="$bad [$r]: $st $(cat "$T/err")"
done
is "$bad" "" "'<space>1:2', '1:2<space>', '1 :2', '0x1:2', 'inf:1' are all refused with the library's reason"

R=$(space_of redis) || exit 0
# The whole lock while ranges are held.
L=$(space_sub "$R" whole)
"$DIRLOCK" -d "$L" --range 0:10 tree -- sleep 1 &
a=$!
"$DIRLOCK" -d "$L" -s --range 20:30 tree -- sleep 1 &
b=$!
sleep 0.4
"$DIRLOCK" -d "$L" -n tree -- true 2>/dev/null
is "$?" 1 "Redis: the whole lock is busy while ranges are held"
wait $a $b
"$DIRLOCK" -d "$L" -n --range 1e-320:2e-320 tree -- true 2>"$T/err"
is "$?/$(cat "$T/err")" "0/" "Redis: --range 1e-320:2e-320 (subnormal ends) is taken"

# A range holder killed (dirlock and its command, SIGKILL): a waiter on
# this host finds its owner dead and gets in at once, not after the stale age.
L=$(space_sub "$R" killed-holder)
"$DIRLOCK" -d "$L" --range 0:10 tree -- sleep 30 &
d=$!
k=0
until "$DIRLOCK" status -d "$L" tree 2>/dev/null | grep -q "range \[0, 10)"; do
	sleep 0.05
	k=$((k + 1))
	[ $k -lt 100 ] || break
done
kill_holder $d
start=$(date +%s%N)
"$DIRLOCK" -d "$L" -w 20 --range 5:6 tree -- true
rc=$?
took=$((($(date +%s%N) - start) / 1000000))
[ $rc -eq 0 ] && [ $took -lt 2000 ]
ok $? "Redis: a SIGKILLed range holder's range is free at once (exit $rc after $took ms)"
