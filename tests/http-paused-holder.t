#!/bin/bash
# tests/http-paused-holder.t - a board request that holds the lock is stopped
# past the stale age; another request breaks the lock and posts; the
# stopped one, resumed, must find its lock lost and leave the newer log
# alone.
#
# Plain CGI requests (BOARD_CONF and the CGI variables), stale_age 1 s and
# delay_ms 1500 inside the read-modify-write window, for lock_mode mkdir
# and rw (intent lock, upgraded before the write).  A is SIGSTOPped while
# it holds the lock (its pid is in the owner record) and sleeps in the
# window; B starts at once, waits (A is alive on this host, so its lock is
# broken only once older than stale_age), breaks it and posts.  Then A is
# SIGCONTed: it checks its lock right before its rename, finds it broken
# and answers an error (503, docs/board.md); B's post is in the log, A's
# is not, and no temp file is left.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

need_board

COOKIE="" # set from the first page's Set-Cookie (the board only accepts its own)
STOPPED=""
at_exit '[ -n "$STOPPED" ] && kill -CONT $STOPPED 2>/dev/null; [ -n "$STOPPED" ] && kill -9 $STOPPED 2>/dev/null; true'

# cgi_start CONF NAME METHOD PATH [BODY]: starts one plain-CGI request in
# the background; response in $T/NAME.resp; sets CGI_PID.
cgi_start() {
	local conf=$1 name=$2 method=$3 path=$4 body=${5-}
	printf '%s' "$body" >"$T/$name.body"
	env -i PATH="$PATH" BOARD_CONF="$conf" GATEWAY_INTERFACE=CGI/1.1 SERVER_PROTOCOL=HTTP/1.1 \
		REQUEST_METHOD="$method" SCRIPT_NAME=/b PATH_INFO="$path" REQUEST_URI="/b$path" \
		QUERY_STRING= REMOTE_ADDR=127.0.0.1 HTTP_COOKIE="board_csrf=$COOKIE" \
		CONTENT_TYPE=application/x-www-form-urlencoded CONTENT_LENGTH="${#body}" \
		"$BOARD" <"$T/$name.body" >"$T/$name.resp" 2>"$T/$name.err" &
	CGI_PID=$!
}
status_of() { sed -n '1s/^Status: \([0-9]*\).*/\1/p' "$T/$1.resp" | tr -d '\r'; }
# wait_pid PID SECONDS: waits for a background request, kills it after SECONDS.
wait_pid() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}
# holder LOCKDIR: pid in the owner record of lock `messages`.
holder() {
	local e
	for e in "$1"/messages.lock/owner.*; do
		[ -L "$e" ] && readlink "$e" 2>/dev/null | sed -n 's/^dirlock1 pid=\([0-9]*\) .*/\1/p' && return 0
	done
	return 0
}

for mode in mkdir rw; do
	DATA=$T/data-$mode
	mkdir -p "$DATA"
	CONF=$T/$mode.conf
	cat >"$CONF" <<-EOF
		title = paused holder
		base_path = /b/
		data_dir = $DATA
		lock_mode = $mode
		stale_age = 1
		delay_ms = 1500
		lock_timeout = 10
	EOF
	COOKIE=""
	cgi_start "$CONF" get GET /
	wait_pid "$CGI_PID" 10
	COOKIE=$(sed -n 's/^Set-Cookie: board_csrf=\([0-9a-f]*\);.*/\1/p' "$T/get.resp" | tr -d '\r')
	TOK=$(tr '\n' ' ' <"$T/get.resp" | grep -o '<input[^>]*name="token"[^>]*>' | head -n 1 |
		sed -n 's/.*value="\([0-9a-f]*\)".*/\1/p')
	ok "$([ -n "$TOK" ] && echo 0 || echo 1)" "$mode: the page carries a CSRF token"
	cgi_start "$CONF" first POST /post "token=$TOK&name=x&body=first+post"
	wait_pid "$CGI_PID" 10
	is "$(status_of first)" 303 "$mode: a first post"

	# A: holds the lock, sleeps in the read-modify-write window.
	cgi_start "$CONF" a POST /post "token=$TOK&name=a&body=from+the+paused+request"
	A=$CGI_PID
	h=""
	for _ in $(seq 1 50); do
		h=$(holder "$DATA/locks")
		[ "$h" = "$A" ] && break
		sleep 0.02
	done
	tseen=$(date +%s.%N)
	is "$h" "$A" "$mode: request A holds the lock (pid $A in the owner record)"
	sleep 0.2
	kill -STOP "$A"
	STOPPED=$A
	t0=$(date +%s.%N)

	# B: breaks A's lock once older than stale_age, takes it and posts.
	cgi_start "$CONF" b POST /post "token=$TOK&name=b&body=from+the+breaking+request"
	B=$CGI_PID
	wait_pid "$B" 15
	t1=$(date +%s.%N)
	is "$(status_of b)" 303 "$mode: request B broke the stale lock and posted"
	# B cannot break before A's lock is 1 s old, then it sleeps delay_ms.
	took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	least=$(awk -v s="$tseen" -v a="$t0" 'BEGIN { printf "%.2f", 1.0 - (a - s) + 1.5 - 0.1 }')
	ok "$(awk -v w="$took" -v l="$least" 'BEGIN { exit !(w >= l) }' && echo 0 || echo 1)" \
		"$mode: B broke the lock only after the stale age (B took $took s, at least $least expected)"
	ok "$(grep -q 'from the breaking request' "$DATA/messages.log" && echo 0 || echo 1)" "$mode: B's post is in the log"
	log_b=$(sha256sum "$DATA/messages.log" | cut -d' ' -f1)

	# A resumes: its check right before the rename finds the lock lost.
	kill -CONT "$A"
	STOPPED=""
	wait_pid "$A" 15
	st=$(status_of a)
	ok "$([[ "$st" =~ ^5[0-9][0-9]$ ]] && echo 0 || echo 1)" "$mode: the resumed request A answers an error ($st)"
	is "$(sha256sum "$DATA/messages.log" | cut -d' ' -f1)" "$log_b" "$mode: A did not overwrite the newer log"
	ok "$(grep -q 'from the paused request' "$DATA/messages.log" && echo 1 || echo 0)" "$mode: A's post is not in the log"
	is "$(grep -v '^#fence' "$DATA/messages.log" | cut -f5 | tr '\n' '|')" "first post|from the breaking request|" \
		"$mode: the log holds the first post and B's, in order"
	is "$(find "$DATA" -maxdepth 1 -name 'messages.log.tmp.*' | wc -l)" 0 "$mode: no temp file is left"
	if [ -x "${DIRLOCK:-$TOP/bin/dirlock}" ]; then
		is "$("${DIRLOCK:-$TOP/bin/dirlock}" status -d "$DATA/locks" 2>&1 | grep -v ' free$')" "" "$mode: no lock is left held"
	else
		skip "$mode: no lock is left held" "bin/dirlock is not built"
	fi
	cat "$T/get.err" "$T/first.err" "$T/a.err" "$T/b.err" >>"$T/all.log" 2>/dev/null || true
done
is "$(grep -cE 'AddressSanitizer|LeakSanitizer|runtime error:' "$T/all.log" || true)" 0 \
	"no sanitizer report from the board (SANITIZE=1 builds)"
done_testing
