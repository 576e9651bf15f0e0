#!/bin/sh
# rw-torn.t - no torn reads: a writer rewrites a 4-line record in place, a
# line at a time with 2 ms pauses; 4 readers check every read.  Zero torn
# reads under every policy; without a lock the same run tears reads.
# shellcheck source=tests/rw-lib.sh
. "$(dirname "$0")/rw-lib.sh"
SECS=${RW_TORN_SECONDS:-1.5}
echo "1..10"
for lock in fair writer reader simple; do
	line=$("$DEMO" -d "$T" -s "$SECS" torn "$lock")
	diag "$line"
	torn=$(field "$line" torn)
	reads=$(field "$line" reads)
	writes=$(field "$line" writes)
	ok "$([ "$torn" = 0 ] && echo 0 || echo 1)" "$lock: no torn reads ($reads reads)"
	ok "$([ "${reads:-0}" -gt 0 ] && [ "${writes:-0}" -gt 0 ] && echo 0 || echo 1)" "$lock: readers and writer made progress ($writes writes)"
done
line=$("$DEMO" -d "$T" -s "$SECS" torn none)
diag "$line"
ok "$([ "$(field "$line" torn)" -gt 0 ] && echo 0 || echo 1)" "control: without a lock reads are torn"
line=$("$DEMO" -d "$T" -s "$SECS" torn flock)
diag "$line"
ok "$([ "$(field "$line" torn)" = 0 ] && echo 0 || echo 1)" "control: flock(2) prevents torn reads too"
[ "$fails" -eq 0 ]
