#!/bin/bash
# tests/netfs-clock.t - the stale age across hosts whose clocks differ, on
# a GlusterFS volume (tests/glusterfs-lib.sh).  A skewed host is a mount
# whose FUSE client runs under libfaketime (Debian's faketime) and a judge
# process under the same skew: ahead by 1 s and 60 s, behind by 1 s and
# 60 s.  First what the volume stamps: a directory made and renamed
# through a client, and a refresh (utimensat to now) through it, get that
# client's clock (GlusterFS's features.ctime), not the server's.  Then,
# with a stale age of 2 s (CLOCKS in lib/netfs/netfs.c):
#   - a judge ahead never breaks a live holder that refreshes (on an
#     unskewed host), however far ahead: it takes the lock once the holder
#     releases it, and the holder's release finds it still its own;
#   - a judge behind still takes a dead holder's lock (the holder on
#     another host, so that only the age can tell), within the stale age
#     and the cache lag of its first look, however far behind;
#   - a judge ahead takes a dead holder's lock, but not before it has
#     watched the lock unchanged for a third of the stale age and the
#     cache lag.
# Each prints its "# table:" line (docs/netfs.md has the figures).
set -u
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/glusterfs-lib.sh"

LIBFAKETIME=$(dpkg -L libfaketime 2>/dev/null | grep '/libfaketime\.so\.1$' | head -n 1)
[ -n "$LIBFAKETIME" ] || {
	echo "1..0 # SKIP libfaketime is not installed (make deps: faketime)"
	exit 0
}
[ -x "$PROGS/lockworker" ] || {
	echo "1..0 # SKIP tests/progs not built (make test-build)"
	exit 0
}
gfs_up
SKEWS="+60 +1 -1 -60"
mounts=()
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	local m
	for m in "${mounts[@]}"; do gfs umount "$m" >/dev/null 2>&1 || true; done
	gfs_down
	tap_cleanup
}
trap cleanup EXIT
STALE=2
# The judge's watch on a network filesystem: a third of the stale age and
# GlusterFS's cache lag (2 s).
WINDOW=$(awk -v s="$STALE" 'BEGIN { print s / 3 + 2 }')

# One namespace for the skewed clients (client number 21 of the volume),
# one mount per skew: M[+60] ... M[-60].
NS=$GFS_ID-skew
if ! ip netns list | grep -q "^$NS\\b"; then
	gfs client skew 21 >/dev/null || {
		echo "Bail out! cannot add a client to the volume"
		exit 1
	}
fi
declare -A M
for s in $SKEWS; do
	M[$s]=$T/skew$s
	MOUNT_PREFIX="env LD_PRELOAD=$LIBFAKETIME FAKETIME=${s}s" gfs mount "$NS" "${M[$s]}" >/dev/null || {
		echo "Bail out! cannot mount the volume with a clock $s s off"
		exit 1
	}
	mounts+=("${M[$s]}")
done
# A sanitizer build (make test SANITIZE=1) must have its runtime first in
# the list of preloaded libraries, or ASan refuses to start.
PRELOAD=$LIBFAKETIME
asan=$(ldd "$PROGS/lockworker" | awk '/libasan/ { print $3; exit }')
[ -n "$asan" ] && PRELOAD="$asan $LIBFAKETIME"
skewed() { env LD_PRELOAD="$PRELOAD" FAKETIME="${1}s" "${@:2}"; }

plan 14

# ---- whose clock stamps what ------------------------------------------------
d=$(gfs_dir clock)
mkdir "${M[+60]}/$d/x.new"
sleep 0.2
mv "${M[+60]}/$d/x.new" "${M[+60]}/$d/x"
now=$(date +%s)
off=$(($(stat -c %Z "$GFS_M1/$d/x") - now))
cmp_num "$off" -ge 55 "a directory renamed through a client 60 s ahead carries its clock (ctime $off s off)"
touch "${M[+60]}/$d/x"
off=$(($(stat -c %Y "$GFS_M1/$d/x") - $(date +%s)))
cmp_num "$off" -ge 55 "a refresh (utimensat to now) through it carries its clock too (mtime $off s off)"
diag "table: | renamed directory, refreshed entry: the clock of the client that made the change |"

# hold NAME SECONDS: a live holder on an unskewed host (mount 1),
# refreshing every 0.6 s; its lines to $T/NAME.hold.  Waits (up to 20 s)
# until it holds.
hold() {
	"$PROGS/lockworker" hold "$GFS_M1/$d" "$1" "$2" "$STALE" 0.6 >"$T/$1.hold" 2>&1 &
	local i
	for ((i = 0; i < 400; i++)); do
		grep -q '^held' "$T/$1.hold" && return 0
		sleep 0.05
	done
	return 1
}

# ---- a judge ahead or behind, a live holder -----------------------------------
for s in +60 +1 -1 -60; do
	n=live${s/+/p}
	n=${n/-/m}
	hold "$n" 5 || diag "$n: the holder did not start: $(cat "$T/$n.hold")"
	read -r code ms < <(skewed "$s" "$PROGS/lockworker" wait "${M[$s]}/$d" "$n" 15 "$STALE")
	wait
	res=$(tail -n 1 "$T/$n.hold")
	ok "$([ "$code" = 0 ] && [ "${ms%.*}" -ge 4500 ] && [ "$res" = released ] && echo 0 || echo 1)" \
		"judge $s s: a live holder is never broken: the judge waited ${ms} ms for its release (holder: $res)"
	diag "table: | judge $s s, live holder refreshing | judge took the lock after $ms ms (the holder held 5 s) | holder's release: $res |"
done

# ---- a dead holder on another host ---------------------------------------------
# dead NAME: a holder on another host (its own host name: only the age can
# tell it is gone), killed at once; prints nothing, returns when it is dead.
dead() {
	# shellcheck disable=SC2016 # the inner shell's $0 and $@
	unshare --uts sh -c 'hostname dirlock-other-host && exec "$0" "$@"' \
		"$PROGS/lockworker" hold "$GFS_M1/$d" "$1" 60 "$STALE" 0 >"$T/$1.hold" 2>&1 &
	local pid=$! i
	for ((i = 0; i < 400; i++)); do
		grep -q '^held' "$T/$1.hold" && break
		sleep 0.05
	done
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
}
for s in -60 -1 +1 +60; do
	n=dead${s/+/p}
	n=${n/-/m}
	dead "$n"
	read -r code ms < <(skewed "$s" "$PROGS/lockworker" wait "${M[$s]}/$d" "$n" 15 "$STALE")
	is "$code" 0 "judge $s s: a dead holder's lock is taken (after $ms ms)"
	# Behind: the clock never says stale; the watch alone takes it, after
	# the stale age and the cache lag.  Ahead: the clock says stale at
	# once; the watch takes it after a third of the stale age and the lag.
	# The bound above allows 4 s more for a busy machine; the one below is
	# the promise.
	limit=$(awk -v s="$STALE" -v w="$WINDOW" -v k="$s" 'BEGIN { print (k < 0 ? s + 2 : w) + 4 }')
	least=$(awk -v w="$WINDOW" 'BEGIN { print w - 0.2 }')
	ok "$(awk -v ms="$ms" -v lo="$least" -v hi="$limit" 'BEGIN { exit !(ms / 1000 >= lo && ms / 1000 <= hi) }' && echo 0 || echo 1)" \
		"judge $s s: after the watch ($least s) and within $limit s of the first look ($ms ms)"
	diag "table: | judge $s s, holder on another host killed | taken after $ms ms |"
done
exit $((tap_failed > 0))
