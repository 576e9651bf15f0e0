#!/bin/bash
# core-alone.t - the core of the library alone, as a program that copies
# lib/core into its tree builds it (issue 40): the C files of lib/core
# and a program, compiled exactly as docs/library.md says (cc -std=c11
# -D_GNU_SOURCE -Ilib/core lib/core/*.c prog.c -lpthread), keep a counter
# two processes increment (nothing lost; the twin without the lock
# loses), and take, refresh, check, inspect, break and multi-lock; the
# core stays within its 5,000 lines of code; the core and the reader-writer
# module compile alone too, with a program of shared locks.  And a
# core-only program is safe beside a full build: it refuses a lock whose
# readers or ranges a full build holds, naming the module it would need,
# lists those locks, cleans up around them and a counting lock's permits
# (a lock of another kind) without touching them, and refuses a
# filesystem it does not know (/proc: not local), naming lib/netfs.
. "$(dirname "$0")/tap.sh"
cd "$TOP" || exit 1
CC=${CC:-cc}
# Under make test SANITIZE=1 the programs are built with the sanitizers
# too (after the documented command's own flags).
SAN=
[ "${SANITIZE:-}" = 1 ] && SAN="-g -fsanitize=address,undefined -fno-sanitize-recover=all"
N=300
plan 16

# ---- the core alone ---------------------------------------------------

CORE="$T/core_prog"
# shellcheck disable=SC2086 # the command exactly as documented
$CC -std=c11 -D_GNU_SOURCE -Ilib/core lib/core/*.c tests/core-alone/core_prog.c -o "$CORE" -lpthread $SAN \
	2>"$T/cc.err"
ok $? "the core compiles and links alone: $CC -std=c11 -D_GNU_SOURCE -Ilib/core lib/core/*.c prog.c -lpthread$(
	head -c 300 "$T/cc.err" | tr '\n' ' ')"
[ -x "$CORE" ] || {
	diag "no program: the rest cannot run"
	exit 1
}

counter() { # counter FILE [nolock]: two processes, N increments each
	rm -f "$1"
	"$CORE" count "$T/locks" c "$1" $N $2 >"$T/count1.out" 2>&1 &
	local a=$!
	"$CORE" count "$T/locks" c "$1" $N $2 >"$T/count2.out" 2>&1
	local sb=$?
	wait $a
	local sa=$?
	[ $sa -eq 0 ] && [ $sb -eq 0 ] || diag "exits $sa, $sb: $(cat "$T/count1.out" "$T/count2.out")"
	cat "$1"
}
got=$(counter "$T/counter")
is "$got" $((2 * N)) "two processes x $N increments under the core's lock: none lost (counted $got)"
got=$(counter "$T/counter-twin" nolock)
cmp_num "${got:-0}" -lt $((2 * N)) "the twin without the lock loses increments (counted ${got:-0} of $((2 * N)))"

out=$("$CORE" tour "$T/locks" 2>&1)
is "$out" OK "take, refresh, check, inspect (this holder), break refused while it lives, a multi-lock of two names"

forge_lock "$T/locks" dead "$(dead_pid)" "$(hostname)"
out=$("$CORE" try "$T/locks" dead 2>&1)
is "$out" OK "a try takes over the lock of a holder that died on this host"
forge_lock "$T/locks" far 1 other-host.example
out=$("$CORE" try "$T/locks" far 2>&1)
grep -q '^try: EBUSY: .*other-host.example' <<<"$out"
ok $? "... and not one held on another host: $out"

# Lines of code: what the compiler reads, comments and blank lines left
# out (the protocols' proofs and invariants are comments, and are not
# what a reader compiles).  Both figures are said.
code=$(for f in lib/core/*.[ch]; do "$CC" -fpreprocessed -dD -E -P "$f" 2>/dev/null; done | grep -cv '^[[:space:]]*$')
lines=$(cat lib/core/*.[ch] | wc -l)
[ "$code" -gt 1000 ] && [ "$code" -le 5000 ]
ok $? "lib/core holds at most 5,000 lines of code ($code; $lines with comments and blank lines)"

# ---- the core and the reader-writer module alone ----------------------

RW="$T/rw_prog"
# shellcheck disable=SC2086
$CC -std=c11 -D_GNU_SOURCE -Ilib/core -Ilib/rw lib/core/*.c lib/rw/*.c tests/core-alone/rw_prog.c \
	-o "$RW" -lpthread $SAN 2>"$T/cc-rw.err"
ok $? "the core and lib/rw compile and link alone$(head -c 300 "$T/cc-rw.err" | tr '\n' ' ')"
out=$("$RW" "$T/rw" 2>&1)
is "$out" OK "core + lib/rw: two readers at once, a writer refused while they hold, taken once they left"

# ---- a core-only program beside a full build --------------------------

hold() { # hold TAG DIRLOCK-OPTIONS...: a full build's dirlock holds until released
	mkfifo "$T/go.$1"
	"$DIRLOCK" -d "$T/mixed" "${@:2}" -- sh -c "touch '$T/held.$1'; read _ <'$T/go.$1'" &
	for _ in $(seq 400); do
		[ -e "$T/held.$1" ] && return 0
		sleep 0.05
	done
	diag "the holder '$*' did not start"
	return 1
}
release() { echo >"$T/go.$1"; }

mkdir -p "$T/mixed"
hold r -s doc
out=$("$CORE" try "$T/mixed" doc 2>&1)
grep -q '^try: EINVAL: .*readers.*lib/rw' <<<"$out"
ok $? "a full build's reader holds 'doc': the core alone refuses, naming lib/rw: $out"
hold g --range 0:10 tree
out=$("$CORE" try "$T/mixed" tree 2>&1)
grep -q '^try: EINVAL: .*ranges.*lib/range' <<<"$out"
ok $? "a full build's range of 'tree' is held: the core alone refuses, naming lib/range: $out"
hold p --permits 2 pool
"$CORE" list "$T/mixed" >"$T/list" 2>&1
grep -q '^doc ' "$T/list" && grep -q '^tree ' "$T/list"
ok $? "the core alone lists the locks in use by modules it lacks: $(tr '\n' '|' <"$T/list")"
ls -R "$T/mixed" >"$T/before"
"$CORE" cleanup "$T/mixed" >"$T/cleanup" 2>&1
st=$?
ls -R "$T/mixed" >"$T/after"
[ $st -eq 0 ] && cmp -s "$T/before" "$T/after"
ok $? "its cleanup leaves the readers, ranges and permits of live holders alone$(
	cat "$T/cleanup"
	diff "$T/before" "$T/after" | head -5 | tr '\n' ' ')"
"$DIRLOCK" -d "$T/mixed" -n --permits 2 pool -- true
ok $? "the full build still takes the second permit of 'pool'"
release r
release g
release p
wait
out=$("$CORE" try "$T/mixed" doc 2>&1)
is "$out" OK "once the reader left, the core alone takes 'doc'"

# ---- a filesystem the core does not know ------------------------------

out=$("$CORE" try /proc x 2>&1)
grep -q '^try: ENETFS: .*not on a local filesystem.*lib/netfs' <<<"$out"
ok $? "on a filesystem it does not know (/proc), the core alone refuses, naming lib/netfs: $out"
