#!/bin/bash
# rw-intent.t - intent (upgradable read) locks, upgrade and downgrade, in a
# lock directory and on each private server (tests/spaces-lib.sh): readers
# keep entering while intent is held; a second intent holder waits and gets
# in afterwards; under a stream of readers an upgrade completes within one
# read phase; two processes doing intent -> upgrade 1,000 times never
# deadlock; a plain read lock refuses to upgrade; a downgraded writer lets
# readers in but no writer.
# shellcheck source=tests/rw-lib.sh
. "$(dirname "$0")/rw-lib.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
ROUNDS=${RW_INTENT_ROUNDS:-1000}
spaces_start || exit 1
echo "1..$((9 * $(spaces_count)))"
for S in $(test_spaces); do
kind=$(space_kind "$S")
R=$(space_rounds "$S" "$ROUNDS")

# 1-2: intent held 1 s; readers (timeout 0) get in at once; a second intent waits.
"$HOLD" -l I1 -H 1000 "$S" n i > "$T/i1" &
sleep 0.2
"$HOLD" -t 0 -l R "$S" n r > /dev/null; ok $? "$kind: a reader enters (timeout 0) while intent is held"
"$HOLD" -t 0 -l R2 "$S" n w > /dev/null 2>&1; [ $? -eq 1 ]; ok $? "$kind: a writer does not (busy)"
"$HOLD" -t 5 -l I2 "$S" n i > "$T/i2"; ok $? "$kind: a second intent holder waits and then gets in"
wait $!
a=$(awk '$2 == "released" { print $3 }' "$T/i1"); b=$(awk '$2 == "acquired" { print $3 }' "$T/i2")
ge "$b" "$a"; ok $? "$kind: ... after the first one released (released $a, acquired $b)"

# 5: upgrade under a stream of readers (each holds 150 ms, new ones keep coming)
stop="$T/stop"
rm -f "$stop"
( while [ ! -e "$stop" ]; do "$HOLD" -H 150 "$S" n r > /dev/null; done ) &
s1=$!
( sleep 0.07; while [ ! -e "$stop" ]; do "$HOLD" -H 150 "$S" n r > /dev/null; done ) &
s2=$!
sleep 0.4
"$HOLD" -l U -u -t 5 "$S" n i > "$T/up"
rc=$?
touch "$stop"; wait $s1 $s2
acq=$(awk '$2 == "acquired" { print $3 }' "$T/up"); upg=$(awk '$2 == "upgraded" { print $3 }' "$T/up")
waited=$(awk -v a="$acq" -v b="$upg" 'BEGIN { printf "%.0f", b - a }')
[ "$rc" -eq 0 ] && lt "$waited" 1000; ok $? "$kind: upgrade under a reader stream completes within one read phase ($waited ms; phase 150 ms)"

# 6: plain read -> write refused
out=$("$HOLD" -u "$S" n r); rc=$?
diag "$out"
[ "$rc" -eq 2 ] && echo "$out" | grep -q "intent"; ok $? "$kind: upgrading a plain read lock is refused (DIRLOCK_EUPGRADE, names intent)"

# 7: two processes, intent -> upgrade, $R times each ($ROUNDS, or fewer
# where hand-offs cost more: space_rounds), plus a reader
start=$(date +%s)
"$HOLD" -c "$R" -u -t 20 -l A "$S" m i > "$T/a" &
pa=$!
"$HOLD" -c "$R" -u -t 20 -l B "$S" m i > "$T/b" &
pb=$!
"$HOLD" -c "$R" -t 20 -l R "$S" m r > "$T/r" &
pr=$!
wait $pa; ra=$?; wait $pb; rb=$?; wait $pr; rr=$?
diag "intent -> upgrade x $R x 2 (+ $R reads) in $(($(date +%s) - start)) s"
[ $ra -eq 0 ] && [ $rb -eq 0 ] && [ $rr -eq 0 ]; ok $? "$kind: two intent -> upgrade processes never deadlock ($R rounds each)"

# 8-9: downgrade: readers get in, writers do not
"$HOLD" -l D -D -H 800 "$S" n w > /dev/null &
dp=$!
sleep 0.3
"$HOLD" -t 0 "$S" n r > /dev/null; ok $? "$kind: after a downgrade, readers get in"
"$HOLD" -t 0 "$S" n w > /dev/null 2>&1; [ $? -eq 1 ]; ok $? "$kind: after a downgrade, a writer does not"
wait $dp
done
[ "$fails" -eq 0 ]
