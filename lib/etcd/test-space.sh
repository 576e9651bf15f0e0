# lib/etcd/test-space.sh - the etcd backend's plug-in for the tests that run
# the same checks against every kind of lock space (tests/spaces-lib.sh
# sources it and describes the interface): the three-member cluster on
# 127.0.0.1 that tests/run-all starts once for the whole run, or, when the
# script runs alone, a private one of its own (tests/etcd-lib.sh), with a
# key prefix of the script's own either way.
# shellcheck shell=bash

# shellcheck source=tests/etcd-lib.sh
. "$TOP/tests/etcd-lib.sh"

etcd_space_available() {
	etcd_available && return 0
	echo "$ETCD_WHY"
	return 1
}

etcd_space_start() { etcd_start "$@"; }

etcd_space() { echo "$ETCD_SPACE"; }

etcd_space_kind() { echo etcd; }

# A prefix of its own on the same cluster: PREFIX-TAG (etcd_url.h).
etcd_space_sub() { echo "$1-$2"; }

# Kept by design (the data at the top of etcd_backend.c): each name's
# fence key, PREFIX/f/NAME.  Every holder's and waiter's key is PREFIX/q/...
etcd_space_leftovers() {
	etcd_ctl get --prefix --keys-only "${1##*/}/q/" | grep -v '^$'
	return 0
}

# The waiters of lock LOCK: its entries still waiting (state w).
etcd_space_waiters() {
	etcd_ctl get --prefix --print-value-only "${1##*/}/q/$2/" | grep -c '^dl1 w'
}

# Every hand-off is writes a majority of members sync to disk, some ms
# each: a thirtieth of the rounds a Redis server is given, at least 20.
etcd_space_rounds() {
	local n=$(($1 / 30))
	echo $((n < 20 ? 20 : n))
}

# Leases are whole seconds, 1 s at the least.
etcd_space_min_stale() { echo 1; }

# The counter's twin: every request may hold, the queue unread.
etcd_space_no_lock() { echo DIRLOCK_TEST_ETCD_NO_LOCK=1; }
