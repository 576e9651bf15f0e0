#!/bin/bash
# core-etcd.t - an etcd space through the faults of its own cluster: a
# private three-member cluster on 127.0.0.1 (tools/etcd-cluster; not the
# run's shared one, since members are killed here), and the dirlock
# command on it.
#   - a stale age below the cluster's smallest lease is refused, naming it
#     (a cluster with a 3 s election timeout, whose smallest lease is 5 s);
#   - the command: DIRLOCK_FENCE, -n naming the holder, status, break of a
#     live owner refused and forced, cleanup of a dead owner's entry;
#   - a dead member first in the space's list, a paused one, and the one
#     that answers between two that cannot be reached: the lock is taken
#     through the others;
#   - the leader killed under a holder and a waiter: the holder refreshes
#     and releases, the waiter gets the lock (the hand-off is timed);
#   - every member restarted while a lock is held: the holder still holds;
#   - every member stopped past the stale age under a running command:
#     the lock counts as lost, the command gets SIGTERM, dirlock exits 1;
#   - no majority: SIGTERM ends a waiting dirlock at once;
#   - no member answering: a wait without end says so on stderr, and when
#     they answer again; a timed acquire says DIRLOCK_ESERVER at its
#     timeout (the lock's state is unknown), not DIRLOCK_ETIMEDOUT;
#   - a restore from an old snapshot (etcd 3.4 never bumps revisions):
#     revisions go back -- the new holder's key has a lower
#     create_revision than the last one before the restore, so a fence
#     taken from it would go back (the control) -- and the library's
#     fences still grow.
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/etcd-lib.sh"
etcd_available || {
	echo "1..0 # SKIP $ETCD_WHY"
	exit 0
}
plan 22
ESERVER=15
CLUSTER=$TOP/tools/etcd-cluster
R=$(mktemp -d /tmp/dirlock-etcd.XXXXXX)
export RUN_DIR=$R WATCH_PID=$$ WATCH_CLEAN=1 ETCD_NS='' PORT_RANGE=${PORT_RANGE:-22000-22499}
trap '"$CLUSTER" stop >/dev/null 2>&1; rm -rf "$R"; tap_cleanup' EXIT
ms() { echo $(($(date +%s%N) / 1000000)); }

# ---- the smallest lease -------------------------------------------------------
HEARTBEAT_MS=300 ELECTION_MS=3000 "$CLUSTER" start >/dev/null || exit 1
S=$("$CLUSTER" space min)
"$DIRLOCK" -d "$S" --stale 2 -n a -- true 2>"$T/err"
st=$?
[ $st -eq 2 ] && grep -q "smallest lease of this etcd cluster, 5 s" "$T/err"
ok $? "stale age 2 s on a cluster whose smallest lease is 5 s is refused: $(cat "$T/err")"
"$DIRLOCK" -d "$S" --stale 5 -n a -- true
is "$?" 0 "... and 5 s is taken"
"$CLUSTER" stop >/dev/null

# ---- the command -------------------------------------------------------------
"$CLUSTER" start >/dev/null || exit 1
S=$("$CLUSTER" space cli)
"$DIRLOCK" -d "$S" a -- sh -c 'echo "$DIRLOCK_FENCE" >"$1"' sh "$T/f1"
"$DIRLOCK" -d "$S" a -- sh -c 'echo "$DIRLOCK_FENCE" >"$1"' sh "$T/f2"
cmp_num "$(cat "$T/f2")" -gt "$(cat "$T/f1")" "DIRLOCK_FENCE grows from one run to the next ($(cat "$T/f1") < $(cat "$T/f2"))"
# wait_held NAME PID: until status shows PID holding NAME (at most 5 s).
wait_held() {
	local k=0
	until "$DIRLOCK" status -d "$S" "$1" 2>/dev/null | grep -q "pid=$2"; do
		sleep 0.05
		k=$((k + 1))
		[ $k -lt 100 ] || return 1
	done
}
"$DIRLOCK" -d "$S" held -- sleep 30 &
holder=$!
wait_held held $holder
"$DIRLOCK" -d "$S" -n held -- true 2>"$T/err"
[ $? -eq 1 ] && grep -q "held by pid $holder" "$T/err"
ok $? "-n on a held lock exits 1, naming the holder: $(cat "$T/err")"
"$DIRLOCK" status -d "$S" >"$T/status"
grep -q "^held .*pid=$holder .*owner=alive" "$T/status"
ok $? "status shows the owner record: $(cat "$T/status")"
"$DIRLOCK" break -d "$S" held 2>"$T/err"
[ $? -ne 0 ] && grep -q "not broken" "$T/err"
ok $? "break refuses a live owner: $(cat "$T/err")"
"$DIRLOCK" break -d "$S" --force held
is "$?" 0 "break --force breaks it (its lease is revoked)"
"$DIRLOCK" -d "$S" -n held -- true
is "$?" 0 "... and the lock is free"
kill -TERM $holder
wait $holder 2>/dev/null
# A holder killed with its keeper and command: its entry stays until its
# lease ends,
# or until cleanup finds its owner dead on this host.
"$DIRLOCK" -d "$S" dead -- sleep 30 &
d=$!
wait_held dead $d
kill_holder $d
"$DIRLOCK" status -d "$S" dead >"$T/st0" 2>&1
before=$?
"$DIRLOCK" cleanup -d "$S"
"$DIRLOCK" status -d "$S" dead >"$T/st" 2>&1
[ $before -eq 0 ] && grep -q "pid=$d" "$T/st0" && grep -q "^dead  *free" "$T/st"
ok $? "cleanup revokes the lease of a holder killed on this host"

# ---- members out of the way --------------------------------------------------
"$CLUSTER" kill 1
S=$("$CLUSTER" space m) # e1 (dead) first
t0=$(ms)
"$DIRLOCK" -d "$S" -w 5 a -- true
is "$?" 0 "the first member of the list dead: the lock is taken through the others ($(($(ms) - t0)) ms)"
"$CLUSTER" start-member 1
"$CLUSTER" pause 2
E3=$("$CLUSTER" endpoints | cut -d, -f3)
E2=$("$CLUSTER" endpoints | cut -d, -f2)
S2="etcd://$E2,$E3/m"
t0=$(ms)
"$DIRLOCK" -d "$S2" -w 5 a -- true
is "$?" 0 "the first member of the list stopped (SIGSTOP): taken through the next ($(($(ms) - t0)) ms)"
"$CLUSTER" resume 2
# The one member that answers between two that never do (nothing listens
# on ports 1 and 9): each member is asked in turn, none skipped.
t0=$(ms)
"$DIRLOCK" -d "etcd://127.0.0.1:1,$E2,127.0.0.1:9/m" -w 5 a -- true 2>"$T/err"
is "$?" 0 "the answering member between two that cannot be reached is asked ($(($(ms) - t0)) ms) $(cat "$T/err")"

# ---- the leader killed under a holder and a waiter ----------------------------
S=$("$CLUSTER" space lead)
# hold_bg FILE NAME SECONDS [STALE REFRESH]: a lockworker holder in the
# background, its lines in FILE; returns once it holds.
hold_bg() {
	"$PROGS/lockworker" hold "$S" "${@:2}" >"$1" &
	hpid=$!
	local k=0
	until grep -q '^held' "$1"; do
		sleep 0.02
		k=$((k + 1))
		[ $k -lt 500 ] || return 1
	done
}
hold_bg "$T/h" x 2.5 3 0.5
"$PROGS/lockworker" wait "$S" x 15 3 >"$T/w" &
w=$!
sleep 0.3
t_kill=$(ms)
"$CLUSTER" kill leader
wait $w
t_got=$(ms)
wait $hpid
read -r code waited <"$T/w"
diag "holder: $(tr '\n' ' ' <"$T/h"); waiter: code $code after $waited ms"
! grep -q refresh-failed "$T/h" && grep -q released "$T/h"
ok $? "the leader killed: the holder's refreshes and release go through"
is "$code" 0 "... and the waiter gets the lock ($((t_got - t_kill)) ms after the kill; the holder held 2.5 s, 2.2 s of it after)"
for n in 1 2 3; do "$CLUSTER" start-member $n; done

# ---- every member restarted --------------------------------------------------
S=$("$CLUSTER" space restart)
hold_bg "$T/h2" y 4 5 1
"$CLUSTER" restart-all
wait $hpid
grep -q released "$T/h2" && ! grep -q refresh-failed "$T/h2"
ok $? "every member restarted under a holder: it still holds, refreshes and releases ($(tr '\n' ' ' <"$T/h2"))"

# ---- no majority, nobody answering --------------------------------------------
# Every member stopped (SIGSTOP) for longer than the stale age under a
# running command: no refresh gets through, the lease may have expired,
# so the lock counts as lost: the command gets SIGTERM, dirlock exits 1.
S=$("$CLUSTER" space silent)
# shellcheck disable=SC2016 # the command's own script
"$DIRLOCK" -d "$S" --stale 1 q -- sh -c 'trap "touch \"$1\"; exit 7" TERM; touch "$2"; while :; do sleep 0.05; done' \
	sh "$T/q.term" "$T/q.ready" 2>"$T/q.err" &
d=$!
until_ms() { # until_ms MS COMMAND...
	local t0
	t0=$(ms)
	until "${@:2}"; do
		[ $(($(ms) - t0)) -lt "$1" ] || return 1
		sleep 0.05
	done
}
until_ms 10000 test -e "$T/q.ready"
for n in 1 2 3; do "$CLUSTER" pause $n; done
t0=$(ms)
until_ms 20000 test -e "$T/q.term"
took=$(($(ms) - t0))
for n in 1 2 3; do "$CLUSTER" resume $n; done
until_ms 20000 eval '! kill -0 $d 2>/dev/null'
kill -KILL $d 2>/dev/null
wait $d
st=$?
[ "$st" = 1 ] && [ -e "$T/q.term" ] && grep -q "no refresh got through for .* the stale age" "$T/q.err"
ok $? "every member stopped past the stale age (1 s) under a command: SIGTERM after $took ms, exit $st (want 1): $(tr '\n' ' ' <"$T/q.err")"

# No majority (two members of three killed): SIGTERM ends a waiting
# dirlock at once, though its requests get no answer (each would take a
# member a second, and the call three).
"$CLUSTER" kill 1
"$CLUSTER" kill 2
S=$("$CLUSTER" space nomaj)
"$DIRLOCK" -d "$S" nm -- true 2>"$T/nm.err" &
d=$!
until_ms 5000 eval '[ -n "$(pgrep -P $d)" ]'
sleep 1 # its requests under way
t0=$(ms)
kill -TERM $d
wait $d
st=$?
took=$(($(ms) - t0))
[ "$st" = 143 ] && [ "$took" -lt 1500 ]
ok $? "no majority: SIGTERM ends a waiting dirlock in $took ms (want < 1500), exit $st (want 143): $(cat "$T/nm.err")"

for n in 1 2 3; do "$CLUSTER" kill $n; done
# A wait without end says so on stderr within a second or two, and again
# when the cluster answers; then it takes the lock.
t0=$(ms)
"$DIRLOCK" -d "$S" back -- touch "$T/ran-back" 2>"$T/back.err" &
d=$!
until_ms 5000 grep -q "no answer from the lock server" "$T/back.err"
told=$(($(ms) - t0))
for n in 1 2 3; do "$CLUSTER" start-member $n; done
until_ms 20000 eval '! kill -0 $d 2>/dev/null'
kill -KILL $d 2>/dev/null
wait $d
st=$?
[ "$st" = 0 ] && [ -e "$T/ran-back" ] && [ "$told" -le 3000 ] && grep -q "answers again" "$T/back.err"
ok $? "no member answering a wait without end: said on stderr after $told ms (want at most 3 s), and when they answer again; then it runs: exit $st: $(tr '\n' ' ' <"$T/back.err")"
for n in 1 2 3; do "$CLUSTER" kill $n; done
read -r code took < <("$PROGS/lockworker" wait "$S" z 1)
is "$code" "$ESERVER" "no member answering: a 1 s acquire says DIRLOCK_ESERVER (after $took ms)"
fcmp "$took" '<' 2500
ok $? "... by its timeout and the last request's grace ($took ms)"
for n in 1 2 3; do "$CLUSTER" start-member $n; done

# ---- a restore from an old snapshot -------------------------------------------
S=$("$CLUSTER" space snap)
P=snap
rev_of_holder() { # the create_revision of the holder's key of lock NAME
	"$CLUSTER" etcdctl get --prefix "$P/q/$1/" -w json | jq -r '[.kvs[]?.create_revision] | max // 0'
}
f_before=$("$PROGS/lockworker" fenced "$S" r 10 | awk '{print $2}')
"$CLUSTER" snapshot "$T/snap.db"
for _ in 1 2 3 4 5; do "$PROGS/lockworker" fenced "$S" r 10 >/dev/null; done
hold_bg "$T/h3" r 0.5
rev_late=$(rev_of_holder r)
wait $hpid
f_late=$("$PROGS/lockworker" fenced "$S" r 10 | awk '{print $2}')
"$CLUSTER" restore "$T/snap.db"
hold_bg "$T/h4" r 0.5
rev_after=$(rev_of_holder r)
wait $hpid
f_after=$("$PROGS/lockworker" fenced "$S" r 10 | awk '{print $2}')
diag "fences: $f_before (snapshot) < $f_late (last before the restore), then $f_after; holder key revisions: $rev_late before, $rev_after after"
cmp_num "$rev_after" -le "$rev_late" "control: the restore rewound revisions (a holder's key: $rev_after after, $rev_late before), so a fence from create_revision would go back"
cmp_num "$f_after" -gt "$f_late" "the library's fence still grows across the restore ($f_late, then $f_after)"
