#!/bin/bash
# tests/http-lost-update.t - a short lost-update and torn-read run against a
# private deployment (nginx + spawn-fcgi, the C boards of conf/boards.list,
# demonstration delay on): the board without a lock loses posts, every
# locked board loses none, and the in-place log is seen torn without a
# reader lock (torn-wrong) and never with lock_mode rw (torn-rw).  And the
# script's own twin: a board whose posters give up waiting for the lock
# (lock_timeout 0.05 s) while a group-commit holder has already claimed
# their posts answers 503 for posts it then stores -- the script must
# count them and fail.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"

need_board
need_cmd nginx spawn-fcgi curl jq

quick=${TESTS_QUICK:-0}
CLIENTS=${LU_CLIENTS:-$([ "$quick" = 1 ] && echo 6 || echo 8)}
POSTS=${LU_POSTS:-$([ "$quick" = 1 ] && echo 5 || echo 8)}
DELAY=${LU_DELAY_MS:-25}

# The C boards of conf/boards.list (the Perl ones: http-perl-board.t),
# and gc-late (see the head).
grep -v 'program=perl' "$TOP/conf/boards.list" >"$T/boards.list"
echo "gc-late lock_mode=mkdir store=log group_commit=yes lock_timeout=0.05 delay_ms=150" >>"$T/boards.list"
instance_start BOARDS_FILE="$T/boards.list" DELAY_MS="$DELAY" WORKERS=4
diag "private deployment on $BASE (delay_ms $DELAY), $CLIENTS clients x $POSTS posts"

out=$TOP/tests/results/lost-update-t
rm -rf "$out"
rc=0
"$TOP/tests/lost-update" -q -c "$CLIENTS" -n "$POSTS" --torn --torn-clients 4 --torn-posts 6 \
	--expect-loss -o "$out" "$BASE/board/" >"$T/lost-update.out" 2>&1 || rc=$?
sed 's/^/# /' "$T/lost-update.out"

csv=$out/summary.csv
if [ ! -s "$csv" ]; then
	ok 1 "tests/lost-update wrote $csv"
	done_testing
	exit 1
fi
ok 0 "tests/lost-update wrote its results"

# field MODE COLUMN: a value from summary.csv.
field() {
	awk -F, -v m="$1" -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$1 == m { print $col[c] }' "$csv"
}
sent=$((CLIENTS * POSTS))

lost=$(field none lost)
ok "$([ -n "$lost" ] && [ "$lost" -gt 0 ] && echo 0 || echo 1)" \
	"none: lost posts without a lock ($lost of $(field none acknowledged) acknowledged)"

for m in mkdir rw flock sqlite; do
	is "$(field "$m" acknowledged)" "$sent" "$m: every post acknowledged"
	is "$(field "$m" lost)" 0 "$m: no acknowledged post lost"
	is "$(field "$m" stored)" "$sent" "$m: all $sent posts stored"
	is "$(field "$m" dup_numbers)" 0 "$m: no duplicated message number"
done

torn=$(field torn-wrong torn)
ok "$([ -n "$torn" ] && [ "$torn" != - ] && [ "$torn" -gt 0 ] && echo 0 || echo 1)" \
	"torn-wrong: in-place writes without a reader lock show torn reads ($torn of $(field torn-wrong reads))"
is "$(field torn-rw torn)" 0 "torn-rw: no torn read with lock_mode rw ($(field torn-rw reads) reads)"
is "$(field torn-rw lost)" 0 "torn-rw: no acknowledged post lost"

is "$rc" 0 "tests/lost-update exit status"

# The twin: posts answered 503 and stored anyway are counted, and fail.
late=0
"$TOP/tests/lost-update" -q -c 6 -n 4 -m gc-late -o "$out-late" "$BASE/board/" >"$T/late.out" 2>&1 || late=$?
sed 's/^/# /' "$T/late.out"
csv=$out-late/summary.csv
stored_late=$(field gc-late extra)
ok "$([ -n "$stored_late" ] && [ "$stored_late" -gt 0 ] && echo 0 || echo 1)" \
	"gc-late: posts answered $(field gc-late rejected_codes) and stored anyway are counted ($stored_late)"
is "$late" 1 "tests/lost-update fails on them"
grep -q 'answered with an error (or not at all) but stored anyway' "$T/late.out"
ok $? "tests/lost-update says why"
done_testing
