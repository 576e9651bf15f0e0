#!/bin/bash
# tests/http-nginx.t - the board through nginx + spawn-fcgi (a private
# deployment on a free port): posting, listing, pagination, deletion,
# redirects, CSRF, size limits, input validation, escaping, UTF-8,
# storage failure, lock timeout and rate limiting (docs/board.md).
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

need_board
need_cmd nginx spawn-fcgi curl jq

BOARDS_FILE=$(boards_file \
	"main lock_mode=mkdir" \
	"slow lock_mode=mkdir lock_timeout=1" \
	"limited lock_mode=mkdir min_post_interval=60" \
	"ro lock_mode=mkdir" \
	"empty lock_mode=mkdir" \
	"guess lock_mode=mkdir")
instance_start BOARDS_FILE="$BOARDS_FILE" WORKERS=2
diag "private deployment on $BASE"

U=$BASE/board/main/
J=$T/main.jar

# ---- page, cookie, token ---------------------------------------------------

code=$(curl -s --max-time 10 -D "$T/h" -o "$T/page" -c "$J" -w '%{http_code}' "$U")
is "$code" 200 "GET the board page"
cookie=$(tr -d '\r' <"$T/h" | grep -i '^set-cookie: board_csrf=' || true)
ok "$([ -n "$cookie" ] && echo 0 || echo 1)" "the page sets the board_csrf cookie"
ok "$(echo "$cookie" | grep -qi 'httponly' && echo 0 || echo 1)" "cookie is HttpOnly"
ok "$(echo "$cookie" | grep -qi 'samesite=strict' && echo 0 || echo 1)" "cookie is SameSite=Strict"
ok "$(echo "$cookie" | grep -qi 'path=/board/main/' && echo 0 || echo 1)" "cookie Path is the base path"
ok "$(echo "$cookie" | grep -Eqi 'board_csrf=[0-9a-f]{64}(;|$)' && echo 0 || echo 1)" "cookie value is 128 random bits and a 128-bit MAC, in hex"
TOK=$(get_token "$U" "$J")
ok "$([[ "$TOK" =~ ^[0-9a-f]{64}$ ]] && echo 0 || echo 1)" "the form carries a 64-hex-digit token"
is "$(get_token "$U" "$J")" "$TOK" "the token stays the same for the same cookie"

if [ -f "$TOP/htdocs/index.html" ]; then
	is "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/")" 200 "GET / serves htdocs/index.html"
else
	skip "GET /" "htdocs/index.html does not exist"
fi
if [ -f "$TOP/htdocs/style.css" ]; then
	is "$(curl -s -o /dev/null -w '%{http_code} %{content_type}' "$BASE/static/style.css")" "200 text/css" \
		"GET /static/style.css serves htdocs/style.css"
else
	skip "GET /static/style.css" "htdocs/style.css does not exist"
fi
is "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/board/main")" 301 "/board/main redirects to /board/main/"

# ---- post, 303, list, api ----------------------------------------------------

code=$(post "${U}post" "$J" "$TOK" "name=alice" "subject=first subject" "body=first body line
second line" "password=")
is "$code" 303 "post answers 303"
loc=$(header Location)
ok "$([[ "$loc" == "/board/main/" || "$loc" == "$U" ]] && echo 0 || echo 1)" "303 Location is the base path ($loc)"
page=$(curl -s --max-time 10 -b "$J" "$U")
ok "$(grep -qF 'first subject' <<<"$page" && echo 0 || echo 1)" "the list shows the new message"
json=$(api "$U")
is "$(jq -r '.messages | length' <<<"$json")" 1 "api/messages has one message"
is "$(jq -r '.messages[0].no' <<<"$json")" 1 "its number is 1"
is "$(jq -r '.messages[0].name' <<<"$json")" alice "name round-trips"
is "$(jq -r '.messages[0].subject' <<<"$json")" "first subject" "subject round-trips"
is "$(jq -r '.messages[0].body' <<<"$json")" "first body line
second line" "a multi-line body round-trips"
ok "$(jq -r '.messages[0].time' <<<"$json" | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$' && echo 0 || echo 1)" \
	"time is ISO 8601 UTC"
ctype=$(curl -s -o /dev/null -w '%{content_type}' "${U}api/messages")
ok "$([[ "$ctype" == application/json* ]] && echo 0 || echo 1)" "api/messages is application/json ($ctype)"

# ---- pagination: 25 messages -> page 2 holds the oldest ----------------------

fails=0
for i in $(seq 2 25); do
	c=$(post "${U}post" "$J" "$TOK" "name=bob" "subject=subject $i" "body=message number $i" "password=") || true
	[ "$c" = 303 ] || fails=$((fails + 1))
done
is "$fails" 0 "24 more posts answered 303"
is "$(api "$U" | jq '.messages | length')" 25 "api/messages lists 25"
is "$(api "$U" | jq -c '[.messages[].no] == [range(1;26)]')" true "numbers are 1..25, oldest first"
is "$(api "$U" '?since=20' | jq -c '[.messages[].no]')" "[21,22,23,24,25]" "api/messages?since=20"
is "$(api "$U" '?since=20&limit=2' | jq -c '[.messages[].no]')" "[21,22]" "api/messages?since=20&limit=2: the oldest two"
is "$(api "$U" '?limit=2' | jq -c '[.messages[].no]')" "[24,25]" "api/messages?limit=2: the newest two"
is "$(api "$U" '?before=3' | jq -c '[.messages[].no]')" "[1,2]" "api/messages?before=3"
is "$(curl -s -o /dev/null -w '%{http_code}' "${U}api/messages?limit=1001")" 400 "api/messages?limit=1001: 400"
is "$(api_all "$U" | jq -c '[.messages[].no] == [range(1;26)]')" true "paging with since and limit reads every message"
p1=$(curl -s --max-time 10 -b "$J" "$U")
p2=$(curl -s --max-time 10 -b "$J" -w '\n%{http_code}' "$U?page=2")
ok "$(grep -qF 'message number 25' <<<"$p1" && echo 0 || echo 1)" "page 1 shows the newest"
ok "$(grep -qF 'first subject' <<<"$p1" && echo 1 || echo 0)" "page 1 does not show the oldest"
is "$(tail -n 1 <<<"$p2")" 200 "page 2 exists"
ok "$(grep -qF 'first subject' <<<"$p2" && echo 0 || echo 1)" "page 2 shows the oldest"
ok "$(grep -qF 'message number 25' <<<"$p2" && echo 1 || echo 0)" "page 2 does not show the newest"

# ---- delete -------------------------------------------------------------------

code=$(post "${U}post" "$J" "$TOK" "name=carol" "subject=to delete" "body=delete me" "password=s3cret")
is "$code" 303 "post with a delete password"
no=$(api "$U" | jq '.messages | map(select(.body == "delete me")) | .[0].no')
code=$(post "${U}delete" "$J" "$TOK" "no=$no" "password=wrong")
is "$code" 403 "delete with the wrong password: 403"
is "$(api "$U" | jq --argjson n "$no" '[.messages[] | select(.no == $n)] | length')" 1 "the message is still there"
code=$(post "${U}delete" "$J" "$TOK" "no=9999" "password=s3cret")
is "$code" 404 "delete of a message that does not exist: 404"
code=$(post "${U}delete" "$J" "$TOK" "no=1" "password=guess")
ok "$([[ "$code" == 403 || "$code" == 404 ]] && echo 0 || echo 1)" "delete of a message that has no password: 403/404 ($code)"
code=$(post "${U}delete" "$J" "$TOK" "no=$no" "password=")
ok "$([[ "$code" == 400 || "$code" == 403 ]] && echo 0 || echo 1)" "delete with an empty password: 400/403 ($code)"
code=$(post "${U}delete" "$J" "" "no=$no" "password=s3cret")
is "$code" 403 "delete without the CSRF token: 403"
code=$(post "${U}delete" "$J" "$TOK" "no=$no" "password=s3cret")
is "$code" 303 "delete with the right password: 303"
loc=$(header Location)
ok "$([[ "$loc" == "/board/main/" || "$loc" == "$U" ]] && echo 0 || echo 1)" "delete 303 Location is the base path"
is "$(api "$U" | jq --argjson n "$no" '[.messages[] | select(.no == $n)] | length')" 0 "the message is gone"

# ---- an empty log: every message deleted, then the log emptied -------------------
# (board_view keeps the last log it read: an empty one after a cached one
# once called memcmp(NULL, ..., 0), which aborts a sanitizer build.)

EU=$BASE/board/empty/
EJ=$T/empty-board.jar
ETOK=$(get_token "$EU" "$EJ")
views() { # views URL: the status of four page views (both workers)
	local c="" _
	for _ in 1 2 3 4; do c="$c$(curl -s -o /dev/null -w '%{http_code} ' "$1")"; done
	echo "$c"
}
is "$(post "${EU}post" "$EJ" "$ETOK" "body=only one" "password=pw")" 303 "empty board: one post"
views "$EU" >/dev/null # every worker caches the log
: >"$T/data/empty/messages.log"
is "$(views "$EU")" "200 200 200 200 " "a zero-byte log after a cached one: 200 from every worker (no crash, no 502)"
is "$(api "$EU" | jq -c '.messages')" "[]" "api/messages of a zero-byte log: []"
is "$(post "${EU}post" "$EJ" "$ETOK" "body=after empty" "password=pw")" 303 "posting works after the log was emptied"
views "$EU" >/dev/null
eno=$(api "$EU" | jq '.messages[0].no')
is "$(post "${EU}delete" "$EJ" "$ETOK" "no=$eno" "password=pw")" 303 "delete the last message"
is "$(views "$EU")" "200 200 200 200 " "the page of a board whose last message was deleted: 200 from every worker"
is "$(api "$EU" | jq -c '.messages')" "[]" "api/messages of that board: []"

# ---- CSRF ---------------------------------------------------------------------

count() { api "$U" | jq '.messages | length'; }
before=$(count)
is "$(post "${U}post" "$J" "" "body=no token")" 403 "post without a token: 403"
is "$(post "${U}post" "$J" "$(printf '%064d' 0)" "body=wrong token")" 403 "post with a wrong token: 403"
: >"$T/empty.jar"
is "$(post "${U}post" "$T/empty.jar" "$TOK" "body=no cookie")" 403 "post with a token but no cookie: 403"
J2=$T/other.jar
get_token "$U" "$J2" >/dev/null # J2 gets a cookie of its own
is "$(post "${U}post" "$J2" "$TOK" "body=other cookie")" 403 "post with another cookie's token: 403"
# A cookie the board did not issue (planted from a sibling subdomain or
# over plain HTTP) gets no working token: the page replaces it.
planted=0123456789abcdef0123456789abcdef
printf '127.0.0.1\tFALSE\t/board/main/\tFALSE\t0\tboard_csrf\t%s\n' "$planted" >"$T/planted.jar"
ptok=$(curl -s --max-time 10 -b "$T/planted.jar" -D "$T/planted.h" "$U" | tr '\n' ' ' |
	grep -o '<input[^>]*name="token"[^>]*>' | head -n 1 | sed -n 's/.*value="\([0-9a-f]*\)".*/\1/p')
ok "$(grep -qi '^set-cookie: board_csrf=' "$T/planted.h" && echo 0 || echo 1)" "a planted cookie is replaced by an issued one"
ok "$([[ "$ptok" =~ ^[0-9a-f]{64}$ ]] && echo 0 || echo 1)" "the page with the planted cookie carries a token"
code=$(curl -s --max-time 10 -b "$T/planted.jar" -o /dev/null -w '%{http_code}' \
	--data-urlencode "token=$ptok" --data-urlencode "body=planted cookie" "${U}post")
is "$code" 403 "post with a planted cookie and the token the page gave for it: 403"
# Origin, or failing that Referer, of another site: 403; the same origin
# (a page under /static/ posting with the board's cookie and token) works.
xpost() { # xpost HEADER BODY: a post with the main jar and token and one more header
	curl -s --max-time 10 -b "$J" -o "$T/last.body" -w '%{http_code}' -H "$1" \
		--data-urlencode "token=$TOK" --data-urlencode "body=$2" "${U}post"
}
is "$(xpost 'Origin: http://evil.example' 'cross origin')" 403 "post with Origin of another site: 403"
ok "$(grep -qF 'another site' "$T/last.body" && echo 0 || echo 1)" "the 403 page says the form came from another site"
is "$(xpost 'Origin: null' 'null origin')" 403 "post with Origin: null: 403"
is "$(xpost 'Referer: http://evil.example/page' 'cross referer')" 403 "post with Referer of another site (no Origin): 403"
is "$(xpost "Origin: http://127.0.0.1:$((PORT + 1))" 'other port')" 403 "post with Origin of another port: 403"
is "$(count)" "$before" "no rejected post was stored"
is "$(xpost "Origin: $BASE" 'same origin')" 303 "post with the board's own Origin: 303"
is "$(xpost "Referer: $BASE/static/page.html" 'same origin referer')" 303 "post with a Referer of the same origin: 303"
before=$((before + 2))

# ---- size limits and input validation --------------------------------------------

# max_body's default is the largest post form (99,941 bytes): one byte
# more is refused.
big=$(head -c 99941 /dev/zero | tr '\0' 'a')
is "$(post_raw "$J" "${U}post" "token=$TOK&name=x&body=$big")" 413 "a body over max_body (99,941 bytes): 413"
is "$(post_raw "$J" "${U}post" "token=$TOK&name=x&body=bad%zzescape")" 400 "bad percent-encoding: 400"
is "$(post_raw "$J" "${U}post" "token=$TOK&name=x&body=bad%ff%feutf8")" 400 "invalid UTF-8: 400"
code=$(post_raw "$J" "${U}post" "token=$TOK&name=%3Cb%3Etyped%26name%3C%2Fb%3E&subject=missing")
is "$code" 400 "missing body field: 400"
ok "$(grep -qF '&lt;b&gt;typed&amp;name&lt;/b&gt;' "$T/last.body" && echo 0 || echo 1)" \
	"the 400 page shows the typed name, escaped"
ok "$(grep -qF '<b>typed' "$T/last.body" && echo 1 || echo 0)" "the 400 page does not contain it unescaped"
long_body=$(head -c 8001 /dev/zero | tr '\0' 'b')
code=$(post "${U}post" "$J" "$TOK" "name=<i>long&body</i>" "subject=s" "body=$long_body")
is "$code" 400 "body over 8,000 bytes: 400"
ok "$(grep -qF '&lt;i&gt;long&amp;body&lt;/i&gt;' "$T/last.body" && echo 0 || echo 1)" \
	"the 400 page shows the typed name, escaped"
is "$(post "${U}post" "$J" "$TOK" "name=$(printf '%065d' 0)" "body=x")" 400 "name over 64 bytes: 400"
is "$(post "${U}post" "$J" "$TOK" "subject=$(printf '%0129d' 0)" "body=x")" 400 "subject over 128 bytes: 400"
is "$(post "${U}post" "$J" "$TOK" "password=$(printf '%0129d' 0)" "body=x")" 400 "password over 128 bytes: 400"
is "$(post "${U}post" "$J" "$TOK" "name=$(printf '%064d' 0)" "body=$(head -c 8000 /dev/zero | tr '\0' 'c')")" 303 \
	"name of 64 and body of 8,000 bytes are accepted"
code=$(curl -s --max-time 10 -b "$J" -D "$T/last.headers" -o "$T/last.body" -w '%{http_code}' \
	-F "token=$TOK" -F "body=multipart" "${U}post")
is "$code" 415 "a multipart/form-data post: 415"
ok "$(grep -qF 'application/x-www-form-urlencoded' "$T/last.body" && echo 0 || echo 1)" "the 415 page names the accepted type"
is "$(header Accept-Post)" "application/x-www-form-urlencoded" "415 has Accept-Post"
code=$(curl -s --max-time 10 -b "$J" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
	--data-binary "{\"token\":\"$TOK\",\"body\":\"json\"}" "${U}post")
is "$code" 415 "a JSON post: 415"
code=$(curl -s --max-time 10 -b "$J" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
	--data-binary "{\"no\":1}" "${U}delete")
is "$code" 415 "a JSON delete: 415"
is "$(post "${U}post" "$J" "$TOK" "name=x" "body=$(printf '\xef\xbb\xbf\xe2\x80\x8b\xe3\x80\x80 ')")" 400 \
	"a body of U+FEFF U+200B U+3000 and a space only: 400"
is "$(count)" "$((before + 1))" "only the valid post was stored"

# ---- escaping and UTF-8 -------------------------------------------------------------

xss='<script>alert("x")</script><img src=x onerror=alert(1)>'
code=$(post "${U}post" "$J" "$TOK" "name=$xss" "subject=$xss" "body=$xss")
is "$code" 303 "post with markup in every field"
page=$(curl -s --max-time 10 -b "$J" "$U")
ok "$(grep -qi '<script>alert' <<<"$page" && echo 1 || echo 0)" "the page has no live <script> from the post"
ok "$(grep -qi '<img src=x' <<<"$page" && echo 1 || echo 0)" "the page has no live <img> from the post"
ok "$(grep -qF '&lt;script&gt;alert(' <<<"$page" && echo 0 || echo 1)" "the markup is shown escaped"
is "$(api "$U" | jq -r '.messages[-1].body')" "$xss" "the API returns the markup as typed"

jp='日本語のテスト：こんにちは、世界 ✓ 𝄞'
code=$(post "${U}post" "$J" "$TOK" "name=山田" "subject=件名" "body=$jp")
is "$code" 303 "post in Japanese"
is "$(api "$U" | jq -r '.messages[-1].body')" "$jp" "UTF-8 body round-trips through the API"
is "$(api "$U" | jq -r '.messages[-1].name')" "山田" "UTF-8 name round-trips"
ok "$(curl -s --max-time 10 -b "$J" "$U" | grep -qF "$jp" && echo 0 || echo 1)" "the page shows the Japanese text"

# ---- storage failure: read-only data directory -> 500, log intact -------------------

RU=$BASE/board/ro/
RJ=$T/ro.jar
RTOK=$(get_token "$RU" "$RJ")
is "$(post "${RU}post" "$RJ" "$RTOK" "body=before read-only")" 303 "ro board: a first post"
rodir=$T/data/ro
sum_before=$(sha256sum "$rodir/messages.log" | cut -d' ' -f1)
ro_how=""
if [ "$(id -u)" -ne 0 ]; then
	chmod a-w "$rodir" && ro_how="chmod"
elif mount --bind "$rodir" "$rodir" 2>/dev/null; then
	if mount -o remount,ro,bind "$rodir" 2>/dev/null; then
		ro_how=mount
		at_exit "umount -l '$rodir' 2>/dev/null"
	else
		umount "$rodir" 2>/dev/null || true
	fi
fi
if [ -n "$ro_how" ]; then
	code=$(post "${RU}post" "$RJ" "$RTOK" "body=while read-only")
	is "$code" 500 "post to a read-only data directory: 500 ($ro_how)"
	ok "$(grep -qi 'error\|fail\|could not\|cannot' "$T/last.body" && echo 0 || echo 1)" "the 500 page says what went wrong"
	is "$(sha256sum "$rodir/messages.log" | cut -d' ' -f1)" "$sum_before" "the log is unchanged"
	error_line_ok ro 500 'read-only' "the 500 is a line of run/log/ro-errors.log"
	is "$(api "$RU" | jq '.messages | length')" 1 "the board still reads its log"
	# (umount -l: the board processes hold the log they read last open.)
	if [ "$ro_how" = chmod ]; then chmod u+w "$rodir"; else umount -l "$rodir"; fi
	is "$(post "${RU}post" "$RJ" "$RTOK" "body=after read-only")" 303 "posting works again once writable"
else
	for d in "500" "message" "log unchanged" "error log" "still reads" "works again"; do
		skip "read-only data directory: $d" "root ignores permissions and bind mounts are not allowed here"
	done
fi

# ---- lock timeout -> 503 ------------------------------------------------------------------

SU=$BASE/board/slow/
SJ=$T/slow.jar
STOK=$(get_token "$SU" "$SJ")
is "$(post "${SU}post" "$SJ" "$STOK" "body=slow first")" 303 "slow board: a first post"
DIRLOCK=${DIRLOCK:-$TOP/bin/dirlock}
if [ -x "$DIRLOCK" ]; then
	"$DIRLOCK" -d "$(board_locks slow)" messages -- sleep 3 &
	holder=$!
	sleep 0.5
	t0=$(date +%s.%N)
	code=$(post "${SU}post" "$SJ" "$STOK" "body=while locked")
	t1=$(date +%s.%N)
	is "$code" 503 "post while the lock is held elsewhere: 503 after lock_timeout"
	is "$(header Retry-After)" 1 "503 has Retry-After: 1"
	ok "$(grep -qi 'busy' "$T/last.body" && echo 0 || echo 1)" "503 page says busy, please try again"
	error_line_ok slow 503 'busy' "the 503 is a line of run/log/slow-errors.log"
	ok "$(awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a >= 0.8 && b - a < 2.9) }' && echo 0 || echo 1)" \
		"the board waited about lock_timeout (1 s) before giving up"
	wait "$holder" || true
	is "$(post "${SU}post" "$SJ" "$STOK" "body=after the lock")" 303 "posting works once the lock is released"
	is "$(api "$SU" | jq -c '[.messages[].body]')" '["slow first","after the lock"]' "the timed-out post was not stored"
else
	for d in 503 Retry-After busy "error log" waited "works again" "not stored"; do
		skip "lock timeout: $d" "bin/dirlock is not built"
	done
fi

# ---- rate limit -> 429 -------------------------------------------------------------------

LU=$BASE/board/limited/
LJ=$T/limited.jar
LTOK=$(get_token "$LU" "$LJ")
is "$(post "${LU}post" "$LJ" "$LTOK" "body=first")" 303 "rate-limited board: first post"
is "$(post "${LU}post" "$LJ" "$LTOK" "body=second")" 429 "second post at once: 429"
ra=$(header Retry-After)
ok "$([[ "$ra" =~ ^[0-9]+$ ]] && [ "$ra" -ge 1 ] && [ "$ra" -le 60 ] && echo 0 || echo 1)" "429 has Retry-After ($ra)"
is "$(api "$LU" | jq '.messages | length')" 1 "the refused post was not stored"

# ---- password guessing -> 429 ------------------------------------------------------------

GU=$BASE/board/guess/
GJ=$T/guess.jar
GTOK=$(get_token "$GU" "$GJ")
is "$(post "${GU}post" "$GJ" "$GTOK" "body=guess my password" "password=the real one")" 303 "guess board: a post with a password"
gno=$(api "$GU" | jq '.messages[0].no')
codes=""
for i in 1 2 3 4 5 6; do codes="$codes$(post "${GU}delete" "$GJ" "$GTOK" "no=$gno" "password=guess $i") "; done
is "$codes" "403 403 403 403 403 429 " "5 wrong delete passwords are 403, the 6th is 429"
ra=$(header Retry-After)
ok "$([[ "$ra" =~ ^[0-9]+$ ]] && [ "$ra" -ge 1 ] && [ "$ra" -le 60 ] && echo 0 || echo 1)" "the 429 has Retry-After ($ra)"
is "$(post "${GU}delete" "$GJ" "$GTOK" "no=$gno" "password=the real one")" 429 "even the right password waits (limited address and message)"
is "$(api "$GU" | jq '.messages | length')" 1 "the message is still there"

# ---- other methods and paths ---------------------------------------------------------

is "$(curl -s -I -o /dev/null -w '%{http_code}' "$U")" 200 "HEAD of the list: 200"
is "$(curl -s -I "$U" -o /dev/null -w '%{size_download}')" 0 "HEAD has no body"
code=$(curl -s -D "$T/last.headers" -o /dev/null -w '%{http_code}' "${U}post")
is "$code" 405 "GET post: 405"
ok "$([ -n "$(header Allow)" ] && echo 0 || echo 1)" "405 names the allowed methods ($(header Allow))"
is "$(curl -s -o /dev/null -w '%{http_code}' "${U}no-such-page")" 404 "an unknown path: 404"
is "$(curl -s -o /dev/null -w '%{http_code}' "${U}$(printf '%03000d' 0)")" 414 "a request path over 2048 bytes: 414"
code=$(curl -s -o "$T/err.json" -w '%{http_code}' "${U}api/messages?since=abc")
is "$code $(jq -r 'has("error")' "$T/err.json" 2>/dev/null)" "400 true" "api/messages?since=abc: 400 with a JSON error"
code=$(post "${U}post" "$J" "$(printf '%064d' 0)" "name=keepme" "body=typed before the 403")
is "$code" 403 "post with a wrong token: 403 again"
ok "$(grep -qF 'typed before the 403' "$T/last.body" && echo 0 || echo 1)" "the 403 page keeps what was typed"

# ---- lock spaces on tmpfs (tools/deploy, docs/board.md "Where the locks live") -----------

LS=$(board_locks main)
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	ok "$([[ "$LS" =~ ^/dev/shm/dirlock-board\.[A-Za-z0-9]+/main$ ]] && echo 0 || echo 1)" \
		"the main board's lock space is on tmpfs ($LS)"
	is "$(readlink "$T/run/locks")" "${LS%/main}" "run/locks links to the deployment's lock directory"
	is "$(stat -c %a "${LS%/main}")" 700 "the lock directory is the starting user's alone (mode 0700)"
	ok "$([ -d "$LS" ] && echo 0 || echo 1)" "the main board's posts made their locks there"
	is "$(board_locks slow)" "${LS%/main}/slow" "each board has its own lock space"
else
	for d in tmpfs link mode made own; do skip "lock space: $d" "no writable /dev/shm"; done
fi
ok "$([ ! -e "$T/data/main/locks" ] && echo 0 || echo 1)" "no lock directory in the data directory"

# ---- nothing left behind -------------------------------------------------------------------
instance_stop
left=$(find "$T/run/sock" -name '*.sock' | wc -l)
is "$left" 0 "stop removed the sockets"
if [[ "$LS" == /dev/shm/* ]]; then
	ok "$([ ! -e "${LS%/main}" ] && [ ! -e "$T/run/locks" ] && echo 0 || echo 1)" \
		"stop removed the tmpfs lock directory and its link"
else
	skip "stop removed the tmpfs lock directory" "no lock space on tmpfs"
fi
alive=0
for f in "$T"/run/pid/*.pid; do [ -e "$f" ] && alive=1; done
is "$alive" 0 "stop removed the pid files"

done_testing
