#!/bin/bash
# tests/cluster-faults - (not yet part of make test: see its FAILING note) the board on two hosts (tools/cluster: network
# namespaces, one Redis server, one shared data directory), a short
# lost-update run across both hosts and the faults of docs/cluster.md:
#   redis   redis-server killed during posting, started again (no data)
#   cut     a host cut off from Redis while it holds the lock, and while
#           it waits for it
#   stop    the board processes of a host, one holding the lock, stopped
#           (SIGSTOP) past the stale age, then continued
#   kill    a whole host SIGKILLed while it holds the lock
# Each fault prints one "# table:" line (the figures of docs/cluster.md).
# Boards: stale_age 2 s, lock_timeout 5 s; "slow" has delay_ms 1500 so
# that a request holds the lock long enough to be cut off, stopped or
# killed while it does.  Needs root; skips where namespaces cannot be made.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

need_board
need_cmd nginx spawn-fcgi redis-server redis-cli ip nsenter unshare jq curl
[ "$(id -u)" -eq 0 ] || skip_all "needs root (network namespaces)"

CLUSTER_ID=dlc$((10000 + RANDOM % 90000))
PORT=$(free_port)
export CLUSTER_ID PORT RUN_DIR=$T/run DATA_DIR=$T/data DELAY_MS=20 WORKERS=3 STALE_AGE=2 LOCK_TIMEOUT=5
export CLUSTER_BOARDS=$T/boards.list
cat >"$CLUSTER_BOARDS" <<'EOF'
none  lock_mode=none  store=log
mkdir lock_mode=mkdir store=log
redis lock_mode=mkdir store=log lock_space=@REDIS@?prefix=redis
slow  lock_mode=mkdir store=log lock_space=@REDIS@?prefix=slow delay_ms=1500
EOF
CLUSTER=$TOP/tools/cluster
at_exit "\"$CLUSTER\" stop >/dev/null 2>&1"
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
		--data-urlencode "body=$3" --data-urlencode "token=$tok" "${URL[$1]}$2/post" || echo 000
}
# hpost_bg NAME HOST BOARD BODY: hpost in the background; status in $T/NAME.st.
hpost_bg() {
	(hpost "$2" "$3" "$4" >"$T/$1.st") &
	echo $! >"$T/$1.pid"
}
bg_wait() { wait "$(cat "$T/$1.pid")" 2>/dev/null || true; cat "$T/$1.st"; }
# okif A OP B DESCRIPTION: a TAP line for test A OP B (OP: -gt -le ...).
okif() { if test "$1" "$2" "$3"; then ok 0 "$4"; else ok 1 "$4"; fi; }
# stored BOARD BODY: how many times BODY is on BOARD (read through h1).
stored() { api_all "${URL[h1]}$1/" | jq --arg b "$2" '[.messages[] | select(.body == $b)] | length'; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# ---- the demonstration, short --------------------------------------------
lu=0
"$TOP/tests/lost-update" -q --expect-loss -c 6 -n 8 -m "none mkdir redis" -o "$T/lu" \
	--host "h1=${URL[h1]}" --host "h2=${URL[h2]}" >"$T/lu.out" 2>&1 || lu=$?
ok $lu "lost-update on both hosts: none loses posts, mkdir and redis lose none"
sed -n '/^mode/,/^$/p' "$T/lu.out" | sed -e '/^$/d' -e 's/^/# table: /'

# ---- redis-server killed during posting ----------------------------------
for h in h1 h2; do
	(for i in $(seq 1 30); do
		printf '%s %s\n' "$(hpost "$h" redis "redis-fault $h $i")" "redis-fault $h $i"
		sleep 0.1
	done >"$T/rf-$h.out") &
	echo $! >"$T/rf-$h.pid"
done
sleep 1
"$CLUSTER" redis-stop
sleep 2
"$CLUSTER" redis-start >/dev/null
for h in h1 h2; do wait "$(cat "$T/rf-$h.pid")" || true; done
cat "$T/rf-h1.out" "$T/rf-h2.out" >"$T/rf.out"
acked=$(grep -c '^303 ' "$T/rf.out" || true)
refused=$(grep -c '^503 ' "$T/rf.out" || true)
after=$(for h in h1 h2; do tail -n 5 "$T/rf-$h.out"; done | grep -c '^303 ' || true)
all=$(api_all "${URL[h1]}redis/")
lost=0
while read -r st body; do
	[ "$st" = 303 ] || continue
	n=$(jq --arg b "$body" '[.messages[] | select(.body == $b)] | length' <<<"$all")
	[ "$n" = 1 ] || lost=$((lost + 1))
done <"$T/rf.out"
dups=$(jq '[.messages[].no] | length - (unique | length)' <<<"$all")
okif "$refused" -gt 0 "redis down: posts are refused with 503 meanwhile ($refused)"
is "$after" 10 "redis back: the last 5 posts of each host are stored"
is "$lost" 0 "redis down and back: every acknowledged post is stored exactly once"
is "$dups" 0 "redis down and back: no number given twice"
diag "table: redis | sent 60 | acknowledged $acked | 503 $refused | other $((60 - acked - refused)) | acknowledged not stored once $lost | duplicated numbers $dups"

# ---- a host cut off from Redis while it holds the lock ---------------------
hpost_bg A h1 slow "cut: A on h1 holding"
sleep 0.5
"$CLUSTER" cut h1
t0=$(now)
stB=$(hpost h2 slow "cut: B on h2")
tB=$(secs "$t0" "$(now)")
stC=$(hpost h1 slow "cut: C on h1 while cut")
stA=$(bg_wait A)
is "$stB" 303 "cut while holding: the other host posts (after ${tB} s)"
okif "${tB%.*}" -le $((STALE_AGE + 3)) "cut while holding: the other host went on within the stale age and its delay (${tB} s)"
is "$stC" 503 "cut: a new post on the cut-off host gets 503"
ok "$([[ "$stA" == 5* ]] && echo 0 || echo 1)" "cut while holding: the holder's post gets an error ($stA)"
is "$(stored slow 'cut: A on h1 holding')" 0 "cut while holding: the cut-off holder's late write is not in the log"
is "$(stored slow 'cut: B on h2')" 1 "cut while holding: the other host's post is stored"
diag "table: cut-holding | holder on h1 $stA | other host $stB after ${tB} s | new post on h1 $stC | holder's write stored $(stored slow 'cut: A on h1 holding')"
"$CLUSTER" heal h1

# ... and while it waits for the lock.
hpost_bg E h2 slow "cut: E on h2 holding"
sleep 0.3
hpost_bg D h1 slow "cut: D on h1 waiting"
sleep 0.3
"$CLUSTER" cut h1
stE=$(bg_wait E)
t0=$(now)
stF=$(hpost h2 slow "cut: F on h2 after")
tF=$(secs "$t0" "$(now)")
stD=$(bg_wait D)
"$CLUSTER" heal h1
is "$stE" 303 "cut while waiting: the holder on the other host is stored"
is "$stF" 303 "cut while waiting: the other host goes on (after ${tF} s)"
ok "$([[ "$stD" == 5* ]] && echo 0 || echo 1)" "cut while waiting: the waiter on the cut-off host gets an error ($stD)"
is "$(stored slow 'cut: D on h1 waiting')" 0 "cut while waiting: the waiter's post is not in the log"
diag "table: cut-waiting | waiter on h1 $stD | holder on h2 $stE | next post on h2 $stF after ${tF} s"

# ---- a board process holding the lock stopped past the stale age ------------
hpost_bg G h2 slow "stop: G on h2 stopped"
sleep 0.5
pids=$(cat "$RUN_DIR/h2/pid/slow.pid")
# shellcheck disable=SC2086 # a list of pids
kill -STOP $pids
at_exit "kill -CONT $(tr '\n' ' ' <<<"$pids") 2>/dev/null"
t0=$(now)
stH=$(hpost h1 slow "stop: H on h1")
tH=$(secs "$t0" "$(now)")
# shellcheck disable=SC2086
kill -CONT $pids
stG=$(bg_wait G)
is "$stH" 303 "SIGSTOP: the other host posts once the stopped holder is stale (${tH} s)"
is "$stG" 503 "SIGSTOP: the continued holder's write is refused with 503"
is "$(stored slow 'stop: G on h2 stopped')" 0 "SIGSTOP: the continued holder's write is not in the log"
is "$(stored slow 'stop: H on h1')" 1 "SIGSTOP: the other host's post is stored"
why=$(grep -o 'broken as stale\|fence [0-9]* is below[^;]*' "$T/last-h2.body" 2>/dev/null | head -n 1 || true)
diag "table: sigstop | other host $stH after ${tH} s | continued holder $stG (${why:-?}) | its write stored $(stored slow 'stop: G on h2 stopped')"

# ---- a whole host killed while it holds the lock ------------------------------
hpost_bg K h1 slow "kill: K on h1 holding"
sleep 0.5
"$CLUSTER" kill-host h1
t0=$(now)
stL=$(hpost h2 slow "kill: L on h2")
tL=$(secs "$t0" "$(now)")
stK=$(bg_wait K)
is "$stL" 303 "host killed: the other host posts (after ${tL} s)"
okif "${tL%.*}" -le $((STALE_AGE + 2)) "host killed: the other host went on within the stale age and its delay (${tL} s)"
is "$(stored slow 'kill: K on h1 holding')" 0 "host killed: the killed holder's post is not in the log"
diag "table: kill-host | killed holder $stK | other host $stL after ${tL} s"

# ---- nothing is left behind ---------------------------------------------------
"$CLUSTER" stop >/dev/null
is "$(ip netns list | grep -c "^$CLUSTER_ID-" || true)" 0 "stop removes every namespace of the cluster"
is "$(ip -o link show | grep -c "$CLUSTER_ID" || true)" 0 "stop removes every link of the cluster"
done_testing
