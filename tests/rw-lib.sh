# rw-lib.sh - shared shell helpers of the reader-writer TAP scripts
# (tests/rw-*.t): plan/ok/diag, the helper binaries, a scratch directory.
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD_DIR=${BUILD_DIR:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$TOP/$BUILD_DIR" ;; esac
# shellcheck disable=SC2034 # used by the scripts that source this file
HOLD="$BUILD_DIR/tests/progs/rw_hold"
# shellcheck disable=SC2034
DEMO=${DEMO:-$TOP/bin/dirlock-demo}
# shellcheck disable=SC2034
DIRLOCK=${DIRLOCK:-$TOP/bin/dirlock}
T=$(mktemp -d /tmp/dirlock-rw.XXXXXX)
trap 'rm -rf "$T"' EXIT
n=0
fails=0
ok() { # ok COND-STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi
}
diag() { echo "# $*"; }
field() { # field LINE KEY -> value of KEY=value
	echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
