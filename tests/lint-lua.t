#!/bin/bash
# lint-lua.t - the Redis backend's Lua (lib/redis/scripts/*.lua, and the
# constants.lua the build prints from the C headers) compiles with Redis'
# own Lua, 5.1 (luac5.1 -p: syntax, and the limits of a chunk): each file
# alone, so that a mistake is reported at its file and line, then every
# script as the server receives it, its parts put together
# (build/tests/progs/redis_scripts, the no-lock twin of the test build
# included).  The check is first shown failing: on a syntax error, on
# syntax only a newer Lua has, and on a chunk over 5.1's 200 locals, which
# parts that each compile alone can add up to.  Every file of the folder
# is part of some script.
. "$(dirname "$0")/tap.sh"
cd "$TOP" || exit 1
if ! command -v luac5.1 >/dev/null 2>&1; then
	echo "1..0 # SKIP luac5.1 is not installed (apt-get install lua5.1)"
	exit 0
fi
files=(lib/redis/scripts/*.lua)
gen="$BUILD_DIR/lib/redis/scripts/constants.lua"
dump="$PROGS/redis_scripts"
plan $((3 + ${#files[@]} + 1 + 1 + 2))

# ---- the check can fail ----------------------------------------------------

printf 'local x = 1\nif x then\n  return x +\nend\n' >"$T/broken.lua"
said=$(luac5.1 -p "$T/broken.lua" 2>&1)
st=$?
[ "$st" -ne 0 ] && echo "$said" | grep -q 'broken.lua:4:'
ok $? "luac5.1 -p fails a chunk with a syntax error, at its line"
[ "$st" -ne 0 ] || diag "status $st: $said"

printf 'local a = 7 // 2\nreturn a\n' >"$T/newer.lua"
! said=$(luac5.1 -p "$T/newer.lua" 2>&1)
ok $? "luac5.1 -p fails Lua 5.3's floor division, which Redis' Lua 5.1 does not have"
diag "$said"

for i in $(seq 1 201); do echo "local v$i = $i"; done >"$T/locals.lua"
! said=$(luac5.1 -p "$T/locals.lua" 2>&1) && echo "$said" | grep -q 'more than 200 local variables'
ok $? "luac5.1 -p fails a chunk of 201 locals"
diag "$said"

# ---- each file alone ---------------------------------------------------------

for f in "${files[@]}"; do
	said=$(luac5.1 -p "$f" 2>&1)
	ok $? "$f compiles"
	[ -n "$said" ] && diag "$said"
done
if [ -f "$gen" ]; then
	said=$(luac5.1 -p "$gen" 2>&1)
	ok $? "constants.lua, generated from the C headers, compiles"
	[ -n "$said" ] && diag "$said"
else
	skip "no $gen: a build without Redis (make REDIS=0)"
fi

unused=""
for f in "${files[@]}"; do
	name=$(basename "$f" .lua | tr '[:lower:]' '[:upper:]')
	grep -q "DL_LUA_$name\b" lib/redis/redis_scripts.c || unused="$unused $f"
done
[ -z "$unused" ]
ok $? "every file of lib/redis/scripts/ is part of a script (redis_scripts.c)"
[ -z "$unused" ] || diag "not used:$unused"

# ---- every script as the server receives it -----------------------------------

if [ -x "$dump" ]; then
	for twin in "" 1; do
		mkdir -p "$T/scripts$twin"
		if DIRLOCK_TEST_REDIS_NO_LOCK=$twin "$dump" "$T/scripts$twin"; then
			said=$(for s in "$T/scripts$twin"/*.lua; do luac5.1 -p "$s" 2>&1 || echo "($s)"; done)
			n=$(find "$T/scripts$twin" -name '*.lua' | wc -l)
			[ -z "$said" ] && [ "$n" -eq "$(grep -c '^ *\[DL_RS_[A-Z_]*\] = {' lib/redis/redis_scripts.c)" ]
			ok $? "the $n scripts${twin:+ of the no-lock twin} compile as the server gets them"
			[ -n "$said" ] && diag "$said"
		else
			ok 1 "$dump wrote the scripts${twin:+ of the no-lock twin}"
		fi
	done
else
	skip "no $dump: a build without Redis (make REDIS=0)"
	skip "the same for the no-lock twin"
fi
exit $((tap_failed > 0))
