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
# range locks.  All of it again on a private Redis server (lib/redis/redis_range.c),
# when there is one: the stress runs, the command, a SIGKILLed range
# holder freed at once, and the tree demo with its locks on the server.
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/redis-lib.sh
. "$(dirname "$0")/redis-lib.sh"
SECS=${RANGE_SECONDS:-4}
if redis_available; then
	redis=yes
	plan 23
else
	plan 12
	diag "Redis: $REDIS_WHY"
fi

run() { # run NAME OPTIONS...  (in lock space $SPACE, default $T/NAME)
	out=$(timeout 120 "$PROGS/rangestress" "${SPACE:-$T/$1}" 12 "$SECS" "${@:2}" 2>"$T/$1.err")
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
# --range reads its text as the library does (dirlock_range_parse): a
# subnormal end is a range like any other, a space around it is not.
"$DIRLOCK" -d "$L" -n --range 1e-320:2e-320 tree -- true 2>"$T/err"
is "$?/$(cat "$T/err")" "0/" "--range 1e-320:2e-320 (subnormal ends) is taken"
bad=""
for r in " 1:2" "1:2 " "1 :2" "0x1:2" "inf:1"; do
	"$DIRLOCK" -d "$L" -n --range "$r" tree -- true 2>"$T/err"
	st=$?
	[ "$st" = 2 ] && grep -q "^dirlock: invalid range '$r'" "$T/err" || bad="$bad [$r]: $st $(cat "$T/err")"
done
is "$bad" "" "'<space>1:2', '1:2<space>', '1 :2', '0x1:2', 'inf:1' are all refused with the library's reason"

TREE_DEMO=${TREE_DEMO:-$TOP/bin/dirlock-tree-demo}
"$TREE_DEMO" -d "$T/tree" -p 8 -n 15 none range >"$T/tree.out" 2>&1
st=$?
grep '^| none' "$T/tree.out" | awk -F'|' '{ gsub(/[*]/, "", $6); lost = $6 + 0; n++ } END { exit !(n == 1 && lost > 0) }'
ok $? "tree demo: edits are lost without a lock: $(grep '^| none' "$T/tree.out")"
is "$st/$(grep '^| range' "$T/tree.out" | awk -F'|' '{ gsub(/[*]/, "", $6); print $6 + 0 }')" "0/0" \
	"tree demo: none lost with range locks: $(grep '^| range' "$T/tree.out")"

# The same on a private Redis server.  (Started only now: the tests above
# wait for all their children.)
[ "${redis:-}" = yes ] || exit 0
redis_start || exit 1
SPACE=$REDIS_SPACE
run redis-ranges
run redis-with-whole --whole
run redis-killed --kill

"$DIRLOCK" -d "$SPACE" --range 0:10 tree -- sleep 1.5 &
a=$!
"$DIRLOCK" -d "$SPACE" -s --range 20:30 tree -- sleep 1.5 &
b=$!
sleep 0.4
"$DIRLOCK" -d "$SPACE" -n --range 5:6 tree -- true 2>"$T/err"
is "$?" 1 "Redis: an overlapping range is busy (-n exits 1): $(cat "$T/err")"
"$DIRLOCK" -d "$SPACE" -n --range 10:20 tree -- true
is "$?" 0 "Redis: a range between two held ones is free"
"$DIRLOCK" -d "$SPACE" -n tree -- true 2>/dev/null
is "$?" 1 "Redis: the whole lock is busy while ranges are held"
"$DIRLOCK" status -d "$SPACE" >"$T/status"
grep -q "range \[0, 10) exclusive" "$T/status" && grep -q "range \[20, 30) shared" "$T/status"
ok $? "Redis: status lists the held ranges: $(tr '\n' '|' <"$T/status")"
wait $a $b
"$DIRLOCK" -d "$SPACE" -n --range 1e-320:2e-320 tree -- true 2>"$T/err"
is "$?/$(cat "$T/err")" "0/" "Redis: --range 1e-320:2e-320 (subnormal ends) is taken"

# A range holder killed (dirlock and its command, SIGKILL): a waiter on
# this host finds its owner dead and gets in at once, not after the stale age.
"$DIRLOCK" -d "$SPACE" --range 0:10 tree -- sleep 30 &
d=$!
k=0
until "$DIRLOCK" status -d "$SPACE" tree 2>/dev/null | grep -q "range \[0, 10)"; do
	sleep 0.05
	k=$((k + 1))
	[ $k -lt 100 ] || break
done
c=$(pgrep -P $d)
kill -KILL $d # dirlock first: else it would see its command end and release
[ -n "$c" ] && kill -KILL $c
wait $d 2>/dev/null
start=$(date +%s%N)
"$DIRLOCK" -d "$SPACE" -w 20 --range 5:6 tree -- true
rc=$?
took=$((($(date +%s%N) - start) / 1000000))
[ $rc -eq 0 ] && [ $took -lt 2000 ]
ok $? "Redis: a SIGKILLed range holder's range is free at once (exit $rc after $took ms)"

"$TREE_DEMO" -d "$T/tree-redis" -s "$SPACE" -p 8 -n 15 none range >"$T/tree-redis.out" 2>&1
st=$?
sed 's/^/# /' "$T/tree-redis.out"
grep '^| none' "$T/tree-redis.out" | awk -F'|' '{ gsub(/[*]/, "", $6); lost = $6 + 0; n++ } END { exit !(n == 1 && lost > 0) }'
ok $? "Redis tree demo: edits are lost without a lock: $(grep '^| none' "$T/tree-redis.out")"
is "$st/$(grep '^| range' "$T/tree-redis.out" | awk -F'|' '{ gsub(/[*]/, "", $6); print $6 + 0 }')" "0/0" \
	"Redis tree demo: none lost with range locks on the server: $(grep '^| range' "$T/tree-redis.out")"
