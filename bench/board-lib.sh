# shellcheck shell=bash
# bench/board-lib.sh - what the board benchmarks (bench/board-bench,
# bench/view-profile, bench/wait-profile) share; sourced after
# tests/http-lib.sh.

# fill_log FILE N: a log store's file holding N messages in the documented
# format (docs/board.md), about a hundred bytes each, the last one now.
fill_log() {
	mkdir -p "$(dirname "$1")"
	awk -v n="$2" -v t="$(date +%s)" 'BEGIN {
		for (i = 1; i <= n; i++)
			printf "%d\t%d\tbench\tmessage %d\tA message of the benchmark log, number %d, with some text to make it about a hundred bytes.\t\n", i, t - n + i, i, i
	}' >"$1"
}

# median: the median of the numbers on stdin, one per line (nothing when
# there are none).
median() {
	sort -g | awk 'NF { v[++n] = $1 } END { if (n) print (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }'
}

# cookie_token URL: prints "COOKIE TOKEN" of a new visitor of the board
# at URL (its board_csrf cookie and the form's token).
cookie_token() {
	local jar=$T/visitor.jar tok
	rm -f "$jar"
	tok=$(get_token "$1" "$jar")
	printf '%s %s\n' "$(awk '$6 == "board_csrf" { print $7 }' "$jar")" "$tok"
}
