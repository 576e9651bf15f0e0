#!/bin/bash
# tests/http-perl-board.t - seed 001's board in Perl (cgi-bin/board.pl)
# behind nginx and fcgiwrap, as make start deploys it: the page, a post,
# the API, the CSRF check, the "busy, please wait" answer; then a short
# lost-update run with a 100 ms demonstration delay: without a lock posts
# are lost, the article's own mkdir lock with a short stale age (0 s)
# rejects posts as busy (and may lose some), and the Dirlock module loses
# none.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

need_cmd nginx spawn-fcgi fcgiwrap curl jq perl
[ -d "$TOP/bindings/perl/blib/arch/auto/Dirlock" ] ||
	skip_all "the Perl module is not built (make bindings)"
[ -x "${DIRLOCK:-$TOP/bin/dirlock}" ] || skip_all "bin/dirlock is not built (make)"

CLIENTS=${LU_CLIENTS:-8}
POSTS=${LU_POSTS:-8}
DELAY=${LU_DELAY_MS:-100}

BOARDS_FILE=$(boards_file "perl-none program=perl lock_mode=none" \
	"perl-seed program=perl lock_mode=seed stale_age=0" \
	"perl-dirlock program=perl lock_mode=dirlock" \
	"perl-slow program=perl lock_mode=dirlock lock_timeout=1 delay_ms=0")
instance_start BOARDS_FILE="$BOARDS_FILE" DELAY_MS="$DELAY" WORKERS=8
diag "private nginx + fcgiwrap on $BASE (delay_ms $DELAY)"

# ---- the board itself -------------------------------------------------------

u=$BASE/board/perl-slow/
jar=$T/perl.jar
is "$(curl -s --max-time 10 -c "$jar" -o "$T/page" -w '%{http_code}' "$u")" 200 "GET the list"
tok=$(get_token "$u" "$jar")
ok "$([ -n "$tok" ] && echo 0 || echo 1)" "the form carries a CSRF token"
body="perl board: こんにちは <&>"
is "$(post "${u}post" "$jar" "$tok" "name=t" "subject=s" "body=$body")" 303 "a post answers 303"
is "$(header Location)" /board/perl-slow/ "... to the list"
is "$(api "$u" | jq -r '.messages[-1].body')" "$body" "the post reads back through api/messages"
ok "$(curl -s --max-time 10 -b "$jar" "$u" | grep -qF 'こんにちは &lt;&amp;&gt;' && echo 0 || echo 1)" \
	"the list shows it, escaped"
is "$(post "${u}post" "$jar" "" "body=no token")" 403 "a post without the token: 403"
is "$(post "${u}post" "$jar" "$tok" "body= ")" 400 "an empty message: 400"
is "$(api "$u" | jq '.messages | length')" 1 "only the valid post was stored"
is "$(curl -s --max-time 10 "${u}api/info" | jq -r .mode)" dirlock "api/info names the lock mode"
is "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "${u}nowhere")" 404 "an unknown path: 404"

# A post while another process holds the lock (the dirlock command, in
# the board's lock space): after lock_timeout, the seed's busy page.
"${DIRLOCK:-$TOP/bin/dirlock}" -d "$(board_locks perl-slow)" messages -- sleep 3 &
holder=$!
sleep 0.5
is "$(post "${u}post" "$jar" "$tok" "body=while locked")" 503 "a post while the lock is held elsewhere: 503"
is "$(header Retry-After)" 1 "... with Retry-After: 1"
ok "$(grep -qF '只今混雑しています' "$T/last.body" && echo 0 || echo 1)" "... and the article's busy page"
wait "$holder" || true
error_line_ok perl-slow 503 'busy' "the 503 is a line of run/log/perl-slow-errors.log"
is "$(post "${u}post" "$jar" "$tok" "body=after")" 303 "a post once the lock is free again"

# ---- lost updates ----------------------------------------------------------------

out=$TOP/tests/results/lost-update-perl-t
rm -rf "$out"
rc=0
"$TOP/tests/lost-update" -q -c "$CLIENTS" -n "$POSTS" --expect-loss --unlocked perl-seed -o "$out" \
	-m "perl-none perl-seed perl-dirlock" "$BASE/board/" >"$T/lost-update.out" 2>&1 || rc=$?
sed 's/^/# /' "$T/lost-update.out"
csv=$out/summary.csv
field() {
	awk -F, -v m="$1" -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$1 == m { print $col[c] }' "$csv" 2>/dev/null
}
sent=$((CLIENTS * POSTS))

lost=$(field perl-none lost)
ok "$([ -n "$lost" ] && [ "$lost" -gt 0 ] && echo 0 || echo 1)" \
	"perl-none: posts lost without a lock ($lost of $(field perl-none acknowledged) acknowledged)"

rejected=$(field perl-seed rejected)
lost=$(field perl-seed lost)
ok "$([ -n "$lost" ] && [ $((rejected + lost)) -gt 0 ] && echo 0 || echo 1)" \
	"perl-seed: the article's lock fails posts under load: $rejected rejected as busy ($(field perl-seed rejected_codes)), $lost acknowledged and lost"

is "$(field perl-dirlock acknowledged)" "$sent" "perl-dirlock: every post acknowledged"
is "$(field perl-dirlock lost)" 0 "perl-dirlock: none lost"
is "$(field perl-dirlock stored)" "$sent" "perl-dirlock: all $sent stored"
is "$(field perl-dirlock dup_numbers)" 0 "perl-dirlock: no message number given twice"
is "$rc" 0 "tests/lost-update exit status"
done_testing
