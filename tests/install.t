#!/bin/bash
# install.t - `make install PREFIX=P` into a temporary prefix, then each
# part used from outside the tree the way its users use it, in a clean
# environment that has only what `make install-env PREFIX=P` prints (and
# never LD_LIBRARY_PATH): the command and its manual pages (man), a C
# program built with pkg-config, perl -MDirlock, python3 -c 'import
# dirlock', and in new Node.js projects `npm install
# /path/to/bindings/node` (linked: the tree's own addon) and `npm install
# --install-links` (a copy, built against the installed library), `pip
# install ./bindings/python` under a python3 that has no `wheel`, with no
# package index.  None of those uses writes into the tree.  Also: the
# Perl manual page is in P/share/man/man3, and PREFIX=/usr/local needs no
# variable on this (Debian) system.
. "$(dirname "$0")/tap.sh"
cd "$TOP" || exit 1
if [ "${SANITIZE:-}" = 1 ]; then
	echo "1..0 # SKIP SANITIZE=1: the bindings are built without sanitizers only"
	exit 0
fi
PYTHON=${PYTHON:-/usr/bin/python3}
plan 19

P=$T/prefix
make -s -C "$TOP" install PREFIX="$P" >"$T/install.out" 2>&1
st=$?
ok $st "make install PREFIX=$P"
[ "$st" -eq 0 ] || diag "$(tail -20 "$T/install.out")"

# From here on the tree is only read: whatever is written under it is
# found by its time (and git status).  tests/results is the suite's own.
touch "$T/stamp"
git_before=$(git status --porcelain | grep -v '^?? tests/results/')

# ---- what a shell needs -----------------------------------------------

env_lines=$(make -s --no-print-directory -C "$TOP" install-env PREFIX="$P" 2>"$T/env.err")
echo "$env_lines" | grep -q '^export PATH=' && ! echo "$env_lines" | grep -q LD_LIBRARY_PATH
ok $? "make install-env names what a shell needs for $P, never LD_LIBRARY_PATH"
diag "$(echo "$env_lines" | sed 's/^/  /')"
[ -s "$T/env.err" ] && diag "$(cat "$T/env.err")"

usr_local=$(PATH=/usr/local/bin:/usr/bin:/bin make -s --no-print-directory -C "$TOP" install-env PREFIX=/usr/local 2>&1)
is "$usr_local" "" "PREFIX=/usr/local needs no variable here"

[ -f "$P/share/man/man3/Dirlock.3pm" ] && [ ! -e "$P/man" ]
ok $? "the Perl module's page is in PREFIX/share/man/man3 (and nothing in PREFIX/man)"

# outside COMMAND: runs COMMAND (a bash script) in $T/outside, with only
# what a login shell has, and what make install-env printed.
mkdir -p "$T/outside" "$T/home"
NODE_DIR=$(node -p 'require("path").resolve(process.execPath, "..", "..")' 2>/dev/null)
outside() {
	env -i HOME="$T/home" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 TMPDIR="$T" \
		P="$P" T="$T" TOP="$TOP" PYTHON="$PYTHON" NODE_DIR="$NODE_DIR" TAKE_IN_NODE="$take_in_node" \
		bash -c "$env_lines
cd \"\$T/outside\" && $1" >"$T/out" 2>&1
}
# check DESCRIPTION: the last command's status as a test, with its output
# when it failed.
check() {
	local st=$?
	ok $st "$1"
	[ $st -eq 0 ] || diag "$(tail -15 "$T/out")"
}

# ---- the command, C, Perl, Python ---------------------------------------

outside '[ "$(command -v dirlock)" = "$P/bin/dirlock" ] && dirlock -d "$T/locks" cmd -- echo held'
check "the command, from PATH"

if command -v man >/dev/null; then
	outside 'man -w Dirlock dirlock_acquire | grep -c "^$P/share/man/man3/" | grep -qx 2'
	check "man finds the pages in PREFIX/share/man (Dirlock(3pm), dirlock_acquire(3))"
else
	skip "man is not installed (man-db)"
fi

cat >"$T/outside/prog.c" <<'EOF'
#include <dirlock.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	dirlock_options opts = DIRLOCK_OPTIONS_INIT;
	dirlock *lock;
	dirlock_error err;
	if (argc < 2 || dirlock_acquire(argv[1], "c", &opts, &lock, &err) != DIRLOCK_OK ||
	    dirlock_release(lock, &err) != DIRLOCK_OK)
		return 1;
	puts("held");
	return 0;
}
EOF
outside 'cc -o prog prog.c $(pkg-config --cflags --libs dirlock) && ./prog "$T/locks" &&
	ldd ./prog | grep -F "libdirlock.so.1 => $P/lib/libdirlock.so.1"'
check "a C program built with pkg-config runs against PREFIX's shared library"

outside 'perl -MDirlock -e '\''my $l = Dirlock->acquire($ARGV[0], "perl"); print $INC{"Dirlock.pm"}, "\n"'\'' "$T/locks" |
	grep "^$P/"'
check "perl -MDirlock takes a lock, with PREFIX's module"

outside '"$PYTHON" -c "import dirlock, sys
with dirlock.Lock(sys.argv[1], \"py\"): print(dirlock.__file__)" "$T/locks" | grep "^$P/"'
check "$PYTHON -c 'import dirlock' takes a lock, with PREFIX's package"

# ---- Node.js: npm install from a new project ----------------------------

node_can_build=$(command -v npm >/dev/null && [ -f "$NODE_DIR/include/node/node_api.h" ] && echo yes)
take_in_node='const { Lock } = require("dirlock")
new Lock(process.argv[1], "node").runExclusive(() => console.log(require.resolve("dirlock")))'
if [ -z "$node_can_build" ]; then
	for _ in 1 2 3 4; do skip "npm or Node.js's headers are not installed"; done
else
	# npm links a directory: the project uses the tree's addon, built there
	# by make, and nothing is built or written in the tree.
	mkdir -p "$T/outside/app"
	echo '{"name": "app", "version": "1.0.0", "private": true}' >"$T/outside/app/package.json"
	outside 'cd app && npm install --offline --no-audit --no-fund --cache "$T/npm-cache" --nodedir="$NODE_DIR" "$TOP/bindings/node" &&
		node -e "$TAKE_IN_NODE" "$T/locks"'
	check "npm install /path/to/bindings/node: require('dirlock') takes a lock in the new project"
	outside 'node -e "require(\"$TOP/bindings/node\")"'
	check "... and the tree's own addon still loads"

	# --install-links copies the package, which builds against the library
	# that pkg-config names (PREFIX's) and finds it with no search path.
	mkdir -p "$T/outside/app2"
	echo '{"name": "app2", "version": "1.0.0", "private": true}' >"$T/outside/app2/package.json"
	outside 'cd app2 && npm install --install-links --offline --no-audit --no-fund --cache "$T/npm-cache" \
		--nodedir="$NODE_DIR" "$TOP/bindings/node" && node -e "$TAKE_IN_NODE" "$T/locks" | grep "^$T/outside/app2/" &&
		ldd node_modules/dirlock/build/Release/dirlock.node | grep -F "libdirlock.so.1 => $P/lib/libdirlock.so.1"'
	check "npm install --install-links: a copy built against PREFIX's library loads"
	outside 'node -e "require(\"$TOP/bindings/node\")"'
	check "... and the tree's own addon still loads"
fi

# ---- pip, with no package index and no wheel ----------------------------

# A new venv: pip and setuptools, no wheel (Python 3.11's ensurepip).
if ! "$PYTHON" -m venv "$T/venv" >"$T/out" 2>&1; then
	for _ in 1 2 3; do skip "$PYTHON -m venv failed (python3-venv)"; done
else
	! "$T/venv/bin/python" -c 'import wheel' 2>/dev/null
	ok $? "a new venv of $PYTHON has no wheel"
	outside 'env -u PYTHONPATH "$T/venv/bin/python" -m pip install --no-index --find-links /usr/share/python-wheels \
		"$TOP/bindings/python" >pip.out 2>&1; st=$?; cat pip.out; [ $st -eq 0 ] && ! grep -i "legacy\|deprecat" pip.out'
	check "pip install ./bindings/python, offline, under a python3 without wheel"
	outside 'env -u PYTHONPATH "$T/venv/bin/python" -c "import dirlock, sys
with dirlock.Lock(sys.argv[1], \"venv\"): print(dirlock._dirlock.__file__)" "$T/locks" >so &&
		grep "^$T/venv/" so && ldd "$(cat so)" | grep -F "libdirlock.so.1 => $P/lib/libdirlock.so.1"'
	check "... and it takes a lock, with PREFIX's library"
fi

# ---- the tree was only read ---------------------------------------------

written=$(find "$TOP" \( -name .git -o -path "$TOP/tests/results" -o -path "$TOP/bench/results" \) -prune -o \
	-newer "$T/stamp" -print | head -20)
is "$written" "" "nothing in the tree was written by the uses from outside"
is "$(git status --porcelain | grep -v '^?? tests/results/')" "$git_before" "git status is as it was"
node -e "require('$TOP/bindings/node')" 2>"$T/out"
check "the tree's addon loads in the tree"
diag "$SECONDS s"
