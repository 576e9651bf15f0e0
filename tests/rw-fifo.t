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
# release); a waiter stopped past the stale age, whose ticket was broken
# meanwhile, queues again when it runs and gets the lock.  Nothing here waits a fixed time for something to happen: the
# holders let go when told, once every waiter is queued, so that the
# checks hold on a busy machine too, and each check names what it saw.
# shellcheck source=tests/rw-lib.sh
. "$(dirname "$0")/rw-lib.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
spaces_start || exit 1
echo "1..$((2 * $(spaces_count) + 4))"
queue_up() { # queue_up LABEL... : start each once the previous one is queued
	# (a label starting with p waits without DIRLOCK_FIFO) on lock f of
	# space $S; their pids are added to $qpids, how many were seen queued
	# to $queued
	i=0
	for l in "$@"; do
		case $l in p*) fifo= ;; *) fifo=-F ;; esac
		"$HOLD" $fifo -t 60 -H "${hold:-30}" -l "$l" "$S" f w >> "$T/order" &
		qpids="$qpids $!"
		i=$((i + 1))
		k=0
		while [ "$(space_waiters "$S" f)" -lt "$i" ] && [ $k -lt 3000 ]; do sleep 0.01; k=$((k + 1)); done
	done
	queued=$(space_waiters "$S" f)
}
# hold_until_go NAME: takes lock NAME of space $S until "go" says so;
# returns once it holds it (its pid in $h).
gone=0
hold_until_go() {
	gone=$((gone + 1))
	# shellcheck disable=SC2016 # $1 is the inner shell's
	"$DIRLOCK" -d "$S" "$1" -- sh -c ': >"$1.in"; while [ ! -e "$1" ]; do sleep 0.01; done' sh "$T/go$gone" &
	h=$!
	k=0
	while [ ! -e "$T/go$gone.in" ] && [ $k -lt 3000 ]; do sleep 0.01; k=$((k + 1)); done
}
go() { : >"$T/go$gone"; }
for S in $(test_spaces); do
	kind=$(space_kind "$S")
	hold_until_go f
	: > "$T/order"
	qpids=""
	queue_up w1 w2 w3 w4 w5
	go
	# shellcheck disable=SC2086 # a list of pids
	wait $h $qpids
	got=$(awk '$2 == "acquired" { printf "%s ", $1 }' "$T/order")
	[ "$queued" -eq 5 ] && [ "$got" = "w1 w2 w3 w4 w5 " ]
	ok $? "$kind: five FIFO waiters acquire in arrival order (queued: $queued of 5; order: $got)"

	# A waiter killed while queued is skipped.
	: > "$T/order"
	hold_until_go f
	qpids=""
	queue_up v1 dead v2
	victim=$(echo $qpids | cut -d' ' -f2)
	kill -9 "$victim"
	go
	# shellcheck disable=SC2086 # a list of pids
	wait $h $qpids 2>/dev/null
	got=$(awk '$2 == "acquired" { printf "%s ", $1 }' "$T/order")
	[ "$queued" -eq 3 ] && [ "$got" = "v1 v2 " ]
	ok $? "$kind: a dead waiter's ticket is skipped (queued: $queued of 3; order: $got)"
done

# In the directory: waiters without the flag queue as well once their one
# try has failed, and are served in the queue's order with the FIFO ones.
S=$SPACE_DIR
hold_until_go f
: > "$T/order"
qpids=""
queue_up p1 p2 w3 p4 w5
go
# shellcheck disable=SC2086 # a list of pids
wait $h $qpids
got=$(awk '$2 == "acquired" { printf "%s ", $1 }' "$T/order")
[ "$queued" -eq 5 ] && [ "$got" = "p1 p2 w3 p4 w5 " ]
ok $? "waiters without DIRLOCK_FIFO queue and acquire in arrival order too (tickets while waiting: $queued of 5; order: $got)"

# The last of nine queued waiters sleeps through the hand-offs ahead of it:
# nine releases and eight tickets given back, each of which used to wake
# every waiter (17 wake-ups and the re-checks).  Now it is woken by the
# ticket ahead of it going, the last release, and the re-check every 100
# ms, however long the hand-offs take on a busy machine.  Counted as the
# voluntary context switches of its process from the first release (the
# holder lets go when told) to its acquiring, against a bound of 9 and
# the re-checks of that time (a tenth more, for late timers).
switches() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$1/status"; }
hold_until_go f
: > "$T/order"
qpids=""
hold=5 queue_up w1 w2 w3 w4 w5 w6 w7 w8
"$HOLD" -F -t 60 -H 1500 -l last "$S" f w >> "$T/order" &
last=$!
k=0
while [ "$(space_waiters "$S" f)" -lt 9 ] && [ $k -lt 3000 ]; do sleep 0.01; k=$((k + 1)); done
queued=$(space_waiters "$S" f)
before=$(switches $last)
early=$(grep -c '^w1 acquired' "$T/order")
released=$(date +%s%3N)
go
k=0
while ! grep -q '^last acquired' "$T/order" && [ $k -lt 3000 ]; do sleep 0.01; k=$((k + 1)); done
after=$(switches $last)
# shellcheck disable=SC2086 # a list of pids
wait $h $qpids $last
woken=$((after - before))
took=$(($(awk '$1 == "last" && $2 == "acquired" { printf "%.0f", $3 }' "$T/order") - released))
bound=$((9 + (took * 11 / 10 + 99) / 100))
[ "$queued" -eq 9 ] && [ "$early" -eq 0 ] && [ "$woken" -le "$bound" ]
ok $? "a queued waiter is not woken by the hand-offs ahead of it (queued: $queued of 9; woken $woken times in $took ms, bound $bound)"

# A first waiter that stops running (SIGSTOP) while the lock is free: a
# plain waiter behind it takes the lock once it has found it free at two
# re-checks in a row (100 ms apart) instead of waiting for the stopped
# one's ticket to go stale (180 s).
S=$SPACE_DIR
hold_until_go s
"$DIRLOCK" -d "$S" s -- true &
stopped=$!
k=0
while [ "$(space_waiters "$S" s)" -lt 1 ] && [ $k -lt 3000 ]; do sleep 0.01; k=$((k + 1)); done
kill -STOP $stopped
"$DIRLOCK" -d "$S" -w 10 s -- true &
behind=$!
k=0
while [ "$(space_waiters "$S" s)" -lt 2 ] && [ $k -lt 3000 ]; do sleep 0.01; k=$((k + 1)); done
start=$(date +%s%N)
go
wait $behind
rc=$?
took=$((($(date +%s%N) - start) / 1000000))
kill -CONT $stopped
wait $h $stopped
[ "$rc" -eq 0 ]
ok $? "a stopped first waiter does not hold plain waiters behind it up (exit $rc, $took ms after the release; its ticket goes stale after 180 s)"

# A waiter stopped for longer than the stale age: its ticket is broken as
# a dead waiter's by the one behind, which then takes the lock, and the
# queue goes with the last one out.  Run again, the stopped waiter has
# lost its place, not its wait: it queues again and gets the lock.
hold_until_go r
"$DIRLOCK" -d "$S" --stale 1 -w 60 r -- true 2>"$T/late.err" &
late=$!
k=0
while [ "$(space_waiters "$S" r)" -lt 1 ] && [ $k -lt 3000 ]; do sleep 0.01; k=$((k + 1)); done
kill -STOP $late
"$DIRLOCK" -d "$S" --stale 1 -w 60 r -- true &
behind=$!
# Until the late waiter's ticket (number 1) is broken: one ticket left,
# the other's (number 2).
k=0
until [ "$(space_waiters "$S" r)" -eq 1 ] && [ -z "$(find "$S/r.fifo" -name 't.*1' 2>/dev/null)" ] ||
	[ $k -ge 3000 ]; do
	sleep 0.01
	k=$((k + 1))
done
go
wait $behind
brc=$?
queue_left=$(ls -A "$S/r.fifo" 2>/dev/null | wc -l)
kill -CONT $late
wait $late
rc=$?
wait $h
[ "$rc" -eq 0 ] && [ "$brc" -eq 0 ]
ok $? "a waiter stopped past the stale age queues again and gets the lock (exit $rc, the one behind $brc; $queue_left entries left in the queue when it ran again)$( [ -s "$T/late.err" ] && echo ": $(cat "$T/late.err")")"
[ "$fails" -eq 0 ]
