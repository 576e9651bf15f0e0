# lib/redis/test-space.sh - the Redis backend's plug-in for the tests that
# run the same checks against every kind of lock space (tests/spaces-lib.sh
# sources it and describes the interface): a private redis-server on a unix
# socket under the test's directory, from tests/redis-lib.sh.
# shellcheck shell=bash

# shellcheck source=tests/redis-lib.sh
. "$TOP/tests/redis-lib.sh"

redis_space_available() {
	redis_available && return 0
	echo "$REDIS_WHY"
	return 1
}

redis_space_start() { redis_start "$@"; }

redis_space() { echo "$REDIS_SPACE"; }

redis_space_kind() { echo Redis; }

# A key prefix of its own on the same server (?prefix=, redis_url.h).
redis_space_sub() { echo "${1%%\?*}?prefix=$2"; }

# redis_space_prefix SPACE: the P of its keys, {P}:... (its ?prefix=, or the
# library's default, "dirlock").
redis_space_prefix() {
	local p=dirlock
	case $1 in *[?\&]prefix=*)
		p=${1##*prefix=}
		p=${p%%&*}
		;;
	esac
	echo "$p"
}

# Kept by design (the data model is at the top of redis_backend.c): each
# name's fence counter ({P}:NAME:f), the arrival counter ({P}:seq) and the
# set of names used ({P}:names, which dirlock cleanup trims), and the
# wait index of deadlock detection ({P}:dw, {P}:dwe), which expires on its
# own (redis_deadlock.c).
redis_space_leftovers() {
	redis_cli --scan --pattern "{$(redis_space_prefix "$1")}:*" | grep -vE ':(f|seq|names|dw|dwe)$'
	return 0
}

# The waiting queue of lock LOCK, {P}:LOCK:q, one entry a waiter.
redis_space_waiters() { redis_cli zcard "{$(redis_space_prefix "$1")}:$2:q"; }

# The counter's twin: the acquire script takes without looking.
redis_space_no_lock() { echo DIRLOCK_TEST_REDIS_NO_LOCK=1; }
