#!/bin/bash
# tests/netfs-look.t - a judge whose look at a lock directory meets ENOENT
# once the directory is open: what a network filesystem's client answers
# for a lock directory removed as it was read, and what a client that
# caches "no such name" answers (docs/netfs.md).  It means "changed under
# us": the waiter looks again and gets the lock when its holder lets go.
# Before, the judge took it for an error and the acquire failed with
# DIRLOCK_EIO "cannot read lock '.../x.lock': No such file or directory"
# (issue 38: ~80 of 2,400 acquisitions across two clients of a FUSE
# network filesystem with a 10 s negative-entry cache).  The ENOENT comes
# from a preload (tests/progs/look_enoent.c), so this runs on any
# filesystem; tests/netfs-stress.t runs the real thing on GlusterFS.
set -u
. "$(dirname "$0")/tap.sh"

SHIM=$PROGS/look_enoent.so
[ -e "$SHIM" ] || {
	echo "1..0 # SKIP $SHIM not built (make test-build)"
	exit 0
}
PRELOAD=$SHIM
asan=$(ldd "$DIRLOCK" | awk '/libasan/ { print $3; exit }')
[ -n "$asan" ] && PRELOAD="$asan $SHIM"

plan 3

D=$T/locks
mkdir -p "$D"
# The holder lets go when told ($T/go), once the waiter has looked.
# shellcheck disable=SC2016 # the inner shell's
"$DIRLOCK" -d "$D" x -- sh -c ': >"$1.in"; while [ ! -e "$1" ]; do sleep 0.01; done' sh "$T/go" &
holder=$!
for ((k = 0; k < 3000; k++)); do [ -e "$T/go.in" ] && break; sleep 0.01; done
env LD_PRELOAD="$PRELOAD" LOOK_ENOENT_TIMES=3 LOOK_ENOENT_LOG="$T/looks" \
	"$DIRLOCK" -d "$D" -w 30 x -- true 2>"$T/waiter.err" &
waiter=$!
# Until the waiter has met every ENOENT (or given up).
for ((k = 0; k < 3000; k++)); do
	[ -e "$T/looks" ] && [ "$(wc -l <"$T/looks")" -ge 3 ] && break
	kill -0 "$waiter" 2>/dev/null || break
	sleep 0.01
done
: >"$T/go"
rc=0
wait "$waiter" || rc=$?
wait "$holder"
looks=0
[ -e "$T/looks" ] && looks=$(wc -l <"$T/looks")
is "$looks" 3 "the waiter's looks met ENOENT 3 times (the preload acted)"
is "$rc" 0 "... and it took the lock once the holder let go ($(tr '\n' ' ' <"$T/waiter.err"))"
is "$(cat "$T/waiter.err")" "" "... saying nothing"
exit $((tap_failed > 0))
