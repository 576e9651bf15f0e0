#!/bin/bash
# tests/http-fcgiwrap.t - smoke test of the board as plain CGI: nginx
# passes the requests to fcgiwrap, which runs cgi-bin/board once per
# request with BOARD_CONF from a FastCGI parameter (one fcgiwrap serves
# both boards).
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

need_board
need_cmd nginx spawn-fcgi fcgiwrap curl jq

BOARDS_FILE=$(boards_file "mkdir lock_mode=mkdir" "sqlite store=sqlite")
instance_start SERVER=fcgiwrap BOARDS_FILE="$BOARDS_FILE" WORKERS=2
diag "private nginx + fcgiwrap on $BASE"
smoke "$BASE/board/mkdir/" "fcgiwrap mkdir"
smoke "$BASE/board/sqlite/" "fcgiwrap sqlite"
instance_stop
is "$(find "$T/run" -name '*.pid' | wc -l)" 0 "stop removed the pid files"
done_testing
