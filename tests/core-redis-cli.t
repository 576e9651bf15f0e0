#!/bin/bash
# core-redis-cli.t - the dirlock command on a private Redis server, over
# its unix socket and over TCP on 127.0.0.1: it runs the command under the
# lock with DIRLOCK_FENCE set, -n and -w conflict as in a directory, two
# commands never interleave, $DIRLOCK_DIR names the space, status shows
# the owner record, break refuses a live owner and breaks a dead one (or
# any with --force) and refuses a name only a reader holds, -n takes a dead owner's lock at once, cleanup removes
# a dead owner's leftovers, and a lock the server lost (FLUSHALL, a
# restart) is reported as such.
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/redis-lib.sh"
redis_available || {
	echo "1..0 # SKIP $REDIS_WHY"
	exit 0
}
plan 22
port=$(redis_free_port) || {
	echo "Bail out! no free port"
	exit 1
}
redis_start -p "$port" || exit 1
U=$REDIS_SPACE
TCP="redis://127.0.0.1:$port/0?prefix=cli"

"$DIRLOCK" -d "$U" a -- sh -c 'echo "$DIRLOCK_FENCE" >"$1"' sh "$T/f1"
is "$?" 0 "runs the command under a lock on the unix socket"
"$DIRLOCK" -d "$U" a -- sh -c 'echo "$DIRLOCK_FENCE" >"$1"' sh "$T/f2"
cmp_num "$(cat "$T/f2")" -gt "$(cat "$T/f1")" "DIRLOCK_FENCE grows from one run to the next ($(cat "$T/f1") < $(cat "$T/f2"))"
"$DIRLOCK" -d "$TCP" b c -- sh -c 'echo "$DIRLOCK_FENCES" >"$1"' sh "$T/fs"
grep -qE '^b=[0-9]+ c=[0-9]+$' "$T/fs"
ok $? "over TCP, two names at once, DIRLOCK_FENCES: $(cat "$T/fs")"

"$DIRLOCK" -d "$TCP" held -- sleep 3 &
holder=$!
sleep 0.4
"$DIRLOCK" -d "$TCP" -n held -- true 2>"$T/err"
is "$?" 1 "-n on a held lock exits 1"
grep -q "held by pid" "$T/err"
ok $? "... naming the holder: $(cat "$T/err")"
t0=$(date +%s%N)
"$DIRLOCK" -d "$TCP" -w 0.3 held -- true 2>/dev/null
st=$?
ms=$((($(date +%s%N) - t0) / 1000000))
is "$st" 1 "-w 0.3 times out with status 1"
cmp_num "$ms" -lt 1000 "... in time (${ms} ms)"
"$DIRLOCK" status -d "$TCP" held >"$T/status"
grep -qE "^held .*pid=[0-9]+ host=.* mode=exclusive owner=alive fresh command=[0-9]+ token=[0-9a-f]{32} start=[0-9]+ acquired=" "$T/status"
ok $? "status shows the owner record: $(cat "$T/status")"
"$DIRLOCK" break -d "$TCP" held >/dev/null 2>&1
is "$?" 1 "break refuses a live owner's lock"
"$DIRLOCK" status -d "$U" held | grep -q "held *free"
ok $? "the prefix separates spaces on one server (cli: held, dirlock: free)"
wait $holder
"$DIRLOCK" -d "$U" -s rd -- sh -c ': >"$1"; sleep 5' sh "$T/reading" &
reader=$!
for _ in $(seq 100); do [ -e "$T/reading" ] && break; sleep 0.05; done
"$DIRLOCK" break -d "$U" --force rd 2>"$T/err"
st=$?
grep -q "no exclusive holder but is held by 1 reader" "$T/err"
is "$?.$st" 0.1 "break of a name only a reader holds is refused, --force or not: $(cat "$T/err")"
kill $reader
wait $reader 2>/dev/null

# Two commands appending under the same lock never interleave.
for i in 1 2 3 4; do
	"$DIRLOCK" -d "$U" log -- sh -c 'for j in 1 2 3 4 5; do echo "'$i' $j" >>"'"$T"'/out"; sleep 0.01; done' &
	pids="${pids:-} $!"
done
# shellcheck disable=SC2086
wait $pids
is "$(awk '{print $1}' "$T/out" | uniq | wc -l)" 4 "four locked writers wrote four uninterrupted runs"

DIRLOCK_DIR="$U" "$DIRLOCK" env -- true
is "$?" 0 "\$DIRLOCK_DIR names a Redis space"
DIRLOCK_DIR="$U" "$DIRLOCK" status | grep -q . && st=1 || st=0
is "$st" 0 "... and status through it lists nothing once everything is released"

# A dead owner: dirlock, its keeper and its command killed (SIGKILL) while
# holding.
"$DIRLOCK" -d "$U" dead -- sleep 30 &
d=$!
sleep 0.4
kill_holder $d
sleep 0.1
"$DIRLOCK" status -d "$U" dead | grep -q "owner=dead STALE"
ok $? "status shows the owner as dead: $("$DIRLOCK" status -d "$U" dead)"
"$DIRLOCK" break -d "$U" dead
is "$?" 0 "break without --force breaks a dead owner's lock"
"$DIRLOCK" -d "$U" forced -- sleep 3 2>"$T/forced.err" &
f=$!
sleep 0.4
"$DIRLOCK" break -d "$U" --force forced >/dev/null
is "$?" 0 "break --force breaks a live owner's lock"
wait $f
is "$?/$(grep -c "a lock was lost while the command ran: lock 'forced' was lost: .*broken" "$T/forced.err")" 1/1 \
	"... and its dirlock reports the lock lost when the command ends: $(tail -n 1 "$T/forced.err")"

# -n (one try) judges the owner as a waiter would: dead, its lock is
# broken and taken at once, not refused for the whole stale age.
"$DIRLOCK" -d "$U" dead3 -- sleep 30 &
d=$!
sleep 0.4
kill_holder $d
"$DIRLOCK" -d "$U" -n dead3 -- true 2>"$T/err"
is "$?" 0 "-n takes the lock of a dirlock killed with its command $(cat "$T/err")"

"$DIRLOCK" -d "$U" dead2 -- sleep 30 &
d=$!
sleep 0.4
kill_holder $d
before=$("$DIRLOCK" status -d "$U" dead2)
"$DIRLOCK" cleanup -d "$U"
after=$("$DIRLOCK" status -d "$U" dead2)
case $before in *owner=dead*) [ "$after" = "dead2                    free" ] ;; *) false ;; esac
ok $? "cleanup removes a dead owner's lock (before: ${before%% token=*}; after: $after)"

# A lock the server lost while the command ran -- FLUSHALL, a restart
# without its data -- is reported as lost by the server, not as broken as
# stale (status: the conflict code, as for any lock lost while it ran).
lost_by_server() { # lost_by_server NAME DESCRIPTION COMMAND... (which makes the server lose it)
	local name=$1 what=$2 p st
	shift 2
	"$DIRLOCK" -d "$U" --stale 0.9 "$name" -- sleep 1.5 2>"$T/$name.err" &
	p=$!
	sleep 0.4
	"$@" >/dev/null
	wait $p
	st=$?
	[ "$st" = 1 ] && ! grep -q stale "$T/$name.err" &&
		grep -q "a lock was lost while the command ran: lock '$name' was lost: the Redis server no longer has it" "$T/$name.err"
	ok $? "$what: exit $st (want 1): $(tr '\n' '|' <"$T/$name.err")"
}
restart() { redis_stop && redis_start -p "$port"; }
lost_by_server flushed "FLUSHALL under a running command" redis_cli flushall
lost_by_server restarted "a restart under a running command" restart
