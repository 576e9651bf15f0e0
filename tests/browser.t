#!/bin/bash
# tests/browser.t - a real browser uses the board: headless Chromium,
# driven through chromedriver's WebDriver HTTP interface (curl + jq),
# loads a board of a private nginx deployment, fills in and submits the
# form, and must see its message on the page it is sent back to.  Saves
# screenshots to tests/results/browser/; with UPDATE_SCREENSHOT=1 also
# copies the board's screenshot to docs/screenshot.png.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
CHROMEDRIVER=${CHROMEDRIVER:-$(command -v chromedriver || true)}
[ -n "$CHROMIUM" ] || skip_all "chromium is not installed (make deps)"
[ -n "$CHROMEDRIVER" ] || skip_all "chromedriver is not installed (make deps: chromium-driver)"
need_board
need_cmd nginx spawn-fcgi curl jq base64

BOARDS_FILE=$(boards_file "mkdir lock_mode=mkdir title=dirlock_board" "rw lock_mode=rw")
instance_start BOARDS_FILE="$BOARDS_FILE" WORKERS=2
diag "private deployment on $BASE"
out=$TOP/tests/results/browser
mkdir -p "$out"

# Some messages so the screenshot shows a board in use.
J=$T/seed.jar
TOK=$(get_token "$BASE/board/mkdir/" "$J")
post "$BASE/board/mkdir/post" "$J" "$TOK" "name=alice" "subject=Welcome" \
	"body=This board keeps its messages in a flat log; posts take a mkdir lock." >/dev/null
post "$BASE/board/mkdir/post" "$J" "$TOK" "name=山田" "subject=こんにちは" \
	"body=日本語も使えます。" >/dev/null

# chromedriver on a free port of 127.0.0.1, stopped by the trap.
DPORT=$(free_port) || bail_out "no free port"
HOME=$T "$CHROMEDRIVER" --port="$DPORT" --allowed-ips=127.0.0.1 --log-path="$T/chromedriver.log" >/dev/null 2>&1 &
driver=$!
at_exit "kill $driver 2>/dev/null; wait $driver 2>/dev/null"
WD=http://127.0.0.1:$DPORT
for _ in $(seq 1 50); do
	curl -s --max-time 1 "$WD/status" | jq -e '.value.ready' >/dev/null 2>&1 && break
	sleep 0.1
done

# wd METHOD PATH [JSON]: one WebDriver command; prints the response.
wd() {
	if [ $# -ge 3 ]; then
		curl -s --max-time 30 -X "$1" -H 'Content-Type: application/json' -d "$3" "$WD$2"
	else
		curl -s --max-time 30 -X "$1" "$WD$2"
	fi
}

caps=$(jq -n --arg bin "$CHROMIUM" --arg prof "$T/profile" '{capabilities: {alwaysMatch: {
	browserName: "chrome",
	"goog:chromeOptions": {binary: $bin, args: [
		"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + $prof, "--window-size=1000,1200",
		"--lang=en-US"]}}}}')
session=$(wd POST /session "$caps" | jq -r '.value.sessionId // empty')
if [ -z "$session" ]; then
	diag "chromedriver log:"
	tail -n 20 "$T/chromedriver.log" | sed 's/^/#   /'
	bail_out "could not start a Chromium session"
fi
S=/session/$session
at_exit "curl -s --max-time 10 -X DELETE '$WD$S' >/dev/null"
ok 0 "Chromium session started"

# find CSS: the element id of the first match.
wd_find() {
	wd POST "$S/element" "$(jq -n --arg v "$1" '{using: "css selector", value: $v}')" |
		jq -r '.value | to_entries[0].value // empty'
}
type_into() {
	local el
	el=$(wd_find "$1")
	[ -n "$el" ] || return 1
	wd POST "$S/element/$el/value" "$(jq -n --arg t "$2" '{text: $t}')" >/dev/null
}
screenshot() { wd GET "$S/screenshot" | jq -r '.value' | base64 -d >"$1"; }

U=$BASE/board/mkdir/
wd POST "$S/url" "$(jq -n --arg u "$U" '{url: $u}')" >/dev/null
is "$(wd GET "$S/title" | jq -r '.value')" "dirlock board" "the board page loads in the browser"
ok "$([ -n "$(wd_find 'input[name=token]')" ] && echo 0 || echo 1)" "the form has its hidden token"

body="Posted from headless Chromium at $(date -u +%H:%M:%S) — こんにちは <b>not bold</b>"
type_into 'input[name=name]' "browser" && type_into 'input[name=subject]' "Hello from a browser" &&
	type_into 'textarea[name=body]' "$body"
ok $? "fill in name, subject and message"
btn=$(wd_find 'form[action$="/post"] button[type=submit]')
[ -n "$btn" ] && wd POST "$S/element/$btn/click" '{}' >/dev/null
ok $? "click Post"

# The board answers 303 to the list; wait for the message to show.
found=1
for _ in $(seq 1 50); do
	if wd GET "$S/source" | jq -r '.value' | grep -qF 'Hello from a browser'; then
		found=0
		break
	fi
	sleep 0.1
done
ok "$found" "the message appears on the page after the redirect"
is "$(wd GET "$S/url" | jq -r '.value')" "$U" "the browser is back on the board's list"
src=$(wd GET "$S/source" | jq -r '.value')
ok "$(grep -qF '&lt;b&gt;not bold&lt;/b&gt;' <<<"$src" && echo 0 || echo 1)" "the markup typed into the message is shown as text"
is "$(api "$U" | jq -r '.messages[-1].body')" "$body" "the API has the message exactly as typed"
is "$(curl -s "$BASE/static/style.css" -o /dev/null -w '%{http_code}')" 200 "the style sheet loads"

screenshot "$out/board.png"
ok "$([ "$(head -c 8 "$out/board.png" | od -An -c | tr -d ' ')" = '211PNG\r\n032\n' ] && echo 0 || echo 1)" \
	"screenshot saved: tests/results/browser/board.png"
wd POST "$S/url" "$(jq -n --arg u "$BASE/" '{url: $u}')" >/dev/null
screenshot "$out/index.png"
if [ "${UPDATE_SCREENSHOT:-0}" = 1 ]; then
	cp "$out/board.png" "$TOP/docs/screenshot.png"
	diag "copied to docs/screenshot.png"
fi
done_testing
