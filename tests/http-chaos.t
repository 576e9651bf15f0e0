#!/bin/bash
# tests/http-chaos.t - board processes killed at random while posts go on.
#
# A private lighttpd (tools/deploy SERVER=lighttpd: mod_fastcgi spawns the
# board processes and starts a new one when one dies) serves the boards
# `mkdir` and `rw` with delay_ms inside the read-modify-write window.  For
# CHAOS_SECONDS (default 30) tests/lost-update runs round after round
# against both boards while, every ~100 ms, a board process is SIGKILLed:
# every other kill the lock holder (the pid in the lock's owner record,
# which is mid read-modify-write), else a random board process.
# Afterwards:
#   - every line of each messages.log parses (docs/board.md) and the
#     numbers strictly increase (so they are unique);
#   - every acknowledged post (303) is in the log exactly once;
#   - no lock is wedged: a fresh post succeeds at once, and
#     `dirlock status` shows nothing held once the boards are idle;
#   - no temp file of a killed writer is left after that fresh post (the
#     board would have to remove such leftovers on its next write).
# Environment: CHAOS_SECONDS, CHAOS_DELAY_MS (delay_ms, default 20),
# CHAOS_INTERVAL (seconds between kills, default 0.1).
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

need_board
need_cmd lighttpd curl jq

SECS=${CHAOS_SECONDS:-30}
DELAY=${CHAOS_DELAY_MS:-20}
INTERVAL=${CHAOS_INTERVAL:-0.1}
BOARDS="mkdir rw"

BOARDS_FILE=$(boards_file "mkdir lock_mode=mkdir" "rw lock_mode=rw")
instance_start SERVER=lighttpd BOARDS_FILE="$BOARDS_FILE" WORKERS=3 DELAY_MS="$DELAY" \
	BOARD_EXTRA="max_messages=1000000 lock_timeout=10"
lpid=$(cat "$T/run/lighttpd/lighttpd.pid")
diag "private lighttpd (pid $lpid) on $BASE, delay_ms $DELAY, killing for $SECS s every $INTERVAL s"

# Every board process ever seen (children of our lighttpd), so that none is
# left behind whatever happens.
seen_pids=$T/seen.pids
: >"$seen_pids"
kill_seen() {
	local p
	sort -u "$seen_pids" 2>/dev/null | while read -r p; do
		[ -n "$p" ] && kill -9 "$p" 2>/dev/null || true
	done
}
bg_pids=()
stop_bg() {
	local p
	for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
at_exit kill_seen
at_exit stop_bg

# holder_pid BOARD: pid in the owner record of BOARD's lock, if any (few
# forks: the loop below should take little more than its interval).
holder_pid() {
	local e t
	for e in "$(board_locks "$1")/messages.lock"/owner.*; do
		[ -L "$e" ] || continue
		t=$(readlink "$e" 2>/dev/null) || continue
		[[ "$t" =~ ^dirlock1\ pid=([0-9]+)\  ]] && echo "${BASH_REMATCH[1]}"
		return 0
	done
}

end=$((SECONDS + SECS))

# ---- the load: lost-update rounds against each board ----------------------
mkdir -p "$T/lu" "$T/luwork"
load() {
	local b=$1 r=0
	while [ "$SECONDS" -lt "$end" ]; do
		r=$((r + 1))
		TMPDIR=$T/luwork LOST_UPDATE_KEEP=1 "$TOP/tests/lost-update" -q -c 4 -n 6 --max-time 15 \
			-o "$T/lu/$b-$r" "$BASE/board/$b/" >>"$T/lu/$b.out" 2>&1 || true
	done
}
for b in $BOARDS; do
	load "$b" &
	bg_pids+=($!)
done

# ---- the chaos ------------------------------------------------------------------
kills=0
holder_kills=0
rounds=0
t_start=$EPOCHREALTIME
while [ "$SECONDS" -lt "$end" ]; do
	rounds=$((rounds + 1))
	victim=""
	mapfile -t all < <(pgrep -P "$lpid" 2>/dev/null || true)
	[ ${#all[@]} -gt 0 ] && printf '%s\n' "${all[@]}" >>"$seen_pids"
	pids=()
	for p in "${all[@]}"; do # living ones: not yet reaped zombies do not count
		st=""
		read -r _ _ st _ <"/proc/$p/stat" 2>/dev/null || continue
		[ "$st" != Z ] && pids+=("$p")
	done
	if [ $((RANDOM % 2)) -eq 0 ]; then
		for b in $BOARDS; do
			h=$(holder_pid "$b")
			# only ever one of our lighttpd's children
			if [ -n "$h" ] && [[ " ${pids[*]} " == *" $h "* ]]; then
				victim=$h
				break
			fi
		done
	fi
	is_holder=1
	if [ -z "$victim" ] && [ ${#pids[@]} -gt 0 ]; then
		victim=${pids[$((RANDOM % ${#pids[@]}))]}
		is_holder=0
	fi
	if [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null; then
		kills=$((kills + 1))
		holder_kills=$((holder_kills + is_holder))
	fi
	# sleep what is left of the period (the work above takes some of it)
	left=$(awk -v t0="$t_start" -v now="$EPOCHREALTIME" -v n="$rounds" -v i="$INTERVAL" \
		'BEGIN { l = t0 + n * i - now; if (l < 0.01) l = 0.01; printf "%.3f", l }')
	sleep "$left"
done
period=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" -v n="$rounds" 'BEGIN { printf "%.0f", (b - a) / n * 1000 }')
diag "chaos over: $kills kills ($holder_kills of lock holders) in $rounds rounds, one round every ${period} ms" \
	"(a round finds no living board process while lighttpd respawns them); waiting for the last rounds"
# The load loops end after their current round (each request is bounded).
for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null || true; done
bg_pids=()
cmp_ok() { ok "$([ "$1" -ge "$2" ] && echo 0 || echo 1)" "$3"; }
cmp_ok "$kills" 10 "board processes were killed ($kills, $holder_kills of them holding the lock)"

# ---- the boards answer again ---------------------------------------------------
for b in $BOARDS; do
	code=000
	for _ in $(seq 1 50); do
		code=$(curl -s -o /dev/null --max-time 5 -w '%{http_code}' "$BASE/board/$b/") || true
		[ "$code" = 200 ] && break
		sleep 0.2
	done
	is "$code" 200 "$b: the board answers again after the chaos"
done

# ---- the logs --------------------------------------------------------------------
# check_log FILE: prints problems, one a line (docs/board.md format).
check_log() {
	LC_ALL=C awk -F'\t' '
		NR == 1 && /^#fence\t[1-9][0-9]*$/ { next } # the fence of the last write
		{
			if (NF != 6 && NF != 7) { print "line " NR ": " NF " fields"; next }
			if (NF == 7 && (length($7) != 16 || $7 ~ /[^0-9a-f]/)) print "line " NR ": bad post id " $7
			if ($1 !~ /^[1-9][0-9]*$/) print "line " NR ": bad number " $1
			else if (last != "" && $1 + 0 <= last + 0) print "line " NR ": number " $1 " after " last
			last = $1
			if ($2 !~ /^(0|[1-9][0-9]*)$/) print "line " NR ": bad time " $2
			for (i = 3; i <= 6; i++) {
				s = $i
				if (s ~ /\r/) print "line " NR ": raw CR in field " i
				gsub(/\\[\\tnr]/, "", s)
				if (index(s, "\\")) print "line " NR ": bad escape in field " i
			}
		}' "$1"
	if [ -s "$1" ] && [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" != '\n' ]; then
		echo "the last line does not end in LF"
	fi
}

total_sent=0
total_acked=0
total_stored=0
for b in $BOARDS; do
	log=$T/data/$b/messages.log
	problems=$(check_log "$log")
	is "$problems" "" "$b: every line of messages.log parses, numbers strictly increase ($(grep -vc '^#fence' "$log") lines)"

	# acks: "code time id" per post sent by tests/lost-update (kept work dirs)
	cat "$T"/luwork/lost-update.*/"$b"/c*.out 2>/dev/null >"$T/$b.acks" || true
	sent=$(wc -l <"$T/$b.acks")
	acked=$(awk '$1 ~ /^2/ || $1 == "303"' "$T/$b.acks" | wc -l)
	# bodies in the log: "lost-update ID" -> count
	LC_ALL=C awk -F'\t' 'index($5, "lost-update ") == 1 { print substr($5, 13) }' "$log" |
		sort | uniq -c | awk '{ print $2, $1 }' >"$T/$b.stored"
	stored=$(wc -l <"$T/$b.stored")
	bad=$(awk 'FNR == NR { n[$1] = $2; next }
		($1 ~ /^2/ || $1 == "303") { c = ($3 in n) ? n[$3] : 0; if (c != 1) { print $3 " stored " c " times" } }' \
		"$T/$b.stored" "$T/$b.acks")
	is "$bad" "" "$b: every acknowledged post is stored exactly once ($acked acknowledged of $sent sent, $stored stored)"
	dups=$(awk '$2 > 1' "$T/$b.stored" | wc -l)
	is "$dups" 0 "$b: no post stored twice"
	codes=$(awk '!($1 ~ /^2/ || $1 == "303") { c[$1]++ } END { for (k in c) printf "%s:%d ", k, c[k] }' "$T/$b.acks")
	diag "$b: sent $sent, acknowledged $acked, stored $stored, other answers: ${codes:-none}"
	total_sent=$((total_sent + sent))
	total_acked=$((total_acked + acked))
	total_stored=$((total_stored + stored))
	cmp_ok "$acked" 1 "$b: posts were acknowledged during the chaos"
done

# ---- no lock wedged ------------------------------------------------------------------
for b in $BOARDS; do
	tmp_before=$(find "$T/data/$b" -maxdepth 1 -name 'messages.log.tmp.*' | wc -l)
	queued_before=$(find "$T/data/$b/pending" -type f 2>/dev/null | wc -l)
	J=$T/$b.fresh.jar
	tok=$(get_token "$BASE/board/$b/" "$J")
	t0=$(date +%s.%N)
	code=$(post "$BASE/board/$b/post" "$J" "$tok" "name=chaos" "body=after the chaos $b")
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	is "$code" 303 "$b: a fresh post succeeds after the chaos"
	ok "$(awk -v s="$secs" 'BEGIN { exit !(s < 3) }' && echo 0 || echo 1)" \
		"$b: ... at once (${secs} s; a wedged lock would take lock_timeout)"
	status=$("${DIRLOCK:-$TOP/bin/dirlock}" status -d "$(board_locks "$b")" 2>&1 || true)
	held=$(grep -v ' free$' <<<"$status" || true)
	is "$held" "" "$b: dirlock status shows no lock held once idle"
	[ -n "$status" ] && diag "dirlock status: $(tr -s ' ' <<<"$status" | tr '\n' ';')"
	tmp_after=$(find "$T/data/$b" -maxdepth 1 -name 'messages.log.tmp.*' | wc -l)
	prep=$(find "$(board_locks "$b")" -maxdepth 1 -name '.*' ! -name . ! -name .. | wc -l)
	diag "$b: temp files of killed writers: $tmp_before before the fresh post, $tmp_after after;" \
		"prepared lock directories of killed acquirers: $prep"
	is "$tmp_after" 0 "$b: no temp file left in the data directory after the next write (killed writers' are removed)"
	# What killed posters queued (group commit) is stored by the next post,
	# and what they were still writing is removed.
	queued_after=$(find "$T/data/$b/pending" -type f 2>/dev/null | wc -l)
	diag "$b: pending-queue entries: $queued_before before the fresh post, $queued_after after"
	is "$queued_after" 0 "$b: the pending queue is empty after the next post"
done

# With SANITIZE=1 the board is built with ASan+UBSan: a report would only
# show here (the client just sees a 500 among the expected ones).
san=$(grep -cE 'AddressSanitizer|LeakSanitizer|runtime error:' "$T/run/lighttpd/error.log" 2>/dev/null || true)
is "${san:-0}" 0 "no sanitizer report from the board processes (lighttpd error log)"
diag "chaos totals: $kills kills ($holder_kills lock holders; $rounds rounds, one every $period ms), $total_sent posts sent," \
	"$total_acked acknowledged, $total_stored stored"
instance_stop
done_testing
