#!/bin/sh
# counter.sh - a CGI hit counter in shell, with dirlock(1).
#
# Each visit reads the count, adds one and writes it back: a
# read-modify-write.  Two visits at once would read the same count and
# one visit would be lost; under the lock they take turns.  This script
# runs itself again under `dirlock` for the part that must not overlap.
#
# COUNTER_DIR: where the count and its lock live (default
# /var/lib/counter), writable by the web server's user.
# COUNTER_DELAY_MS: a pause inside the read-modify-write (default none),
# which the tests use to make overlaps certain.
set -eu
dir=${COUNTER_DIR:-/var/lib/counter}

if [ "${1:-}" != --locked ]; then
	# Wait at most 10 s for the lock; 75 when it could not be had.
	status=0
	dirlock -d "$dir/locks" -w 10 -E 75 counter -- "$0" --locked || status=$?
	case $status in
	0) ;;
	75) printf 'Status: 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n\r\nBusy, please try again.\n' ;;
	*) printf 'Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\nThe counter failed (see the server log).\n' ;;
	esac
	exit 0
fi

# Under the lock.
n=$(cat "$dir/count" 2>/dev/null || echo 0)
if [ -n "${COUNTER_DELAY_MS:-}" ]; then sleep "$(awk "BEGIN { print $COUNTER_DELAY_MS / 1000 }")"; fi
n=$((n + 1))
printf '%s\n' "$n" >"$dir/count.tmp"
mv "$dir/count.tmp" "$dir/count"
printf 'Content-Type: text/plain\r\n\r\nvisit %s\n' "$n"
