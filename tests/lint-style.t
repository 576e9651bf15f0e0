#!/bin/bash
# lint-style.t - tools/check-style (make check-style): first shown
# failing on a small tree of its own with one breach of each rule -- a
# 91-line function, a token buffer of 33 and a name's of 65, a public
# prototype whose first argument is `lockdir` -- and passing what the
# rules allow there (a 90-line function, 0x33, 1.65 and 33 in a comment
# or a string, a long function under tests/); then the tree itself
# passes, with nothing allow-listed.
. "$(dirname "$0")/tap.sh"
cd "$TOP" || exit 1
if ! command -v python3 >/dev/null 2>&1; then
	echo "1..0 # SKIP python3 is not installed"
	exit 0
fi
plan 8

# ---- a tree of its own ---------------------------------------------------------

mini="$T/mini"
mkdir -p "$mini/lib/core" "$mini/lib/mod" "$mini/tests"
git init -q "$mini"
printf '#define DIRLOCK_NAME_MAX 64\n#define DIRLOCK_TOKEN_LEN 32\n' >"$mini/lib/core/dirlock.h"
# function NAME LINES: a function whose braces span LINES lines
function_of() {
	printf 'int %s(void)\n{\n' "$1"
	for _ in $(seq 1 $(($2 - 3))); do echo "        (void)0;"; done
	printf '        return 0;\n}\n'
}
function_of too_long 91 >"$mini/lib/long.c"
function_of just_fits 90 >"$mini/lib/fits.c"
function_of a_test 120 >"$mini/tests/test_long.c"
printf 'struct t {\n        char token[33];\n        char name[65];\n};\n' >"$mini/lib/sizes.c"
printf 'static const int a = 0x33; /* 33 */\nstatic const double b = 1.65;\nstatic const char *c = "33 65";\n' \
	>"$mini/lib/fine.c"
printf 'int dirlock_thing(const char *lockdir, const char *name);\nint dirlock_other(const char *space);\n' \
	>"$mini/lib/mod/dirlock_mod.h"
(cd "$mini" && git add -A)

said=$(cd "$mini" && "$TOP/tools/check-style" 2>&1)
st=$?
is "$st" 1 "check-style fails the tree with breaches"
echo "$said" | grep -q '^lib/long.c:2: function too_long is 91 lines, at most 90 (length)$'
ok $? "a 91-line function is named, with its length"
echo "$said" | grep -q '^lib/sizes.c:2: 33 spelled out: DIRLOCK_TOKEN_LEN + 1' &&
	echo "$said" | grep -q '^lib/sizes.c:3: 65 spelled out: DIRLOCK_NAME_MAX + 1'
ok $? "33 and 65 are named as the sizes they spell out"
echo "$said" | grep -q "^lib/mod/dirlock_mod.h:1: dirlock_thing: call its first argument \`space\`"
ok $? "a public prototype with a first argument lockdir is named"
n=$(echo "$said" | grep -c '^lib/')
is "$n" 4 "nothing else is reported (a 90-line function, 0x33, 1.65, comments, strings, tests/)"
[ "$n" -eq 4 ] || diag "$said"

said=$(cd "$mini" && "$TOP/tools/check-style" lib/fits.c lib/fine.c 2>&1)
is "$?" 0 "the files without a breach pass alone"
said=$("$TOP/tools/check-style" "$T/no-such-file.c" 2>&1)
is "$?" 2 "a file that cannot be read is an error: $said"

# ---- the tree ---------------------------------------------------------------------

said=$(tools/check-style 2>&1)
st=$?
is "$st" 0 "the tree keeps the conventions"
[ "$st" -ne 0 ] && diag "$said"
exit $((tap_failed > 0))
