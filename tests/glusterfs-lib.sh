# tests/glusterfs-lib.sh - for the network-filesystem tests (netfs-*.t):
# one private GlusterFS volume mounted twice, by two clients in network
# namespaces of their own.  tests/run-all starts one for all of them
# (tests/glusterfs-shared, DIRLOCK_TEST_GLUSTERFS names its directory);
# a test run on its own starts its own under $T and stops it at exit.
# Source it after tests/tap.sh or tests/http-lib.sh (it needs $T and $TOP),
# then call gfs_up.  Where root, /dev/fuse or GlusterFS are missing the
# test skips whole, in one line.
# shellcheck shell=bash

gfs_own=""

gfs_skip() {
	echo "1..0 # SKIP $*"
	exit 0
}

# gfs_up: sets GFS_M1 and GFS_M2 (the two mounts), GFS_NS1 and GFS_NS2
# (their clients' namespaces), GFS_ID and GFS_RUN (for gfs below).
gfs_up() {
	local shared=${DIRLOCK_TEST_GLUSTERFS:-}
	if [ -n "$shared" ] && [ -s "$shared/env" ]; then
		# shellcheck disable=SC1091 # written by tests/glusterfs-shared
		. "$shared/env"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || gfs_skip "needs root (network namespaces and FUSE mounts for a private GlusterFS)"
	[ -c /dev/fuse ] || gfs_skip "/dev/fuse is missing (no FUSE here for a private GlusterFS)"
	local out rc=0
	gfs_own=$T/gfs
	out=$("$TOP/tests/glusterfs-shared" start "$gfs_own" 2>&1) || rc=$?
	if [ "$rc" -eq 77 ]; then
		gfs_own=""
		gfs_skip "${out#glusterfs: }"
	fi
	if [ "$rc" -ne 0 ]; then
		gfs_down
		echo "Bail out! the private GlusterFS did not start: $out"
		exit 1
	fi
	# shellcheck disable=SC1091 # written by tests/glusterfs-shared
	. "$gfs_own/env"
}

# gfs_down: stops a volume gfs_up started (not the shared one).
gfs_down() {
	[ -z "$gfs_own" ] || "$TOP/tests/glusterfs-shared" stop "$gfs_own" || true
	gfs_own=""
}

# gfs ARGS...: tools/glusterfs on the test's volume.
gfs() { GLUSTER_ID=$GFS_ID RUN_DIR=$GFS_RUN "$TOP/tools/glusterfs" "$@"; }

# gfs_dir NAME: makes a fresh directory NAME-PID on the volume and prints
# its name; it is $GFS_M1/NAME-PID through one client, $GFS_M2/NAME-PID
# through the other.
gfs_dir() {
	local d=$1-$$
	rm -rf "${GFS_M1:?}/$d"
	mkdir -p "$GFS_M1/$d"
	echo "$d"
}
