#!/bin/bash
# core-paused.t - a holder stopped (SIGSTOP) past its stale age, in a
# directory space and on each private server (tests/spaces-lib.sh): the
# next holder gets the lock and a higher fence; the paused one, resumed,
# finds its lock lost (check and release say DIRLOCK_ELOST) and, if it asks
# for its fence only now, gets none; a holder that is not paused keeps its
# lock.  The twin (Redis, a test build whose fence is drawn late without
# checking the lock, DIRLOCK_TEST_REDIS_LAZY_FENCE) shows the test can
# fail: the late holder then gets a fence above its successor's.
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
ELOST=5
spaces_start || exit 1
extra=0
space_of redis >/dev/null && extra=2
plan $((4 * $(spaces_count) + extra))

# paused SPACE NAME MODE -> runs a holder (stale 0.5 s, or the space's
# shortest, space_min_stale; sleeping three times that) stopped from right
# after it holds until a second taker got the lock, and 0.2 s more.
# Sets held_fence, late_fence, late_code, check_code, release_code, next_fence.
paused() {
	local stale
	stale=$(awk -v m="$(space_min_stale "$1")" 'BEGIN { print (m > 0.5 ? m : 0.5) }')
	coproc HOLDER { exec "$PROGS/lockworker" paused "$1" "$2" "$stale" "$(awk -v s="$stale" 'BEGIN { print 3 * s }')" "$3"; }
	local word
	read -r word held_fence <&"${HOLDER[0]}"
	kill -STOP "$HOLDER_PID"
	next_fence=$("$PROGS/lockworker" fenced "$1" "$2" 5 "$stale" | awk '{print $2}')
	sleep 0.2
	kill -CONT "$HOLDER_PID"
	local out
	out=$(cat <&"${HOLDER[0]}")
	wait "$HOLDER_PID" 2>/dev/null
	read -r _ late_code late_fence <<<"$(echo "$out" | grep '^fence')"
	check_code=$(echo "$out" | awk '$1 == "check" {print $2}')
	release_code=$(echo "$out" | awk '$1 == "release" {print $2}')
	: "$word"
}

declare -A late_release # SPACE -> the release code of the holder refused a late fence
for space in $(test_spaces); do
	kind=$(space_kind "$space")
	paused "$space" p early
	cmp_num "$next_fence" -gt "$held_fence" "$kind: the next holder's fence ($next_fence) is above the paused one's ($held_fence)"
	is "$check_code/$release_code" "$ELOST/$ELOST" "$kind: the resumed holder's check and release say DIRLOCK_ELOST"
	paused "$space" q late
	is "$late_code" "$ELOST" "$kind: a fence asked for after the pause is refused (DIRLOCK_ELOST, fence ${late_fence:-none})"
	late_release[$space]=$release_code
	# Without a pause, the same holder keeps its lock.
	coproc CONTROL { exec "$PROGS/lockworker" paused "$space" s 5 0.3 late; }
	out=$(cat <&"${CONTROL[0]}")
	wait "$CONTROL_PID" 2>/dev/null
	is "$(echo "$out" | awk '$1 == "check" {print $2}')" 0 "$kind: control: a holder that is not paused keeps its lock"
done
if R=$(space_of redis); then
	is "${late_release[$R]}" "$ELOST" "Redis: the holder refused a late fence: its release says DIRLOCK_ELOST"
	DIRLOCK_TEST_REDIS_LAZY_FENCE=1 paused "$R" r late
	diag "twin: late fence $late_fence (code $late_code), next holder's $next_fence"
	[ "$late_code" = 0 ] && [ "$late_fence" -gt "$next_fence" ]
	ok $? "twin, fence drawn late without a check: the paused holder gets a fence above its successor's (test can fail)"
fi
