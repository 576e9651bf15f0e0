#!/bin/bash
# core-cli-flock.t - the dirlock command as a flock(1) user meets it
# (issue 39): a usage mistake is one line and "Try 'dirlock --help'"
# under the command's name, not its path; "-c COMMAND-LINE" runs through
# /bin/sh -c, under the locks; a lock directory it may not write is named
# with the lock, never by an internal temporary name; a mistyped -d makes
# no directory tree; the manual page's synopsis has every form --help
# has, and a section on what differs from flock(1); the lock servers'
# port messages are one sentence; what a message quotes cannot act
# on the terminal it is written to.
# shellcheck source=/dev/null # tests/tap.sh
. "$(dirname "$0")/tap.sh"
plan 21
L="$T/locks"
cd "$T" || exit 1

# ---- usage mistakes -----------------------------------------------------

usage_two_lines() { # usage_two_lines FIRST-LINE DESCRIPTION ARGS...
	local want=$1 what=$2
	shift 2
	"$DIRLOCK" "$@" >"$T/out" 2>"$T/err"
	local st=$?
	[ "$st" -eq 2 ] && [ ! -s "$T/out" ] && [ "$(wc -l <"$T/err")" -eq 2 ] &&
		[ "$(head -n 1 "$T/err")" = "$want" ] &&
		[ "$(tail -n 1 "$T/err")" = "Try 'dirlock --help' for more information." ]
	ok $? "$what: status 2, two lines on stderr"
	[ "$(head -n 1 "$T/err")" = "$want" ] || diag "status $st, stderr ($(wc -l <"$T/err") lines):" "$(head -n 3 "$T/err")"
}
usage_two_lines "dirlock: unrecognized option '--bogus'" "an unknown long option" --bogus
usage_two_lines "dirlock: invalid option -- 'z'" "an unknown short option" -z a -- true
usage_two_lines "dirlock: option '-w' needs an argument" "an option without its argument" -w
usage_two_lines "dirlock: no lock name given" "no arguments at all"
usage_two_lines "dirlock: -c takes exactly one argument, the command line (quote it)" "-c with two arguments" \
	-d "$L" a -c echo hi
# What a mistake quotes may hold a terminal's escape sequences: shown, not sent.
usage_two_lines 'dirlock: invalid timeout '"'"'1\x1b[2Jx'"'" "a control character in a mistyped value" \
	-w $'1\e[2Jx' a -- true
"$DIRLOCK" -d "$L" a -- $'no\esuch' 2>"$T/err"
st=$?
[ "$st" = 127 ] && grep -qF "cannot run 'no\x1bsuch'" "$T/err" && ! grep -q $'\e' "$T/err"
ok $? "a command that cannot run is named with its control characters shown (status $st: $(cat -v "$T/err"))"
! grep -q "$DIRLOCK" "$T/err"
ok $? "no message names the program by its path"

# ---- -c COMMAND-LINE ------------------------------------------------------

# shellcheck disable=SC2016 # the command line's own expansions
"$DIRLOCK" -d "$L" a -c 'echo "$0:$1"; exit 7' >"$T/out"
st=$?
is "$st:$(cat "$T/out")" "7:/bin/sh:" "-c runs its one argument with /bin/sh -c and exits with its status"
"$DIRLOCK" -d "$L" a -c "\"$DIRLOCK\" -d \"$L\" -n a -- true" 2>"$T/err"
is "$?" 1 "-c's command line runs under the lock (a second dirlock -n finds it held)"
# Sixteen read-modify-writes of one file at once, each through -c: with the
# lock none is lost; the same without a lock loses some.
echo 0 >"$T/n"
echo 0 >"$T/m"
# shellcheck disable=SC2016 # expanded by the sh that runs it
rmw='n=$(cat "$1"); sleep 0.02; echo $((n + 1)) >"$1"'
for _ in $(seq 16); do "$DIRLOCK" -d "$L" counter -c "set -- '$T/n'; $rmw" & done
for _ in $(seq 16); do sh -c "$rmw" sh "$T/m" & done
wait
is "$(cat "$T/n")" 16 "16 increments through -c at once: none lost"
cmp_num "$(cat "$T/m")" -lt 16 "the same 16 without the lock lose some (the twin that shows the test can fail)"

# ---- a lock directory this user may not write -----------------------------

mkdir "$T/ro"
chmod 555 "$T/ro"
if [ "$(id -u)" -eq 0 ]; then
	as_other() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
	chmod 755 "$T"
else
	as_other() { "$@"; }
fi
as_other "$DIRLOCK" -d "$T/ro" job -- true 2>"$T/err"
st=$?
grep -q "lock 'job'" "$T/err" && grep -q "'$T/ro'" "$T/err" && ! grep -q '\.new' "$T/err" &&
	grep -q 'Permission denied' "$T/err"
ok $? "permission denied names the lock and its directory, not a temporary name (status $st)"
diag "$(cat "$T/err")"

# ---- a mistyped -d --------------------------------------------------------

"$DIRLOCK" -d "$T/typo/var/locks" a -- true 2>"$T/err"
st=$?
is "$st:$([ -e "$T/typo" ] && echo made || echo none)" "2:none" "-d naming a path whose parent is missing: refused, nothing made"
grep -q "'$T/typo/var/locks' does not exist, nor does '$T/typo/var'" "$T/err"
ok $? "and the message says which directories are missing"
"$DIRLOCK" -d "flock:$T/typo2/x" a -- true 2>/dev/null
is "$?:$([ -e "$T/typo2" ] && echo made || echo none)" "2:none" "the same for flock:DIR"
"$DIRLOCK" -d "$T/fresh" a -- true
is "$?:$([ -d "$T/fresh" ] && echo made || echo none)" "0:made" "a missing lock directory whose parent exists is made"

# ---- the manual page and --help ------------------------------------------

synopsis=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' "$TOP/man/dirlock.1")
grep -q -- '-range' <<<"$synopsis" && grep -q -- '-permits' <<<"$synopsis" && grep -q '^\.B \\-c$' <<<"$synopsis" &&
	"$DIRLOCK" --help | grep -q -- '--range LO:HI NAME' && "$DIRLOCK" --help | grep -q -- '--permits N NAME' &&
	"$DIRLOCK" --help | grep -q -- '-c COMMAND-LINE'
ok $? "dirlock(1)'s SYNOPSIS and --help both show --range, --permits and -c"
! grep -qi 'lockdir' "$TOP/man/dirlock.1" && ! "$DIRLOCK" --help | grep -qi 'lockdir'
ok $? "both call the lock space SPACE (no 'lockdir')"
grep -q '^\.SH DIFFERENCES FROM FLOCK(1)' "$TOP/man/dirlock.1" &&
	sed -n '/^\.SH DIFFERENCES/,/^\.SH SEE ALSO/p' "$TOP/man/dirlock.1" | grep -q '^\.B \\-u$'
ok $? "dirlock(1) has a section on what differs from flock(1)"

# ---- one message for a bad port -----------------------------------------

r=$("$DIRLOCK" -d 'redis://127.0.0.1:99999' a -- true 2>&1 | sed 's/.*: //')
e=$("$DIRLOCK" -d 'etcd://127.0.0.1:99999' a -- true 2>&1 | sed 's/.*: //')
is "$e" "$r" "Redis and etcd addresses with a bad port are refused in the same words"
