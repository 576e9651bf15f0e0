#!/bin/bash
# rw-fifo.t - the waiting queue: five DIRLOCK_FIFO waiters queued in a
# forced order acquire in that order; so do waiters without the flag, which
# queue too once their first try failed; a dead waiter's ticket is
# skipped; a stopped first waiter holds the plain waiters behind it up
# for two re-check intervals, not for the stale age; and a waiter at the
# back of the queue sleeps while the waiters ahead of it hand the lock on
# (it is woken by the one just ahead, not by every release).  The FIFO
# order and the dead waiter are also checked on a private Redis server
# (its queue serves a space's waiters in arrival order).
# shellcheck source=tests/rw-lib.sh
. "$(dirname "$0")/rw-lib.sh"
# shellcheck source=tests/redis-lib.sh
. "$(dirname "$0")/redis-lib.sh"
if redis_available; then
	redis=yes
	echo "1..7"
else
	echo "1..5"
	diag "Redis: $REDIS_WHY"
fi
S=$T
tickets() { # waiters queued for lock f
	case $S in
	redis*) redis_cli zcard '{dirlock}:f:q' ;;
	*) ls "$T/f.fifo" 2>/dev/null | wc -l ;;
	esac
}
queue_up() { # queue_up LABEL... : start each once the previous one is queued
	# (a label starting with p waits without DIRLOCK_FIFO)
	i=0
	for l in "$@"; do
		case $l in p*) fifo= ;; *) fifo=-F ;; esac
		"$HOLD" $fifo -t 20 -H "${hold:-30}" -l "$l" "$S" f w >> "$T/order" &
		qpids="$qpids $!"
		i=$((i + 1))
		k=0
		while [ "$(tickets)" -lt "$i" ] && [ $k -lt "${patience:-500}" ]; do sleep 0.01; k=$((k + 1)); done
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

# Waiters without the flag queue as well once their one try has failed,
# and are served in the queue's order with the FIFO ones.
"$HOLD" -H 4000 "$T" f w > /dev/null &
sleep 0.2
: > "$T/order"
patience=50 queue_up p1 p2 w3 p4 w5
queued=$(tickets)
wait
got=$(awk '$2 == "acquired" { printf "%s ", $1 }' "$T/order")
diag "tickets while waiting: $queued; order: $got"
[ "$queued" -eq 5 ] && [ "$got" = "p1 p2 w3 p4 w5 " ]
ok $? "waiters without DIRLOCK_FIFO queue and acquire in arrival order too"

# The last of nine queued waiters sleeps through the hand-offs ahead of it:
# nine releases and eight tickets given back, each of which used to wake
# every waiter.  Now it is woken by the ticket ahead of it going, the last
# release, and the re-check every 100 ms.  Counted as the voluntary
# context switches of its process from the first release (the holder
# lets go when told) to its acquiring.
switches() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$1/status"; }
# shellcheck disable=SC2016 # $1 is the inner shell's
"$DIRLOCK" -d "$T" f -- sh -c 'while [ ! -e "$1" ]; do sleep 0.01; done' sh "$T/go" &
sleep 0.2
: > "$T/order"
hold=5 queue_up w1 w2 w3 w4 w5 w6 w7 w8
"$HOLD" -F -t 20 -H 1500 -l last "$T" f w >> "$T/order" &
last=$!
k=0
while [ "$(tickets)" -lt 9 ] && [ $k -lt 500 ]; do sleep 0.01; k=$((k + 1)); done
before=$(switches $last)
early=$(grep -c '^w1 acquired' "$T/order")
touch "$T/go"
k=0
while ! grep -q '^last acquired' "$T/order" && [ $k -lt 1000 ]; do sleep 0.01; k=$((k + 1)); done
after=$(switches $last)
wait
woken=$((after - before))
diag "the last waiter was woken $woken times (hand-offs ahead of it: 9 releases, 8 tickets)"
[ "$early" -eq 0 ] && [ "$woken" -le 12 ]; ok $? "a queued waiter is not woken by the hand-offs ahead of it"

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

# A first waiter that stops running (SIGSTOP) while the lock is free: a
# plain waiter behind it takes the lock once it has found it free at two
# re-checks in a row (100 ms apart) instead of waiting for the stopped
# one's ticket to go stale (180 s).
queued() { ls "$T/s.fifo" 2>/dev/null | wc -l; }
"$DIRLOCK" -d "$T" s -- sleep 1 &
holder=$!
sleep 0.2
"$DIRLOCK" -d "$T" s -- true &
stopped=$!
k=0
while [ "$(queued)" -lt 1 ] && [ $k -lt 500 ]; do sleep 0.01; k=$((k + 1)); done
kill -STOP $stopped
start=$(date +%s%N)
"$DIRLOCK" -d "$T" -w 4 s -- true
rc=$?
took=$((($(date +%s%N) - start) / 1000000))
kill -CONT $stopped
wait $holder $stopped
diag "behind a stopped first waiter: exit $rc after $took ms (the holder let go after about 800 ms)"
[ "$rc" -eq 0 ]; ok $? "a stopped first waiter does not hold plain waiters behind it up"
# The same on the Redis server: FIFO order, and a dead waiter skipped.
# (Started only now: the tests above wait for all their children.)
if [ "${redis:-}" = yes ]; then
	redis_start || exit 1
	S=$REDIS_SPACE
	"$HOLD" -H 1500 "$S" f w > /dev/null &
	h=$!
	sleep 0.2
	: > "$T/order"
	qpids=""
	queue_up w1 w2 w3 w4 w5
	# shellcheck disable=SC2086
	wait $h $qpids
	got=$(awk '$2 == "acquired" { printf "%s ", $1 }' "$T/order")
	diag "order: $got"
	[ "$got" = "w1 w2 w3 w4 w5 " ]; ok $? "Redis: five FIFO waiters acquire in arrival order"

	: > "$T/order"
	"$HOLD" -H 1000 "$S" f w > /dev/null &
	h=$!
	sleep 0.2
	"$HOLD" -F -t 20 -H 30 -l v1 "$S" f w >> "$T/order" &
	p1=$!
	sleep 0.2
	"$HOLD" -F -t 20 -H 30 -l dead "$S" f w >> "$T/order" &
	victim=$!
	sleep 0.2
	"$HOLD" -F -t 20 -H 30 -l v2 "$S" f w >> "$T/order" &
	p2=$!
	sleep 0.2
	kill -9 $victim
	wait $h $p1 $p2 $victim 2>/dev/null
	got=$(awk '$2 == "acquired" { printf "%s ", $1 }' "$T/order")
	diag "order: $got"
	[ "$got" = "v1 v2 " ]; ok $? "Redis: a dead waiter's ticket is skipped"
fi
[ "$fails" -eq 0 ]
