#!/bin/bash
# tests/http-browser.t - a real browser uses the board: headless Chromium,
# driven through chromedriver's WebDriver HTTP interface (curl + jq,
# tests/http-browser-lib.sh),
# loads a board of a private nginx deployment, fills in and submits the
# form, and must see its message on the page it is sent back to.  Saves
# screenshots to tests/results/browser/; with UPDATE_SCREENSHOT=1 also
# copies the board's screenshot to docs/screenshot.png.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

# shellcheck source=tests/http-browser-lib.sh
. "$(dirname "$0")/http-browser-lib.sh"
browser_need
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

browser_start 1000,1200

U=$BASE/board/mkdir/
wd_go "$U"
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
ok "$(is_png "$out/board.png" && echo 0 || echo 1)" "screenshot saved: tests/results/browser/board.png"
wd_go "$BASE/"
screenshot "$out/index.png"
if [ "${UPDATE_SCREENSHOT:-0}" = 1 ]; then
	cp "$out/board.png" "$TOP/docs/screenshot.png"
	diag "copied to docs/screenshot.png"
fi
done_testing
