#!/bin/bash
# tests/http-browser-phone.t - the pages on a phone: headless Chromium
# emulating a 360 x 740 touch screen (tests/http-browser-lib.sh,
# BROWSER_PHONE=1) loads the C board, seed 001's Perl board, the index
# and the race page after a short race.  Each must lay out at the
# phone's width (a page without a viewport is laid out 980 px wide and
# shrunk to fit, its text unreadably small) with nothing wider than the
# screen; the Perl board's message box has a label and its page says it
# is English; the race page's chart labels are drawn at 12 px or more.
# Saves screenshots to tests/results/browser/phone-*.png.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"
# shellcheck source=tests/http-browser-lib.sh
. "$(dirname "$0")/http-browser-lib.sh"
browser_need
need_board
need_cmd nginx spawn-fcgi fcgiwrap perl curl jq base64

BOARDS_FILE=$(boards_file "mkdir lock_mode=mkdir" "sqlite lock_mode=mkdir store=sqlite" \
	"perl-none program=perl lock_mode=none")
instance_start BOARDS_FILE="$BOARDS_FILE" WORKERS=2
out=$TOP/tests/results/browser
mkdir -p "$out"

# A long line of Japanese on each board: nothing may widen the page.
long=$(printf 'あ%.0s' $(seq 300))
for b in mkdir perl-none; do
	J=$T/$b.jar
	is "$(post "$BASE/board/$b/post" "$J" "$(get_token "$BASE/board/$b/" "$J")" "name=山田" "body=$long")" 303 \
		"$b: a message of one 300-character line"
done

W=360
BROWSER_PHONE=1 browser_start "$W,740"

# fits URL LABEL: laid out at the phone's width, nothing wider than it.
fits() {
	wd_go "$1"
	local m
	m=$(wd_js 'var d = document.documentElement; return {vw: d.clientWidth, sw: d.scrollWidth};')
	is "$(jq -r .vw <<<"$m")" "$W" "$2: laid out $W px wide (the page's viewport)"
	ok "$(jq -e --argjson w "$W" '.sw <= $w' <<<"$m" >/dev/null && echo 0 || echo 1)" \
		"$2: nothing wider than the screen (scroll width $(jq -r .sw <<<"$m") px)"
	screenshot "$out/phone-$3.png"
}

fits "$BASE/board/mkdir/" "the C board" board
fits "$BASE/board/perl-none/" "seed 001's Perl board" perl-board
m=$(wd_js 'var t = document.querySelector("textarea[name=body]");
	return {labels: t && t.labels ? t.labels.length : 0, lang: document.documentElement.lang};')
ok "$(jq -e '.labels >= 1' <<<"$m" >/dev/null && echo 0 || echo 1)" "the Perl board's message box has a label"
is "$(jq -r .lang <<<"$m")" en "the Perl board's page says it is in English"
fits "$BASE/" "the index" index

# The race page after a short race (two boards, one post each): its
# table and its charts at the phone's width.
wd_go "$BASE/race.html?auto=1&clients=1&posts=1"
if wd_wait_js 60 'return document.body.dataset.done === "1";'; then r=0; else r=1; fi
ok $r "the race ran"
m=$(wd_js 'var d = document.documentElement, t = document.getElementById("results");
	var sizes = Array.prototype.map.call(document.querySelectorAll("svg.race-bars text.race-label"), function (x) {
		var svg = x.ownerSVGElement, scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
		return parseFloat(getComputedStyle(x).fontSize) * scale; });
	return {vw: d.clientWidth, sw: d.scrollWidth, right: t.getBoundingClientRect().right, rows: t.tBodies[0].rows.length,
		labels: sizes.length, smallest: Math.min.apply(null, sizes)};')
diag "race page: $m"
is "$(jq -r .rows <<<"$m")" 2 "the race page's table has a row per board"
ok "$(jq -e '.right <= .vw and .sw <= .vw' <<<"$m" >/dev/null && echo 0 || echo 1)" \
	"the race page's table fits the screen (right edge $(jq -r '.right | floor' <<<"$m") of $(jq -r .vw <<<"$m") px)"
ok "$(jq -e '.labels >= 8 and .smallest >= 12' <<<"$m" >/dev/null && echo 0 || echo 1)" \
	"the race page's chart labels are drawn at 12 px or more (smallest $(jq -r '.smallest * 10 | floor / 10' <<<"$m") px)"
screenshot_page "$out/phone-race.png"
done_testing
