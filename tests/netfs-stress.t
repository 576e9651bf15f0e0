#!/bin/bash
# tests/netfs-stress.t - the lock across two clients of one GlusterFS
# volume (tests/glusterfs-lib.sh): the stress checkers of the exclusive,
# reader-writer and range locks with half of their processes on each
# mount, for every mode claimed safe there (lib/netfs/netfs.c): no overlap, no
# error (no ESTALE: lib/dir/fsops.c), no lock reported lost that was not
# (no false DIRLOCK_ELOST).  Stale age 1 s, and 0.3 s, where a judge
# reading a late cached time broke live holders before the library
# watched entries before breaking them (CLOCKS in lib/netfs/netfs.c).  The twins:
# the same checkers across the mounts without the lock count overlaps.
# (With a library stale age far below what the holders refresh for -- the
# twin on a local filesystem -- the library breaks nothing here: a judge
# must first see an entry unchanged for a while, and these holders keep
# changing theirs.)  Shared locks are taken on GlusterFS without
# --one-client (other FUSE filesystems: tests/netfs-fuse.t).  And the
# command: 4 shells, two on each client, each bumping a counter file 50
# times under `dirlock`: every bump counted, no command failed (and its
# twin without dirlock loses bumps).  And the exclusive lock across two
# more mounts whose clients cache "no such name" (--negative-timeout=10):
# no acquire or release fails (its twin without the lock loses bumps).
# A checker's run lasts 5 s (8 s under TESTS_LONG=1; STRESS_SECONDS=N:
# N s), a twin's 2 s.
set -u
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/glusterfs-lib.sh"

[ -x "$PROGS/stress" ] && [ -x "$PROGS/rangestress" ] || {
	echo "1..0 # SKIP tests/progs not built (make test-build)"
	exit 0
}
trap 'gfs_down; tap_cleanup' EXIT
gfs_up
SECS=${STRESS_SECONDS:-$(soak 5 8)}

# run NAME CMD...: runs a checker, keeps its last line (the counts) in
# $T/NAME.out and what it said on stderr in $T/NAME.err; its status.
run() {
	local name=$1
	shift
	"$@" >"$T/$name.out" 2>"$T/$name.err"
}
count() { sed -n "s/.*\\b$2=\\([0-9]*\\).*/\\1/p" "$T/$1.out"; }
show() {
	diag "$1: $(cat "$T/$1.out")"
	sed 's/^/#   /' "$T/$1.err" | head -n 5
}

plan 13

d=$(gfs_dir excl)
run excl "$PROGS/stress" "$GFS_M1/$d" 1 6 "$SECS" --also "$GFS_M2/$d"
ok $? "exclusive, stale age 1 s, 6 processes on two clients: no overlap, loss or error"
show excl

d=$(gfs_dir mix)
run mix "$PROGS/stress" "$GFS_M1/$d" 1 6 "$SECS" --mix --also "$GFS_M2/$d"
ok $? "shared, intent and exclusive, every policy, FIFO, stale age 1 s: no overlap, loss or error"
show mix

d=$(gfs_dir short)
run short "$PROGS/stress" "$GFS_M1/$d" 0.3 6 "$SECS" --mix --also "$GFS_M2/$d"
ok $? "the same at stale age 0.3 s (late cached times): no overlap, loss or error"
show short
# Went round: 5 acquisitions a second of the run at the least (17-24 a
# second on two cores, 14 under the sanitizer; a livelock makes none).
least=$(awk -v s="$SECS" 'BEGIN { printf "%d", 5 * s }')
cmp_num "$(count short acquisitions)" -gt "$least" "stale age 0.3 s: the locks went round ($(count short acquisitions) acquisitions in $SECS s)"

d=$(gfs_dir ranges)
run ranges "$PROGS/rangestress" "$GFS_M1/$d" 6 "$SECS" --whole --also "$GFS_M2/$d"
ok $? "range locks and whole locks across the clients: no overlap or error"
show ranges

d=$(gfs_dir twin)
run twin "$PROGS/stress" "$GFS_M1/$d" 1 6 2 --nolock --also "$GFS_M2/$d"
twin=$?
show twin
ok "$([ "$twin" -ne 0 ] && [ "$(count twin overlaps)" -gt 0 ] && echo 0 || echo 1)" \
	"twin: without the lock the checker sees overlaps"
run rtwin "$PROGS/rangestress" "$GFS_M1/$d" 6 2 --nolock --also "$GFS_M2/$d"
rtwin=$?
show rtwin
ok "$([ "$rtwin" -ne 0 ] && [ "$(count rtwin violations)" -gt 0 ] && echo 0 || echo 1)" \
	"twin: without the lock the range checker sees overlaps"

# ---- the command across the clients ---------------------------------------
# 4 shells, two on each client, each bumping the counter in directory $1
# $2 times, under `dirlock` unless $3 is "nolock"; each shell's failures in
# $T/cli<i>.fails.  Bounded: a command waits at most 20 s, and a shell
# still going after 90 s counts the runs it has left as failures (a volume
# that stalls fails the test instead of holding the suite).  Before the
# lock forgot its prepared directory's old name (STALE NAMES in
# lib/dir/fsops.c) the brick at times kept that name for the lock, and
# every command after timed out: "held by pid 0 on an unknown host".
bump_across() {
	local dir=$1 runs=$2 how=${3:-lock}
	echo 0 >"$GFS_M1/$dir/counter"
	for i in 1 2 3 4; do
		m=$([ $((i % 2)) = 1 ] && echo "$GFS_M1" || echo "$GFS_M2")
		(
			SECONDS=0
			fails=0
			for ((k = 0; k < runs; k++)); do
				if [ "$SECONDS" -gt 90 ]; then
					fails=$((fails + runs - k))
					echo "gave up after 90 s with $((runs - k)) runs left" >&2
					break
				fi
				# shellcheck disable=SC2016 # the inner shell's
				set -- sh -c 'v=$(cat "$1"); echo $((v + 1)) >"$1"' sh "$m/$dir/counter"
				if [ "$how" = lock ]; then
					set -- "$DIRLOCK" -d "$m/$dir/locks" -w 20 c -- "$@"
				fi
				"$@" || fails=$((fails + 1))
			done
			echo "$fails" >"$T/cli$i.fails"
		) 2>"$T/cli$i.err" &
	done
	wait
}
d=$(gfs_dir cli)
bump_across "$d" 50
is "$(cat "$T"/cli?.fails | awk '{ n += $1 } END { print n }')" 0 "dirlock(1), 4 shells on two clients x 50: no command failed"
is "$(cat "$GFS_M1/$d/counter")" 200 "... and no bump was lost"
sed 's/^/#   /' "$T"/cli?.err | head -n 5
d=$(gfs_dir clitwin)
bump_across "$d" 50 nolock
cmp_num "$(cat "$GFS_M1/$d/counter")" -lt 200 "twin: the same shells without dirlock lose bumps ($(cat "$GFS_M1/$d/counter") of 200 counted)"

# ---- clients that cache "no such name" -----------------------------------
# Two more mounts, one in each client's namespace, whose FUSE clients keep
# "no such name" for 10 s (--negative-timeout=10): 8 processes, half on
# each, bump a counter NEG_BUMPS times each under the exclusive lock
# (default stale age: nothing is ever stale), failures counted, not fatal.
# Before, acquires failed with DIRLOCK_EIO "cannot read lock ...: No such
# file or directory" (a judge took the ENOENT of a lock directory removed
# as it looked for an error), and releases said DIRLOCK_ELOST for locks
# nobody broke (the brick answers ENOENT for an unlink whose directory
# went right after it: RELEASE 1 in lib/dir/exclusive.c); both happen on
# the default mounts too, less often.  The twin: the same without the
# lock loses bumps.
NEG_BUMPS=${NEG_BUMPS:-$(soak 60 300)}
neg_down() {
	local m
	for m in "$T/n1" "$T/n2"; do
		mountpoint -q "$m" 2>/dev/null && gfs umount "$m" >/dev/null 2>&1
	done
	return 0
}
trap 'neg_down; gfs_down; tap_cleanup' EXIT
# bump_neg DIR LOCKING: the 8 bumpers in DIR through n1 and n2; their
# figures in $T/neg.<i>.out, what they said in $T/neg.<i>.err.
bump_neg() {
	echo 0 >"$T/n1/$1/counter"
	for i in 1 2 3 4 5 6 7 8; do
		m=$T/n$((i % 2 + 1))
		"$PROGS/lockworker" counter "$m/$1/locks" c "$m/$1/counter" "$NEG_BUMPS" "$2" \
			>"$T/neg.$i.out" 2>"$T/neg.$i.err" &
	done
	wait
}
if gfs mount "$GFS_NS1" "$T/n1" --negative-timeout=10 >"$T/neg.mount" 2>&1 &&
	gfs mount "$GFS_NS2" "$T/n2" --negative-timeout=10 >>"$T/neg.mount" 2>&1; then
	d=$(gfs_dir neg)
	bump_neg "$d" tally
	failed=$(cat "$T"/neg.?.out | awk '{ n += $4 } END { print n + 0 }')
	slow=$(cat "$T"/neg.?.out | awk '{ n += $6 } END { print n + 0 }')
	counted=$(cat "$T/n1/$d/counter")
	all=$((8 * NEG_BUMPS))
	sort "$T"/neg.?.err | uniq -c | sed 's/^/# /' | head -n 5
	[ "$failed" -eq 0 ] && [ "$counted" -eq "$all" ]
	ok $? "negative-timeout=10 on both clients, 8 x $NEG_BUMPS exclusive: no acquire or release failed, no bump lost (failed $failed, counted $counted of $all; acquires over 2 s: $slow)"
	d=$(gfs_dir negtwin)
	bump_neg "$d" none
	counted=$(cat "$T/n1/$d/counter")
	cmp_num "$counted" -lt "$all" "twin: the same bumps without the lock lose some ($counted of $all counted)"
else
	for i in 1 2; do skip "the mounts with --negative-timeout=10 failed: $(tail -n 1 "$T/neg.mount")"; done
fi
neg_down

# ---- which modes the library allows where (other FUSE: netfs-fuse.t) ------
d=$(gfs_dir modes)
"$DIRLOCK" -d "$GFS_M1/$d" -s -w 5 name -- true 2>"$T/gl.err"
ok $? "GlusterFS: a shared lock is taken"

exit $((tap_failed > 0))
