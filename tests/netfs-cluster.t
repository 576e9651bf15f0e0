#!/bin/bash
# tests/netfs-cluster.t - the board on two hosts whose data and lock
# directories are on one GlusterFS volume (tools/cluster FS=glusterfs, on
# the volume of tests/glusterfs-lib.sh; each host mounts it through FUSE
# in its own namespace): a short lost-update run across both hosts, then
# the faults of docs/netfs.md, in this order:
#   cut       a host cut off from the storage while it holds the lock,
#             then healed
#   brick     the volume's brick (glusterfsd) killed and started again
#             during posting from both hosts
#   sigstop   a board process holding the lock stopped past the stale age
#             while the other host takes the lock
#   fence     a holder stopped after its check, before its rename (the
#             test-only hook), past the stale age: the fence refuses its
#             late write
#   kill      a host SIGKILLed (its mount dies with it) while it holds the
#             lock: the other host takes it after the stale age, not before
#             (last: the host stays dead)
# and the configurations refused on a network filesystem (SQLite's WAL,
# group commit).  Every fault: no acknowledged post lost, no post
# answered with an error and stored anyway, 503 and never 500 while the
# volume is away.  Each prints its "# table:" lines.  FAULTS="kill cut"
# runs some of them (the demonstration always runs).  Boards: stale_age 2
# s, lock_timeout 8 s; "slow" has delay_ms 1500 so that a request holds
# the lock long enough to be hit while it does, and "none" 200 so that
# its read-modify-write windows overlap (it must lose posts) even when a
# busy machine spreads the clients' requests out.  A check that fails
# says what it saw; bounds on how long something takes are generous,
# for a busy machine (load 5-10).  Needs root and
# /dev/fuse; skips in one line where either is missing.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"
# shellcheck source=tests/glusterfs-lib.sh
. "$(dirname "$0")/glusterfs-lib.sh"

BOARD=${HOOK_BOARD:-$TOP/$BUILD_DIR/tests/progs/board-hooks}
[ -x "$BOARD" ] || skip_all "$BUILD_DIR/tests/progs/board-hooks is not built (make test-build)"
need_board
need_cmd nginx spawn-fcgi redis-server redis-cli ip nsenter unshare jq curl
at_exit gfs_down
gfs_up

FAULTS=${FAULTS:-kill cut brick sigstop fence}
want() { [[ " $FAULTS " == *" $1 "* ]]; }

STALE_AGE=2
CLUSTER_ID=dlg$((10000 + RANDOM % 90000))
# The client links' 10.77.K.0/24: tools/cluster takes the first free K,
# and so may another cluster starting at the same moment; this one picks
# among the high ones.
for ((i = 0; i < 50; i++)); do
	NET=$((200 + RANDOM % 50))
	ip -4 -o addr show | grep -q " 10\.77\.$NET\." || break
done
export NET
PORT=$(free_port)
ARM=$T/stop-after-check
export CLUSTER_ID PORT RUN_DIR=$T/run FS=glusterfs DELAY_MS=20 WORKERS=3 STALE_AGE LOCK_TIMEOUT=8
export GLUSTER_RUN_DIR=$GFS_RUN GLUSTER_ID=$GFS_ID GLUSTER_K=10 VOLUME_DIR=cluster-$CLUSTER_ID
export CLUSTER_BOARDS=$T/boards.list DIRLOCK_TEST_STOP_AFTER_CHECK=$ARM FRESH=1
cat >"$CLUSTER_BOARDS" <<'EOF2'
none  lock_mode=none  store=log delay_ms=200
mkdir lock_mode=mkdir store=log
rw    lock_mode=rw    store=log
flock lock_mode=flock store=log
redis lock_mode=mkdir store=log lock_space=@REDIS@?prefix=redis
slow  lock_mode=mkdir store=log delay_ms=1500
fence lock_mode=mkdir store=log delay_ms=0
EOF2
CLUSTER=$TOP/tools/cluster
at_exit "\"$CLUSTER\" stop >/dev/null 2>&1"
# shellcheck disable=SC2016 # expanded when the hook runs
at_exit 'kill $(jobs -p) 2>/dev/null'
if ! out=$("$CLUSTER" start 2>&1); then
	grep -q 'cannot be made\|not started' <<<"$out" && skip_all "$(tail -n 1 <<<"$out")"
	bail_out "tools/cluster start failed: $out"
fi
declare -A URL
while IFS="=" read -r h u; do URL[$h]=$u; done < <("$CLUSTER" urls)
DATA_H1=$("$CLUSTER" data-dir h1)

# hpost HOST BOARD BODY: one post through HOST; prints the status (the
# page's, when the page with the form could not be had: nothing was sent).
hpost() {
	local jar=$T/$1-$2.jar tok code
	code=$(curl -s --max-time 30 -b "$jar" -c "$jar" -o "$T/page-$1.html" -w '%{http_code}' "${URL[$1]}$2/" || true)
	tok=$(tr '\n' ' ' <"$T/page-$1.html" | grep -o '<input[^>]*name="token"[^>]*>' | head -n 1 |
		sed -n 's/.*value="\([0-9A-Fa-f]*\)".*/\1/p' || true)
	if [ -z "$tok" ]; then
		echo "${code:-000}"
		return 0
	fi
	curl -s --max-time 30 -b "$jar" -c "$jar" -o "$T/last-$1.body" -w '%{http_code}' \
		--data-urlencode "body=$3" --data-urlencode "token=$tok" "${URL[$1]}$2/post" || true
}
# back HOST BOARD: waits (up to 30 s) until HOST shows BOARD's page again;
# prints how long it took.
back() {
	local t0 i
	t0=$(now)
	for ((i = 0; i < 300; i++)); do
		[ "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "${URL[$1]}$2/" || true)" = 200 ] && break
		sleep 0.1
	done
	secs "$t0" "$(now)"
}
declare -A bgpid
# hpost_bg NAME HOST BOARD BODY: hpost in the background, status to $T/NAME.st.
hpost_bg() {
	rm -f "$T/$1.st"
	(
		st=$(hpost "$2" "$3" "$4")
		echo "${st:-000}" >"$T/$1.st.tmp" && mv "$T/$1.st.tmp" "$T/$1.st"
	) &
	bgpid[$1]=$!
}
stA='' stC='' stG='' stK='' stP='' # set by bg_wait
bg_wait() {
	wait "${bgpid[$1]}" 2>/dev/null || true
	printf -v "$2" '%s' "$(cat "$T/$1.st" 2>/dev/null || echo none)"
}
okif() { if test "$1" "$2" "$3"; then ok 0 "$4"; else ok 1 "$4"; fi; }
fcmp_ok() { if fcmp "$1" "$2" "$3"; then ok 0 "$4"; else ok 1 "$4"; fi; }
fcmp() { awk -v a="$1" -v b="$3" "BEGIN { exit !(a $2 b) }"; }
stored() { api_all "${URL[${3:-h2}]}$1/" | jq --arg b "$2" '[.messages[] | select(.body == $b)] | length'; }
refusal() {
	grep -o 'broken as stale\|fence [0-9]* is below the store.s [0-9]*' "$RUN_DIR/$1/log/$2-errors.log" 2>/dev/null |
		tail -n 1 || true
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# holding BOARD: waits (up to 20 s) until somebody holds BOARD's lock (its
# lock directory on the volume, read through h1's mount).
holding() {
	local i
	for ((i = 0; i < 400; i++)); do
		ls "$DATA_H1/.locks/$1/messages.lock/" 2>/dev/null | grep -q '^owner\.' && return 0
		sleep 0.05
	done
	diag "nobody took the lock of $1 within 20 s"
	return 1
}
# The watch a judge keeps on a lock before it breaks it on a network
# filesystem (CLOCKS in lib/netfs/netfs.c): a third of the stale age plus
# GlusterFS's cache lag, 2 s.
WINDOW=$(awk -v s="$STALE_AGE" 'BEGIN { print s / 3 + 2 }')

# ---- the demonstration, short --------------------------------------------
lu=0
"$TOP/tests/lost-update" -q --expect-loss -c 6 -n 10 -m "none mkdir rw flock redis" -o "$T/lu" \
	--host "h1=${URL[h1]}" --host "h2=${URL[h2]}" >"$T/lu.out" 2>&1 || lu=$?
why=$(sed -n '/^FAIL:/,$p' "$T/lu.out" | sed -n 's/^  //p' | paste -sd ';' -)
ok $lu "lost-update on both hosts, data on GlusterFS: none loses posts; mkdir, rw, flock and redis lose none, and no post is answered with an error and stored anyway${why:+ (failed: $why)}"
sed -n '/^mode/,/^$/p' "$T/lu.out" | sed -e '/^$/d' -e 's/^/# table: /'
[ "$lu" -eq 0 ] || sed -e 's/^/# lost-update: /' "$T/lu.out" | tail -n 20
errs=$(awk -F, 'NR > 1 && $1 != "none" && $7 != "-" && $7 != "" { print $1 ": " $7 }' "$T/lu/summary.csv")
is "$errs" "" "no locked board answered any error on a healthy volume"

# ---- what is refused on a network filesystem ------------------------------
# board_conf NAME KEY=VALUE...: a configuration of a board whose data is on
# the volume; prints its path.
board_conf() {
	local f=$T/$1.conf kv
	mkdir -p "$DATA_H1/conf-$1"
	printf 'data_dir = %s\n' "$DATA_H1/conf-$1" >"$f"
	for kv in "${@:2}"; do printf '%s = %s\n' "${kv%%=*}" "${kv#*=}" >>"$f"; done
	echo "$f"
}
cgi_get() { BOARD_CONF=$1 REQUEST_METHOD=GET SCRIPT_NAME=/ PATH_INFO=/ QUERY_STRING= "$BOARD" 2>&1 || true; }
# has TEXT PATTERN: 0 when PATTERN is in TEXT (for ok, under set -e).
has() { if grep -q -- "$2" <<<"$1"; then echo 0; else echo 1; fi; }
out=$(cgi_get "$(board_conf sq store=sqlite)")
ok "$(has "$out" "SQLite keeps its write-ahead log's index in shared memory")" \
	"store = sqlite with data_dir on GlusterFS is refused, saying why"
out=$(cgi_get "$(board_conf gc group_commit=yes)")
ok "$(has "$out" "key 'group_commit': group commit judges queued posts by process id")" \
	"group_commit = yes with data_dir on GlusterFS is refused, saying why"
out=$(cgi_get "$(board_conf one store=sqlite single_host=yes)")
ok "$((1 - $(has "$out" '^Status: 500')))" "single_host = yes allows store = sqlite there"

# ---- a host cut off from the storage while it holds the lock ----------------
if want cut; then
	hpost_bg A h1 slow "cut: A on h1 holding"
	holding slow || true
	t0=$(now)
	"$CLUSTER" storage-cut h1
	stB=$(hpost h2 slow "cut: B on h2")
	tB=$(secs "$t0" "$(now)")
	bg_wait A stA
	is "$stB" 303 "storage cut while holding: the other host posts (after ${tB} s)"
	ok "$([[ "$stA" == 503 ]] && echo 0 || echo 1)" "storage cut while holding: the holder's post gets 503 ($stA)"
	stC=$(hpost h1 slow "cut: C on h1 while cut")
	ok "$([[ "$stC" == 503 ]] && echo 0 || echo 1)" "storage cut: a new post on the cut-off host gets 503 ($stC)"
	"$CLUSTER" storage-heal h1
	stD=000
	for ((i = 0; i < 20; i++)); do
		stD=$(hpost h1 slow "cut: D on h1 healed $i")
		[ "$stD" = 303 ] && break
		sleep 1
	done
	is "$stD" 303 "storage healed: the host posts again (after $i retries)"
	is "$(stored slow 'cut: A on h1 holding')" 0 "storage cut: the cut-off holder's post is not in the log"
	is "$(stored slow 'cut: B on h2')" 1 "storage cut: the other host's post is stored"
	diag "table: | h1 cut off from the storage while holding | holder: $stA, not stored | h2: $stB after ${tB} s | new post on h1: $stC; healed: $stD |"
fi

# ---- the brick killed during posting --------------------------------------
if want brick; then
	rm -f "$T/bf.back"
	for h in h1 h2; do
		(
			# Once the brick is back: post until 5 in a row are
			# acknowledged (a lock left by a post cut short by the
			# brick's death costs its stale age), 30 posts at most.
			after=0 row=0
			for ((i = 1; i <= 150 && after < 30 && row < 5; i++)); do
				[ -e "$T/bf.back" ] && after=$((after + 1))
				st=$(hpost "$h" mkdir "brick-fault $h $i")
				printf '%s %s\n' "${st:-000}" "brick-fault $h $i"
				if [ "$after" -gt 0 ] && [ "$st" = 303 ]; then row=$((row + 1)); else row=0; fi
				sleep 0.1
			done >"$T/bf-$h.out"
			echo "$after" >"$T/bf-$h.after"
		) &
		bgpid[bf-$h]=$!
	done
	sleep 1
	"$CLUSTER" brick-stop
	t0=$(now)
	sleep 6
	"$CLUSTER" brick-start
	tdown=$(secs "$t0" "$(now)")
	tback=$(back h1 mkdir)
	tback2=$(back h2 mkdir)
	sleep 2 # every client of the volume has found the new brick
	touch "$T/bf.back"
	for h in h1 h2; do wait "${bgpid[bf-$h]}" || true; done
	all=$(api_all "${URL[h2]}mkdir/")
	declare -A copies=()
	count_bodies copies "$all"
	for h in h1 h2; do
		sent=$(wc -l <"$T/bf-$h.out")
		acked=$(grep -c '^303 ' "$T/bf-$h.out" || true)
		refused=$(grep -c '^503 ' "$T/bf-$h.out" || true)
		other=$((sent - acked - refused))
		lost=0 errstored=0
		while read -r st body; do
			n=${copies[$body]:-0}
			if [ "$st" = 303 ]; then [ "$n" = 1 ] || lost=$((lost + 1)); else [ "$n" = 0 ] || errstored=$((errstored + 1)); fi
		done <"$T/bf-$h.out"
		okif "$refused" -gt 0 "brick down ${tdown} s: $h's posts are refused with 503 meanwhile ($refused)"
		is "$other" 0 "brick down: $h got no answer but 303 and 503 (no 500)"
		grep -v '^303 \|^503 ' "$T/bf-$h.out" | while read -r line; do diag "  $h answered: $line"; done
		is "$(tail -n 5 "$T/bf-$h.out" | grep -c '^303 ' || true)" 5 "brick back: $h's posts are acknowledged again, 5 in a row"
		is "$lost" 0 "brick down and back: every post $h acknowledged is stored exactly once"
		is "$errstored" 0 "brick down and back: no post $h was refused is stored"
		diag "table: | brick killed for ${tdown} s, pages back after ${tback} / ${tback2} s more | $h: sent $sent, 303 $acked, 503 $refused, other $other, posts once back until 5 in a row $(cat "$T/bf-$h.after"), acknowledged not stored once $lost, refused but stored $errstored |"
	done
	is "$(jq '[.messages[].no] | length - (unique | length)' <<<"$all")" 0 "brick down and back: no number given twice"
fi

# ---- a board process holding the lock stopped past the stale age -----------
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
	is "$stG" 503 "SIGSTOP: the continued holder's write is refused with 503 (${why:-?})"
	is "$(stored slow 'stop: G on h2 stopped')" 0 "SIGSTOP: the continued holder's write is not in the log"
	is "$(stored slow 'stop: H on h1')" 1 "SIGSTOP: the other host's post is stored"
	diag "table: | SIGSTOP on h2 during the delay | continued holder: $stG (${why:-?}) | next post on h1: $stH after ${tH} s |"
fi

# ---- stopped after the check, before the rename: the fence refuses ----------
if want fence; then
	touch "$ARM"
	hpost_bg P h2 fence "fence: P on h2 late"
	for ((i = 0; i < 400; i++)); do
		[ -e "$ARM" ] || break
		sleep 0.05
	done
	okif "$i" -lt 400 "fence: the holder on h2 passed its check and stopped before the rename (within $((i * 5 / 100)) s of 20)"
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
	is "$(stored fence 'fence: P on h2 late')" 0 "fence: the late write is not in the log"
	is "$(stored fence 'fence: Q on h1')" 1 "fence: the other host's post is stored"
	diag "table: | SIGSTOP on h2 after the check | late holder: $stP (${why:-?}) | next post on h1: $stQ after ${tQ} s |"
fi

# ---- a whole host killed while it holds the lock --------------------------
# The last fault: h1 stays dead.
if want kill; then
	hpost_bg K h1 slow "kill: K on h1 holding"
	holding slow || true
	t0=$(now)
	"$CLUSTER" kill-host h1
	stL=$(hpost h2 slow "kill: L on h2")
	tL=$(secs "$t0" "$(now)")
	bg_wait K stK
	got=$(awk -v t="$tL" 'BEGIN { printf "%.1f", t - 1.5 }') # minus h2's own delay
	is "$stL" 303 "host killed: the other host posts"
	fcmp_ok "$got" '>=' "$((STALE_AGE - 1))" "host killed: not before the stale age: h2 took the lock ${got} s after the kill"
	# The stale age, the judge's watch, and 4 s for a busy machine.
	most=$(awk -v s="$STALE_AGE" -v w="$WINDOW" 'BEGIN { print s + w + 4 }')
	fcmp_ok "$got" '<=' "$most" "host killed: within the stale age and the judge's watch (${got} s, bound $most s)"
	nK=$(stored slow 'kill: K on h1 holding' h2)
	is "$nK" 0 "host killed: the killed holder's post is not in the log (read through h2)"
	is "$(stored slow 'kill: L on h2' h2)" 1 "host killed: the other host's post is stored"
	ok "$([ "$(stat -f -c %T "$RUN_DIR/h1/volume" 2>&1 | grep -c 'not connected')" = 1 ] && echo 0 || echo 1)" \
		"host killed: its mount died with it"
	diag "table: | h1 killed while holding | killed holder: $stK, stored $nK | h2 took the lock after ${got} s: $stL |"
fi

# ---- nothing is left behind ---------------------------------------------------
"$CLUSTER" stop >/dev/null
is "$(ip netns list | grep -c "^$CLUSTER_ID-" || true)" 0 "stop removes every namespace of the cluster"
is "$(mount | grep -c "$RUN_DIR/h[12]/volume" || true)" 0 "stop unmounts the hosts' mounts"
done_testing
