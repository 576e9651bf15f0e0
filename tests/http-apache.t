#!/bin/bash
# tests/http-apache.t - the board behind Apache httpd, whose mod_fcgid
# spawns the board processes: list, post, read back, CSRF rejection on
# the log and the SQLite store; the configuration's hardening (no TRACE,
# request read timeouts: 200 slow clients do not starve posts); a forced
# 503 and 500 each leave a line in the board's error log.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

need_board
need_cmd apache2 curl jq perl

# As root, Apache runs the boards as www-data, who must reach $T.
chmod 755 "$T"
if [ "$(id -u)" -eq 0 ] && ! runuser -u "${APACHE_USER:-www-data}" -- test -x "$(dirname "$BOARD")"; then
	skip_all "as root Apache runs the board as ${APACHE_USER:-www-data}, who cannot reach $BOARD"
fi

BOARDS_FILE=$(boards_file "mkdir lock_mode=mkdir" "sqlite store=sqlite" \
	"slow lock_mode=mkdir lock_timeout=1" "ro lock_mode=mkdir")
instance_start SERVER=apache BOARDS_FILE="$BOARDS_FILE" WORKERS=2
diag "private Apache on $BASE"
smoke "$BASE/board/mkdir/" "apache mkdir"
smoke "$BASE/board/sqlite/" "apache sqlite"
is "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/board/mkdir")" 301 "/board/mkdir redirects to /board/mkdir/"

# TRACE would echo the request's headers (cookies included) back.
code=$(curl -s -X TRACE -H 'X-Echo: secret-header' -o "$T/trace.body" -w '%{http_code}' "$BASE/board/mkdir/")
ok "$([ "$code" = 405 ] || [ "$code" = 403 ] || [ "$code" = 501 ] && echo 0 || echo 1)" "TRACE is refused ($code)"
ok "$(grep -q 'secret-header' "$T/trace.body" && echo 1 || echo 0)" "TRACE does not echo the request headers"

forced_errors apache

# ---- 200 slow clients must not starve posts -------------------------------
U=$BASE/board/mkdir/
J=$T/slow-clients.jar
TOK=$(get_token "$U" "$J")
"$TOP/tests/slow-clients" "$PORT" 200 40 >"$T/slow-clients.out" 2>&1 &
slow=$!
at_exit "kill $slow 2>/dev/null"
sleep 3
t0=$(date +%s.%N)
stored=0
for i in 1 2 3 4 5; do
	code=$(curl -s --max-time 10 -b "$J" -c "$J" -o /dev/null -w '%{http_code}' \
		--data-urlencode "token=$TOK" --data-urlencode "body=during slowloris $i" "${U}post") || true
	[ "$code" = 303 ] && stored=$((stored + 1))
done
t1=$(date +%s.%N)
kill "$slow" 2>/dev/null || true
wait "$slow" 2>/dev/null || true
diag "5 posts during 200 slow connections: $stored stored in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
is "$stored" 5 "5 posts while 200 slow clients hold connections: all stored"

instance_stop
is "$(find "$T/run" -name '*.pid' | wc -l)" 0 "stop removed the pid files"
done_testing
