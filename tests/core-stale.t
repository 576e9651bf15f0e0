#!/bin/bash
# core-stale.t - short stale ages under stress: 16 processes take one lock
# with stale ages of 0.1, 0.3 and 0.6 s, holding some critical sections
# longer than the stale age and refreshing every quarter of it (within the
# documented third); a run lasts three stale ages, 2 s at the least (4 s
# under TESTS_LONG=1; STRESS_SECONDS=N: N s).  A shared-memory checker
# counts overlaps, locks that acquire returned already broken, and
# holders that lost a lock they kept refreshing: all must be 0, for the
# exclusive lock, for a random mix of readers, intent holders and writers
# under every policy (some FIFO), and while another process runs
# dirlock_cleanup() in a loop.
# A holder kept by the scheduler from refreshing for most of the stale age
# is a paused holder, which the protocol may treat as gone: the checker
# reports such cases as "delayed" and excuses them.  The twin of each
# space shows that the checker fails when locks are broken under holders
# that do refresh: the library is given a stale age (0.1 s) shorter than
# the refresh interval the holders keep (the checker's 0.8 s / 4), and
# any critical section may last up to twice the checker's stale age
# (stress --long 1), so that a few acquisitions show it.  On each
# private server (tests/spaces-lib.sh), whose entries expire by the
# server's clock, the same at 0.3 s only, and its twin.
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
secs() { # secs STALE -> how long a run at stale age STALE lasts
	[ -n "${STRESS_SECONDS:-}" ] && { echo "$STRESS_SECONDS"; return; }
	soak "$(awk -v s="$1" 'BEGIN { print (3 * s > 2 ? 3 * s : 2) }')" 4
}
DIR_STALES="0.1 0.3 0.6"
SERVER_STALES="0.3"
spaces_start || exit 1
stales() { # stales SPACE -> the stale ages it is run at (those it takes, or its shortest)
	local all=$DIR_STALES
	space_is_server "$1" && all=$SERVER_STALES
	awk -v m="$(space_min_stale "$1")" '{ for (i = 1; i <= NF; i++) if ($i >= m) { printf "%s%s", n++ ? " " : "", $i } }
		END { if (!n) printf "%s", m; print "" }' <<<"$all"
}
planned=0
for space in $(test_spaces); do
	planned=$((planned + 3 * $(stales "$space" | wc -w) + 1))
done
plan "$planned"

run() { # run NAME STALE OPTIONS... -> one "ok" per run, in a space of its own
	# beside $space (the i-th)
	name=$1
	stale=$2
	shift 2
	out=$("$PROGS/stress" "$(space_sub "$space" "$name")" "$stale" 16 "$(secs "$stale")" "$@" 2>"$T/$i-$name.err")
	st=$?
	ok $st "$kind: stale $stale s, $name: $out"
	grep -E 'VIOLATION|delayed|stress\[' "$T/$i-$name.err" | head -n 5 | while read -r l; do diag "$l"; done
}

i=0
for space in $(test_spaces); do
	i=$((i + 1))
	kind=$(space_kind "$space")
	for stale in $(stales "$space"); do
		run "exclusive-$stale" "$stale"
		run "mixed-$stale" "$stale" --mix
		run "cleanup-$stale" "$stale" --mix --cleanup
	done
	# The checker can fail: the library is given a stale age eight times
	# shorter than the holders keep (0.1 s, or the space's shortest), and
	# every section may outlast it (--long 1: etcd makes only a few
	# acquisitions in 2 s).
	lib=$(awk -v m="$(space_min_stale "$space")" 'BEGIN { print (m > 0.1 ? m : 0.1) }')
	out=$("$PROGS/stress" "$(space_sub "$space" twin)" "$(awk -v l="$lib" 'BEGIN { print 8 * l }')" 16 2 \
		--long 1 --lib-stale "$lib" 2>/dev/null)
	st=$?
	[ "$st" -ne 0 ] && echo "$out" | grep -qE 'overlaps=[1-9]|lost=[1-9]'
	ok $? "$kind: locks broken (or expired) under refreshing holders are violations the checker reports: $out"
done
