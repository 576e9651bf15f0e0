#!/bin/bash
# tests/http-diskfull.t - the board's data directory fills up.
#
# The data directory is a small tmpfs (needs root: mount -t tmpfs; skipped
# otherwise).  The board runs as plain CGI (BOARD_CONF and the CGI
# variables, docs/board.md); posts of a few KiB go in until one is refused.
# Then: the refusal is a 500 with a page that says what went wrong (without
# the real path), every earlier acknowledged post is still in the log, the
# log parses, no temp file is left, and once there is room again posting
# works.  A file size limit below the log's size is refused the same way.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

need_board
[ "$(id -u)" -eq 0 ] || skip_all "mounting a tmpfs needs root"

MNT=$T/mnt
mkdir -p "$MNT"
if ! mount -t tmpfs -o size=192k,mode=0755 dirlock-diskfull "$MNT" 2>"$T/mount.err"; then
	skip_all "cannot mount a tmpfs here: $(head -n 1 "$T/mount.err")"
fi
at_exit "umount '$MNT' 2>/dev/null || umount -l '$MNT' 2>/dev/null"

DATA=$MNT/board
mkdir -p "$DATA"
CONF=$T/board.conf
cat >"$CONF" <<EOF
title = disk full
base_path = /b/
data_dir = $DATA
lock_mode = mkdir
lock_timeout = 5
max_messages = 100000
EOF
COOKIE="" # set from the first page's Set-Cookie (the board only accepts its own)

# cgi METHOD PATH [BODY]: one plain-CGI request; prints the status, the
# response goes to $T/resp (headers and page), stderr to $T/stderr.
cgi() {
	local method=$1 path=$2 body=${3-}
	printf '%s' "$body" >"$T/body"
	env -i PATH="$PATH" BOARD_CONF="$CONF" GATEWAY_INTERFACE=CGI/1.1 SERVER_PROTOCOL=HTTP/1.1 \
		REQUEST_METHOD="$method" SCRIPT_NAME=/b PATH_INFO="$path" REQUEST_URI="/b$path" \
		QUERY_STRING= REMOTE_ADDR=127.0.0.1 HTTP_COOKIE="board_csrf=$COOKIE" \
		CONTENT_TYPE=application/x-www-form-urlencoded CONTENT_LENGTH="${#body}" \
		timeout 20 "$BOARD" <"$T/body" >"$T/resp" 2>"$T/stderr" || true
	cat "$T/stderr" >>"$T/stderr.all"
	sed -n '1s/^Status: \([0-9]*\).*/\1/p' "$T/resp" | tr -d '\r'
}

is "$(cgi GET /)" 200 "GET the board as plain CGI"
COOKIE=$(sed -n 's/^Set-Cookie: board_csrf=\([0-9a-f]*\);.*/\1/p' "$T/resp" | tr -d '\r')
TOK=$(tr '\n' ' ' <"$T/resp" | grep -o '<input[^>]*name="token"[^>]*>' | head -n 1 |
	sed -n 's/.*value="\([0-9a-f]*\)".*/\1/p')
ok "$([ -n "$TOK" ] && echo 0 || echo 1)" "the page carries a CSRF token"

# ~3 KiB bodies: the log is rewritten to a temp file next to it, so the
# tmpfs is full when two copies of the log no longer fit.
filler=$(head -c 3000 /dev/zero | tr '\0' 'x')
acked=0
last=""
for i in $(seq 1 200); do
	st=$(cgi POST /post "token=$TOK&name=disk&subject=post+$i&body=diskfull+post+$i+$filler")
	if [ "$st" != 303 ]; then
		last=$st
		break
	fi
	acked=$i
done
diag "$acked posts stored before the disk was full; df: $(df -k "$MNT" | awk 'NR == 2 { print $3 "k used of " $2 "k" }')"
ok "$([ "$acked" -ge 3 ] && echo 0 || echo 1)" "posts were stored before the disk filled ($acked)"
is "$last" 500 "the post that does not fit is answered 500"
ok "$(grep -qi 'space\|full\|cannot\|could not' "$T/resp" && echo 0 || echo 1)" \
	"the 500 page says what went wrong ($(grep -io 'no space left on device' "$T/resp" | head -n 1))"
ok "$(grep -qF "$MNT" "$T/resp" && echo 1 || echo 0)" "the 500 page does not show the real data path"
ok "$(grep -qE '^[0-9T:.-]+Z /b/ 500 POST /b/post \[pid [0-9]+\]: ' "$T/stderr" && echo 0 || echo 1)" "the 500 is logged on stderr"
diag "stderr: $(head -c 300 "$T/stderr")"

# A few more tries while full: none may damage the log.
for i in 1 2 3; do cgi POST /post "token=$TOK&name=disk&body=while+full+$i+$filler" >/dev/null; done

LOG=$DATA/messages.log
# The first line may be the fence of the last write (docs/board.md).
lines=$(grep -vc '^#fence' "$LOG")
is "$lines" "$acked" "the log holds exactly the $acked acknowledged posts"
bad=$(LC_ALL=C awk -F'\t' '
	NR == 1 && /^#fence\t[1-9][0-9]*$/ { next }
	{ n++ }
	NF != 6 && NF != 7 { print "line " NR ": " NF " fields"; next }
	$1 != n { print "line " NR ": number " $1 }
	$2 !~ /^[0-9]+$/ { print "line " NR ": time " $2 }
	$5 !~ ("^diskfull post " n " x+$") { print "line " NR ": body is not post " n }' "$LOG")
is "$bad" "" "every line parses and holds its post, in order"
ok "$([ "$(tail -c 1 "$LOG" | od -An -c | tr -d ' ')" = '\n' ] && echo 0 || echo 1)" "the log ends with a whole line"
is "$(find "$DATA" -name 'messages.log.tmp.*' | wc -l)" 0 "no temp file is left in the data directory"
is "$(cgi GET /api/messages)" 200 "the board still reads its log while full"
is "$(sed '1,/^\r\{0,1\}$/d' "$T/resp" | jq '.messages | length' 2>/dev/null)" "$acked" "api/messages lists all $acked"

# Room again: posting works.
if mount -o remount,size=4m "$MNT" 2>/dev/null; then
	is "$(cgi POST /post "token=$TOK&name=disk&body=after+the+disk+was+full")" 303 "posting works again once there is room"
	is "$(grep -vc "^#fence" "$LOG")" "$((acked + 1))" "the new post was added to the intact log"
else
	skip "posting works again" "cannot remount the tmpfs bigger"
	skip "the new post was added" "cannot remount the tmpfs bigger"
fi

# A file size limit (RLIMIT_FSIZE) below the log's size: the rewrite
# fails with EFBIG, a 500 like a full disk's -- the previous build was
# killed by SIGXFSZ, answering nothing, and the next post stored the dead
# one's queued message beside its own.
before=$(grep -vc '^#fence' "$LOG")
st=$(ulimit -f 8 && cgi POST /post "token=$TOK&name=disk&body=over+the+size+limit")
is "$st" 500 "a post whose log would pass the file size limit is answered 500, not killed ($(grep -o 'File too large[^<]*' "$T/resp" | head -n 1))"
is "$(cgi POST /post "token=$TOK&name=disk&body=after+the+size+limit")" 303 "the next post, without the limit, is stored"
is "$(grep -c 'over the size limit' "$LOG")" 0 "the refused post is not in the log"
is "$(grep -vc '^#fence' "$LOG")" "$((before + 1))" "only the next post was added"

is "$(grep -cE 'AddressSanitizer|LeakSanitizer|runtime error:' "$T/stderr.all" || true)" 0 \
	"no sanitizer report from the board (SANITIZE=1 builds)"
umount "$MNT" && ok 0 "the tmpfs is unmounted" || ok 1 "the tmpfs is unmounted"
done_testing
