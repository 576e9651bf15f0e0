#!/bin/bash
# rw-crash.t - a reader, writer, waiting writer or intent holder killed with
# SIGKILL at a random moment never wedges the lock, in a lock directory and
# on each private server (tests/spaces-lib.sh): in each round the survivors
# (a writer, a reader and an intent -> upgrade) finish within their
# timeout, which is 2 s against a 1 s promise.  (100 rounds in the
# directory, 50 on a server: every role under every policy three times, in
# half the time.)
# shellcheck source=tests/rw-lib.sh
. "$(dirname "$0")/rw-lib.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
DIR_ROUNDS=${RW_CRASH_ROUNDS:-100}
SERVER_ROUNDS=${RW_CRASH_ROUNDS:-50} # every role under every policy, three times over
spaces_start || exit 1
echo "1..$((2 * $(spaces_count)))"
for S in $(test_spaces); do
kind=$(space_kind "$S") ROUNDS=$DIR_ROUNDS
space_is_server "$S" && ROUNDS=$(space_rounds "$S" "$SERVER_ROUNDS")
roles="r w i u wq"
bad=0
slow=0
i=0
start=$(date +%s)
while [ "$i" -lt "$ROUNDS" ]; do
	i=$((i + 1))
	role=$(echo "$roles" | tr ' ' '\n' | awk -v k=$((i % 5 + 1)) 'NR == k')
	pol=$(echo fair writer reader | tr ' ' '\n' | awk -v k=$((i % 3 + 1)) 'NR == k')
	case $role in
	r) "$HOLD" -p "$pol" -H 5000 "$S" c r > /dev/null & ;;
	w) "$HOLD" -p "$pol" -H 5000 "$S" c w > /dev/null & ;;
	i) "$HOLD" -p "$pol" -H 5000 "$S" c i > /dev/null & ;;
	u) "$HOLD" -p "$pol" -u -H 5000 "$S" c i > /dev/null & ;;
	wq) # a writer that is waiting for a reader when it dies
		"$HOLD" -p "$pol" -H 300 "$S" c r > /dev/null &
		helper=$!
		"$HOLD" -p "$pol" -H 5000 "$S" c w > /dev/null & ;;
	esac
	victim=$!
	# a random moment within the first 60 ms of its life
	sleep "0.0$(awk -v s=$i 'BEGIN { srand(s); printf "%02d", int(rand() * 60) }')"
	kill -9 $victim 2>/dev/null
	t0=$(date +%s%N)
	"$HOLD" -p "$pol" -t 2 "$S" c w > /dev/null || { bad=$((bad + 1)); diag "round $i ($role, $pol): writer failed"; }
	"$HOLD" -p "$pol" -t 2 "$S" c r > /dev/null || { bad=$((bad + 1)); diag "round $i ($role, $pol): reader failed"; }
	"$HOLD" -p "$pol" -t 2 -u "$S" c i > /dev/null || { bad=$((bad + 1)); diag "round $i ($role, $pol): intent failed"; }
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ $ms -gt 1000 ] && { slow=$((slow + 1)); diag "round $i ($role, $pol): survivors took $ms ms"; }
	wait "$victim" ${helper:+"$helper"} 2>/dev/null
	helper=""
done
diag "$kind: $ROUNDS rounds in $(($(date +%s) - start)) s"
[ $bad -eq 0 ]; ok $? "$kind: no wedge: every survivor finished in every round ($bad failures)"
[ $slow -le $((ROUNDS / 20)) ]; ok $? "$kind: survivors went on within 1 s (slow rounds: $slow, allowed $((ROUNDS / 20)) on a loaded box)"
done
[ "$fails" -eq 0 ]
