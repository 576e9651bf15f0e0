#!/bin/bash
# permits.t - counting locks across processes, in a lock directory and on
# each private server whose backend has them (tests/spaces-lib.sh: Redis,
# lib/redis/redis_permits.c): 16 processes share 4 permits for a few
# seconds and never more than 4 hold at once (a shared-memory snapshot of
# who is inside, tests/progs/permitstress.c), while all 4 are used at
# once; the same checker reports a lock asked for 5 permits when it allows
# 4 (this test can fail); holders stopped and killed at random while 16
# processes run give their permits back (none is leaked: all 4 can be had
# at the end); and the command: `dirlock --permits N`, -n, a holder asking
# another N, status, a killed command's permit, and what it refuses; and
# in each space: status --json (the holders and the waiter of a counting
# lock), a holder killed among live ones (not the first to expire)
# giving its permit back at once to a waiter and to -n; and deadlocks
# knotted through a counting lock (issue 38): the knot of
# tests/progs/deadlockrounds.c made KNOT_ROUNDS times (default 50), its
# waits begun at once, exactly one of its four processes told each time
# and the others getting their locks; and random mixes of a counting lock
# and plain locks against the truth in shared memory
# (tests/progs/deadlockstress.c --permits 2): every report a deadlock
# that existed, none unreported past 1 s.
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
spaces_start || exit 1
L="$SPACE_DIR"
SECS=${PERMITS_SECONDS:-2}
# The spaces with counting locks (etcd has none: its acquire says so).
spaces=()
while read -r space; do
	kind=$(space_kind "$space")
	case $kind in
	directory | Redis) spaces+=("$space") ;;
	*) diag "$kind: skipped: no counting locks there" ;;
	esac
done < <(test_spaces)
plan $((13 + 9 * ${#spaces[@]}))
ROUNDS=${KNOT_ROUNDS:-50}

# What status --json says of lock js, in one line.
json_summary='
import json, sys
d = json.load(sys.stdin)
lock = [x for x in d["locks"] if x["name"] == "js"][0]
held = [h for h in lock["holders"] if h["kind"] == "permit" and h["pid"] > 0 and h["alive"]]
print("format=%s permits=%s holders=%d waiters=%s queue_length=%s" % (d["format"], lock["permits"], len(held),
      ",".join(w["kind"] for w in lock["waiters"]), lock["queue_length"]))'
json_want="format=dirlock-status/1 permits=2 holders=2 waiters=permit queue_length=1"
for i in "${!spaces[@]}"; do
	space=${spaces[$i]}
	kind=$(space_kind "$space")
	out=$("$PROGS/permitstress" "$(space_sub "$space" "a$i")" 4 4 16 "$SECS" 2>"$T/err")
	ok $? "$kind: 16 processes, 4 permits, ${SECS} s: never more than 4 inside, all 4 used ($out)"
	head -n 5 "$T/err" | while read -r l; do diag "$l"; done
	out=$("$PROGS/permitstress" "$(space_sub "$space" "b$i")" 5 4 16 1 2>/dev/null)
	st=$?
	diag "$kind: asked for 5, allowed 4: $out"
	case $out in *over=0*) st=0 ;; esac
	cmp_num "$st" -ne 0 "$kind: a lock asked for 5 permits lets a fifth in, which the checker reports: it can fail"
	out=$("$PROGS/permitstress" "$(space_sub "$space" "c$i")" 4 4 16 "$SECS" --kill 2>"$T/err")
	ok $? "$kind: holders killed at random: never more than 4 inside, no permit leaked ($out)"
	head -n 5 "$T/err" | while read -r l; do diag "$l"; done
	# status --json (man dirlock, STATUS AS JSON): two holders, one waiter.
	sub=$(space_sub "$space" "j$i")
	pids=()
	for k in 1 2 3; do
		"$DIRLOCK" -d "$sub" --permits 2 js -- sleep 1 &
		pids+=($!)
	done
	got=""
	for _ in $(seq 40); do
		"$DIRLOCK" status --json -d "$sub" js >"$T/json" 2>"$T/err"
		got=$(python3 -c "$json_summary" <"$T/json" 2>&1)
		[ "$got" = "$json_want" ] && break
		sleep 0.05
	done
	is "$got" "$json_want" "$kind: status --json lists the 2 permit holders and the waiter"
	"$DIRLOCK" status -d "$sub" js >"$T/status" 2>&1
	# Only the counting lock's line and its holders' and waiter's: no
	# whole lock of js is shown, for there is none.
	got="$(grep -c '^js  *permits=2 held=' "$T/status"):$(grep -v -c -e '^js  *permits=2 held=' \
		-e '^  permit ' -e '^  waiter ' "$T/status")"
	is "$got" "1:0" "$kind: status shows the counting lock and no whole lock ($(head -1 "$T/status"))"
	wait "${pids[@]}"
	# kill -9 of a holder (and its command) that is neither the first
	# nor the last of three: a waiter queued before gets its permit at
	# once; then the third's is taken by -n.
	sub=$(space_sub "$space" "k$i")
	hs=()
	for k in 1 2 3; do
		"$DIRLOCK" -d "$sub" --permits 3 dk -- sleep 6 &
		hs+=($!)
		sleep 0.1
	done
	"$DIRLOCK" -d "$sub" --permits 3 -w 5 dk -- sh -c "date +%s%N >'$T/in$i'; exec sleep 6" &
	hs+=($!)
	sleep 0.3
	t0=$(date +%s%N)
	pkill -KILL -P "${hs[1]}"
	kill -KILL "${hs[1]}"
	for _ in $(seq 40); do
		[ -s "$T/in$i" ] && break
		sleep 0.05
	done
	ms=$(($(cat "$T/in$i" 2>/dev/null || date +%s%N) / 1000000 - t0 / 1000000))
	cmp_num "$ms" -lt 1000 "$kind: a waiter gets a killed holder's permit at once (${ms} ms)"
	pkill -KILL -P "${hs[2]}"
	kill -KILL "${hs[2]}"
	t0=$(date +%s%N)
	"$DIRLOCK" -n -d "$sub" --permits 3 dk -- true 2>"$T/err"
	st=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	is "$st:$((ms < 1000))" "0:1" "$kind: and -n another's (${ms} ms) $(cat "$T/err")"
	for p in "${hs[@]}"; do
		pkill -KILL -P "$p"
		kill -KILL "$p"
	done 2>/dev/null
	wait "${hs[@]}" 2>/dev/null
	# knots: A and B hold the 2 permits of S, C holds L1, D L2; A asks
	# for L1, B for L2, C and D for S
	out=$("$PROGS/deadlockrounds" "$(space_sub "$space" "n$i")" knot "$ROUNDS" 2>"$T/err")
	ok $? "$kind: a knot through a counting lock ${ROUNDS} times: exactly one of its four told each time ($out)"
	head -n 5 "$T/err" | while read -r l; do diag "$l"; done
	out=$("$PROGS/deadlockstress" "$(space_sub "$space" "m$i")" 8 3 "$SECS" --permits 2 2>"$T/err")
	ok $? "$kind: a counting lock of 2 and plain locks in random orders, ${SECS} s: every report a deadlock, none unreported past 1 s ($out)"
	head -n 5 "$T/err" | while read -r l; do diag "$l"; done
done

# ---- the command ----
cd "$T" || exit 1
# Their pids, waited for by name: a bare `wait` would wait for the
# private servers too.
cmds=()
for i in 1 2 3; do
	"$DIRLOCK" -d "$L" --permits 2 sem -- sh -c "echo start $i \$(date +%s%N) >>'$T/log'; sleep 0.6; echo end $i \$(date +%s%N) >>'$T/log'" &
	cmds+=($!)
done
sleep 0.2
"$DIRLOCK" status -d "$L" sem >"$T/status"
grep -q "^sem .*permits=2 held=2" "$T/status"
ok $? "status shows the counting lock: $(head -1 "$T/status")"
is "$(grep -c "^  permit pid=.*alive fresh" "$T/status")" 2 "... and each holder on a line of its own"
"$DIRLOCK" -d "$L" --permits 2 -n sem -- true 2>"$T/err"
is "$?" 1 "-n with both permits held exits 1: $(cat "$T/err")"
"$DIRLOCK" -d "$L" --permits 3 -w 5 sem -- true 2>"$T/err"
is "$?" 2 "asking 3 permits while holders asked 2: refused at once (status 2)"
grep -q "held with 2 permits" "$T/err"
ok $? "... saying why: $(cat "$T/err")"
wait "${cmds[@]}"
# At most two ran at once: at every start, count the commands running.
max=$(sort -k3 -n "$T/log" | awk '$1 == "start" { n++; if (n > m) m = n } $1 == "end" { n-- } END { print m }')
is "$max" 2 "at most 2 commands ran at once"
is "$(grep -c start "$T/log")" 3 "and the third ran after one of them"

# A command killed with its dirlock gives its permit back at once.
"$DIRLOCK" -d "$L" --permits 1 k -- sleep 30 &
holder=$!
sleep 0.3
pkill -KILL -P "$holder"
kill -KILL "$holder"
wait "$holder" 2>/dev/null
t0=$(date +%s%N)
"$DIRLOCK" -d "$L" --permits 1 -w 5 k -- true
st=$?
ms=$((($(date +%s%N) - t0) / 1000000))
is "$st" 0 "a killed command's permit is taken again"
cmp_num "$ms" -lt 1000 "... at once (${ms} ms)"

"$DIRLOCK" -d "$L" --permits 0 x -- true 2>/dev/null
is "$?" 2 "--permits 0 is refused"
"$DIRLOCK" -d "$L" --permits 2 x y -- true 2>/dev/null
is "$?" 2 "--permits takes one name"
"$DIRLOCK" -d "$L" --permits 2 -s x -- true 2>/dev/null
is "$?" 2 "--permits takes no mode"
"$DIRLOCK" -d "flock:$L" --permits 2 x -- true 2>"$T/err"
grep -q "no counting locks" "$T/err"
ok $? "flock spaces have none: $(cat "$T/err")"
