#!/bin/bash
# rw-fifo.t - the waiting queue: five DIRLOCK_FIFO waiters queued in a
# forced order acquire in that order, and a dead waiter's ticket is
# skipped, in a lock directory and on each private server
# (tests/spaces-lib.sh; a server's queue serves a space's waiters in
# arrival order).  In the directory also: waiters without the flag queue
# too once their first try failed; a stopped first waiter holds the plain
# waiters behind it up for two re-check intervals, not for the stale age;
# and a waiter at the back of the queue sleeps while the waiters ahead of
# it hand the lock on (it is woken by the one just ahead, not by every
# release).
# shellcheck source=tests/rw-lib.sh
. "$(dirname "$0")/rw-lib.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
spaces_start || exit 1
echo "1..$((2 * $(spaces_count) + 3))"
queue_up() { # queue_up LABEL... : start each once the previous one is queued
	# (a label starting with p waits without DIRLOCK_FIFO) on lock f of
	# space $S; their pids are added to $qpids
	i=0
	for l in "$@"; do
		case $l in p*) fifo= ;; *) fifo=-F ;; esac
		"$HOLD" $fifo -t 20 -H "${hold:-30}" -l "$l" "$S" f w >> "$T/order" &
		qpids="$qpids $!"
		i=$((i + 1))
		k=0
		while [ "$(space_waiters "$S" f)" -lt "$i" ] && [ $k -lt "${patience:-500}" ]; do sleep 0.01; k=$((k + 1)); done
	done
}
for S in $(test_spaces); do
	kind=$(space_kind "$S")
	"$HOLD" -H 1500 "$S" f w > /dev/null &
	h=$!
	sleep 0.2
	: > "$T/order"
	qpids=""
	queue_up w1 w2 w3 w4 w5
	# shellcheck disable=SC2086 # a list of pids
	wait $h $qpids
	got=$(awk '$2 == "acquired" { printf "%s ", $1 }' "$T/order")
	diag "order: $got"
	[ "$got" = "w1 w2 w3 w4 w5 " ]; ok $? "$kind: five FIFO waiters acquire in arrival order"

	# A waiter killed while queued is skipped.
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
	[ "$got" = "v1 v2 " ]; ok $? "$kind: a dead waiter's ticket is skipped"
done

# In the directory: waiters without the flag queue as well once their one
# try has failed, and are served in the queue's order with the FIFO ones.
S=$SPACE_DIR
"$HOLD" -H 4000 "$S" f w > /dev/null &
h=$!
sleep 0.2
: > "$T/order"
qpids=""
patience=50 queue_up p1 p2 w3 p4 w5
queued=$(space_waiters "$S" f)
# shellcheck disable=SC2086 # a list of pids
wait $h $qpids
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
"$DIRLOCK" -d "$S" f -- sh -c 'while [ ! -e "$1" ]; do sleep 0.01; done' sh "$T/go" &
h=$!
sleep 0.2
: > "$T/order"
qpids=""
hold=5 queue_up w1 w2 w3 w4 w5 w6 w7 w8
"$HOLD" -F -t 20 -H 1500 -l last "$S" f w >> "$T/order" &
last=$!
k=0
while [ "$(space_waiters "$S" f)" -lt 9 ] && [ $k -lt 500 ]; do sleep 0.01; k=$((k + 1)); done
before=$(switches $last)
early=$(grep -c '^w1 acquired' "$T/order")
touch "$T/go"
k=0
while ! grep -q '^last acquired' "$T/order" && [ $k -lt 1000 ]; do sleep 0.01; k=$((k + 1)); done
after=$(switches $last)
# shellcheck disable=SC2086 # a list of pids
wait $h $qpids $last
woken=$((after - before))
diag "the last waiter was woken $woken times (hand-offs ahead of it: 9 releases, 8 tickets)"
[ "$early" -eq 0 ] && [ "$woken" -le 12 ]; ok $? "a queued waiter is not woken by the hand-offs ahead of it"

# A first waiter that stops running (SIGSTOP) while the lock is free: a
# plain waiter behind it takes the lock once it has found it free at two
# re-checks in a row (100 ms apart) instead of waiting for the stopped
# one's ticket to go stale (180 s).
"$DIRLOCK" -d "$S" s -- sleep 1 &
holder=$!
sleep 0.2
"$DIRLOCK" -d "$S" s -- true &
stopped=$!
k=0
while [ "$(space_waiters "$S" s)" -lt 1 ] && [ $k -lt 500 ]; do sleep 0.01; k=$((k + 1)); done
kill -STOP $stopped
start=$(date +%s%N)
"$DIRLOCK" -d "$S" -w 4 s -- true
rc=$?
took=$((($(date +%s%N) - start) / 1000000))
kill -CONT $stopped
wait $holder $stopped
diag "behind a stopped first waiter: exit $rc after $took ms (the holder let go after about 800 ms)"
[ "$rc" -eq 0 ]; ok $? "a stopped first waiter does not hold plain waiters behind it up"
[ "$fails" -eq 0 ]
