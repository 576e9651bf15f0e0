#!/bin/sh
# rw-crash.t - a reader, writer, waiting writer or intent holder killed with
# SIGKILL at a random moment never wedges the lock: in each round the
# survivors (a writer, a reader and an intent -> upgrade) finish within
# their timeout, which is 2 s against a 1 s promise.
# shellcheck source=tests/rw-lib.sh
. "$(dirname "$0")/rw-lib.sh"
ROUNDS=${RW_CRASH_ROUNDS:-100}
echo "1..2"
roles="r w i u wq"
bad=0
slow=0
i=0
start=$(date +%s)
while [ $i -lt $ROUNDS ]; do
	i=$((i + 1))
	role=$(echo $roles | tr ' ' '\n' | awk -v k=$((i % 5 + 1)) 'NR == k')
	pol=$(echo fair writer reader | tr ' ' '\n' | awk -v k=$((i % 3 + 1)) 'NR == k')
	case $role in
	r) "$HOLD" -p $pol -H 5000 "$T" c r > /dev/null & ;;
	w) "$HOLD" -p $pol -H 5000 "$T" c w > /dev/null & ;;
	i) "$HOLD" -p $pol -H 5000 "$T" c i > /dev/null & ;;
	u) "$HOLD" -p $pol -u -H 5000 "$T" c i > /dev/null & ;;
	wq) # a writer that is waiting for a reader when it dies
		"$HOLD" -p $pol -H 300 "$T" c r > /dev/null &
		"$HOLD" -p $pol -H 5000 "$T" c w > /dev/null & ;;
	esac
	victim=$!
	# a random moment within the first 60 ms of its life
	sleep "0.0$(awk -v s=$i 'BEGIN { srand(s); printf "%02d", int(rand() * 60) }')"
	kill -9 $victim 2>/dev/null
	t0=$(date +%s%N)
	"$HOLD" -p $pol -t 2 "$T" c w > /dev/null || { bad=$((bad + 1)); diag "round $i ($role, $pol): writer failed"; }
	"$HOLD" -p $pol -t 2 "$T" c r > /dev/null || { bad=$((bad + 1)); diag "round $i ($role, $pol): reader failed"; }
	"$HOLD" -p $pol -t 2 -u "$T" c i > /dev/null || { bad=$((bad + 1)); diag "round $i ($role, $pol): intent failed"; }
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ $ms -gt 1000 ] && { slow=$((slow + 1)); diag "round $i ($role, $pol): survivors took $ms ms"; }
	wait 2>/dev/null
done
diag "$ROUNDS rounds in $(($(date +%s) - start)) s"
[ $bad -eq 0 ]; ok $? "no wedge: every survivor finished in every round ($bad failures)"
[ $slow -le $((ROUNDS / 20)) ]; ok $? "survivors went on within 1 s (slow rounds: $slow, allowed $((ROUNDS / 20)) on a loaded box)"
[ "$fails" -eq 0 ]
