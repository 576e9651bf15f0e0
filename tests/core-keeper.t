#!/bin/bash
# core-keeper.t - a command's locks are its own for as long as it lives,
# whatever becomes of the dirlock that runs it (its keeper, bin/keeper.c),
# in a lock directory, a flock: space and on each private server
# (tests/spaces-lib.sh), each space in a job of its own:
#   - dirlock SIGKILLed while its command runs: the next holder gets the
#     lock only once the command has exited (no write of the command
#     after the next one's start), well past the stale age;
#   - dirlock SIGSTOPped past the stale age: the same (not in a flock
#     space, where the stopped dirlock's descriptor keeps the lock anyway,
#     as long as it is stopped);
#   - the locks lost while the command runs (break --force; a flock lock
#     cannot be broken): dirlock sends the command SIGTERM at once and
#     exits 1, saying so.
# Then, on the first server space: the keeper killed while dirlock lives
# is started again, and keeps the promise when dirlock is killed next;
# with dirlock gone, the keeper is the one that tells of a loss and stops
# the command.  In a lock directory: dirlock stopped, then the locks
# broken: the keeper tells the command (once); dirlock stopped while its
# command ends, past the stale age: its exit status is the command's
# (the locks went after the command).  On the private Redis server: a
# server that stops answering for the stale age counts as a loss (the
# entry may have expired): the command is stopped and dirlock exits 1.
# Each check fails without the keeper: on a server the entry expires
# after the stale age and the next holder gets in beside the command; in
# a flock space the lock goes with dirlock's descriptor.
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
spaces_start || exit 1
mapfile -t spaces < <(test_spaces)
spaces+=("flock:$T/flocks")
server=""
for s in "${spaces[@]}"; do
	if space_is_server "$s"; then
		server=$s
		break
	fi
done
R=$(space_of redis) || R=""
extra=0
[ -n "$R" ] && extra=2
plan $((3 * ${#spaces[@]} - 2 + 4 + 3 + extra))

now_ns() { date +%s%N; }
# until_ms MS COMMAND...: until COMMAND succeeds, at most MS ms (status 1 then).
until_ms() {
	local limit=$1 t0
	shift
	t0=$(now_ns)
	until "$@"; do
		[ $((($(now_ns) - t0) / 1000000)) -lt "$limit" ] || return 1
		sleep 0.02
	done
}
nonempty() { [ -s "$1" ]; }
# The command of the checks: it writes the time every 50 ms for $1 ns,
# to $2; on SIGTERM it writes the time to $3 and exits 7.
# shellcheck disable=SC2016 # the command's own script
LOOP='trap "date +%s%N >\"$3\"; exit 7" TERM
end=$(($(date +%s%N) + $1))
while [ "$(date +%s%N)" -lt "$end" ]; do date +%s%N >>"$2"; sleep 0.05; done'
# stale SPACE: the stale age of the checks, 0.3 s or the space's shortest.
stale_of() { awk -v m="$(space_min_stale "$1")" 'BEGIN { print (m > 0.3 ? m : 0.3) }'; }
# The command's length: three stale ages and a half second.
length_ns() { awk -v s="$1" 'BEGIN { printf "%d", (3 * s + 0.5) * 1e9 }'; }

# gone PID: no such process, or a zombie (an orphan whose reaper is slow).
gone() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -z "$st" ] || [ "$st" = Z ]
}
# after_holder SPACE STALE NAME OUT CMD: the next holder of NAME, timed;
# then, once the command (pid CMD, its writes in OUT.f) has exited, "ok"
# when it wrote nothing after the next holder started, else why not.
after_holder() {
	local st
	"$DIRLOCK" -d "$1" --stale "$2" -w 30 "$3" -- sh -c 'date +%s%N >"$1"' sh "$4.g" 2>"$4.err2"
	st=$?
	until_ms 30000 gone "$5"
	local last first
	last=$(tail -n 1 "$4.f")
	first=$(cat "$4.g" 2>/dev/null)
	if [ "$st" = 0 ] && [ -n "$first" ] && [ "$last" -lt "$first" ]; then
		echo "ok: the next holder started $(((first - last) / 1000000)) ms after the command's last write"
	else
		echo "OVERLAP: exit $st, the command wrote $(awk -v g="${first:-0}" '$1 >= g' "$4.f" | wc -l) times after the next holder started: $(cat "$4.err2")"
	fi
}

# checks SPACE OUT: the three checks on SPACE, one result line each in OUT.
checks() {
	local s=$1 out=$2 stale len d c st t0
	stale=$(stale_of "$s")
	len=$(length_ns "$stale")
	# dirlock SIGKILLed.
	"$DIRLOCK" -d "$s" --stale "$stale" killed -- sh -c "$LOOP" sh "$len" "$out.k.f" "$out.k.term" 2>"$out.k.err" &
	d=$!
	until_ms 10000 nonempty "$out.k.f"
	c=$(pgrep -P $d -x sh)
	kill -KILL $d
	wait $d 2>/dev/null
	echo "killed $(after_holder "$s" "$stale" killed "$out.k" "$c")" >>"$out"
	case $s in flock:*) return ;; esac
	# dirlock SIGSTOPped past the stale age.
	"$DIRLOCK" -d "$s" --stale "$stale" stopped -- sh -c "$LOOP" sh "$len" "$out.s.f" "$out.s.term" 2>"$out.s.err" &
	d=$!
	until_ms 10000 nonempty "$out.s.f"
	c=$(pgrep -P $d -x sh)
	kill -STOP $d
	echo "stopped $(after_holder "$s" "$stale" stopped "$out.s" "$c")" >>"$out"
	kill -CONT $d
	wait $d 2>/dev/null
	# The locks lost while the command runs.
	"$DIRLOCK" -d "$s" --stale "$stale" lost -- sh -c "$LOOP" sh 10000000000 "$out.l.f" "$out.l.term" 2>"$out.l.err" &
	d=$!
	until_ms 10000 nonempty "$out.l.f"
	t0=$(now_ns)
	"$DIRLOCK" break -d "$s" --force lost >/dev/null 2>&1
	wait $d
	st=$?
	local term took
	term=$(cat "$out.l.term" 2>/dev/null)
	took=$(((${term:-$(now_ns)} - t0) / 1000000))
	if [ "$st" = 1 ] && [ -n "$term" ] && grep -q "a lock was lost while the command ran: .*sending the command (pid [0-9]*) SIGTERM" "$out.l.err"; then
		echo "lost ok: SIGTERM $took ms after the break, exit 1: $(tr '\n' ' ' <"$out.l.err")" >>"$out"
	else
		echo "lost NOT: exit $st (want 1), SIGTERM ${term:+after $took ms}${term:-never}: $(tr '\n' ' ' <"$out.l.err")" >>"$out"
	fi
}

jobs_=()
for i in "${!spaces[@]}"; do
	checks "${spaces[$i]}" "$T/r$i" &
	jobs_+=($!)
done
wait "${jobs_[@]}"
for i in "${!spaces[@]}"; do
	kind=$(space_kind "${spaces[$i]}")
	case ${spaces[$i]} in flock:*) kind=flock ;; esac
	for what in killed stopped lost; do
		[ "$kind" = flock ] && [ "$what" != killed ] && continue
		line=$(grep "^$what " "$T/r$i")
		case $line in "$what ok"*) st=0 ;; *) st=1 ;; esac
		case $what in
		killed) desc="dirlock SIGKILLed while its command runs: the next holder waits for the command" ;;
		stopped) desc="dirlock SIGSTOPped past the stale age: the next holder waits for the command" ;;
		lost) desc="the locks broken while the command runs: the command gets SIGTERM at once, dirlock exits 1" ;;
		esac
		ok $st "$kind: $desc (${line#"$what "})"
	done
done

# ---- the keeper itself, on a server space --------------------------------------
if [ -z "$server" ]; then
	for _ in 1 2 3 4; do skip "no server space here (see the diagnostics above)"; done
else
	kind=$(space_kind "$server")
	stale=$(stale_of "$server")
	len=$(length_ns "$stale")
	"$DIRLOCK" -d "$server" --stale "$stale" respawn -- sh -c "$LOOP" sh "$len" "$T/p.f" "$T/p.term" 2>"$T/p.err" &
	d=$!
	until_ms 10000 nonempty "$T/p.f"
	c=$(pgrep -P $d -x sh)
	k1=$(pgrep -P $d -x dirlock-keeper)
	[ -n "$k1" ] && kill -KILL "$k1"
	k2=""
	again() { k2=$(pgrep -P $d -x dirlock-keeper) && [ "$k2" != "$k1" ]; }
	until_ms 5000 again
	[ -n "$k1" ] && [ -n "$k2" ] && [ "$k2" != "$k1" ] &&
		grep -q "the keeper of the locks (pid $k1) was killed by SIGKILL; starting another" "$T/p.err"
	ok $? "$kind: the keeper killed (pid ${k1:-none}) while dirlock lives: dirlock starts another (pid ${k2:-none}): $(tr '\n' ' ' <"$T/p.err")"
	kill -KILL $d
	wait $d 2>/dev/null
	line=$(after_holder "$server" "$stale" respawn "$T/p" "$c")
	case $line in ok*) st=0 ;; *) st=1 ;; esac
	ok $st "$kind: ... and the new keeper keeps the locks once dirlock is killed ($line)"

	# dirlock gone, the keeper finds the locks lost: it says so and stops the command.
	"$DIRLOCK" -d "$server" --stale "$stale" orphan -- sh -c "$LOOP" sh 10000000000 "$T/o.f" "$T/o.term" 2>"$T/o.err" &
	d=$!
	until_ms 10000 nonempty "$T/o.f"
	c=$(pgrep -P $d -x sh)
	kill -KILL $d
	wait $d 2>/dev/null
	"$DIRLOCK" break -d "$server" --force orphan >/dev/null 2>&1
	until_ms 10000 nonempty "$T/o.term"
	grep -q "a lock was lost while the command ran: .*sending the command (pid $c) SIGTERM" "$T/o.err"
	ok $? "$kind: dirlock killed, then the locks broken: its keeper tells and sends the command SIGTERM: $(tr '\n' ' ' <"$T/o.err")"
	until_ms 5000 eval '! kill -0 "$c" 2>/dev/null'
	"$DIRLOCK" -d "$server" -n orphan -- true 2>"$T/o.err2"
	is "$?" 0 "$kind: ... and once the command has exited its keeper lets go: the lock is free $(cat "$T/o.err2")"
fi

# ---- a stopped dirlock, in a lock directory -----------------------------------
# dirlock stopped, then its locks broken: the keeper tells the command at
# once (dirlock cannot), and dirlock, continued, does not tell it again.
K=$T/kd
mkdir -p "$K"
"$DIRLOCK" -d "$K" --stale 0.3 told -- sh -c "$LOOP" sh 20000000000 "$T/t.f" "$T/t.term" 2>"$T/t.err" &
d=$!
until_ms 10000 nonempty "$T/t.f"
kill -STOP $d
t0=$(now_ns)
"$DIRLOCK" break -d "$K" --force told >/dev/null 2>&1
until_ms 10000 nonempty "$T/t.term"
term=$(cat "$T/t.term" 2>/dev/null)
took=$(((${term:-$(now_ns)} - t0) / 1000000))
kill -CONT $d
wait $d
st=$?
told=$(grep -c "a lock was lost while the command ran" "$T/t.err")
[ "$st" = 1 ] && [ -s "$T/t.term" ] && [ "$told" = 1 ]
ok $? "dirlock stopped, then the locks broken: its keeper sends the command SIGTERM (after ${took} ms), told once ($told), exit $st (want 1): $(tr '\n' ' ' <"$T/t.err")"
# dirlock stopped while its command ends, past the stale age: the locks
# go stale after the command, which ran under them: dirlock, continued,
# exits with the command's status (3), with a warning.
"$DIRLOCK" -d "$K" --stale 0.3 ended -- sh -c 'date +%s%N >"$1"; sleep 0.5; exit 3' sh "$T/e.f" 2>"$T/e.err" &
d=$!
until_ms 10000 nonempty "$T/e.f"
c=$(pgrep -P $d -x sh)
kill -STOP $d
until_ms 10000 gone "$c"
until_ms 10000 "$DIRLOCK" -d "$K" --stale 0.3 -n ended -- true 2>/dev/null
next=$?
kill -CONT $d
wait $d
st=$?
[ "$next" = 0 ] && [ "$st" = 3 ] && grep -q "held when the command ended" "$T/e.err"
ok $? "dirlock stopped while its command ends, the locks taken after: exit $st (want the command's 3), next holder $next: $(tr '\n' ' ' <"$T/e.err")"

# dirlock SIGKILLed, then its command ends with a waiter of this host in
# line: the owner record's two processes are gone, and the waiter takes
# the lock at once -- before the keeper's look at the end, held back by
# the seam KEEPER_END_DELAY_MS.  The keeper warns that the lock was gone
# when the command ended, not that it was lost while the command ran.
DIRLOCK_TEST_KEEPER_END_DELAY_MS=1500 "$PROGS/dirlock-hooks" -d "$K" --stale 5 orphan -- \
	sh -c 'date +%s%N >"$1"; sleep 0.5' sh "$T/orphan.f" 2>"$T/orphan.err" &
d=$!
until_ms 10000 nonempty "$T/orphan.f"
kill -KILL $d
t0=$(now_ns)
"$DIRLOCK" -d "$K" -w 10 orphan -- true 2>"$T/orphan.err2"
next=$?
took=$((($(now_ns) - t0) / 1000000))
until_ms 10000 grep -q "^dirlock: " "$T/orphan.err"
grep -q "a lock was gone when the command ended" "$T/orphan.err" && ! grep -q "lost while the command ran" "$T/orphan.err"
ok $? "dirlock killed, the lock taken as the command ended: the keeper warns, next holder $next after $took ms: $(tr '\n' ' ' <"$T/orphan.err")"

# ---- a server that stops answering ------------------------------------------
# Redis stopped (SIGSTOP) under a running command for longer than the stale
# age: no refresh gets through, the entry may have expired, so the locks
# count as lost: the command is sent SIGTERM and dirlock exits 1.
if [ -n "$R" ]; then
	"$DIRLOCK" -d "$R" --stale 1 silent -- sh -c "$LOOP" sh 20000000000 "$T/q.f" "$T/q.term" 2>"$T/q.err" &
	d=$!
	until_ms 10000 nonempty "$T/q.f"
	kill -STOP "$REDIS_PID"
	t0=$(now_ns)
	until_ms 15000 nonempty "$T/q.term"
	took=$((($(now_ns) - t0) / 1000000))
	kill -CONT "$REDIS_PID"
	wait $d
	st=$?
	[ "$st" = 1 ] && [ -s "$T/q.term" ] && grep -q "no refresh got through for .* the stale age" "$T/q.err"
	ok $? "Redis: the server silent past the stale age (1 s) under the command: SIGTERM after $took ms, exit $st (want 1): $(tr '\n' ' ' <"$T/q.err")"
	"$DIRLOCK" -d "$R" -w 10 silent -- true 2>"$T/q.err2"
	is "$?" 0 "Redis: ... and the lock is free once the server answers again $(cat "$T/q.err2")"
fi
