#!/bin/bash
# core-signals.t - a dirlock that waits for its locks ends at once on
# SIGTERM, SIGHUP and SIGINT (^C: to its whole process group), through the
# library's cancel descriptor: it takes no lock, runs nothing and exits
# 128+N; the holder keeps its lock and nothing is left behind.  In a lock
# directory, on a private Redis server, and with no server at all (a port
# where nothing listens).  A server stopped with SIGSTOP ends the wait
# once the request in flight gives up (bounded: 2 s a round trip).  A wait
# without end on a server that is not there says so on stderr within a
# second or two, and again when one answers there.  Also:
# a signal ignored when dirlock started (nohup's SIGHUP) and the SIGCHLD
# of its command stopped and continued (^Z, fg) do not end the wait; a
# command killed before it could run ends it with the command's status.
# The moments around starting the command, with the test build of the
# command (the seam STOP_AT, lib/test_hooks.h): a signal that comes after the
# locks are taken and before the command is let run ends dirlock, with the
# locks released and nothing run; one that comes after reaches the command.
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/redis-lib.sh
. "$(dirname "$0")/redis-lib.sh"
HOOKED=$PROGS/dirlock-hooks
if redis_available; then
	redis=yes
	plan 23
else
	plan 11
	diag "Redis: $REDIS_WHY"
fi
set -m # every job in a process group of its own, SIGINT not ignored: as a terminal's

# The state letter of a process (R, S, T, Z...), empty when it is gone.
state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
alive() { local s; s=$(state "$1"); [ -n "$s" ] && [ "$s" != Z ]; }

# ends_within MS PID: wait up to MS ms for job PID to end; $st is then its
# status and $took the ms it took -- or, when it did not end, st=none and
# the job and its children are SIGKILLed.
ends_within() {
	local t0 c
	t0=$(date +%s%N)
	while alive "$2"; do
		took=$((($(date +%s%N) - t0) / 1000000))
		if [ "$took" -ge "$1" ]; then
			for c in $(pgrep -P "$2"); do kill -KILL "$c"; done
			kill -KILL "$2"
			wait "$2" 2>/dev/null
			st=none
			return
		fi
		sleep 0.02
	done
	took=$((($(date +%s%N) - t0) / 1000000))
	wait "$2" 2>/dev/null # (no job-control notice of its death on stderr)
	st=$?
}

# until_waiting PID: until dirlock PID has forked its command (which
# then waits for the go) and had time to start its wait.
until_waiting() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ -n "$(pgrep -P "$1")" ] && break
		sleep 0.02
	done
	sleep 0.3
}

# The waiters start with SIGHUP and SIGINT at their defaults: a shell
# without job control starts background commands ignoring SIGINT, and
# `nohup make test` ignores SIGHUP, and dirlock rightly keeps an ignored
# signal ignored (the nohup case below), so the test must not inherit them.
DEFAULT_SIGNALS="env --default-signal=HUP,INT"

# while_held SPACE NAME SIG TARGET LIMIT: a holder holds NAME in SPACE; a
# waiter wants it to run `touch`; SIG goes to the waiter's pid (TARGET=pid)
# or to its process group (TARGET=group, as ^C does).  The waiter must end
# within LIMIT ms with 128+N, nothing run, the holder still holding; then
# the holder lets go and the lock must be free, nothing left of the waiter.
while_held() {
	local space=$1 name=$2 sig=$3 target=$4 limit=$5 holder waiter want owner
	want=$((128 + $(kill -l "$sig")))
	"$DIRLOCK" -d "$space" "$name" -- sleep 30 &
	holder=$!
	until "$DIRLOCK" status -d "$space" "$name" 2>/dev/null | grep -q "pid=$holder "; do sleep 0.02; done
	$DEFAULT_SIGNALS "$DIRLOCK" -d "$space" "$name" -- touch "$T/ran-$name" 2>"$T/err-$name" &
	waiter=$!
	until_waiting $waiter
	if [ "$target" = group ]; then kill -"$sig" -- -$waiter; else kill -"$sig" $waiter; fi
	ends_within "$limit" $waiter
	owner=$("$DIRLOCK" status -d "$space" "$name" 2>&1)
	[ "$st" = "$want" ] && [ ! -e "$T/ran-$name" ] && case $owner in *"pid=$holder "*) true ;; *) false ;; esac
	ok $? "$space: SIG$sig to the waiting dirlock's $target ends it in ${took} ms (limit $limit): exit $st (want $want), nothing run, the holder still holds: $(tr '\n' ' ' <"$T/err-$name")"
	kill -TERM $holder
	wait $holder
	"$DIRLOCK" -d "$space" -n "$name" -- true
	lock_free=$((lock_free + $?))
}

# A waiter on a space with no server where it points: SIG ends it.
no_server() {
	local space=$1 sig=$2 name=$3 waiter want
	want=$((128 + $(kill -l "$sig")))
	$DEFAULT_SIGNALS "$DIRLOCK" -d "$space" "$name" -- touch "$T/ran-$name" 2>"$T/err-$name" &
	waiter=$!
	until_waiting $waiter
	sleep 0.3 # a few of its reconnection attempts
	kill -"$sig" $waiter
	ends_within 1000 $waiter
	[ "$st" = "$want" ] && [ ! -e "$T/ran-$name" ]
	ok $? "no server at $space: SIG$sig ends the waiting dirlock in ${took} ms: exit $st (want $want), nothing run: $(tr '\n' ' ' <"$T/err-$name")"
}

L="$T/locks"
lock_free=0
while_held "$L" term TERM pid 1000
while_held "$L" hup HUP pid 1000
while_held "$L" int INT group 1000
is "$lock_free" 0 "$L: each time, once the holder let go, the lock was free at once (-n)"

# nohup: a SIGHUP ignored from the start leaves the wait alone; SIGTERM still ends it.
"$DIRLOCK" -d "$L" nohup -- sleep 30 &
holder=$!
until "$DIRLOCK" status -d "$L" nohup 2>/dev/null | grep -q "pid=$holder "; do sleep 0.02; done
nohup "$DIRLOCK" -d "$L" nohup -- touch "$T/ran-nohup" >/dev/null 2>&1 &
waiter=$!
until_waiting $waiter
kill -HUP $waiter
sleep 0.5
alive $waiter
ok $? "a SIGHUP that dirlock was started ignoring (nohup) leaves it waiting"
kill -TERM $waiter
ends_within 1000 $waiter
is "$st" 143 "... and SIGTERM ends it at once (${took} ms)"

# ^Z and fg: the command stopped and continued sends SIGCHLD, which only
# restarts the wait; a SIGWINCH does not end it either.  Then it gets the lock.
"$DIRLOCK" -d "$L" nohup -- touch "$T/ran-fg" &
waiter=$!
until_waiting $waiter
cmd=$(pgrep -P $waiter)
kill -STOP "$cmd"
sleep 0.2
kill -CONT "$cmd"
kill -WINCH $waiter
sleep 0.5
alive $waiter
ok $? "its command stopped and continued (SIGCHLD), and a SIGWINCH: dirlock keeps waiting"
kill -TERM $holder
wait $holder
ends_within 3000 $waiter
[ "$st" = 0 ] && [ -e "$T/ran-fg" ]
ok $? "... and once the holder lets go it takes the lock and runs its command: exit $st"

# The command killed before it could run (alone, not dirlock): dirlock
# ends at once with the command's status, holding nothing.
"$DIRLOCK" -d "$L" kc -- sleep 30 &
holder=$!
until "$DIRLOCK" status -d "$L" kc 2>/dev/null | grep -q "pid=$holder "; do sleep 0.02; done
"$DIRLOCK" -d "$L" kc -- touch "$T/ran-kc" 2>"$T/err-kc" &
waiter=$!
until_waiting $waiter
kill -KILL "$(pgrep -P $waiter)"
ends_within 1000 $waiter
[ "$st" = 137 ] && [ ! -e "$T/ran-kc" ] && grep -q "killed by SIGKILL before it could run" "$T/err-kc"
ok $? "its command killed before it ran: dirlock ends in ${took} ms, exit $st (want 137): $(cat "$T/err-kc")"
kill -TERM $holder
wait $holder

# Between the locks taken and the command let run (DIRLOCK_TEST_STOP_AT=taken
# stops the test build there): a signal ends it, releasing the locks.
if [ -x "$HOOKED" ]; then
	DIRLOCK_TEST_STOP_AT=taken "$HOOKED" -d "$L" race1 race2 -- touch "$T/ran-race" 2>"$T/err-race" &
	p=$!
	for ((i = 0; i < 250; i++)); do [ "$(state $p)" = T ] && break; sleep 0.02; done
	held=$("$DIRLOCK" status -d "$L" race1 race2 | grep -c "pid=$p ")
	kill -TERM $p
	kill -CONT $p
	ends_within 2000 $p
	[ "$held" = 2 ] && [ "$st" = 143 ] && [ ! -e "$T/ran-race" ] && "$DIRLOCK" -d "$L" -n race1 race2 -- true
	ok $? "a SIGTERM after both locks were taken, before the command was let run: exit $st, nothing run, both locks free again"
	# Just after the command was let run (=started): the signal is the command's.
	# shellcheck disable=SC2016 # the command's own script
	DIRLOCK_TEST_STOP_AT=started "$HOOKED" -d "$L" race1 -- sh -c \
		'trap "echo TERM >\"$1/got\"; exit 9" TERM; touch "$1/ready"; while :; do sleep 0.05; done' sh "$T" &
	p=$!
	for ((i = 0; i < 250; i++)); do [ -e "$T/ready" ] && [ "$(state $p)" = T ] && break; sleep 0.02; done
	kill -TERM $p
	kill -CONT $p
	ends_within 3000 $p
	[ "$st" = 9 ] && [ "$(cat "$T/got" 2>/dev/null)" = TERM ] && "$DIRLOCK" -d "$L" -n race1 -- true
	ok $? "a SIGTERM just after the command was let run reaches the command (its trap ran, exit $st), and the lock is free after"
else
	skip "the test build of the command ($HOOKED) is not built (make test-build)"
	skip "the test build of the command ($HOOKED) is not built (make test-build)"
fi

[ "${redis:-}" = yes ] || exit 0
# No server where the space points (a port of this test's range where
# nothing listens): the wait retries forever, and a signal ends it.
port=$(redis_free_port) || {
	echo "Bail out! no free port"
	exit 1
}
no_server "redis://127.0.0.1:$port/0" TERM nosrv-term
no_server "redis://127.0.0.1:$port/0" INT nosrv-int
no_server "redis://127.0.0.1:$port/0" HUP nosrv-hup

# The same wait without end says on stderr, within a second or two, that
# the server does not answer, keeps trying, and says when one answers
# there; then it takes the lock and runs its command.
t0=$(date +%s%N)
"$DIRLOCK" -d "redis://127.0.0.1:$port/0" back -- touch "$T/ran-back" 2>"$T/err-back" &
waiter=$!
for ((i = 0; i < 250; i++)); do
	grep -q "no answer from the lock server" "$T/err-back" && break
	sleep 0.02
done
told=$((($(date +%s%N) - t0) / 1000000))
grep -q "no answer from the lock server for 1 s or more (Redis server redis://127.0.0.1:$port/0.*Connection refused); still trying" "$T/err-back"
ok $? "no server where the space points: dirlock says so on stderr after $told ms (want 1 to 3 s): $(cat "$T/err-back")"
redis_start -p "$port" || exit 1
ends_within 10000 $waiter
[ "$st" = 0 ] && [ -e "$T/ran-back" ] && grep -q "the lock server of lock .back. answers again" "$T/err-back"
ok $? "... and once a server answers there, says so, takes the lock and runs its command: exit $st: $(tr '\n' ' ' <"$T/err-back")"
cmp_num "$told" -le 3000 "... the first word came within 3 s ($told ms)"
redis_stop

redis_start || exit 1
lock_free=0
while_held "$REDIS_SPACE" rterm TERM pid 1000
while_held "$REDIS_SPACE" rhup HUP pid 1000
while_held "$REDIS_SPACE" rint INT group 1000
is "$lock_free" 0 "Redis: each time, once the holder let go, the lock was free at once (-n)"
# A server stopped (SIGSTOP) under a waiter: the request in flight gives up
# after at most 2 s (DL_REDIS_IO_MS), then the wait ends; nothing taken
# once the server goes on.
"$DIRLOCK" -d "$REDIS_SPACE" stopped -- sleep 30 &
holder=$!
until "$DIRLOCK" status -d "$REDIS_SPACE" stopped 2>/dev/null | grep -q "pid=$holder "; do sleep 0.02; done
"$DIRLOCK" -d "$REDIS_SPACE" stopped -- touch "$T/ran-stopped" 2>"$T/err-stopped" &
waiter=$!
until_waiting $waiter
kill -STOP "$REDIS_PID"
sleep 0.3
kill -TERM $waiter
ends_within 5000 $waiter
kill -CONT "$REDIS_PID"
[ "$st" = 143 ] && [ ! -e "$T/ran-stopped" ]
ok $? "a server stopped under the wait: SIGTERM ends it once the request in flight gives up, in ${took} ms: exit $st"
kill -TERM $holder
wait $holder
"$DIRLOCK" -d "$REDIS_SPACE" -w 8 stopped -- true 2>"$T/err-after"
is "$?" 0 "... and the lock is free after the holder lets go (its queue entry gone or expired): $(cat "$T/err-after")"
