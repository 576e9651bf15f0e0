#!/bin/bash
# core-redis.t - a lock space on a private redis-server when the server
# fails: refused connections and timeouts are distinct, readable errors
# (DIRLOCK_ESERVER) that never wait past the caller's timeout (plus the
# documented 250 ms for one last round trip), with the server down and
# with it stopped (SIGSTOP); a restart that loses the data makes every
# holder's release say DIRLOCK_ELOST; a holder caught inside its section
# by a restart runs alongside the next holder (the new server knows
# nothing of it), and a store that refuses lower fences refuses its late
# write -- the twin, a store that does not look at fences, loses the other
# update; and four fenced workers lose no increment while the server is
# killed and restarted three times under them.
# Bad addresses are refused with a message that never shows the password.
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/redis-lib.sh"
redis_available || {
	echo "1..0 # SKIP $REDIS_WHY"
	exit 0
}
plan 36
ESERVER=15
S=$REDIS_SPACE

# ---- server down ---------------------------------------------------------
read -r code ms <<<"$("$PROGS/lockworker" wait "$S" n 0)"
is "$code" "$ESERVER" "no server: one try fails with DIRLOCK_ESERVER ($ms ms)"
"$DIRLOCK" -d "$S" -n n -- true 2>"$T/err"
st=$?
is "$st" 2 "no server: the command exits 2 (an error, not a conflict)"
grep -q "redis+unix://$REDIS_SOCK.*cannot connect" "$T/err"
ok $? "... saying which server and what happened: $(cat "$T/err")"
read -r code ms <<<"$("$PROGS/lockworker" wait "$S" n 0.6)"
is "$code" "$ESERVER" "no server: a timed wait ends with DIRLOCK_ESERVER"
cmp_num "${ms%.*}" -lt 900 "... by its timeout, 0.6 s (${ms} ms)"
cmp_num "${ms%.*}" -ge 550 "... and not long before it: it kept trying (${ms} ms)"

# ---- a restart that loses the data ------------------------------------------
redis_start || exit 1
coproc HOLDER { exec "$PROGS/lockworker" hold "$S" k 1.5 30; }
read -r word _ <&"${HOLDER[0]}"
is "$word" held "a holder has the lock"
redis_stop
redis_start || exit 1
read -r result <&"${HOLDER[0]}"
wait "$HOLDER_PID"
is "$result" lost "after a restart without persistence the holder's release says DIRLOCK_ELOST"
read -r code ms <<<"$("$PROGS/lockworker" wait "$S" k 0)"
is "$code" 0 "and the lock is free on the restarted server"

# ---- the server stopped (SIGSTOP) ---------------------------------------------
coproc HOLDER2 { exec "$PROGS/lockworker" hold "$S" s 2.5 30 0.3; }
read -r word _ <&"${HOLDER2[0]}"
kill -STOP "$REDIS_PID"
t0=$(date +%s%N)
read -r code ms <<<"$("$PROGS/lockworker" wait "$S" s 1)"
is "$code" "$ESERVER" "stopped server: a wait with a 1 s timeout ends with DIRLOCK_ESERVER"
cmp_num "${ms%.*}" -lt 1400 "... within its timeout and one last round trip (${ms} ms)"
"$DIRLOCK" status -d "$S" >/dev/null 2>"$T/err"
is "$?" 2 "stopped server: status fails ..."
el=$((($(date +%s%N) - t0) / 1000000))
grep -q "no answer" "$T/err"
ok $? "... saying the server did not answer: $(cat "$T/err")"
read -r refresh _ <&"${HOLDER2[0]}"
is "$refresh" refresh-failed "stopped server: the holder's refresh fails (never a false OK)"
kill -CONT "$REDIS_PID"
wait "$HOLDER2_PID"
diag "status and the holder's refresh took $el ms while the server was stopped"

# ---- an acquire the stopped server runs only after its sender gave up ------------
# The request sits in the stopped server's socket; its sender times out
# and stays alive (so no dead-owner check would free the lock).  When the
# server goes on it runs the request: it must take nothing.  Twice: a
# whole lock, and a range (which a whole lock then has to wait for).
# free_then_reap NAME DESCRIPTION: a try at NAME gets it; the lingering
# abandon worker (coproc AB) then goes.
free_then_reap() {
	local code _
	read -r code _ <<<"$("$PROGS/lockworker" wait "$S" "$1" 0)"
	is "$code" 0 "$2"
	kill "$AB_PID" 2>/dev/null
	wait "$AB_PID" 2>/dev/null
}
abandoned() {
	local name=$1 what=$2
	shift 2
	coproc AB { exec "$PROGS/lockworker" abandon "$S" "$name" 0.5 4 "$@"; }
	local word code ms
	read -r word <&"${AB[0]}"
	kill -STOP "$REDIS_PID"
	echo go >&"${AB[1]}"
	read -r code ms <&"${AB[0]}"
	sleep 0.3
	kill -CONT "$REDIS_PID"
	sleep 0.3
	is "$word/$code" "ready/$ESERVER" "stopped server, $what: the acquire gives up with DIRLOCK_ESERVER (${ms} ms)"
	free_then_reap "$name" "... and when the server goes on and runs the request, it takes nothing: the lock is free"
}
abandoned ab "a whole lock"
abandoned abr "a range" 0 10

# The same for a waiter: it queues behind a holder, the server stops, its
# timeout passes and it gives up; the holder's release, sent while the
# server is stopped, runs when it goes on and must not grant the lock to
# the waiter that left (its place in the queue lasts until its deadline).
coproc HQ { exec "$PROGS/lockworker" hold "$S" abq 1.2; }
read -r word _ <&"${HQ[0]}"
coproc AB { exec "$PROGS/lockworker" abandon "$S" abq 0.5 4; }
read -r word2 <&"${AB[0]}"
echo go >&"${AB[1]}"
sleep 0.2
kill -STOP "$REDIS_PID"
read -r code ms <&"${AB[0]}"
sleep 1.0
kill -CONT "$REDIS_PID"
read -r released <&"${HQ[0]}"
wait "$HQ_PID"
sleep 0.3
is "$word/$word2/$code" "held/ready/$ESERVER" \
	"stopped server, a queued waiter: it gives up with DIRLOCK_ESERVER (${ms} ms; the holder's release: $released)"
free_then_reap abq "... and the holder's release, run when the server goes on, grants it nothing: the lock is free"

# A connection whose idea of the server's clock went stale (60 s behind,
# as after a suspend of our host) has its attempts refused as late: it
# reads the clock again and tries once more, so a free lock is still had.
read -r code ms <<<"$(DIRLOCK_TEST_REDIS_CLOCK_SKEW_MS=60000 "$PROGS/lockworker" wait "$S" skew 1)"
is "$code" 0 "a stale clock offset: a timed acquire still gets a free lock (${ms} ms)"
read -r code ms <<<"$(DIRLOCK_TEST_REDIS_CLOCK_SKEW_MS=60000 "$PROGS/lockworker" wait "$S" skew 0)"
is "$code" 0 "... and so does a try with timeout 0 (${ms} ms)"

# ---- killed and restarted under fenced workers -----------------------------------
# overlap MODE: A holds the lock, in a 1.5 s section of its store update;
# the server is killed and restarted under it; B then takes the lock on
# the new server and updates the store while A is still inside.
overlap() {
	printf '0 0\n' >"$T/ov.$1"
	"$PROGS/lockworker" fcounter "$S" ov "$T/ov.$1" 1 1500000 "$1" >"$T/ova.$1" 2>/dev/null &
	a=$!
	for _ in $(seq 200); do
		[ "$(redis_cli exists '{dirlock}:ov:w')" = 1 ] && break
		sleep 0.01
	done
	redis_stop
	redis_start || exit 1
	"$PROGS/lockworker" fcounter "$S" ov "$T/ov.$1" 1 0 "$1" >"$T/ovb.$1" 2>/dev/null
	wait "$a"
	accepted=$(cat "$T/ova.$1" "$T/ovb.$1" | awk '{a += $2} END {print a}')
	final=$(cut -d' ' -f1 "$T/ov.$1")
	diag "$1: A: $(cat "$T/ova.$1"); B: $(cat "$T/ovb.$1"); store $final"
}
overlap fence
is "$final/$accepted" "1/1" "after a restart, a fenced store refuses the old holder's late write (no update lost)"
grep -q "refused 1 .* lost 1" "$T/ova.fence"
ok $? "... and the old holder learns it: its write refused, its release DIRLOCK_ELOST"
overlap nofence
is "$final/$accepted" "1/2" "twin, store without fences: two holders after the restart, and one update is lost (test can fail)"

# churn: four fenced workers, the server killed and restarted three times
# under them, each time 50 ms into a holder's 300 ms section.
printf '0 0\n' >"$T/store"
pids=""
for _ in 1 2 3 4; do
	"$PROGS/lockworker" fcounter "$S" fc "$T/store" 4 300000 fence >>"$T/out" 2>>"$T/churn.err" &
	pids="$pids $!"
done
for _ in 1 2 3; do
	for _ in $(seq 200); do
		[ "$(redis_cli exists '{dirlock}:fc:w')" = 1 ] && break
		sleep 0.01
	done
	sleep 0.05
	redis_stop
	redis_start || exit 1
	sleep 0.3
done
for p in $pids; do wait "$p"; done
accepted=$(awk '{a += $2} END {print a}' "$T/out")
late=$(awk '{a += $8} END {print a}' "$T/out")
final=$(cut -d' ' -f1 "$T/store")
sort "$T/churn.err" | uniq -c | sed 's/^/#   /'
diag "churn: $(awk '{a += $2; r += $4; e += $6; l += $10} END {print "accepted", a, "refused", r, "lock errors", e, "lost", l}' "$T/out"), store $final"
is "$final" "$accepted" "3 restarts under 4 fenced workers: every accepted increment is in the store ($final)"
is "$late" 0 "... and no acquire returned later than its timeout"

# ---- a slow server over TCP --------------------------------------------------------
# On TCP a reply is read with blocking reads of 100 ms each (the socket's
# receive timeout): a reply slower than that is still waited for while the
# call has time, and a call whose time is up fails though the reply would
# come later.
redis_stop
port=$(redis_free_port) || {
	echo "no free port" >&2
	exit 1
}
redis_start -p "$port" || exit 1
TCP="redis://127.0.0.1:$port/0"
read -r code _ <<<"$("$PROGS/lockworker" wait "$TCP" slow 0)"
is "$code" 0 "TCP: a lock taken (connection made, scripts loaded)"
kill -STOP "$REDIS_PID"
(sleep 0.4 && kill -CONT "$REDIS_PID") &
read -r code ms <<<"$("$PROGS/lockworker" wait "$TCP" slow 5)"
wait $!
is "$code" 0 "TCP, the server paused 0.4 s: a wait with time left gets the lock (${ms} ms)"
kill -STOP "$REDIS_PID"
(sleep 1.5 && kill -CONT "$REDIS_PID") &
read -r code ms <<<"$("$PROGS/lockworker" wait "$TCP" slow2 0)"
wait $!
is "$code" "$ESERVER" "TCP, the server paused 1.5 s: one try fails with DIRLOCK_ESERVER"
cmp_num "${ms%.*}" -lt 1000 "... after its one round trip's 250 ms, not when the server goes on (${ms} ms)"
cmp_num "${ms%.*}" -ge 240 "... and not before them: a read that times out is not a failure (${ms} ms)"

# ---- bad addresses ---------------------------------------------------------------
"$DIRLOCK" -d 'redis://u:hunter2@h:99999' -n x -- true 2>"$T/err"
is "$?" 2 "a bad port is an error (status 2)"
grep -q "port must be" "$T/err" && ! grep -q hunter2 "$T/err"
ok $? "... that names the port and hides the password: $(cat "$T/err")"
"$DIRLOCK" status -d 'redis://h?prefix=a/b' 2>"$T/err"
grep -q "prefix must be" "$T/err"
ok $? "a bad prefix is refused: $(cat "$T/err")"
DIRLOCK_DIR='redis+unix://relative/sock' "$DIRLOCK" -n x -- true 2>"$T/err"
grep -q "must be absolute" "$T/err"
ok $? "\$DIRLOCK_DIR is parsed the same way: $(cat "$T/err")"
