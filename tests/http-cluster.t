#!/bin/bash
# tests/http-cluster.t - the board on two hosts (tools/cluster: network
# namespaces, one Redis server, one shared data directory): a short
# lost-update run across both hosts, then the faults of docs/cluster.md:
#   redis     redis-server killed during posting, started again (no data)
#   cut       a host cut off from Redis while it holds the lock, and while
#             it waits for it
#   sigstop   a board process holding the lock stopped (SIGSTOP) past the
#             stale age, then continued
#   fence     a holder that passed the check before the rename, stopped
#             there past the stale age (a test-only hook), then continued
#   kill      a whole host SIGKILLed while it holds the lock
# Each fault prints its "# table:" lines (the figures of docs/cluster.md).
# Boards: stale_age 2 s, lock_timeout 5 s; "slow" has delay_ms 1500 so
# that a request holds the lock long enough to be cut off, stopped or
# killed while it does.  The boards are build/tests/progs/board-hooks
# (the board with the test-only hook DIRLOCK_TEST_STOP_AFTER_CHECK).
# FAULTS="redis cut ..." runs only those (the demonstration always runs).
# Needs root; skips in one line where namespaces cannot be made.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

BOARD=${HOOK_BOARD:-$TOP/$BUILD_DIR/tests/progs/board-hooks}
[ -x "$BOARD" ] || skip_all "$BUILD_DIR/tests/progs/board-hooks is not built (make test-build)"
need_board
need_cmd nginx spawn-fcgi redis-server redis-cli ip nsenter unshare jq curl
[ "$(id -u)" -eq 0 ] || skip_all "needs root (network namespaces)"

FAULTS=${FAULTS:-redis cut sigstop fence kill}
want() { [[ " $FAULTS " == *" $1 "* ]]; }

CLUSTER_ID=dlc$((10000 + RANDOM % 90000))
PORT=$(free_port)
ARM=$T/stop-after-check
export CLUSTER_ID PORT RUN_DIR=$T/run DATA_DIR=$T/data DELAY_MS=20 WORKERS=3 STALE_AGE=2 LOCK_TIMEOUT=5
export CLUSTER_BOARDS=$T/boards.list DIRLOCK_TEST_STOP_AFTER_CHECK=$ARM
cat >"$CLUSTER_BOARDS" <<'EOF2'
none  lock_mode=none  store=log
mkdir lock_mode=mkdir store=log
redis lock_mode=mkdir store=log lock_space=@REDIS@?prefix=redis
slow  lock_mode=mkdir store=log lock_space=@REDIS@?prefix=slow delay_ms=1500
fence lock_mode=mkdir store=log lock_space=@REDIS@?prefix=fence delay_ms=0
EOF2
CLUSTER=$TOP/tools/cluster
# Whatever happens (a failed check, ^C): every process, namespace and link
# of this cluster goes, and so does every background request.
at_exit "\"$CLUSTER\" stop >/dev/null 2>&1"
# shellcheck disable=SC2016 # expanded when the hook runs
at_exit 'kill $(jobs -p) 2>/dev/null'
if ! out=$("$CLUSTER" start 2>&1); then
	grep -q 'cannot be made' <<<"$out" && skip_all "$(tail -n 1 <<<"$out")"
	bail_out "tools/cluster start failed: $out"
fi
declare -A URL
while IFS="=" read -r h u; do URL[$h]=$u; done < <("$CLUSTER" urls)

# hpost HOST BOARD BODY: one post through HOST; prints the status.
hpost() {
	local jar=$T/$1-$2.jar tok
	tok=$(get_token "${URL[$1]}$2/" "$jar")
	curl -s --max-time 15 -b "$jar" -c "$jar" -o "$T/last-$1.body" -w '%{http_code}' \
		--data-urlencode "body=$3" --data-urlencode "token=$tok" "${URL[$1]}$2/post" || true
}
# hpost_bg NAME HOST BOARD BODY: hpost in the background; its status
# goes to $T/NAME.st once it has one (written whole: a rename).
hpost_bg() {
	rm -f "$T/$1.st"
	(
		st=$(hpost "$2" "$3" "$4")
		echo "${st:-000}" >"$T/$1.st.tmp" && mv "$T/$1.st.tmp" "$T/$1.st"
	) &
	bgpid[$1]=$!
}
declare -A bgpid rf_row
stA='' stD='' stE='' stG='' stK='' stP='' # set by bg_wait
# bg_wait NAME VAR: waits for hpost_bg NAME (in this shell, not in a
# command substitution, whose subshell cannot wait for it); sets VAR.
bg_wait() {
	wait "${bgpid[$1]}" 2>/dev/null || true
	printf -v "$2" '%s' "$(cat "$T/$1.st" 2>/dev/null || echo none)"
}
# okif A OP B DESCRIPTION: a TAP line for test A OP B (OP: -gt -le ...).
okif() { if test "$1" "$2" "$3"; then ok 0 "$4"; else ok 1 "$4"; fi; }
# stored BOARD BODY [HOST]: how many times BODY is on BOARD, read through
# HOST [h2] (h1 is the host that is killed).
stored() { api_all "${URL[${3:-h2}]}$1/" | jq --arg b "$2" '[.messages[] | select(.body == $b)] | length'; }
# refusal HOST BOARD: why HOST's BOARD last refused a write (its error log).
refusal() {
	grep -o 'broken as stale\|fence [0-9]* is below the store.s [0-9]*' "$RUN_DIR/$1/log/$2-errors.log" 2>/dev/null |
		tail -n 1 || true
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
rcli() { ip netns exec "$CLUSTER_ID-redis" redis-cli -h 10.0.0.1 -p 6379 "$@"; }
# holding PREFIX: waits (up to 5 s) until somebody holds the lock of the
# board whose lock space has that prefix.
holding() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(rcli EXISTS "{$1}:messages:w")" = 1 ] && return 0
		sleep 0.05
	done
	diag "nobody took the lock of $1 within 5 s"
	return 1
}

# ---- the demonstration, short --------------------------------------------
lu=0
"$TOP/tests/lost-update" -q --expect-loss -c 4 -n 8 -m "none mkdir redis" -o "$T/lu" \
	--host "h1=${URL[h1]}" --host "h2=${URL[h2]}" >"$T/lu.out" 2>&1 || lu=$?
ok $lu "lost-update on both hosts: none loses posts, mkdir and redis lose none"
sed -n '/^mode/,/^$/p' "$T/lu.out" | sed -e '/^$/d' -e 's/^/# table: /'

# ---- redis-server killed during posting ----------------------------------
# Both hosts post to "redis" every 0.1 s; redis-server is killed for
# longer than the lock timeout, started again without data, and each
# host posts 5 more times once it is back.
if want redis; then
	rm -f "$T/rf.back"
	for h in h1 h2; do
		(
			after=0
			for ((i = 1; i <= 80 && after < 5; i++)); do
				[ -e "$T/rf.back" ] && after=$((after + 1))
				st=$(hpost "$h" redis "redis-fault $h $i")
				printf '%s %s\n' "${st:-000}" "redis-fault $h $i"
				sleep 0.1
			done >"$T/rf-$h.out"
		) &
		bgpid[rf-$h]=$!
	done
	sleep 1
	"$CLUSTER" redis-stop
	t0=$(now)
	sleep $((LOCK_TIMEOUT + 1))
	"$CLUSTER" redis-start >/dev/null
	tdown=$(secs "$t0" "$(now)")
	touch "$T/rf.back"
	for h in h1 h2; do wait "${bgpid[rf-$h]}" || true; done
	cat "$T/rf-h1.out" "$T/rf-h2.out" >"$T/rf.out"
	all=$(api_all "${URL[h2]}redis/")
	declare -A copies=()
	count_bodies copies "$all"
	for h in h1 h2; do
		sent=$(wc -l <"$T/rf-$h.out")
		acked=$(grep -c '^303 ' "$T/rf-$h.out" || true)
		refused=$(grep -c '^503 ' "$T/rf-$h.out" || true)
		after=$(tail -n 5 "$T/rf-$h.out" | grep -c '^303 ' || true)
		lost=0
		while read -r st body; do
			[ "$st" = 303 ] || continue
			[ "${copies[$body]:-0}" = 1 ] || lost=$((lost + 1))
		done <"$T/rf-$h.out"
		okif "$refused" -gt 0 "redis down ${tdown} s: $h's posts are refused with 503 meanwhile ($refused)"
		is "$after" 5 "redis back: $h's last 5 posts are acknowledged"
		is "$lost" 0 "redis down and back: every post $h acknowledged is stored exactly once"
		rf_row[$h]="| $h | $sent | $acked | $refused | $((sent - acked - refused)) | $lost |"
	done
	dups=$(jq '[.messages[].no] | length - (unique | length)' <<<"$all")
	is "$dups" 0 "redis down and back: no number given twice"
	diag "table: redis-server killed for ${tdown} s (lock_timeout $LOCK_TIMEOUT s); numbers given twice: $dups" \
		"table: | host | sent | 303 | 503 | other | acknowledged, not stored once |" \
		"table: ${rf_row[h1]}" "table: ${rf_row[h2]}"
fi

# ---- a host cut off from Redis while it holds the lock ---------------------
if want cut; then
	hpost_bg A h1 slow "cut: A on h1 holding"
	holding slow || true
	"$CLUSTER" cut h1
	t0=$(now)
	stB=$(hpost h2 slow "cut: B on h2")
	tB=$(secs "$t0" "$(now)")
	stC=$(hpost h1 slow "cut: C on h1 while cut")
	bg_wait A stA
	is "$stB" 303 "cut while holding: the other host posts (after ${tB} s)"
	okif "${tB%.*}" -le $((STALE_AGE + 2)) "cut while holding: the other host went on within the stale age and its delay (${tB} s)"
	is "$stC" 503 "cut: a new post on the cut-off host gets 503"
	ok "$([[ "$stA" == 5* ]] && echo 0 || echo 1)" "cut while holding: the holder's post gets an error ($stA)"
	nA=$(stored slow 'cut: A on h1 holding')
	is "$nA" 0 "cut while holding: the cut-off holder's late write is not in the log"
	is "$(stored slow 'cut: B on h2')" 1 "cut while holding: the other host's post is stored"
	diag "table: | cut while holding | holder on h1: $stA, stored $nA | next post on h2: $stB after ${tB} s | new post on h1: $stC |"
	"$CLUSTER" heal h1

	# ... and while it waits for the lock.
	hpost_bg E h2 slow "cut: E on h2 holding"
	holding slow || true
	hpost_bg D h1 slow "cut: D on h1 waiting"
	sleep 0.3
	"$CLUSTER" cut h1
	bg_wait E stE
	t0=$(now)
	stF=$(hpost h2 slow "cut: F on h2 after")
	tF=$(secs "$t0" "$(now)")
	bg_wait D stD
	"$CLUSTER" heal h1
	is "$stE" 303 "cut while waiting: the holder on the other host is stored"
	is "$stF" 303 "cut while waiting: the other host goes on (after ${tF} s)"
	okif "${tF%.*}" -le $((STALE_AGE + 2)) "cut while waiting: the other host went on within the stale age and its delay (${tF} s)"
	is "$stD" 503 "cut while waiting: the waiter on the cut-off host gets 503"
	nD=$(stored slow 'cut: D on h1 waiting')
	is "$nD" 0 "cut while waiting: the waiter's post is not in the log"
	is "$(stored slow 'cut: E on h2 holding')$(stored slow 'cut: F on h2 after')" 11 \
		"cut while waiting: the other host's posts are stored"
	diag "table: | cut while waiting | waiter on h1: $stD, stored $nD | holder on h2: $stE | next post on h2: $stF after ${tF} s |"
fi

# ---- a board process holding the lock stopped past the stale age ------------
if want sigstop; then
	hpost_bg G h2 slow "stop: G on h2 stopped"
	holding slow || true
	pids=$(tr '\n' ' ' <"$RUN_DIR/h2/pid/slow.pid")
	# shellcheck disable=SC2086 # a list of pids
	kill -STOP $pids
	at_exit "kill -CONT $pids 2>/dev/null"
	t0=$(now)
	stH=$(hpost h1 slow "stop: H on h1")
	tH=$(secs "$t0" "$(now)")
	# shellcheck disable=SC2086
	kill -CONT $pids
	bg_wait G stG
	why=$(refusal h2 slow)
	is "$stH" 303 "SIGSTOP: the other host posts once the stopped holder is stale (${tH} s)"
	okif "${tH%.*}" -le $((STALE_AGE + 2)) "SIGSTOP: the other host went on within the stale age and its delay (${tH} s)"
	is "$stG" 503 "SIGSTOP: the continued holder's write is refused with 503 (${why:-?})"
	nG=$(stored slow 'stop: G on h2 stopped')
	is "$nG" 0 "SIGSTOP: the continued holder's write is not in the log"
	is "$(stored slow 'stop: H on h1')" 1 "SIGSTOP: the other host's post is stored"
	diag "table: | SIGSTOP during the delay | continued holder on h2: $stG (${why:-?}), stored $nG | next post on h1: $stH after ${tH} s |"
fi

# ---- stopped after the check, before the rename: the fence refuses ----------
# The hook stops the process that removes $ARM right after its check
# passed, holding the lock; past the stale age the other host writes with
# a higher fence; continued, the late writer reaches the fence gate.
if want fence; then
	touch "$ARM"
	hpost_bg P h2 fence "fence: P on h2 late"
	for ((i = 0; i < 100; i++)); do
		[ -e "$ARM" ] || break
		sleep 0.05
	done
	okif "$i" -lt 100 "fence: the holder on h2 passed its check and stopped before the rename"
	stopped=
	for pid in $(tr "\n" " " <"$RUN_DIR/h2/pid/fence.pid"); do
		[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = T ] && stopped=$pid
	done
	at_exit "kill -CONT ${stopped:-0} 2>/dev/null"
	t0=$(now)
	stQ=$(hpost h1 fence "fence: Q on h1")
	tQ=$(secs "$t0" "$(now)")
	[ -n "$stopped" ] && kill -CONT "$stopped"
	bg_wait P stP
	why=$(refusal h2 fence)
	is "$stQ" 303 "fence: the other host posts once the stopped holder is stale (${tQ} s)"
	is "$stP" 503 "fence: the late write that passed the check is refused with 503"
	ok "$([[ "$why" == fence* ]] && echo 0 || echo 1)" "fence: refused by the fence ($why)"
	nP=$(stored fence 'fence: P on h2 late')
	is "$nP" 0 "fence: the late write is not in the log"
	is "$(stored fence 'fence: Q on h1')" 1 "fence: the other host's post is stored"
	diag "table: | SIGSTOP after the check | late holder on h2: $stP (${why:-?}), stored $nP | next post on h1: $stQ after ${tQ} s |"
fi

# ---- a whole host killed while it holds the lock ------------------------------
if want kill; then
	hpost_bg K h1 slow "kill: K on h1 holding"
	holding slow || true
	"$CLUSTER" kill-host h1
	t0=$(now)
	stL=$(hpost h2 slow "kill: L on h2")
	tL=$(secs "$t0" "$(now)")
	bg_wait K stK
	is "$stL" 303 "host killed: the other host posts (after ${tL} s)"
	okif "${tL%.*}" -le $((STALE_AGE + 2)) "host killed: the other host went on within the stale age and its delay (${tL} s)"
	nK=$(stored slow 'kill: K on h1 holding' h2)
	is "$nK" 0 "host killed: the killed holder's post is not in the log (read through h2)"
	is "$(stored slow 'kill: L on h2' h2)" 1 "host killed: the other host's post is stored (read through h2)"
	diag "table: | host h1 killed while holding | killed holder: $stK, stored $nK | next post on h2: $stL after ${tL} s |"
fi

# ---- nothing is left behind ---------------------------------------------------
"$CLUSTER" stop >/dev/null
is "$(ip netns list | grep -c "^$CLUSTER_ID-" || true)" 0 "stop removes every namespace of the cluster"
is "$(ip -o link show | grep -c "$CLUSTER_ID" || true)" 0 "stop removes every link of the cluster"
done_testing
