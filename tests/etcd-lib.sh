# tests/etcd-lib.sh - an etcd cluster for a test script, never the
# system's: the three-member cluster that tests/run-all starts once for the
# whole run (on 127.0.0.1, $DIRLOCK_TEST_ETCD names it), or, when the
# script runs alone, a private one of its own under the test's directory
# /tmp (tools/etcd-cluster, local placement, ports from PORT_RANGE), stopped
# when the script exits, however that ends.  Each script takes a prefix of
# its own, so scripts sharing a cluster never see each other's locks.
# Source it after tap.sh or rw-lib.sh (which make $T).
#
#   etcd_available     0 when etcd is installed and the library was built
#                      with etcd support, else 1 (a reason in $ETCD_WHY)
#   etcd_start         the shared cluster, or a private one; sets
#                      ETCD_SPACE (etcd://ENDPOINTS/PREFIX) and ETCD_PRIVATE
#   etcd_start tls [TTL]   a private cluster that speaks only HTTPS, asks for
#                      client certificates and has etcd's authentication on
#                      (tools/etcd-cluster TLS=1 AUTH=1; tokens unused for
#                      TTL seconds expire): ETCD_SPACE is etcds://...?cacert=
#                      &cert=&key= (no user), ETCD_TLS the certificates'
#                      directory (tools/tls-certs)
#   etcd_space PREFIX  the lock space of another prefix on the same cluster
#   etcd_ctl ARGS...   etcdctl on the cluster (as root with TLS)
# shellcheck shell=bash

ETCD_SPACE=""
ETCD_PRIVATE=""
ETCD_TLS=""
ETCD_WHY=""
ETCD_ENDPOINTS=""

etcd_available() {
	if ! command -v etcd >/dev/null 2>&1 || ! command -v etcdctl >/dev/null 2>&1; then
		ETCD_WHY="etcd is not installed (make deps: etcd-server, etcd-client)"
		return 1
	fi
	if "${DIRLOCK:-$TOP/bin/dirlock}" status -d etcd://127.0.0.1:1 2>&1 | grep -q "no etcd support"; then
		ETCD_WHY="the library was built without etcd support (install libcurl4-openssl-dev and libjson-c-dev and rebuild)"
		return 1
	fi
	return 0
}

etcd_start() {
	local prefix=t$$ tls=()
	[ "${1:-}" != tls ] || tls=(TLS=1 AUTH=1 AUTH_TOKEN_TTL="${2:-300}")
	if [ -n "${DIRLOCK_TEST_ETCD:-}" ] && [ ${#tls[@]} -eq 0 ]; then
		ETCD_ENDPOINTS=${DIRLOCK_TEST_ETCD#etcd://}
	else
		# Outside $T, which the script's own trap removes: the watcher
		# (WATCH_PID) stops the members even if this shell is killed,
		# and needs the cluster's state for that.
		ETCD_PRIVATE=$(mktemp -d /tmp/dirlock-etcd.XXXXXX)
		env RUN_DIR="$ETCD_PRIVATE" PORT_RANGE="${PORT_RANGE:-22000-22499}" WATCH_PID=$$ WATCH_CLEAN=1 ETCD_NS='' \
			"${tls[@]}" "$TOP/tools/etcd-cluster" start >/dev/null || return 1
		ETCD_ENDPOINTS=$(RUN_DIR=$ETCD_PRIVATE "$TOP/tools/etcd-cluster" endpoints)
		local prev
		prev=$(trap -p EXIT)
		eval "set -- $prev"
		etcd_prev_trap=${3:-}
		trap 'etcd_stop; eval "$etcd_prev_trap"' EXIT
	fi
	if [ ${#tls[@]} -gt 0 ]; then
		ETCD_TLS=$ETCD_PRIVATE/tls
		ETCD_SPACE=$(etcd_space "$prefix")
	else
		ETCD_SPACE=etcd://$ETCD_ENDPOINTS/$prefix
	fi
}

# etcd_stop: stop a private cluster now (the shared one is run-all's).
etcd_stop() {
	[ -n "$ETCD_PRIVATE" ] || return 0
	RUN_DIR=$ETCD_PRIVATE "$TOP/tools/etcd-cluster" stop >/dev/null 2>&1
	rm -rf "$ETCD_PRIVATE"
	ETCD_PRIVATE=""
}

etcd_space() {
	if [ -n "$ETCD_TLS" ]; then
		echo "etcds://$ETCD_ENDPOINTS/$1?cacert=$ETCD_TLS/ca.pem&cert=$ETCD_TLS/client.pem&key=$ETCD_TLS/client.key"
	else
		echo "etcd://$ETCD_ENDPOINTS/$1"
	fi
}

etcd_ctl() {
	if [ -n "$ETCD_TLS" ]; then
		RUN_DIR=$ETCD_PRIVATE "$TOP/tools/etcd-cluster" etcdctl "$@"
	else
		ETCDCTL_API=3 etcdctl --endpoints "$ETCD_ENDPOINTS" --dial-timeout 2s --command-timeout 5s "$@"
	fi
}
