#!/bin/bash
# tests/http-board-visitor.t - the boards as a visitor meets them, through
# a private nginx: a message is limited in characters, not bytes, so
# 8,000 characters of Japanese (3 bytes each) or emoji (4) are a message
# on the C board and on seed 001's Perl board, and the request limit
# admits every form the field limits allow; a post refused because the
# lock is held (here by a shell command, dirlock(1)) says the message was
# not posted, gives it back in the form, and does not claim a request
# held the lock; the index lists the torn-read boards, and those boards
# say on every page what they demonstrate; /favicon.ico is there.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"
need_board
need_cmd nginx spawn-fcgi fcgiwrap perl curl jq

BOARDS_FILE=$(boards_file "mkdir lock_mode=mkdir lock_timeout=1" "torn-wrong lock_mode=wrong write_method=inplace" \
	"torn-rw lock_mode=rw write_method=inplace" "perl-none program=perl lock_mode=none")
instance_start BOARDS_FILE="$BOARDS_FILE" WORKERS=2
DIRLOCK=${DIRLOCK:-$TOP/bin/dirlock}

# repeat CHAR N: N copies of CHAR.
repeat() { local s=$1 n=$2 out=; while [ "$n" -gt 0 ]; do
	if [ $((n % 2)) -eq 1 ]; then out+=$s; fi
	s+=$s
	n=$((n / 2))
done; printf '%s' "$out"; }

# said: what the last answer's page says (its error, or its notice).
said() {
	perl -0ne 'print $1 if m{(?:role="alert"><p>|<section class="notice">.*?<p>)(.*?)</p>}s' "$T/last.body"
}

# ---- long messages in any script -------------------------------------------

for b in mkdir perl-none; do
	U=$BASE/board/$b/
	J=$T/$b.jar
	TOK=$(get_token "$U" "$J")
	for spec in "あ 7000" "あ 8000" "😀 8000"; do
		read -r char n <<<"$spec"
		text=$(repeat "$char" "$n")
		code=$(post "${U}post" "$J" "$TOK" "body=$text")
		stored=$(api "$U" '?limit=1' | jq -r '.messages[-1].body | length')
		is "$code:$stored" "303:$n" "$b: $n × $char ($(printf '%s' "$text" | wc -c) bytes) is posted and stored whole"
		[ "$code" = 303 ] || diag "$(said)"
	done
	text=$(repeat あ 8001)
	code=$(post "${U}post" "$J" "$TOK" "body=$text")
	if grep -q '8001 characters, at most 8000' "$T/last.body"; then r=0; else r=1; fi
	ok $r "$b: 8,001 × あ is refused in characters ($code)"
	[ "$r" -eq 0 ] || diag "$(said)"
	if [ "$b" = mkdir ]; then
		back=$(tr -d '\n' <"$T/last.body" | sed -n 's/.*required>\([^<]*\)<\/textarea>.*/\1/p')
		is "$(printf '%s' "$back" | wc -c)" 24003 "$b: and the 8,001 characters come back in the form"
	fi
done
U=$BASE/board/mkdir/

# ---- the busy page ------------------------------------------------------

J=$T/busy.jar
TOK=$(get_token "$U" "$J")
locks=$(board_locks mkdir)
"$DIRLOCK" -d "$locks" messages -- sh -c "touch '$T/held'; while [ ! -e '$T/release' ]; do sleep 0.05; done" &
holder=$!
for _ in $(seq 100); do [ -e "$T/held" ] && break; sleep 0.05; done
typed='待ってください <b>bold?</b>'
code=$(post "${U}post" "$J" "$TOK" "name=花子" "subject=急ぎ" "body=$typed")
is "$code" 503 "a post while a shell command holds the board's lock: 503"
is "$(header Retry-After)" 1 "with Retry-After: 1"
page=$(tr -d '\n' <"$T/last.body")
if grep -q 'Your message was not posted' <<<"$page"; then r=0; else r=1; fi
ok $r "the page says the message was not posted"
if grep -qF 'required>待ってください &lt;b&gt;bold?&lt;/b&gt;</textarea>' <<<"$page" &&
	grep -qF 'value="花子"' <<<"$page" && grep -qF 'value="急ぎ"' <<<"$page"; then r=0; else r=1; fi
ok $r "what was typed is back in the form (name, subject, message)"
if ! grep -q 'another request' <<<"$page" && grep -q 'or by a program working on the board' <<<"$page"; then r=0; else r=1; fi
ok $r "it does not say another request held the lock, and says what may hold it"
diag "$(said)"
touch "$T/release"
wait "$holder"
is "$(post "${U}post" "$J" "$TOK" "body=$typed")" 303 "sent again once the lock is free: stored"

# ---- the torn-read boards -----------------------------------------------------

index=$(curl -s --max-time 10 "$BASE/")
if grep -q 'href="/board/torn-wrong/"' <<<"$index" && grep -q 'href="/board/torn-rw/"' <<<"$index"; then r=0; else r=1; fi
ok $r "the index lists both torn-read boards"
page=$(curl -s --max-time 10 "$BASE/board/torn-wrong/")
if grep -q '<p class="demo">This board demonstrates torn reads' <<<"$page" && grep -q 'not a fault' <<<"$page"; then r=0; else r=1; fi
ok $r "torn-wrong says on its page what it demonstrates"
if curl -s --max-time 10 "$BASE/board/torn-wrong/nowhere" | grep -q '<p class="demo">This board demonstrates torn reads'; then r=0; else r=1; fi
ok $r "and on its error pages"
if curl -s --max-time 10 "$BASE/board/torn-rw/" | grep -q '<p class="demo">This board rewrites its message log in place'; then r=0; else r=1; fi
ok $r "torn-rw says what it shows"
curl -s --max-time 10 "$U" | grep -c 'class="demo"' >"$T/notes" || true
is "$(cat "$T/notes")" 0 "a board that locks as it should carries no such note"

# ---- the icon -------------------------------------------------------------

code=$(curl -s --max-time 10 -o "$T/icon" -w '%{http_code} %{content_type}' "$BASE/favicon.ico")
is "$code" "200 image/x-icon" "/favicon.ico is served"
if curl -s --max-time 10 "$U" | grep -q '<link rel="icon" href="/favicon.ico">' &&
	curl -s --max-time 10 "$BASE/board/perl-none/" | grep -q '<link rel="icon" href="/favicon.ico">' &&
	! grep -L '<link rel="icon" href="/favicon.ico">' "$TOP"/htdocs/*.html | grep -q .; then r=0; else r=1; fi
ok $r "every page names it"
done_testing
