#!/bin/bash
# etcd-jepsen.t - Jepsen-style tests of etcd spaces: a three-member
# cluster with each member in a network namespace of its own and two
# client hosts beside them (tools/etcd-cluster, netns placement), 8
# workers -- 4 on each host -- taking one lock again and again, every
# operation written down with its time (tests/progs/histworker), and the
# histories checked against a mutex (tests/progs/histcheck: no two
# acquisitions believed held at once; the longest such overlap).
#   mutex        no faults: no anomaly; the twin, a test build whose
#                takes do not look at the queue (DIRLOCK_TEST_ETCD_NO_LOCK),
#                must show overlaps
#   set          a read-modify-write of a set in a store WITHOUT fences,
#                while holders are paused (SIGSTOP) past their lease: the
#                negative control, which must lose updates
#   fenced       the same on a store that checks fences: every
#                acknowledged update is there, the accepted fences grow
#                strictly in commit order
# and the fenced workload through each fault:
#   leader-kill  kill -9 of the leader (started again 2.5 s later); the
#                hand-off after its loss is the longest time nobody held
#                the lock in the 4 s after the kill
#   host-cut     the host of a holder cut off from the majority (it and
#                one member on one side, the two other members and the
#                other host on the other) for 3 s
#   member-cut   a minority member (a follower) cut off for 3 s
#   pause        holders paused past their lease (as in `fenced`, and
#                while `fenced` runs)
#   restart-all  every member killed and started again
# and the lease reset after a leader change (etcd #9395): a holder on h2
# killed without releasing; a waiter on h1 (another host: it cannot judge
# the holder dead, only the lease frees it) gets the lock after its TTL,
# and later when the leader is killed meanwhile -- but never before.
# Each case prints a "# table:" line (histcheck's): holds, overlapping
# acquisitions, stale_ms -- the longest time a holder believed it held
# the lock after another had been told it had it: the longest time two
# holders both believed they held it -- acknowledged and lost updates, the
# hand-off gap.  Needs root and
# network namespaces; says why and skips otherwise.
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/etcd-lib.sh"
etcd_available || {
	echo "1..0 # SKIP $ETCD_WHY"
	exit 0
}
[ "$(id -u)" -eq 0 ] || {
	echo "1..0 # SKIP needs root (network namespaces)"
	exit 0
}
# A run under a fault (pauses too) lasts FAULT_SECS, JEPSEN_SECONDS but
# never shorter than a fault's schedule (2 s before it, up to 3 s of it,
# and time after); without one (mutex, twin) SHORT_SECS, enough for a few
# hundred hand-offs (TESTS_LONG=1: 6 s).
FAULT_SECS=$((${JEPSEN_SECONDS:-6} > 6 ? ${JEPSEN_SECONDS:-6} : 6))
SHORT_SECS=${JEPSEN_SECONDS:-$(soak 3 6)}
CLUSTER=$TOP/tools/etcd-cluster
export RUN_DIR=$T/etcd ETCD_NS=dle$((10000 + RANDOM % 90000)) WATCH_PID=$$
trap '"$CLUSTER" stop >/dev/null 2>&1; tap_cleanup' EXIT
out=$("$CLUSTER" start 2>&1)
case $? in
0) ;;
77)
	echo "1..0 # SKIP $(tail -n 1 <<<"$out")"
	exit 0
	;;
*)
	echo "Bail out! tools/etcd-cluster start: $out"
	exit 1
	;;
esac
"$CLUSTER" add-host h1 && "$CLUSTER" add-host h2 || {
	echo "Bail out! hosts not made"
	exit 1
}
EPS=$("$CLUSTER" endpoints)
plan 18

# run_case CASE WORKLOAD HOLD_MS SECONDS [VAR=VALUE...]: 4 workers on each
# host for SECONDS on lock "l" of prefix CASE, in the background; their
# histories in $T/CASE/h1-N, $T/CASE/h2-N.  wait_case waits for them (and
# for those of every case started before it since the last wait).
run_case() {
	local c=$1 w=$2 hold=$3 secs=$4 h k
	mkdir -p "$T/$c/state"
	: >"$T/$c/store"
	for h in h1 h2; do
		for k in 1 2 3 4; do
			"$CLUSTER" exec "$h" env "${@:5}" "$PROGS/histworker" "etcd://$EPS/$c" l "$secs" "$hold" 1 "$w" \
				"$T/$c/store" "$T/$c/state" >"$T/$c/$h-$k" 2>>"$T/$c/errors" &
			workers+=($!)
		done
	done
}
workers=()
wait_case() {
	wait "${workers[@]}" 2>/dev/null
	workers=()
}
# clock_ms: CLOCK_MONOTONIC in ms, the workers' clock.
clock_ms() { "$PROGS/histcheck" --now; }
# check CASE [ARGS...]: histcheck over the case's histories; sets line, rc.
check() {
	line=$("$PROGS/histcheck" "${@:2}" "$T/$1"/h[12]-*)
	rc=$?
	diag "table: | $1 | $line |"
}
field() { sed -n "s/.* $1 \([^ ]*\).*/\1/p" <<<" $line"; }
# pause_holders CASE N SECS: N times, stop a worker that holds the lock
# (SIGSTOP) for SECS, past its 1 s lease, then continue it.  A worker
# stopped just after it let go (its state file gone) is continued at once
# and another one tried.
pause_holders() {
	local i k p
	for ((i = 0; i < $2; i++)); do
		sleep 0.7
		for ((k = 0; k < 200; k++)); do
			p=$(ls "$T/$1/state" 2>/dev/null | head -n 1)
			if [ -n "$p" ] && kill -STOP "$p" 2>/dev/null; then
				if [ -e "$T/$1/state/$p" ]; then
					sleep "$3"
					kill -CONT "$p"
					break
				fi
				kill -CONT "$p"
			fi
			sleep 0.01
		done
	done
}

# ---- no faults ---------------------------------------------------------------
run_case mutex mutex 20 "$SHORT_SECS"
wait_case
check mutex
is "$rc/$(field overlaps)" 0/0 "8 workers on two hosts, no faults: no two holders at once ($(field holds) acquisitions)"
cmp_num "$(field holds)" -gt 50 "... and the lock went round ($(field holds) acquisitions in $SHORT_SECS s)"
run_case twin mutex 20 "$SHORT_SECS" DIRLOCK_TEST_ETCD_NO_LOCK=1
wait_case
check twin
cmp_num "$(field overlaps)" -gt 0 "the twin, takes that do not look at the queue: the checker sees overlaps ($(field overlaps)), so it can fail"

# ---- the store without fences, and with ----------------------------------------
# `set` runs alone: its updates are lost only when others take the lock
# and write while a holder is paused, which a busier cluster makes rarer.
run_case set set 50 "$FAULT_SECS"
pause_holders set 3 2.5
wait_case
check set --store "$T/set/store"
cmp_num "$(field lost)" -gt 0 "set without fences, holders paused past their lease: acknowledged updates are lost ($(field lost) of $(field acked)): the negative control"
# `fenced` and the fault case `pause` (checked below) run at once, on
# locks of their own, each with its own pauses: what they assert (nothing
# acknowledged lost, fences increasing) does not depend on how fast the
# cluster answers.
run_case fenced fenced 50 "$FAULT_SECS"
run_case pause fenced 50 "$FAULT_SECS"
pause_holders pause 2 2.5 &
pauser=$!
pause_holders fenced 3 2.5
wait $pauser
wait_case
check fenced --store "$T/fenced/store"
is "$(field lost)/$(field increasing)" 0/yes "fenced store, holders paused past their lease: no acknowledged update lost ($(field acked)), accepted fences strictly increasing ($(field fences))"
cmp_num "$(field acked)" -gt 20 "... and updates were made ($(field acked))"

# ---- faults ------------------------------------------------------------------
# fault_checks CASE [ARGS...]: the checks every fault case makes (on the
# fenced workload, under a fault the caller ran).
fault_checks() {
	check "$1" --store "$T/$1/store" "${@:2}"
	is "$(field lost)/$(field increasing)" 0/yes "$1: no acknowledged update lost ($(field acked)), fences strictly increasing"
}

run_case leader-kill fenced 50 "$FAULT_SECS"
sleep 2
leader=$("$CLUSTER" leader)
t_kill=$(clock_ms)
"$CLUSTER" kill leader
sleep 2.5
"$CLUSTER" start-member "${leader#e}"
wait_case
fault_checks leader-kill --window "$t_kill" "$(awk -v t="$t_kill" 'BEGIN { printf "%.3f", t + 4000 }')"
gap=$(field gap_ms)
fcmp "$gap" '<' 4000
ok $? "leader ($leader) killed: the lock was held again within $gap ms (the hand-off after the leader's loss)"

run_case host-cut fenced 50 "$FAULT_SECS"
sleep 2
# A host with a holder, and one member beside it (not the leader, so that
# the majority keeps its leader) on one side; the rest on the other.
p=$(ls "$T/host-cut/state" 2>/dev/null | head -n 1)
host=h1
[ -n "$p" ] && [ "$(cat "/proc/$p/net/dev" 2>/dev/null | grep -c eth-h2)" -gt 0 ] && host=h2
other=h2
[ $host = h2 ] && other=h1
leader=$("$CLUSTER" leader)
lone=e1
[ "$leader" = e1 ] && lone=e2
rest=$(printf '%s\n' e1 e2 e3 | grep -vx "$lone" | tr '\n' ' ')
"$CLUSTER" partition "$host $lone" "$rest$other"
sleep 3
"$CLUSTER" heal-all
wait_case
fault_checks host-cut
diag "table: host-cut: $host and $lone cut off from $rest$other for 3 s; longest time two holders both believed they held the lock: $(field stale_ms) ms"

run_case member-cut fenced 50 "$FAULT_SECS"
sleep 2
leader=$("$CLUSTER" leader)
follower=e1
[ "$leader" = e1 ] && follower=e3
"$CLUSTER" cut "$follower"
sleep 3
"$CLUSTER" heal "$follower"
wait_case
fault_checks member-cut
is "$(field overlaps)" 0 "member-cut ($follower, a follower, cut off for 3 s): no two holders at once"

# (run with `fenced` above)
fault_checks pause
diag "table: pause: longest time two holders both believed they held the lock: $(field stale_ms) ms (a holder stopped 2.5 s, lease 1 s)"

# The workers run 2 s past the fault schedule; "went on" counts the
# acquisitions after the members were back (the restart's own time varies).
t_end=$(awk -v t="$(clock_ms)" -v s="$((FAULT_SECS + 2))" 'BEGIN { printf "%.3f", t + s * 1000 }')
run_case restart-all fenced 50 "$((FAULT_SECS + 2))"
sleep 2
"$CLUSTER" restart-all
t_back=$(clock_ms)
wait_case
fault_checks restart-all --window "$t_back" "$t_end"
is "$(field overlaps)" 0 "restart-all: no two holders at once"
cmp_num "$(field holds_in)" -gt 0 "restart-all: the workers went on after the members were back ($(field holds_in) acquisitions in the $(awk -v a="$t_back" -v b="$t_end" 'BEGIN { printf "%.1f", (b - a) / 1000 }') s left)"

# ---- the lease after a leader change (etcd #9395) ----------------------------------
# A holder on h2 (stale age 2 s: a 2 s lease, kept alive every 0.1 s) is
# killed while it holds; a waiter on h1 waits for it.  The lease frees the lock; a new leader
# gives every lease its whole TTL again.
lease_case() { # lease_case NAME [kill-leader]: sets took (ms from the holder's death to the grant)
	"$CLUSTER" exec h2 "$PROGS/lockworker" hold "etcd://$EPS/lease" "$1" 30 2 0.1 >"$T/$1.h" &
	local hp=$! k=0
	until grep -q '^held' "$T/$1.h"; do
		sleep 0.02
		k=$((k + 1))
		[ $k -lt 500 ] || break
	done
	"$CLUSTER" exec h1 "$PROGS/lockworker" wait "etcd://$EPS/lease" "$1" 20 2 >"$T/$1.w" &
	local wp=$!
	sleep 0.3
	local t0
	t0=$(clock_ms)
	kill -KILL $hp
	if [ "${2:-}" = kill-leader ]; then
		sleep 1
		local l
		l=$("$CLUSTER" leader)
		"$CLUSTER" kill leader
	fi
	wait $wp
	local t1
	t1=$(clock_ms)
	[ -z "${l:-}" ] || "$CLUSTER" start-member "${l#e}"
	took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
	read -r code _ <"$T/$1.w"
}
lease_case plain
plain=$took plain_code=$code
lease_case reset kill-leader
diag "table: lease reset: holder killed (lease 2 s), the waiter on the other host got the lock after $plain ms; with the leader killed 1 s after the death, after $took ms"
is "$plain_code/$code" 0/0 "a holder killed on another host: the waiter gets the lock once its lease ends, with a leader change or not"
cmp_num "$plain" -ge 1900 "... not before the lease's 2 s ($plain ms)"
cmp_num "$took" -ge 1900 "... nor with the leader killed meanwhile ($took ms; a new leader renews leases: etcd #9395)"
