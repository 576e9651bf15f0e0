#!/bin/bash
# tests/http-browser-race.t - the two demonstration pages in headless Chromium
# against a private nginx deployment of the six race boards with the
# demonstration delay on:
#   htdocs/race.html?auto=1 runs the lost-update race from the browser; the
#   numbers it shows (table #results and the numbers drawn beside the bars)
#   must be what the boards say: stored = the run's bodies found through
#   api/messages, acknowledged = the 303s nginx logged, lost = the
#   difference; none must lose posts, the locked boards none;
#   htdocs/rw-timeline.html must draw one lane per process of the shipped
#   trace, each with its holds.
# Screenshots go to tests/results/browser-race/; UPDATE_SCREENSHOT=1 also
# copies them to docs/race.png and docs/rw-timeline.png (the ones there
# were taken the same way against `make demo`).
# Environment: RACE_DELAY_MS [20], RACE_CLIENTS [8], RACE_POSTS [10].
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"
# shellcheck source=tests/http-browser-lib.sh
. "$(dirname "$0")/http-browser-lib.sh"
browser_need
need_board
need_cmd nginx spawn-fcgi curl jq base64

DELAY=${RACE_DELAY_MS:-20}
CLIENTS=${RACE_CLIENTS:-8}
POSTS=${RACE_POSTS:-10}
SENT=$((CLIENTS * POSTS))
BOARDS="none wrong mkdir rw flock sqlite"
LOCKED="mkdir rw flock sqlite"

BOARDS_FILE=$(boards_file "none lock_mode=none" "wrong lock_mode=wrong" "mkdir lock_mode=mkdir" \
	"rw lock_mode=rw" "flock lock_mode=flock" "sqlite lock_mode=mkdir store=sqlite")
instance_start BOARDS_FILE="$BOARDS_FILE" DELAY_MS="$DELAY" WORKERS=4 ACCESS_LOG=1
diag "private deployment on $BASE (delay_ms $DELAY), $CLIENTS clients x $POSTS posts per board"
out=$TOP/tests/results/browser-race
mkdir -p "$out"
browser_start 1280,1000

# ---- the timeline page ---------------------------------------------------------

trace=$TOP/htdocs/rw-trace.json
ok "$(jq -e .experiments "$trace" >/dev/null 2>&1 && echo 0 || echo 1)" "the shipped trace htdocs/rw-trace.json is there"
wd_go "$BASE/rw-timeline.html"
is "$(wd GET "$S/title" | jq -r '.value')" "Reader-writer attacks, as timelines" "rw-timeline.html loads"
if [ "$(wd GET "$S/title" | jq -r '.value')" = "Reader-writer attacks, as timelines" ] && [ -r "$trace" ] &&
	wd_wait_js 20 'return document.body.dataset.done === "1" || document.body.dataset.error === "1"' &&
	[ "$(wd_js 'return document.body.dataset.done === "1"')" = true ]; then
	ok 0 "rw-timeline.html draws the trace"
	want=$(jq -c '[.experiments[] | (.scenario + "/" + .lock) as $x | .processes[] |
		{x: $x, p: .name, n: (.spans | length), holds: ([.spans[] | select(.[1] != null)] | length)}]' "$trace")
	got=$(wd_js 'return Array.from(document.querySelectorAll("g.lane")).map(function (g) {
		return {x: g.dataset.experiment, p: g.dataset.proc, n: Number(g.dataset.spans),
			holds: g.querySelectorAll("rect.span-hold-read, rect.span-hold-write").length};
		});')
	is "$(jq length <<<"$got")" "$(jq length <<<"$want")" "one lane per process of the trace"
	is "$(jq -cS 'sort_by(.x, .p)' <<<"$got")" "$(jq -cS 'sort_by(.x, .p)' <<<"$want")" \
		"every lane is drawn with each of its holds"
	is "$(jq -c '[.experiments[] | .scenario + "/" + .lock] | sort' "$trace")" \
		"$(jq -nc '[("read-attack", "write-attack") + "/" + ("fair", "writer", "reader", "simple", "flock")] | sort')" \
		"the shipped trace has both attacks under the four policies and flock"
	# The pictures must say what the trace says: reader policy and flock
	# lock the writer out of the read attack, fair lets it in.
	verdicts=$(wd_js 'var o = {}; document.querySelectorAll(".tl-experiment").forEach(function (s) {
		o[s.dataset.experiment] = s.classList.contains("tl-lockout") ? "lockout" : "prompt"; }); return o;')
	is "$(jq -c '[."read-attack/reader", ."read-attack/flock", ."read-attack/fair", ."write-attack/fair"]' <<<"$verdicts")" \
		'["lockout","lockout","prompt","prompt"]' \
		"drawn verdicts: the writer starves under reader and flock; under fair neither victim is locked out"
	screenshot_page "$out/rw-timeline.png"
	ok "$(is_png "$out/rw-timeline.png" && echo 0 || echo 1)" "screenshot saved: tests/results/browser-race/rw-timeline.png"
else
	ok 1 "rw-timeline.html draws the trace"
	diag "source line: $(wd_js 'return (document.getElementById("source") || {}).textContent')"
fi

# ---- the race page -----------------------------------------------------------

started=$SECONDS
wd_go "$BASE/race.html?auto=1&clients=$CLIENTS&posts=$POSTS"
is "$(wd GET "$S/title" | jq -r '.value')" "The lost-update race, live" "race.html loads"
race_done=1
if [ "$(wd GET "$S/title" | jq -r '.value')" = "The lost-update race, live" ] &&
	wd_wait_js 120 'return document.body.dataset.done === "1"'; then
	ok 0 "race.html?auto=1 finishes ($((SECONDS - started)) s)"
else
	race_done=0
	ok 1 "race.html?auto=1 finishes within 120 s"
	diag "status: $(wd_js 'return (document.getElementById("status") || {}).textContent')"
fi
run=$(wd_js 'return document.body.dataset.run || ""' | jq -r .)
ok "$([[ "$run" =~ ^[0-9a-f]{12}$ ]] && echo 0 || echo 1)" "the run has an id ($run)"

# What the page shows: the table, and the numbers and bars it drew.
table=$(wd_js 'var o = {};
	document.querySelectorAll("#results tbody tr").forEach(function (tr) {
		var r = {};
		tr.querySelectorAll("td").forEach(function (td) { r[td.dataset.field] = Number(td.textContent); });
		o[tr.dataset.board] = r;
	});
	return o;')
drawn=$(wd_js 'var o = {};
	document.querySelectorAll(".race-board").forEach(function (sec) {
		var r = {};
		sec.querySelectorAll("text.race-value").forEach(function (t) { r[t.dataset.kind] = t.textContent; });
		sec.querySelectorAll("rect.bar").forEach(function (b) { r[b.dataset.kind + "_width"] = Number(b.getAttribute("width")); });
		r.track = Number(sec.querySelector("rect.bar-track").getAttribute("width"));
		r.why = sec.querySelector(".race-why").textContent;
		o[sec.dataset.board] = r;
	});
	return o;')
echo "$table" | jq . >"$out/results.json"
echo "$drawn" | jq . >"$out/drawn.json"
rows=$(wd_js 'return Array.from(document.querySelectorAll("#results tbody tr")).map(function (tr) {
	return tr.dataset.board; });')
is "$rows" '["none","wrong","mkdir","rw","flock","sqlite"]' "#results has one row per board, in order"
delay_text=$(wd_js 'return document.getElementById("delay").textContent' | jq -r .)
ok "$(grep -qF "with a $DELAY ms demonstration delay" <<<"$delay_text" && echo 0 || echo 1)" \
	"the page says the boards run with the $DELAY ms delay"

# stored_on BOARD: the run's bodies on BOARD, read by paging api/messages.
stored_on() {
	local u=$BASE/board/$1/api/messages since=0 page n=0 i
	for ((i = 0; i < 100; i++)); do
		page=$(curl -s --max-time 10 "$u?since=$since&limit=1000")
		[ "$(jq '.messages | length' <<<"$page")" -gt 0 ] || break
		n=$((n + $(jq --arg p "race $run $1 " '[.messages[] | select(.body | startswith($p))] | length' <<<"$page")))
		since=$(jq '[.messages[].no] | max' <<<"$page")
	done
	echo "$n"
}
# acked_on BOARD: the 303 answers nginx logged for posts to BOARD.
acked_on() {
	awk -v r="POST /board/$1/post " 'index($0, r) { split($0, q, "\""); split(q[3], f, " "); if (f[1] == 303) n++ }
		END { print n + 0 }' "$T/run/nginx/logs/access.log"
}

[ "$race_done" = 1 ] || {
	diag "the race did not finish: nothing to compare"
	done_testing
	exit 1
}
for b in $BOARDS; do
	# The table's numbers (-1 for a missing one) and the drawn ones.
	read -r sent ack rej stored lost < <(jq -r --arg b "$b" \
		'[.[$b] | (.sent, .acknowledged, .rejected, .stored, .lost) // -1] | @tsv' <<<"$table")
	diag "$b: sent $sent, acknowledged $ack, rejected $rej, stored $stored, lost $lost"
	is "$stored" "$(stored_on "$b")" "$b: stored is what api/messages holds of this run"
	is "$ack" "$(acked_on "$b")" "$b: acknowledged is the number of 303s the server sent"
	is "$lost" "$((ack - stored))" "$b: lost = acknowledged - stored"
	is "$((ack + rej)) $sent" "$SENT $SENT" "$b: every post sent was acknowledged or rejected"
	is "$(jq -r --arg b "$b" '.[$b] | [.acknowledged, .stored, .lost, .rejected] | join(" ")' <<<"$drawn")" \
		"$ack $stored $lost $rej" "$b: the numbers drawn are the table's"
	# Each bar's width is its number out of the posts sent.
	bad=$(jq --arg b "$b" --argjson sent "$SENT" '.[$b] as $r | [("acknowledged", "stored", "lost", "rejected") |
		($r[. + "_width"] - $r.track * ($r[.] | tonumber) / $sent) | fabs | select(. > 0.05)] | length' <<<"$drawn")
	is "$bad" 0 "$b: every bar's length is its number out of $SENT"
done

lost=$(jq '.none.lost' <<<"$table")
ok "$([ "$lost" -gt 0 ] && echo 0 || echo 1)" "none: the browser's overlapping posts lost $lost acknowledged posts"
ok "$(jq -r '.none.why' <<<"$drawn" | grep -q "^Lost $lost of " && echo 0 || echo 1)" \
	"none: the sentence under it says what was lost and why"
for b in $LOCKED; do
	is "$(jq --arg b "$b" '.[$b].lost' <<<"$table")" 0 "$b: no acknowledged post lost"
done
is "$(jq '[.mkdir, .rw, .flock | .acknowledged] | unique' -c <<<"$table")" "[$SENT]" \
	"mkdir, rw, flock: every post acknowledged"

screenshot_page "$out/race.png"
ok "$(is_png "$out/race.png" && echo 0 || echo 1)" "screenshot saved: tests/results/browser-race/race.png"

if [ "${UPDATE_SCREENSHOT:-0}" = 1 ]; then
	cp "$out/race.png" "$TOP/docs/race.png"
	cp "$out/rw-timeline.png" "$TOP/docs/rw-timeline.png"
	diag "copied to docs/race.png and docs/rw-timeline.png"
fi
done_testing
