#!/bin/bash
# core-multi.t - the all-or-nothing multi-lock cannot deadlock: one group
# locks {P, Q}, another {Q, P}, again and again; both progress.  The twin
# takes the same locks by hand in the order given and deadlocks (rounds
# that time out holding one lock while waiting for the other).
. "$(dirname "$0")/tap.sh"
plan 5
SECS=${MULTI_SECONDS:-10}
L="$T/locks"

"$PROGS/lockworker" multi "$L" "$SECS" P Q >"$T/a" &
a=$!
"$PROGS/lockworker" multi "$L" "$SECS" Q P >"$T/b" &
b=$!
wait $a; sa=$?
wait $b; sb=$?
is "$sa/$sb" "0/0" "{P,Q} and {Q,P} for $SECS s: no acquire timed out"
cmp_num "$(cat "$T/a")" -gt 0 "group {P,Q} progressed ($(cat "$T/a") rounds)"
cmp_num "$(cat "$T/b")" -gt 0 "group {Q,P} progressed ($(cat "$T/b") rounds)"
[ -z "$(ls "$L")" ]
ok $? "nothing is left held afterwards"

"$PROGS/lockworker" naive "$L" 3 P Q >"$T/c" &
c=$!
"$PROGS/lockworker" naive "$L" 3 Q P >"$T/d" &
d=$!
wait $c $d
dl=$(( $(cut -d' ' -f2 "$T/c") + $(cut -d' ' -f2 "$T/d") ))
diag "by hand, P->Q against Q->P: $dl deadlocked rounds in 3 s"
cmp_num "$dl" -gt 0 "taking the locks by hand in opposite orders deadlocks (test can fail)"
