#!/bin/bash
# core-status.t - `dirlock status` and `status --json` agree, and are
# complete, in a lock directory and on each private server
# (tests/spaces-lib.sh): with a holder, an exclusive and a shared waiter,
# the plain status has the holder's line and one line per waiter, and the
# document the same holder, the same waiters, the queue's length and the
# last fence; one more that times out behind them (FIFO or not) names the
# holder, not a waiter ahead.  While waiters come and go under it, no waiter of the
# document has waited a negative time (the document's time is taken once
# everything was read).  A name that cannot be read (an invalid one)
# prints no document at all: an error on stderr, status 2.  json-c is
# opened by `status --json` alone: a dirlock that holds a lock has not
# mapped it, and without it --json says what to install (exit 2).
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/spaces-lib.sh
. "$(dirname "$0")/spaces-lib.sh"
command -v jq >/dev/null || {
	echo "1..0 # SKIP jq is not installed (make deps)"
	exit 0
}
spaces_start || exit 1
mapfile -t spaces < <(test_spaces)
plan $((5 * ${#spaces[@]} + 4))

# until_ms MS COMMAND...: until COMMAND succeeds, at most MS ms (status 1 then).
until_ms() {
	local limit=$1 t0
	shift
	t0=$(date +%s%N)
	until "$@"; do
		[ $((($(date +%s%N) - t0) / 1000000)) -lt "$limit" ] || return 1
		sleep 0.05
	done
}
# waiting SPACE NAME N: the plain status shows N waiter lines.
waiting() { [ "$("$DIRLOCK" status -d "$1" "$2" 2>/dev/null | grep -c '^  waiter ')" = "$3" ]; }

for s in "${spaces[@]}"; do
	kind=$(space_kind "$s")
	"$DIRLOCK" -d "$s" st -- sh -c 'until [ -e "$1" ]; do sleep 0.05; done' sh "$T/go-$kind" &
	h=$!
	until_ms 10000 eval '"$DIRLOCK" status -d "$s" st 2>/dev/null | grep -q "pid=$h "'
	"$DIRLOCK" -d "$s" st -- true &
	w1=$!
	until_ms 10000 waiting "$s" st 1
	"$DIRLOCK" -d "$s" -s st -- true &
	w2=$!
	until_ms 10000 waiting "$s" st 2
	"$DIRLOCK" status -d "$s" st >"$T/plain-$kind" 2>&1
	st1=$?
	"$DIRLOCK" status -d "$s" --json st >"$T/json-$kind" 2>"$T/json-err-$kind"
	st2=$?
	# One more that gives up: it names the holder, not a waiter ahead of it.
	"$DIRLOCK" -d "$s" -w 0.3 st -- true 2>"$T/late-$kind"
	"$DIRLOCK" -d "$s" --fifo -w 0.3 st -- true 2>>"$T/late-$kind"
	touch "$T/go-$kind"
	wait $h $w1 $w2
	plain="$(grep -c "^st .*pid=$h " "$T/plain-$kind") $(grep "^  waiter " "$T/plain-$kind" | sed 's/.*pid=\([0-9]*\) .* \(exclusive\|shared\) .*/\1:\2/' | tr '\n' ' ')"
	is "$st1/$plain" "0/1 $w1:exclusive $w2:shared " "$kind: status shows the holder and each waiter, in order: $(tr '\n' '|' <"$T/plain-$kind")"
	got=$(jq -r '.locks[0] | [(.holders | map("\(.kind):\(.pid)") | join(",")),
		(.waiters | map("\(.pid):\(.mode)") | join(",")), .queue_length, (.fence != null)] | join(" ")' "$T/json-$kind" 2>&1)
	is "$st2/$got" "0/lock:$h $w1:exclusive,$w2:shared 2 true" "$kind: status --json shows the same holder, the same waiters, the queue's length and the fence $(cat "$T/json-err-$kind")"
	[ "$(grep -c "lock 'st' is held by pid $h on " "$T/late-$kind")" = 2 ] && ! grep -q "pid \($w1\|$w2\) " "$T/late-$kind"
	ok $? "$kind: a waiter that times out behind queued ones names the holder, pid $h (not $w1 or $w2): $(tr '\n' ' ' <"$T/late-$kind")"

	# Waiters that come and go while the document is made: none of them
	# has waited a negative time.
	"$DIRLOCK" -d "$s" churn -- sh -c 'until [ -e "$1" ]; do sleep 0.05; done' sh "$T/stop-$kind" &
	h=$!
	until_ms 10000 eval '"$DIRLOCK" status -d "$s" churn 2>/dev/null | grep -q "pid=$h "'
	pids=()
	for ((i = 0; i < 40; i++)); do
		"$DIRLOCK" -d "$s" -w 0.$((RANDOM % 5 + 1)) -q churn -- true 2>/dev/null &
		pids+=($!)
		"$DIRLOCK" status -d "$s" --json churn >"$T/churn-$kind-$i" 2>/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}"
	touch "$T/stop-$kind"
	wait $h
	seen=$(cat "$T"/churn-"$kind"-* | jq -s '[.[].locks[].waiters[]] | length')
	negative=$(cat "$T"/churn-"$kind"-* | jq -s '[.[].locks[].waiters[] | select(.waited < 0)] | length')
	is "$negative" 0 "$kind: waiters coming and going under 40 documents: none waited a negative time ($seen waiters seen)"

	"$DIRLOCK" status -d "$s" --json st 'bad/name' >"$T/bad-$kind" 2>"$T/bad-err-$kind"
	st=$?
	[ "$st" = 2 ] && [ ! -s "$T/bad-$kind" ] && grep -q "invalid lock name 'bad/name'" "$T/bad-err-$kind"
	ok $? "$kind: status --json with an invalid name prints no document, says why, exits 2: stdout $(wc -c <"$T/bad-$kind") bytes, exit $st, $(cat "$T/bad-err-$kind")"
done

# A server that cannot be reached: no document either.
"$DIRLOCK" status -d redis://127.0.0.1:1/ --json >"$T/down" 2>"$T/down-err"
st=$?
if "$DIRLOCK" status -d redis://127.0.0.1:1/ 2>&1 | grep -q "no Redis support"; then
	skip "no Redis support in this build"
else
	[ "$st" = 2 ] && [ ! -s "$T/down" ]
	ok $? "status --json of a server that cannot be reached: no document, exit $st: $(cat "$T/down-err")"
fi
"$DIRLOCK" status -d flock:"$T/fl" --json >"$T/fl-out" 2>"$T/fl-err"
st=$?
[ "$st" = 2 ] && [ ! -s "$T/fl-out" ]
ok $? "status --json of a flock: space, which has no owner records: no document, exit $st: $(cat "$T/fl-err")"

# json-c is the document's alone: the command's parent is the dirlock
# that holds its lock, and json-c is not in its memory.
D=$T/locks-maps
mkdir -p "$D"
"$DIRLOCK" -d "$D" maps -- sh -c 'cat "/proc/$PPID/maps"' >"$T/maps" 2>&1
st=$?
[ "$st" = 0 ] && grep -q '/libc\.so' "$T/maps" && ! grep -q '/libjson-c' "$T/maps"
ok $? "a dirlock that holds a lock has not mapped json-c (exit $st): $(grep -o '/libjson-c[^ ]*' "$T/maps" | sort -u | head -3)"
# ... and where json-c cannot be opened (a mount namespace where the
# file it opens is an empty one), --json says so and prints nothing;
# status without --json is unchanged.
# The file status --json opens (the dynamic linker says, LD_DEBUG).
lib=$(LD_DEBUG=libs "$DIRLOCK" status -d "$D" --json 2>&1 >/dev/null |
	sed -n 's/.*calling init: \(.*\/libjson-c[^ ]*\)$/\1/p' | head -n 1)
cat >"$T/nojson.sh" <<'EOS'
lib=$1 dl=$2 d=$3 out=$4
mount --bind /dev/null "$(readlink -f "$lib")" || exit 99
"$dl" status -d "$d" --json >"$out" 2>"$out.err"
echo "json $?"
"$dl" status -d "$d" >/dev/null 2>&1
echo "plain $?"
EOS
if [ -n "$lib" ] && unshare --mount --propagation private bash "$T/nojson.sh" "$lib" "$DIRLOCK" "$D" \
	"$T/nojson" >"$T/nojson.st" 2>"$T/nojson.sh.err" && [ -s "$T/nojson.st" ]; then
	[ "$(paste -sd ' ' "$T/nojson.st")" = "json 2 plain 0" ] && [ ! -s "$T/nojson" ] &&
		grep -q "needs json-c (libjson-c[.]so[.][0-9]*, in Debian's package libjson-c[0-9]*)" "$T/nojson.err"
	ok $? "without json-c, status --json: no document, exit 2, says what to install ($(paste -sd ' ' "$T/nojson.st")): $(cat "$T/nojson.err")"
else
	skip "cannot hide json-c in a mount namespace of its own here (unshare -m needs root; json-c '$lib'): $(head -c 200 "$T/nojson.sh.err")"
fi
