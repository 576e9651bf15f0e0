# tests/http-lib.sh - shared by the HTTP test scripts (tests/http-*.t)
# and the board benchmark: TAP
# output and a private deployment (own port, run and data directories
# under a temporary directory, everything stopped by a trap).
# Source it from bash with TOP set (tests/run-all exports TOP).
# shellcheck shell=bash

TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD_DIR=${BUILD_DIR:-build}
export TOP BUILD_DIR

# ---- TAP ---------------------------------------------------------------

tap_n=0
tap_failed=0

plan() { echo "1..$1"; }

ok() { # ok CONDITION-STATUS DESCRIPTION  (use: cmd; ok $? "desc")
	tap_n=$((tap_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $tap_n - $2"
	else
		echo "not ok $tap_n - $2"
		tap_failed=$((tap_failed + 1))
	fi
}

is() { # is GOT WANT DESCRIPTION
	if [ "$1" = "$2" ]; then
		ok 0 "$3"
	else
		ok 1 "$3"
		diag "got '$1', want '$2'"
	fi
}

skip() { # skip DESCRIPTION REASON
	tap_n=$((tap_n + 1))
	echo "ok $tap_n # skip $1: $2"
}

diag() { printf '# %s\n' "$@"; }

skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}

bail_out() {
	echo "Bail out! $*"
	exit 1
}

done_testing() {
	echo "1..$tap_n"
	[ "$tap_failed" -eq 0 ]
}

# ---- a private deployment ------------------------------------------------

# free_port: a port that nothing listens on, in 18000-19999 or in
# PORT_RANGE=LOW-HIGH (one user's share of a shared machine).
free_port() {
	local p i low=18000 high=19999
	if [ -n "${PORT_RANGE:-}" ]; then
		low=${PORT_RANGE%-*} high=${PORT_RANGE#*-}
	fi
	for ((i = 0; i < 50; i++)); do
		p=$((low + RANDOM % (high - low + 1)))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# need_board: skips the whole script when the board is not built.
need_board() {
	BOARD=${BOARD:-$TOP/cgi-bin/board}
	[ -x "$BOARD" ] || skip_all "cgi-bin/board is not built (make)"
	export BOARD
}

need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || [ -x "/usr/sbin/$c" ] ||
			skip_all "$c is not installed (make deps)"
	done
}

# $T: this script's temporary directory, removed at exit.
# instance_start [VAR=VALUE...]: starts tools/deploy with a private
# PORT, RUN_DIR and DATA_DIR (under $T) and
# the given environment; sets BASE=http://127.0.0.1:PORT.  A trap stops
# everything and removes $T when the script exits.
T=$(mktemp -d "${TMPDIR:-/tmp}/dirlock-http.XXXXXX")
instance_started=0
instance_env=()
exit_hooks=()
# at_exit COMMAND...: run COMMAND (eval'd) when the script exits, before
# the deployment stops; the last registered runs first.
at_exit() { exit_hooks+=("$*"); }
instance_cleanup() {
	local i
	for ((i = ${#exit_hooks[@]} - 1; i >= 0; i--)); do eval "${exit_hooks[$i]}" || true; done
	exit_hooks=()
	if [ "$instance_started" -eq 1 ]; then
		env "${instance_env[@]}" "$TOP/tools/deploy" stop >/dev/null 2>&1 || true
		instance_started=0
	fi
	if [ -n "$T" ] && [ -d "$T" ] && [ "${KEEP_TMP:-0}" != 1 ]; then
		chmod -R u+w "$T" 2>/dev/null || true
		rm -rf "$T"
	fi
}
trap instance_cleanup EXIT
trap 'exit 130' INT TERM HUP

instance_start() {
	PORT=$(free_port) || bail_out "no free port in 18000-19999"
	BASE=http://127.0.0.1:$PORT
	instance_env=(PORT="$PORT" RUN_DIR="$T/run" DATA_DIR="$T/data" BOARD="${BOARD:-$TOP/cgi-bin/board}" "$@")
	instance_started=1
	if ! env "${instance_env[@]}" "$TOP/tools/deploy" start >"$T/deploy.log" 2>&1; then
		sed 's/^/# /' "$T/deploy.log"
		for f in "$T"/run/log/*.log "$T"/run/nginx/logs/error.log "$T"/run/lighttpd/error.log; do
			[ -s "$f" ] && diag "$f:" && tail -n 20 "$f" | sed 's/^/#   /'
		done
		bail_out "could not start the private deployment"
	fi
	export PORT BASE T
}

instance_stop() {
	env "${instance_env[@]}" "$TOP/tools/deploy" stop >/dev/null 2>&1 || true
	instance_started=0
}

# board_locks NAME: the lock space of board NAME of the private
# deployment (its lock_space setting: tools/deploy puts it on tmpfs).
board_locks() {
	sed -n 's/^lock_space = //p' "$T/run/conf/$1.conf"
}

# boards_file NAME SPEC... (one argument per line of the list): writes
# $T/boards.list and prints its path.
boards_file() {
	printf '%s\n' "$@" >"$T/boards.list"
	echo "$T/boards.list"
}

# ---- HTTP helpers ----------------------------------------------------------

# get_token URL JAR: GETs the page with the cookie jar, prints the token.
get_token() {
	curl -s --max-time 10 -b "$2" -c "$2" "$1" |
		tr '\n' ' ' | grep -o '<input[^>]*name="token"[^>]*>' | head -n 1 |
		sed -n 's/.*value="\([0-9A-Fa-f]*\)".*/\1/p'
}

# post URL JAR TOKEN FIELD=VALUE...: POSTs urlencoded fields; prints
# "STATUS" and writes headers to $T/last.headers, body to $T/last.body.
post() {
	local url=$1 jar=$2 token=$3
	shift 3
	local args=() kv
	for kv in "$@"; do args+=(--data-urlencode "$kv"); done
	[ -n "$token" ] && args+=(--data-urlencode "token=$token")
	curl -s --max-time 10 -b "$jar" -c "$jar" -D "$T/last.headers" -o "$T/last.body" \
		-w '%{http_code}' "${args[@]}" "$url"
}

# post_raw JAR URL DATA: POSTs DATA as given (already urlencoded).
post_raw() {
	curl -s --max-time 10 -b "$1" -c "$1" -D "$T/last.headers" -o "$T/last.body" \
		-w '%{http_code}' -H 'Content-Type: application/x-www-form-urlencoded' \
		--data-binary "$3" "$2"
}

# header NAME: the value of header NAME in $T/last.headers.
header() {
	tr -d '\r' <"$T/last.headers" | awk -v n="$1" 'BEGIN { n = tolower(n) }
		{ i = index($0, ":"); if (i && tolower(substr($0, 1, i - 1)) == n) {
			v = substr($0, i + 1); sub(/^ +/, "", v); print v; exit } }'
}

# api URL [QUERY]: the board's api/messages JSON (at most 100 messages
# unless QUERY says otherwise).
api() { curl -s --max-time 10 "${1}api/messages${2:-}"; }

# api_all URL [SINCE]: every message numbered above SINCE (default 0), as
# one {"messages":[...]}, read a page at a time as clients must (since =
# the last number seen, limit=1000, until an empty page).
api_all() {
	local since=${2:-0} page all='[]' n
	while :; do
		page=$(curl -sf --max-time 10 "${1}api/messages?since=$since&limit=1000") || return 1
		n=$(jq '.messages | length' <<<"$page") || return 1
		[ "$n" -eq 0 ] && break
		all=$(jq -c --argjson a "$all" '$a + .messages' <<<"$page")
		since=$(jq '.messages[-1].no' <<<"$page")
	done
	jq -c '{messages: .}' <<<"$all"
}

# count_bodies ARRAY JSON: fills the associative array named ARRAY (the
# caller's) with how many messages of JSON (api_all's) have each body;
# a body no message has is not in it.
count_bodies() {
	local -n _counts=$1
	local body
	while IFS= read -r body; do
		[ -z "$body" ] || _counts[$body]=$((${_counts[$body]:-0} + 1))
	done < <(jq -r '.messages[].body' <<<"$2")
}

# smoke URL LABEL: list, post, read back, CSRF rejection: 7 TAP lines.
smoke() {
	local u=$1 l=$2 jar=$T/smoke-$RANDOM.jar tok code body
	code=$(curl -s --max-time 10 -c "$jar" -o "$T/smoke.page" -w '%{http_code}' "$u")
	is "$code" 200 "$l: GET the list"
	tok=$(get_token "$u" "$jar")
	ok "$([ -n "$tok" ] && echo 0 || echo 1)" "$l: the form carries a CSRF token"
	body="smoke test via $l: こんにちは <&>"
	code=$(post "${u}post" "$jar" "$tok" "name=smoke" "subject=via $l" "body=$body")
	is "$code" 303 "$l: post answers 303"
	is "$(api "$u" | jq -r '.messages[-1].body')" "$body" "$l: the post reads back through api/messages"
	ok "$(curl -s --max-time 10 -b "$jar" "$u" | grep -qF 'こんにちは &lt;&amp;&gt;' && echo 0 || echo 1)" \
		"$l: the list shows it, escaped"
	is "$(post "${u}post" "$jar" "" "body=no token")" 403 "$l: post without a token: 403"
	is "$(api "$u" | jq '.messages | length')" 1 "$l: only the valid post was stored"
}

# ---- the board's error lines ------------------------------------------------

# error_line_ok BOARD STATUS CAUSE-REGEX DESCRIPTION: the board's error log
# ($T/run/log/BOARD-errors.log, its error_log setting) has a line for a
# POST to BOARD's post answered STATUS: time, board, status, request, and a
# cause matching CAUSE-REGEX (grep -E, case-insensitive).
error_line_ok() {
	local f=$T/run/log/$1-errors.log line
	line=$(grep -E "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z /board/$1/ $2 POST /board/$1/post \[pid [0-9]+\]: " \
		"$f" 2>/dev/null | grep -Ei -- "$3" | tail -n 1)
	ok "$([ -n "$line" ] && echo 0 || echo 1)" "$4"
	[ -n "$line" ] && diag "$line"
	[ -z "$line" ] && [ -f "$f" ] && diag "$f:" && tail -n 5 "$f" | sed 's/^/#   /'
	[ -f "$f" ] || diag "$f does not exist"
	return 0
}

# readonly_on DIR: makes DIR read-only for the board (a read-only bind
# mount as root, chmod otherwise); sets RO_HOW to mount or chmod, or to
# nothing when neither is possible here.  readonly_off DIR undoes it.
readonly_on() {
	RO_HOW=""
	if [ "$(id -u)" -ne 0 ]; then
		chmod a-w "$1" && RO_HOW="chmod"
	elif mount --bind "$1" "$1" 2>/dev/null; then
		if mount -o remount,ro,bind "$1" 2>/dev/null; then
			RO_HOW=mount
			at_exit "umount '$1' 2>/dev/null"
		else
			umount "$1" 2>/dev/null || true
		fi
	fi
}
readonly_off() {
	case "$RO_HOW" in
	chmod) chmod u+w "$1" ;;
	mount) umount "$1" ;;
	esac
}

# forced_errors LABEL: a 503 (lock held past lock_timeout) on board "slow"
# (lock_mode=mkdir lock_timeout=1) and a 500 (read-only data directory) on
# board "ro" each leave a line in the board's error log: 6 TAP lines.
forced_errors() {
	local l=$1 u=$BASE/board/slow/ j=$T/forced-slow.jar tok holder
	local dirlock=${DIRLOCK:-$TOP/bin/dirlock}
	tok=$(get_token "$u" "$j")
	is "$(post "${u}post" "$j" "$tok" "body=slow first")" 303 "$l: slow board: a first post"
	"$dirlock" -d "$(board_locks slow)" messages -- sleep 2.5 &
	holder=$!
	sleep 0.5
	is "$(post "${u}post" "$j" "$tok" "body=while locked")" 503 "$l: post while the lock is held: 503"
	wait "$holder" || true
	error_line_ok slow 503 'busy' "$l: the 503 is a line of run/log/slow-errors.log"
	u=$BASE/board/ro/
	j=$T/forced-ro.jar
	tok=$(get_token "$u" "$j")
	is "$(post "${u}post" "$j" "$tok" "body=before read-only")" 303 "$l: ro board: a first post"
	readonly_on "$T/data/ro"
	if [ -n "$RO_HOW" ]; then
		is "$(post "${u}post" "$j" "$tok" "body=while read-only")" 500 "$l: post to a read-only data directory: 500"
		readonly_off "$T/data/ro"
		error_line_ok ro 500 'read-only' "$l: the 500 is a line of run/log/ro-errors.log"
	else
		skip "$l: 500 on a read-only data directory" "no read-only bind mount or chmod here"
		skip "$l: the 500 in run/log/ro-errors.log" "no read-only data directory here"
	fi
}
