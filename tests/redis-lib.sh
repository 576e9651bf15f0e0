# tests/redis-lib.sh - a private redis-server for a test script, never the
# system's: on a unix socket in the test's directory $T (and, when asked,
# a free TCP port on 127.0.0.1), with no persistence (--save '',
# --appendonly no), started under `setpriv --pdeathsig KILL` so that it
# dies with the test's shell however that ends.  Source it after tap.sh
# or rw-lib.sh (which make $T).  The Redis-only tests (core-redis*.t) use
# it directly; the tests shared by every kind of space get it through the
# Redis plug-in, lib/redis/test-space.sh (tests/spaces-lib.sh).
#
#   redis_available       0 when redis-server is installed and the library
#                         was built with Redis support, else 1 (and a reason
#                         in $REDIS_WHY)
#   redis_start [-p PORT] [ARGS...]   start it (ARGS go to redis-server);
#                         sets REDIS_PID, REDIS_SOCK, REDIS_SPACE
#                         (redis+unix://...), REDIS_PORT when -p
#   redis_start_tls PORT [ARGS...]   start it with TLS only on 127.0.0.1:PORT
#                         (tls-port, no plain TCP port, client certificates
#                         asked for: tls-auth-clients yes), certificates
#                         from tools/tls-certs in $REDIS_TLS, the default
#                         user's password in a configuration file (mode
#                         0600) and in REDISCLI_AUTH for redis_cli
#   redis_stop            SIGKILL it and wait (data lost, as in a crash)
#   redis_cli ARGS...     redis-cli on the socket
#   redis_user NAME PASSWORD_FILE ACL...   make ACL user NAME whose password
#                         is the file's, by its SHA-256 (#HASH: no password
#                         in any process's arguments)
# shellcheck shell=bash
# shellcheck disable=SC2034 # REDIS_WHY and REDIS_PORT: for the scripts that source this file

REDIS_SOCK="$T/redis.sock"
REDIS_SPACE="redis+unix://$REDIS_SOCK"
REDIS_PID=""
REDIS_PORT=""
REDIS_WHY=""
REDIS_TLS=""

redis_available() {
	if ! command -v redis-server >/dev/null 2>&1; then
		REDIS_WHY="redis-server is not installed (make deps)"
		return 1
	fi
	if ! command -v setpriv >/dev/null 2>&1; then
		REDIS_WHY="setpriv (util-linux) is not installed"
		return 1
	fi
	if "${DIRLOCK:-$TOP/bin/dirlock}" status -d redis+unix:///nonexistent 2>&1 | grep -q "no Redis support"; then
		REDIS_WHY="the library was built without Redis support (install libhiredis-dev and rebuild)"
		return 1
	fi
	return 0
}

# redis_free_port: a port in 20000-21999 (or $PORT_RANGE, LOW-HIGH) that
# nothing listens on.
redis_free_port() {
	local p i low=20000 high=21999
	if [ -n "${PORT_RANGE:-}" ]; then
		low=${PORT_RANGE%-*} high=${PORT_RANGE#*-}
	fi
	for ((i = 0; i < 50; i++)); do
		p=$((low + RANDOM % (high - low + 1)))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

redis_cli() { redis-cli -s "$REDIS_SOCK" "$@"; }

redis_start() {
	local port=0
	if [ "${1:-}" = -p ]; then
		port=$2
		REDIS_PORT=$2
		shift 2
	fi
	rm -f "$REDIS_SOCK"
	setpriv --pdeathsig KILL redis-server --port "$port" --bind 127.0.0.1 --unixsocket "$REDIS_SOCK" \
		--unixsocketperm 700 --save '' --appendonly no --dir "$T" --daemonize no \
		--logfile "$T/redis.log" "$@" &
	REDIS_PID=$!
	local i
	for ((i = 0; i < 500; i++)); do
		[ -S "$REDIS_SOCK" ] && [ "$(redis_cli ping 2>/dev/null)" = PONG ] && return 0
		kill -0 "$REDIS_PID" 2>/dev/null || break # it exited: no use waiting
		sleep 0.01
	done
	echo "# redis-server did not start:" >&2
	[ -f "$T/redis.log" ] && sed 's/^/# /' "$T/redis.log" >&2
	redis_stop
	return 1
}

redis_stop() {
	[ -n "$REDIS_PID" ] || return 0
	kill -CONT "$REDIS_PID" 2>/dev/null
	kill -9 "$REDIS_PID" 2>/dev/null
	wait "$REDIS_PID" 2>/dev/null
	REDIS_PID=""
	rm -f "$REDIS_SOCK"
}

redis_start_tls() {
	local port=$1
	shift
	REDIS_TLS=$T/tls
	"$TOP/tools/tls-certs" "$REDIS_TLS" 127.0.0.1 || return 1
	REDISCLI_AUTH=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
	export REDISCLI_AUTH
	(
		umask 077
		printf '%s\n' "tls-port $port" "tls-cert-file $REDIS_TLS/server.pem" \
			"tls-key-file $REDIS_TLS/server.key" "tls-ca-cert-file $REDIS_TLS/ca.pem" \
			"tls-auth-clients yes" "requirepass $REDISCLI_AUTH" >"$T/redis-tls.conf"
	)
	redis_start --include "$T/redis-tls.conf" "$@"
}

redis_user() {
	local name=$1 file=$2
	shift 2
	redis_cli ACL SETUSER "$name" reset on "#$(tr -d '\n' <"$file" | sha256sum | cut -d' ' -f1)" "$@" >/dev/null
}
