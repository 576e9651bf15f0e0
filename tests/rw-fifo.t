#!/bin/sh
# rw-fifo.t - DIRLOCK_FIFO: five waiters queued in a forced order acquire in
# that order; a dead waiter's ticket is skipped.
# shellcheck source=tests/rw-lib.sh
. "$(dirname "$0")/rw-lib.sh"
echo "1..2"
tickets() { ls "$T/f.fifo" 2>/dev/null | wc -l; }
queue_up() { # queue_up LABEL... : start each once the previous one is queued
	i=0
	for l in "$@"; do
		"$HOLD" -F -t 20 -H 30 -l "$l" "$T" f w >> "$T/order" &
		i=$((i + 1))
		k=0
		while [ "$(tickets)" -lt "$i" ] && [ $k -lt 500 ]; do sleep 0.01; k=$((k + 1)); done
	done
}
"$HOLD" -H 1500 "$T" f w > /dev/null &
sleep 0.2
: > "$T/order"
queue_up w1 w2 w3 w4 w5
wait
got=$(awk '$2 == "acquired" { printf "%s ", $1 }' "$T/order")
diag "order: $got"
[ "$got" = "w1 w2 w3 w4 w5 " ]; ok $? "five FIFO waiters acquire in arrival order"

# A waiter killed while queued is skipped.
: > "$T/order"
"$HOLD" -H 1000 "$T" f w > /dev/null &
sleep 0.2
"$HOLD" -F -t 20 -H 30 -l v1 "$T" f w >> "$T/order" &
sleep 0.2
"$HOLD" -F -t 20 -H 30 -l dead "$T" f w >> "$T/order" &
victim=$!
sleep 0.2
"$HOLD" -F -t 20 -H 30 -l v2 "$T" f w >> "$T/order" &
sleep 0.2
kill -9 $victim
wait
got=$(awk '$2 == "acquired" { printf "%s ", $1 }' "$T/order")
diag "order: $got"
[ "$got" = "v1 v2 " ]; ok $? "a dead waiter's ticket is skipped"
[ "$fails" -eq 0 ]
