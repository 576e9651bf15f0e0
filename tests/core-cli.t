#!/bin/bash
# core-cli.t - the dirlock command as shell users meet it: exit statuses,
# -n/-w/-E, fractional timeouts, the default directory, status, break
# (of a live owner, of a name only readers hold, of a free one), cleanup, invalid names, signal forwarding, a SIGKILLed dirlock whose
# command keeps the lock, a fence that cannot be drawn (a corrupt counter,
# a full tmpfs), the stale age's floor, exclusion between two
# commands, and a space whose backend module is missing.
. "$(dirname "$0")/tap.sh"
plan 40
L="$T/locks"
cd "$T" || exit 1

"$DIRLOCK" -d "$L" a -- sh -c 'exit 7'
is "$?" 7 "exits with the command's status"
"$DIRLOCK" -d "$L" a -- true
is "$?" 0 "exit 0 for a command that succeeds"
"$DIRLOCK" a -- sh -c 'test -d locks/a.lock'
is "$?" 0 "default lock directory is ./locks"
DIRLOCK_DIR="$T/envlocks" "$DIRLOCK" a -- sh -c 'test -d "$DIRLOCK_DIR/a.lock"'
is "$?" 0 "\$DIRLOCK_DIR is honoured"

"$DIRLOCK" -d "$L" held -- sleep 3 &
holder=$!
sleep 0.3
"$DIRLOCK" -d "$L" -n held -- true 2>"$T/err"
is "$?" 1 "-n on a held lock exits 1"
grep -q "held by pid" "$T/err"
ok $? "with a one-line reason on stderr: $(cat "$T/err")"
"$DIRLOCK" -d "$L" -n -E 42 held -- true 2>/dev/null
is "$?" 42 "-E sets the conflict exit status"
t0=$(date +%s%N)
"$DIRLOCK" -d "$L" -w 0.3 held -- true 2>/dev/null
st=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
is "$st" 1 "-w 0.3 times out with status 1"
cmp_num "$ms" -lt 1000 "fractional timeout honoured (${ms} ms)"
"$DIRLOCK" status -d "$L" held | grep -q "pid=.*alive fresh"
ok $? "status shows the holder as alive"
"$DIRLOCK" status held -d "$L" | grep -q "^held .*pid="
ok $? "subcommand options may follow the names"
"$DIRLOCK" break -d "$L" held >/dev/null 2>&1
is "$?" 1 "break refuses a live owner's lock"
wait $holder

# A name only readers hold is not free: break says what holds it (the
# previous build said "lock 'rd' is free", exit 2), with or without
# --force, which takes an exclusive hold away only.
"$DIRLOCK" -d "$L" -s rd -- sh -c ': >"$1"; sleep 5' sh "$T/reading" &
reader=$!
for _ in $(seq 100); do [ -e "$T/reading" ] && break; sleep 0.05; done
"$DIRLOCK" break -d "$L" rd 2>"$T/err"
is "$?" 1 "break of a name a live reader holds exits 1"
grep -q "no exclusive holder but is held by 1 reader; not broken" "$T/err"
ok $? "... saying what holds it: $(cat "$T/err")"
"$DIRLOCK" break -d "$L" --force rd 2>/dev/null
is "$?" 1 "... and --force, which breaks an exclusive hold only, too"
kill $reader
wait $reader 2>/dev/null
"$DIRLOCK" break -d "$L" nobody 2>"$T/err"
is "$?" 2 "break of a free lock exits 2 ($(cat "$T/err"))"

"$DIRLOCK" -d "$L" 'bad/name' -- true 2>"$T/err"
is "$?" 2 "an invalid name is refused (status 2)"
grep -q "invalid lock name" "$T/err"
ok $? "... with a clear message"

# Two commands appending under the same lock never interleave.
for i in 1 2 3 4; do
	"$DIRLOCK" -d "$L" log -- sh -c 'for j in 1 2 3 4 5; do echo "'$i' $j" >>"'"$T"'/out"; sleep 0.01; done' &
done
wait
runs=$(awk '{print $1}' "$T/out" | uniq | wc -l)
is "$runs" 4 "four locked writers wrote four uninterrupted runs"

# Signals reach the command, and the lock is released afterwards.
"$DIRLOCK" -d "$L" sig -- sh -c 'trap "exit 9" TERM; while :; do sleep 0.05; done' &
p=$!
sleep 0.3
kill -TERM $p
wait $p
is "$?" 9 "SIGTERM is forwarded to the command"
"$DIRLOCK" -d "$L" -n sig -- true
is "$?" 0 "and the lock is free afterwards"

# Every signal dirlock can catch goes to the command, and dirlock (with
# the lock) lives on as long as the command does.  A signal ignored when
# the test started (HUP under nohup) stays ignored in the command's shell,
# which cannot trap it: such a signal is left out.
sigs="" want=""
for s in ALRM HUP PIPE USR1 USR2; do
	[ -n "$(trap -p "$s")" ] && continue
	sigs="$sigs $s" want="$want$s "
done
"$DIRLOCK" -d "$L" sigs -- sh -c 'for s in '"$sigs"'; do trap "echo $s >>'"$T"'/got" $s; done
	while [ ! -e '"$T"'/stop ]; do sleep 0.02; done' &
p=$!
sleep 0.3
for s in $sigs; do kill -$s $p; sleep 0.1; done
n=$(echo $sigs | wc -w)
for _ in $(seq 100); do # the command's traps run between its sleeps
	[ "$(wc -l <"$T/got" 2>/dev/null || echo 0)" -ge "$n" ] && break
	sleep 0.05
done
is "$(sort "$T/got" 2>/dev/null | tr '\n' ' ')" "$want" "$(echo $sigs | sed 's/ /, /g') are passed on to the command"
kill -0 $p 2>/dev/null
ok $? "dirlock lives on while its command does"
"$DIRLOCK" -d "$L" -n sigs -- true 2>/dev/null
is "$?" 1 "and the lock stays held"
touch "$T/stop"
wait $p
is "$?" 0 "dirlock exits with the command's status once it ends"

# A SIGKILLed dirlock: its command holds the lock on (flock(1) does the
# same), and the next taker gets it the moment the command ends.
"$DIRLOCK" -d "$L" killed -- sh -c 'sleep 1.2; echo done >"'"$T"'/killed-done"' &
p=$!
sleep 0.3
kill -9 $p
wait $p 2>/dev/null
"$DIRLOCK" -d "$L" -n killed -- true 2>/dev/null
is "$?" 1 "a SIGKILLed dirlock's lock stays held while its command runs"
"$DIRLOCK" -d "$L" -w 5 killed -- sh -c 'cat "'"$T"'/killed-done"' >"$T/killed-seen" 2>&1
is "$?/$(cat "$T/killed-seen")" "0/done" "the next taker gets it once the command has ended, not before"

# The command gets its locks' fences, growing from one run to the next.
f1=$("$DIRLOCK" -d "$L" fenced -- sh -c 'echo $DIRLOCK_FENCE')
f2=$("$DIRLOCK" -d "$L" fenced other -- sh -c 'echo $DIRLOCK_FENCE $DIRLOCK_FENCES')
set -- $f2
[ -n "$f1" ] && [ "$1" -gt "$f1" ] && [ "$2" = "fenced=$1" ] && case "$3" in other=[0-9]*) true ;; *) false ;; esac
ok $? "DIRLOCK_FENCE and DIRLOCK_FENCES reach the command and grow: $f1, then $f2"

# A fence that cannot be drawn stops the command before it runs (status
# 3, the reason, the locks released): a counter that is not dirlock's ...
"$DIRLOCK" -d "$L" corrupt -- true && rm -f "$L/corrupt.fence/"* && touch "$L/corrupt.fence/99999999999999999999"
"$DIRLOCK" -d "$L" corrupt -- touch "$T/ran-corrupt" 2>"$T/err"
st=$?
[ $st = 3 ] && [ ! -e "$T/ran-corrupt" ] && grep -q "no fence for lock 'corrupt', so the command was not run" "$T/err" &&
	"$DIRLOCK" status -d "$L" corrupt | grep -q "corrupt *free"
ok $? "a corrupt fence counter: exit $st (want 3), not run, lock free: $(cat "$T/err")"
# ... and a full disk: a tmpfs of N inodes, in a mount namespace of its
# own, for every N from one too few for the lock to one that fits the
# fence too.  At no N may the command run without its fence.
cat >"$T/full.sh" <<'EOS'
mnt=$1 dl=$2
mkdir -p "$mnt" || exit 99
for n in 3 4 5 6 7 8; do
	mount -t tmpfs -o size=64k,nr_inodes=$n tmpfs "$mnt" || exit 99
	"$dl" -d "$mnt/locks" full -- sh -c 'echo "${DIRLOCK_FENCE:-none}" >"$1"' sh "$mnt.ran" 2>"$mnt.err"
	echo "$n $? $(cat "$mnt.ran" 2>/dev/null || echo not-run) $("$dl" status -d "$mnt/locks" full | tr -s ' ')"
	grep -q "No space left on device" "$mnt.err" && sed 's/^/#   /' "$mnt.err" >&2
	rm -f "$mnt.ran"
	umount "$mnt"
done
EOS
if unshare --mount --propagation private bash "$T/full.sh" "$T/small" "$DIRLOCK" >"$T/full.out" 2>"$T/full.err" &&
	[ -s "$T/full.out" ]; then
	sed 's/^/# nr_inodes /' "$T/full.out"
	# each line: N STATUS FENCE-OR-not-run "full free"
	awk '$2 == 3 && $3 == "not-run" { three++ }
		!(($2 == 0 && $3 ~ /^[0-9]+$/) || (($2 == 2 || $2 == 3) && $3 == "not-run")) { bad++ }
		$4 " " $5 != "full free" { bad++ }
		END { exit !(three > 0 && bad == 0) }' "$T/full.out"
	ok $? "a full tmpfs: where the lock fits and its fence does not, exit 3 and nothing run; never run without a fence; the lock always free after"
	grep "^#" "$T/full.err" | head -n 4
else
	skip "cannot mount a small tmpfs in a mount namespace of its own here (unshare -m and mount need root): $(head -c 200 "$T/full.err")"
fi

# Out of descriptors before the command is forked: the step that failed
# is named (the previous build said "cannot fork: Too many open files").
(ulimit -n 4 && exec "$DIRLOCK" -d "$L" fds -- true) 2>"$T/err"
st=$?
grep -q "cannot make the pipe that lets the command run: Too many open files" "$T/err"
is "$?.$st" 0.126 "no descriptor for the command's pipe: exit 126, naming the step ($(cat "$T/err"))"

# The stale age has a floor, refused with a clear message.
"$DIRLOCK" -d "$L" --stale 0.05 tiny -- true 2>"$T/err"
is "$?" 2 "a stale age below 0.1 s is refused (status 2)"
grep -q "below the smallest" "$T/err"
ok $? "... saying why: $(cat "$T/err")"
"$DIRLOCK" status -d "$L" --stale 0.05 2>"$T/err"
st=$?
grep -q "below the smallest" "$T/err"
is "$?.$st" 0.2 "... and by status, which judges with it (the previous build took it)"
"$DIRLOCK" --help | grep -q -- "--shared"
ok $? "--help documents the options"

# A subcommand's option given without its argument, or not its own.
"$DIRLOCK" status -d 2>"$T/err"
st=$?
[ "$st" = 2 ] && grep -q "option '-d' needs an argument" "$T/err"
ok $? "status -d without a space: status 2, saying the option needs an argument: $(cat "$T/err")"
"$DIRLOCK" status --force -d "$L" 2>"$T/err"
st=$?
[ "$st" = 2 ] && grep -q "option '--force' is not valid here" "$T/err"
ok $? "status --force: status 2, not an option of status: $(cat "$T/err")"

# A space whose backend module is not there says where it was looked
# for; a note beside it (a package's, for the package that brings the
# module) says what to install; the module, when there, wins over its
# note.
M="$T/modules"
mkdir -p "$M"
DIRLOCK_MODULE_DIR=$M "$DIRLOCK" -d redis://127.0.0.1:1 -n x -- true 2>"$T/err"
st=$?
[ "$st" = 2 ] && grep -qF "no backend module 'redis.so' in $M" "$T/err"
ok $? "no redis.so: status 2, saying where it was looked for: $(cat "$T/err")"
echo "its backend is not installed: install the package libdirlock-redis" >"$M/redis.absent"
DIRLOCK_MODULE_DIR=$M "$DIRLOCK" -d rediss://127.0.0.1:1 -n x -- true 2>"$T/err"
st=$?
[ "$st" = 2 ] && grep -qF "lock space 'rediss://...': its backend is not installed: install the package libdirlock-redis" "$T/err"
ok $? "a note for it: status 2, saying what to install: $(cat "$T/err")"
if [ -f "$BUILD_DIR/dirlock/redis.so" ]; then
	ln -s "$BUILD_DIR/dirlock/redis.so" "$M/redis.so"
	DIRLOCK_MODULE_DIR=$M "$DIRLOCK" --help >"$T/out"
	grep -q '^  redis\[s\]://' "$T/out" && ! grep -q 'not in this build' "$T/out"
	ok $? "the module beside its note: --help lists redis:// as there, and no note"
else
	skip "this build has no Redis module"
fi
