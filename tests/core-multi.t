#!/bin/bash
# core-multi.t - the all-or-nothing multi-lock cannot deadlock: one group
# locks {P, Q}, another {Q, P}, again and again; both progress -- in a lock
# directory (names taken one by one in sorted order) and on a private
# Redis server (all names in one atomic step).  The twin takes the same
# locks by hand in the order given and deadlocks (rounds that time out
# holding one lock while waiting for the other).
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/redis-lib.sh"
SECS=${MULTI_SECONDS:-10}
if redis_available; then
	redis_start || exit 1
	plan 10
	SECS=${MULTI_SECONDS:-6}
else
	plan 5
	diag "Redis: $REDIS_WHY"
fi

for space in $(test_spaces); do
	kind=directory
	case $space in redis*) kind=Redis ;; esac
	"$PROGS/lockworker" multi "$space" "$SECS" P Q >"$T/a" &
	a=$!
	"$PROGS/lockworker" multi "$space" "$SECS" Q P >"$T/b" &
	b=$!
	wait $a; sa=$?
	wait $b; sb=$?
	is "$sa/$sb" "0/0" "$kind: {P,Q} and {Q,P} for $SECS s: no acquire timed out"
	cmp_num "$(cat "$T/a")" -gt 0 "$kind: group {P,Q} progressed ($(cat "$T/a") rounds)"
	cmp_num "$(cat "$T/b")" -gt 0 "$kind: group {Q,P} progressed ($(cat "$T/b") rounds)"
	if [ $kind = directory ]; then
		[ -z "$(ls "$space")" ]
	else
		# What stays by design: each name's fence counter (K:f), the
		# arrival counter and the set of names used ({P}:names, which
		# dirlock cleanup trims).
		left=$(redis_cli --scan --pattern '{dirlock}:*' | grep -vE ':(f|seq|names)$')
		[ -z "$left" ] || diag "left: $(echo $left)"
		[ -z "$left" ]
	fi
	ok $? "$kind: nothing is left held afterwards"
done

if [ -n "$REDIS_PID" ]; then
	# Atomic: while a set waits for Q, P stays free for a single-name taker.
	"$PROGS/lockworker" hold "$REDIS_SPACE" Q 1.5 >/dev/null &
	h=$!
	sleep 0.2
	"$PROGS/lockworker" multi "$REDIS_SPACE" 0.1 P Q >/dev/null &
	m=$!
	sleep 0.2
	read -r code _ <<<"$("$PROGS/lockworker" wait "$REDIS_SPACE" P 0)"
	is "$code" 0 "Redis: a set waiting for Q holds none of its names (P can be taken alone)"
	wait $h $m
fi

"$PROGS/lockworker" naive "$T/locks" 3 P Q >"$T/c" &
c=$!
"$PROGS/lockworker" naive "$T/locks" 3 Q P >"$T/d" &
d=$!
wait $c $d
dl=$(($(cut -d' ' -f2 "$T/c") + $(cut -d' ' -f2 "$T/d")))
diag "by hand, P->Q against Q->P: $dl deadlocked rounds in 3 s"
cmp_num "$dl" -gt 0 "taking the locks by hand in opposite orders deadlocks (test can fail)"
