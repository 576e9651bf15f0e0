#!/bin/bash
# tests/http-cluster-etcd.t - the board on two hosts keeps taking posts
# while a lock server's member is down, when its locks are on an etcd
# cluster -- against today's deployment on one Redis server, in the same
# run.  tools/cluster LOCKS=etcd: network namespaces, one shared data
# directory, a Redis server and three etcd members; boards "redis" and
# "etcd" (flat logs, their locks on Redis and on etcd).  Both hosts post
# every 0.1 s through each fault, which lasts 6 s (longer than the lock
# timeout, 5 s); then every acknowledged post is looked for in the log.
#   redis        redis-server killed, then started again (no data)
#   etcd-leader  the etcd leader killed, then started again
#   etcd-cut     the (new) leader cut off from everyone (its bridge port
#                down), then plugged back
# Asserts: with Redis no post is acknowledged while the server is down;
# with etcd posts are acknowledged all through both faults; no
# acknowledged post is lost anywhere, no number given twice.  Each fault
# prints its "# table:" line (docs/cluster.md).  Needs root; skips in one
# line where namespaces cannot be made.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

need_board
need_cmd nginx spawn-fcgi redis-server redis-cli etcd ip nsenter unshare jq curl
[ "$(id -u)" -eq 0 ] || skip_all "needs root (network namespaces)"
"${DIRLOCK:-$TOP/bin/dirlock}" status -d etcd://127.0.0.1:1 2>&1 | grep -q "no etcd support" &&
	skip_all "the library was built without etcd support"

CLUSTER_ID=dle$((10000 + RANDOM % 90000))
PORT=$(free_port)
export CLUSTER_ID PORT RUN_DIR=$T/run DATA_DIR=$T/data DELAY_MS=0 WORKERS=3 STALE_AGE=2 LOCK_TIMEOUT=5
export LOCKS=etcd CLUSTER_BOARDS=$T/boards.list
cat >"$CLUSTER_BOARDS" <<'EOF2'
redis lock_mode=mkdir store=log lock_space=@REDIS@?prefix=redis
etcd  lock_mode=mkdir store=log lock_space=@ETCD@/board
EOF2
CLUSTER=$TOP/tools/cluster
at_exit "\"$CLUSTER\" stop >/dev/null 2>&1"
# shellcheck disable=SC2016 # expanded when the hook runs
at_exit 'kill $(jobs -p) 2>/dev/null'
if ! out=$("$CLUSTER" start 2>&1); then
	grep -q 'cannot be made' <<<"$out" && skip_all "$(tail -n 1 <<<"$out")"
	bail_out "tools/cluster start failed: $out"
fi
declare -A URL
while IFS="=" read -r h u; do URL[$h]=$u; done < <("$CLUSTER" urls)


ms() { echo $(($(date +%s%N) / 1000000)); }
# hpost HOST BOARD BODY: one post through HOST; prints the status.
hpost() {
	local jar=$T/$1-$2.jar tok
	tok=$(get_token "${URL[$1]}$2/" "$jar")
	curl -s --max-time 15 -b "$jar" -c "$jar" -o /dev/null -w '%{http_code}' \
		--data-urlencode "body=$3" --data-urlencode "token=$tok" "${URL[$1]}$2/post" || true
}

# fault NAME BOARD DOWN-COMMAND UP-COMMAND: both hosts post to BOARD every
# 0.1 s; after 1.5 s DOWN-COMMAND, 6 s later UP-COMMAND, then 2 s more.
# Each post is a line "START END STATUS BODY" (ms) in $T/NAME-HOST.out;
# sets t_down and t_up (ms).
fault() {
	local name=$1 board=$2 h pids=()
	rm -f "$T/$name.stop"
	for h in h1 h2; do
		(
			i=0
			while [ ! -e "$T/$name.stop" ]; do
				i=$((i + 1))
				s=$(ms)
				st=$(hpost "$h" "$board" "$name $h $i")
				printf '%s %s %s %s\n' "$s" "$(ms)" "${st:-000}" "$name $h $i"
				sleep 0.1
			done >"$T/$name-$h.out"
		) &
		pids+=($!)
	done
	sleep 1.5
	# The outage as the judge counts it: from the stop's end (the server
	# is gone) to the start's beginning -- on a busy machine either
	# command takes a while, and a post served meanwhile is no fault.
	eval "$3"
	t_down=$(ms)
	sleep 6
	t_up=$(ms)
	eval "$4"
	sleep 2
	touch "$T/$name.stop"
	wait "${pids[@]}" || true
}

# judge NAME BOARD: counts over both hosts' posts -- acknowledged while
# down (a post sent after t_down that got 303 before t_up), refused, lost
# (a 303 not stored exactly once) -- into during, acked, refused, lost,
# sent; and `gap`, the longest stretch of the outage in which neither
# host got a post acknowledged (ms).
judge() {
	local all st body s e
	local -A copies=()
	all=$(api_all "${URL[h1]}$2/")
	count_bodies copies "$all"
	during=0 acked=0 refused=0 lost=0 sent=0
	while read -r s e st body; do
		sent=$((sent + 1))
		[ "$st" = 503 ] && refused=$((refused + 1))
		[ "$st" = 303 ] || continue
		acked=$((acked + 1))
		[ "$s" -gt "$t_down" ] && [ "$e" -lt "$t_up" ] && during=$((during + 1))
		[ "${copies[$body]:-0}" = 1 ] || lost=$((lost + 1))
	done < <(cat "$T/$1-h1.out" "$T/$1-h2.out")
	dups=$(jq '[.messages[].no] | length - (unique | length)' <<<"$all")
	longest=$(cat "$T/$1-h1.out" "$T/$1-h2.out" | awk '{ d = $2 - $1; if (d > m) m = d } END { print m + 0 }')
	gap=$(awk -v a="$t_down" -v b="$t_up" '$3 == 303 && $2 > a && $2 < b { print $2 }' "$T/$1-h1.out" "$T/$1-h2.out" |
		sort -n | awk -v a="$t_down" -v b="$t_up" '{ if ($1 - a > g) g = $1 - a; a = $1 } END { if (b - a > g) g = b - a; print g + 0 }')
	diag "table: | $1 | $((t_up - t_down)) ms down | sent $sent | 303 $acked | of them while down $during | 503 $refused | acknowledged, not stored once $lost | numbers twice $dups | longest post $longest ms | longest without a 303 $gap ms |"
}

# ---- Redis: one server ---------------------------------------------------
fault redis redis '"$CLUSTER" redis-stop' '"$CLUSTER" redis-start >/dev/null'
judge redis redis
is "$during" 0 "redis-server down: no post sent while it is down is acknowledged before it is back ($refused refused; ${gap} ms without a 303)"
okif() { if test "$1" "$2" "$3"; then ok 0 "$4"; else ok 1 "$4"; fi; }
okif "$acked" -gt 0 "redis: posts are acknowledged before and after ($acked)"
is "$lost/$dups" 0/0 "redis: every acknowledged post is stored exactly once, no number twice"

# ---- etcd: the leader killed -----------------------------------------------
leader=$("$CLUSTER" etcd leader)
fault etcd-leader etcd '"$CLUSTER" etcd kill leader' '"$CLUSTER" etcd start-member "${leader#e}"'
judge etcd-leader etcd
okif "$during" -gt 0 "etcd leader ($leader) killed: posts go on being acknowledged meanwhile ($during while it was down)"
okif "$gap" -lt 4000 "etcd leader killed: never 4 s without an acknowledged post (longest ${gap} ms)"
okif "$refused" -le 2 "etcd leader killed: hardly a post refused ($refused)"
is "$lost/$dups" 0/0 "etcd leader killed: every acknowledged post is stored exactly once, no number twice"

# ---- etcd: the new leader cut off ------------------------------------------
sleep 1
leader=$("$CLUSTER" etcd leader)
fault etcd-cut etcd '"$CLUSTER" etcd cut "$leader"' '"$CLUSTER" etcd heal "$leader"'
judge etcd-cut etcd
okif "$during" -gt 0 "etcd leader ($leader) cut off: posts go on being acknowledged meanwhile ($during while it was cut off)"
okif "$gap" -lt 4000 "etcd leader cut off: never 4 s without an acknowledged post (longest ${gap} ms)"
okif "$refused" -le 2 "etcd leader cut off: hardly a post refused ($refused)"
is "$lost/$dups" 0/0 "etcd leader cut off: every acknowledged post is stored exactly once, no number twice"

# ---- after the faults --------------------------------------------------------
"$CLUSTER" etcd status >"$T/status"
is "$(grep -c running "$T/status")" 3 "all three members run again: $(tr '\n' ';' <"$T/status")"
st=$(hpost h1 etcd "after all")
is "$st" 303 "a post after everything is acknowledged"
is "$(api_all "${URL[h2]}etcd/" | jq '[.messages[] | select(.body == "after all")] | length')" 1 \
	"... and read back through the other host"
done_testing
