# tests/tap.sh - TAP helpers for the shell tests: plan, ok/not ok with a
# description, skips, diagnostics, and a private temporary directory that
# is removed (with every background job killed) when the test exits.
# Usage: . "$TOP/tests/tap.sh"

: "${TOP:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${BUILD_DIR:=build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$TOP/$BUILD_DIR" ;; esac
PROGS="$BUILD_DIR/tests/progs"
DIRLOCK=${DIRLOCK:-$TOP/bin/dirlock}
tap_n=0
tap_failed=0

plan() { echo "1..$1"; }
ok() { # ok CONDITION-STATUS DESCRIPTION
	tap_n=$((tap_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $tap_n - $2"
	else
		echo "not ok $tap_n - $2"
		tap_failed=$((tap_failed + 1))
	fi
}
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n # SKIP $1"; }
diag() { echo "# $*"; }
is() { # is GOT EXPECTED DESCRIPTION
	if [ "$1" = "$2" ]; then ok 0 "$3"; else ok 1 "$3"; diag "got '$1', expected '$2'"; fi
}
cmp_num() { # cmp_num A OP B DESCRIPTION  (OP: -lt -le -gt -ge -eq -ne)
	if [ "$1" "$2" "$3" ]; then ok 0 "$4"; else ok 1 "$4"; diag "failed: $1 $2 $3"; fi
}
# Float comparison through awk: fcmp A '<' B
fcmp() { awk -v a="$1" -v b="$3" "BEGIN { exit !(a $2 b) }"; }
# soak SHORT LONG: SHORT, or LONG under TESTS_LONG=1 (the same checks run
# longer, as a soak).
soak() { if [ "${TESTS_LONG:-0}" = 1 ]; then echo "$2"; else echo "$1"; fi; }

T=$(mktemp -d "${TMPDIR:-/tmp}/dirlock-test.XXXXXX")
tap_cleanup() {
	jobs -p | xargs -r kill -9 2>/dev/null
	kill -CONT $(jobs -p) 2>/dev/null
	rm -rf "$T"
}
trap tap_cleanup EXIT

# A lock owned by someone else, forged: forge_lock LOCKDIR NAME PID HOST [START]
# Uses this machine's boot id and pid namespace so that a local dead pid
# is recognised as dead, and another host name is not.
forge_lock() {
	_tok=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
	_boot=$(cat /proc/sys/kernel/random/boot_id)
	_ns=$(stat -L -c %i /proc/self/ns/pid)
	mkdir -p "$1/$2.lock"
	ln -s "dirlock1 pid=$3 start=${5:-1} token=$_tok acquired=$(date +%s)000000000 boot=$_boot pidns=$_ns mode=0 stale=0 host=$4" \
		"$1/$2.lock/owner.$_tok"
}

# A prepared directory of a waiter, forged (as one killed while waiting
# leaves it): forge_prep LOCKDIR NAME PID HOST [START]; prints its path.
forge_prep() {
	_tok=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
	_boot=$(cat /proc/sys/kernel/random/boot_id)
	_ns=$(stat -L -c %i /proc/self/ns/pid)
	mkdir -p "$1/.$2.$_tok.new"
	ln -s "dirlock1 pid=$3 start=${5:-1} token=$_tok acquired=$(date +%s)000000000 boot=$_boot pidns=$_ns mode=0 stale=0 host=$4" \
		"$1/.$2.$_tok.new/owner.$_tok"
	echo "$1/.$2.$_tok.new"
}

# Start time of a running process (field 22 of /proc/PID/stat).
start_time() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $20}'; }

# A pid that is certainly not running now.
dead_pid() {
	sh -c 'echo $$' 
}

# kill_holder PID: SIGKILL a dirlock that runs its command, its keeper
# (bin/keeper.c) and the command, as a crash of all three would: dirlock
# first (else it would see its command end and release), then the keeper
# (else it would release once the command ended), then the command.  Waits
# up to 5 s for the keeper, which dirlock starts right after it takes its
# locks.  Prints nothing.
kill_holder() {
	_k="" _i=0
	while [ "$_i" -lt 100 ]; do
		_k=$(pgrep -P "$1" -x dirlock-keeper) && break
		_i=$((_i + 1))
		sleep 0.05
	done
	_c=$(pgrep -P "$1" | grep -vx "${_k:-none}")
	kill -KILL "$1"
	[ -n "$_k" ] && kill -KILL "$_k"
	# shellcheck disable=SC2086 # one pid, or none
	[ -n "$_c" ] && kill -KILL $_c
	wait "$1" 2>/dev/null
	return 0
}

# pty_line COMMAND...: COMMAND run on a terminal nobody types into
# (tests/on-pty), for at most 20 s: a command that asks there waits till
# then.  Prints the seconds it took and the first line it wrote.
pty_line() {
	local t0 line
	t0=$(date +%s)
	line=$(timeout 20 "$TOP/tests/on-pty" "$@" 2>&1 | tr -d '\r' | head -n 1)
	echo "$(($(date +%s) - t0)) $line"
}
