#!/bin/bash
# tests/http-overload.t - seed 001's pile-up, and the board's safeguard
# (max_waiting_posts, docs/board.md "Shedding load").  Two boards behind
# nginx, WORKERS board processes each, delay_ms 20 in the read-modify-write
# window and group_commit = no, so that each post holds the lock about
# 20 ms and the board stores at most some 40 posts a second; one has
# max_waiting_posts = CAP.  tests/overload measures what one client
# posting back to back gets (the capacity), then offers 4 times that, open
# loop, for OVERLOAD_SECONDS (default 2; make bench-overload runs 10 and
# prints the figures), with 20 page views a second beside the posts,
# sampling the posts in the board's lock (`dirlock status --json`).
#
# With the cap: the posts beyond it are answered 503 with Retry-After at
# once, never more than CAP posts are in the lock, page views stay quick,
# nothing acknowledged is lost.  Without it -- the twin that shows what the
# cap is for, and fails if the overload did not overload -- every board
# process ends up in the lock, and page views wait behind the posts for
# seconds; nothing acknowledged is lost there either.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

need_board
need_cmd nginx spawn-fcgi python3
DIRLOCK=${DIRLOCK:-$TOP/bin/dirlock}
[ -x "$DIRLOCK" ] || skip_all "bin/dirlock is not built (make)"
SECS=${OVERLOAD_SECONDS:-2}
CAP=4
WORKERS=8

boards_file "capped group_commit=no max_waiting_posts=$CAP max_messages=100000" \
	"uncapped group_commit=no max_messages=100000" >/dev/null
instance_start BOARDS_FILE="$T/boards.list" DELAY_MS=20 WORKERS="$WORKERS"
diag "private deployment on $BASE: $WORKERS processes a board, delay_ms 20, ${SECS} s at 4x capacity"

# run BOARD: tests/overload's JSON for BOARD in $T/BOARD.json.
run() {
	python3 "$TOP/tests/overload" --factor 4 --seconds "$SECS" --view-rate 20 --workers "$WORKERS" \
		--lock-space "$(board_locks "$1")" --dirlock "$DIRLOCK" "$BASE/board/$1/" >"$T/$1.json" 2>"$T/$1.err" ||
		{ sed 's/^/# /' "$T/$1.err"; bail_out "tests/overload failed on board $1"; }
	diag "$1: $(cat "$T/$1.json")"
}
# j BOARD FILTER: a field of BOARD's result (jq).
j() { jq -r "$2" "$T/$1.json"; }
# lt A B: A < B, as numbers.
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

run capped
is "$(j capped .lost)" 0 "capped: no acknowledged post lost ($(j capped .acknowledged) acknowledged of $(j capped .sent))"
ok "$(lt 0 "$(j capped '.rejected["503"] // 0')" && echo 0 || echo 1)" \
	"capped: the posts beyond the cap are refused with 503 ($(j capped '.rejected["503"] // 0'))"
is "$(j capped '.rejected | keys - ["503"] | length')" 0 "capped: nothing else is refused ($(jq -c .rejected "$T/capped.json"))"
is "$(j capped .rejected_503_retry_after)" "$(j capped '.rejected["503"] // 0')" "capped: every 503 carries Retry-After"
ok "$(lt "$(j capped .refused.p99)" 500 && echo 0 || echo 1)" \
	"capped: refused at once, not after a wait (503s p99 $(j capped .refused.p99) ms)"
ok "$(lt "$(j capped .in_lock_max)" $((CAP + 1)) && echo 0 || echo 1)" \
	"capped: never more than $CAP posts in the lock (at most $(j capped .in_lock_max) in $(j capped .in_lock_samples) samples)"
is "$(j capped .views_failed)" 0 "capped: every page view served"
ok "$(lt "$(j capped .views.p99)" 1000 && echo 0 || echo 1)" \
	"capped: page views stay quick (p99 $(j capped .views.p99) ms)"

run uncapped
is "$(j uncapped .lost)" 0 "uncapped: no acknowledged post lost ($(j uncapped .acknowledged) acknowledged of $(j uncapped .sent))"
is "$(j uncapped .in_lock_max)" "$WORKERS" "uncapped: every board process ends up in the lock (worker exhaustion)"
ok "$(lt 2000 "$(j uncapped .views.p99)" && echo 0 || echo 1)" \
	"uncapped: page views wait behind the posts (p99 $(j uncapped .views.p99) ms; capped $(j capped .views.p99) ms)"
ok "$(lt "$(j capped .accepted.p99)" "$(j uncapped .accepted.p99)" && echo 0 || echo 1)" \
	"accepted posts wait less with the cap (p99 $(j capped .accepted.p99) against $(j uncapped .accepted.p99) ms)"

cat "$T"/run/log/*.log >"$T/all.log" 2>/dev/null || true
is "$(grep -cE 'AddressSanitizer|LeakSanitizer|runtime error:' "$T/all.log" || true)" 0 \
	"no sanitizer report from the boards (SANITIZE=1 builds)"
done_testing
