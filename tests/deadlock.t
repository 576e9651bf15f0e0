#!/bin/bash
# deadlock.t - deadlock detection across processes, in a lock directory
# and on a private Redis server (lib/redis/redis_deadlock.c): 8 processes
# take 3 names in random orders for DEADLOCK_SECONDS (default 5 in the
# directory, 8 under TESTS_LONG=1, 2 on Redis; make bench-deadlock runs
# 60) with the truth kept
# in shared memory (tests/progs/deadlockstress.c): every DIRLOCK_EDEADLK
# matches a deadlock that existed, and none waits more than 1 s
# unreported; the same processes taking their locks with
# DIRLOCK_NO_DEADLOCK leave cycles unreported for seconds, which the
# checker sees (this test can fail); one victim (issue 44): a cycle of two
# and one of three made DEADLOCK_ROUNDS times (default 50) by processes
# that start their last waits at the same moment
# (tests/progs/deadlockrounds.c), exactly one of them told each time and
# the others getting their locks -- and, without detection, nobody told
# (it can fail); a victim stopped before it reports (the seam STOP_VICTIM,
# lib/test_hooks.h): the other member waits on, untold, and when the
# victim goes on it is told, or when it is killed nobody is, and the
# other's command runs; and the command: nested dirlock commands taking P then Q
# against Q then P -- one exits 4 saying "deadlock" at once and the other
# runs -- and a command that asks for the lock its own dirlock holds for
# it.  On Redis also a cycle of three, and one across two host names (a
# UTS namespace whose host is another).  Knots through counting locks are
# tests/permits.t's.
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/redis-lib.sh
. "$(dirname "$0")/redis-lib.sh"
if redis_available; then
	plan 32
	redis_start || exit 1
else
	plan 16
	diag "Redis: skipped: $REDIS_WHY"
fi
HOOKED=$PROGS/dirlock-hooks
L="$T/locks"
SECS=${DEADLOCK_SECONDS:-$(soak 5 8)}
ROUNDS=${DEADLOCK_ROUNDS:-50}

# one_victim KIND SPACE: the cycles of two and three, ROUNDS times each;
# and the twin without detection, whose rounds tell nobody
one_victim() {
	local shape out st
	for shape in cycle2 cycle3; do
		out=$("$PROGS/deadlockrounds" "$2" "$shape" "$ROUNDS" 2>"$T/err")
		st=$?
		ok $st "$1: a ${shape#cycle}-cycle ${ROUNDS} times, its waits begun at once: exactly one told each time ($out)"
		[ $st -ne 0 ] && sed 's/^/# /' "$T/err" | head -n 5
	done
	out=$("$PROGS/deadlockrounds" "$2" cycle2 2 --no-check 2>/dev/null)
	diag "$1, without detection: $out"
	case $out in *" none=2 "*) st=1 ;; *) st=0 ;; esac
	is "$st" 1 "$1: without detection nobody is told, which the rounds report: it can fail"
}

out=$("$PROGS/deadlockstress" "$L" 8 3 "$SECS" 2>"$T/err")
st=$?
ok $st "8 processes x 3 names x ${SECS} s: every report a real cycle, none unreported past 1 s ($out)"
[ $st -ne 0 ] && sed 's/^/# /' "$T/err" | head -n 20
out=$("$PROGS/deadlockstress" "$L" 8 3 4 --no-check 2>/dev/null)
diag "without detection: $out"
case $out in *" unreported=0 "*) bad=0 ;; *) bad=1 ;; esac
is "$bad" 1 "without detection cycles wait out their timeouts, which the checker reports: it can fail"


# stopped_victim KIND SPACE: P then Q against Q then P, nested commands of
# the hook build whose inner dirlocks stop when their check finds them the
# victim; the victim is stopped for 0.6 s (the other checks at least twice
# meanwhile), then continued, or killed
stopped_victim() {
	local end p pa pb st_a st_b v o victim other st_v st_o
	for end in CONT KILL; do
		rm -f "$T"/sv.*
		"$HOOKED" -d "$2" "${end}P" -- sh -c "sleep 0.3; exec env DIRLOCK_TEST_STOP_VICTIM=1 '$HOOKED' -d '$2' -w 10 '${end}Q' -- echo a" \
			>"$T/sv.out.a" 2>"$T/sv.err.a" &
		pa=$!
		"$HOOKED" -d "$2" "${end}Q" -- sh -c "sleep 0.3; exec env DIRLOCK_TEST_STOP_VICTIM=1 '$HOOKED' -d '$2' -w 10 '${end}P' -- echo b" \
			>"$T/sv.out.b" 2>"$T/sv.err.b" &
		pb=$!
		victim=""
		for _ in $(seq 100); do
			for p in $(pgrep -P "$pa") $(pgrep -P "$pb"); do
				[ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" = T ] && victim=$p
			done
			[ -n "$victim" ] && break
			sleep 0.05
		done
		if [ "$(ps -o ppid= -p "${victim:-0}" 2>/dev/null | tr -d ' ')" = "$pa" ]; then
			v=a o=b other=$pb
		else
			v=b o=a other=$pa
		fi
		sleep 0.6
		[ -n "$victim" ] && kill -0 "$other" 2>/dev/null && ! grep -q deadlock "$T/sv.err.$o"
		ok $? "$1: the victim stopped before it reports (pid ${victim:-none}, then $end): the other waits on, untold"
		kill "-$end" "$victim" 2>/dev/null
		wait "$pa"
		st_a=$?
		wait "$pb"
		st_b=$?
		if [ "$v" = a ]; then
			st_v=$st_a st_o=$st_b
		else
			st_v=$st_b st_o=$st_a
		fi
		if [ "$end" = CONT ]; then
			[ "$st_v:$st_o" = 4:0 ] && grep -q deadlock "$T/sv.err.$v"
			ok $? "$1: continued, the victim is told and the other's command runs (statuses $st_v $st_o)"
		else
			[ "$st_o" = 0 ] && ! grep -q deadlock "$T/sv.err.$o"
			ok $? "$1: killed, nobody is told and the other's command runs (statuses $st_v $st_o)"
		fi
	done
}

one_victim "directory" "$L/v"
stopped_victim "directory" "$L/s"

# ---- the command ----
t0=$(date +%s%N)
"$DIRLOCK" -d "$L" P -- sh -c "sleep 0.5; exec '$DIRLOCK' -d '$L' -w 5 Q -- echo first" >"$T/out1" 2>"$T/err1" &
p1=$!
"$DIRLOCK" -d "$L" Q -- sh -c "sleep 0.5; exec '$DIRLOCK' -d '$L' -w 5 P -- echo second" >"$T/out2" 2>"$T/err2" &
p2=$!
wait $p1
st1=$?
wait $p2
st2=$?
ms=$((($(date +%s%N) - t0) / 1000000))
diag "statuses $st1 $st2 after $ms ms; $(cat "$T/err1" "$T/err2")"
[ "$st1 $st2" = "4 0" ] || [ "$st1 $st2" = "0 4" ]
ok $? "P then Q against Q then P: one nested dirlock exits 4 (statuses $st1 $st2)"
[ "$st1" = 0 ] || [ "$st2" = 0 ]
ok $? "... and the other one's command ran: $(cat "$T/out1" "$T/out2" | tr '\n' ' ')"
cmp_num "$ms" -lt 2000 "... at once, not at the 5 s timeout (${ms} ms)"
grep -q "deadlock: .* would wait for '[PQ]' held by pid [0-9]* on .* for its command, pid [0-9]*, which waits for '[PQ]'" "$T/err1" "$T/err2"
ok $? "with the cycle named"

t0=$(date +%s%N)
"$DIRLOCK" -d "$L" self -- "$DIRLOCK" -d "$L" -w 5 self -- true 2>"$T/err"
st=$?
ms=$((($(date +%s%N) - t0) / 1000000))
is "$st" 4 "a command asking for the lock its own dirlock holds for it exits 4"
cmp_num "$ms" -lt 1000 "... at once (${ms} ms): $(cat "$T/err")"
"$DIRLOCK" -d "$L" -n other -- "$DIRLOCK" -d "$L" -n other -- true 2>/dev/null
is "$?" 1 "with -n it is busy, as a try is"

# ---- on a Redis server: across processes and hosts ----
[ -n "$REDIS_PID" ] || exit 0
R="$REDIS_SPACE"
RSECS=${DEADLOCK_SECONDS:-2}
out=$("$PROGS/deadlockstress" "$R" 8 3 "$RSECS" 2>"$T/err")
st=$?
ok $st "Redis: 8 processes x 3 names x ${RSECS} s: every report a real cycle, none unreported past 1 s ($out)"
[ $st -ne 0 ] && sed 's/^/# /' "$T/err" | head -n 20
out=$("$PROGS/deadlockstress" "$R?prefix=twin" 8 3 3 --no-check 2>/dev/null)
diag "Redis, without detection: $out"
case $out in *" unreported=0 "*) bad=0 ;; *) bad=1 ;; esac
is "$bad" 1 "Redis: without detection cycles wait out their timeouts, which the checker reports: it can fail"
one_victim "Redis" "$R?prefix=victims"
stopped_victim "Redis" "$R?prefix=stopped"

# nested LOCK NEXT [HOSTNAME]: dirlock LOCK runs, half a second later, a
# dirlock that waits for NEXT (in a UTS namespace named HOSTNAME, if given)
nested() {
	local pre=()
	[ -n "${3:-}" ] && pre=(unshare --uts sh -c 'hostname "$0" && exec "$@"' "$3")
	"${pre[@]}" "$DIRLOCK" -d "$R" "$1" -- sh -c "sleep 0.5; exec '$DIRLOCK' -d '$R' -w 5 '$2' -- echo '$1'"
}
# run_cycle NAME...: one nested dirlock per name, each waiting for the
# next (the last for the first); sets statuses, ms, and $T/c.* files
run_cycle() {
	local i n=$# names=("$@") pids=()
	rm -f "$T"/c.*
	t0=$(date +%s%N)
	for ((i = 0; i < n; i++)); do
		nested "${names[$i]}" "${names[$(((i + 1) % n))]}" ${HOSTS[$i]:+"${HOSTS[$i]}"} \
			>"$T/c.out$i" 2>"$T/c.err$i" &
		pids+=($!)
	done
	statuses=""
	for p in "${pids[@]}"; do
		wait "$p"
		statuses="$statuses $?"
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	diag "statuses$statuses after $ms ms; $(cat "$T"/c.err*)"
	sorted=$(echo "$statuses" | tr ' ' '\n' | sort -n | tr '\n' ' ')
}

HOSTS=()
run_cycle rP rQ
[ "$sorted" = " 0 4 " ]
ok $? "Redis: P then Q against Q then P: one nested dirlock exits 4, the other's command runs"
cmp_num "$ms" -lt 2000 "... at once, not at the 5 s timeout (${ms} ms)"
grep -q "deadlock: .* would wait for 'r[PQ]' held by pid [0-9]* on .* for its command, pid [0-9]*, which waits for 'r[PQ]'" "$T"/c.err*
ok $? "... with the cycle named"

run_cycle r1 r2 r3
n4=$(echo "$statuses" | tr ' ' '\n' | grep -c '^4$')
n0=$(echo "$statuses" | tr ' ' '\n' | grep -c '^0$')
[ "$n4" = 1 ] && [ "$n0" = 2 ] && [ "$ms" -lt 2000 ]
ok $? "Redis: a cycle of three is reported at once, to one of them (${ms} ms; statuses$statuses)"
grep -q "which waits for 'r[123]' .*, which waits for 'r[123]' held for this process" "$T"/c.err*
ok $? "... naming its three steps"

if unshare --uts true 2>/dev/null; then
	HOSTS=(dlhost-other "")
	run_cycle hP hQ
	[ "$sorted" = " 0 4 " ] && [ "$ms" -lt 2000 ]
	ok $? "Redis: a cycle across two host names is reported at once (${ms} ms)"
	grep -q "on dlhost-other" "$T"/c.err* && grep -q "on $(hostname)" "$T"/c.err*
	ok $? "... naming the processes of both hosts"
else
	skip "unshare --uts needs root"
	skip "unshare --uts needs root"
fi
