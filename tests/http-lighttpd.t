#!/bin/bash
# tests/http-lighttpd.t - smoke test of the board behind lighttpd, whose
# mod_fastcgi spawns the board processes itself (bin-path): list, post,
# read back, CSRF rejection, on the log and the SQLite store; a forced 503
# and 500 each leave a line in the board's error log.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

need_board
need_cmd lighttpd curl jq

BOARDS_FILE=$(boards_file "mkdir lock_mode=mkdir" "sqlite store=sqlite" \
	"slow lock_mode=mkdir lock_timeout=1" "ro lock_mode=mkdir")
instance_start SERVER=lighttpd BOARDS_FILE="$BOARDS_FILE" WORKERS=2
diag "private lighttpd on $BASE"
smoke "$BASE/board/mkdir/" "lighttpd mkdir"
smoke "$BASE/board/sqlite/" "lighttpd sqlite"
is "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/board/mkdir/api/messages?since=1")" 200 "api/messages?since=1"
code=$(curl -s -o /dev/null -D "$T/redir.headers" -w '%{http_code}' "$BASE/board/mkdir")
is "$code" 301 "/board/mkdir (no slash) redirects, as under nginx"
is "$(tr -d '\r' <"$T/redir.headers" | sed -n 's/^[Ll]ocation: //p' | sed 's|^http://[^/]*||')" /board/mkdir/ \
	"... to /board/mkdir/"
forced_errors lighttpd
instance_stop
is "$(find "$T/run" -name '*.pid' | wc -l)" 0 "stop removed the pid file"
done_testing
