#!/bin/bash
# core-redis-tls.t - a lock space on a private redis-server that speaks
# only TLS, asks for client certificates and lets in ACL users
# (tests/redis-lib.sh: redis_start_tls; certificates made here by
# tools/tls-certs, with openssl): a locker whose ACL is the one
# docs/security.md gives, limited to the keys of its space, does real
# work -- 8 processes' increments of one counter all kept, and fences
# that strictly increase in the order of a fenced store's commits, with
# no two holders at once (tests/progs/histcheck) -- where its twin, locks
# that take without looking, lets two hold at once; each refusal (a wrong
# password, a user limited to another prefix, the server's certificate
# from another CA or not naming the host, no client certificate or one
# from another CA, a plain connection to the TLS port, a password file
# every user may read) is its own error, returned at once by a wait of
# 10 s, and nothing is taken; no password shows in a process's
# arguments, a message or dirlock status; a forked child leaves its
# parent's TLS connection alone.
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/redis-lib.sh"
redis_available || {
	echo "1..0 # SKIP $REDIS_WHY"
	exit 0
}
command -v openssl >/dev/null || {
	echo "1..0 # SKIP openssl is not installed (make deps)"
	exit 0
}
plan 29
EAUTH=16 EPERM=14 EINVAL=4

port=$(redis_free_port) && redis_start_tls "$port" || exit 1
C=$REDIS_TLS
umask 077
printf 'locker-%s\n' "$RANDOM$RANDOM" >"$T/locker.pw"
printf 'other-%s\n' "$RANDOM$RANDOM" >"$T/other.pw"
# The locker's ACL, as docs/security.md gives it, for prefix "tls"; the
# other user's the same for prefix "other".
acl=$(sed -n 's/^user locker on #HASH //p' "$TOP/docs/security.md")
[ -n "$acl" ] || echo "# no ACL line in docs/security.md" >&2
read -ra tls_acl <<<"${acl//\{board\}/\{tls\}}"
read -ra other_acl <<<"${acl//\{board\}/\{other\}}"
redis_user locker "$T/locker.pw" "${tls_acl[@]}"
redis_user other "$T/other.pw" "${other_acl[@]}"
TLSQ="cacert=$C/ca.pem&cert=$C/client.pem&key=$C/client.key"
S="rediss://locker@127.0.0.1:$port/0?prefix=tls&password_file=$T/locker.pw&$TLSQ"

# ---- the ACL of the documentation ---------------------------------------------
missing=""
for cmd in $(grep -ho "redis\.p\?call('[A-Za-z]*'" "$TOP"/lib/redis/scripts/*.lua | sed "s/.*'\(.*\)'/\1/" | tr 'A-Z' 'a-z' | sort -u); do
	[[ " $acl " == *" +$cmd "* ]] || missing="$missing $cmd"
done
is "${missing:-none}" none "the locker's ACL in docs/security.md names every command the scripts call"

# ---- a locker limited to its prefix, doing real work ------------------------------
"$DIRLOCK" -d "$S" -w 10 first -- true
is "$?" 0 "the locker takes and releases a lock over TLS, with its password from a file"
run_counter() { # run_counter LOCKING -> the counter after 8 x 40 increments
	echo 0 >"$T/counter"
	pids=""
	for _ in $(seq 8); do
		"$PROGS/lockworker" counter "$S" c "$T/counter" 40 "$1" >/dev/null 2>>"$T/counter.err" &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	cat "$T/counter"
}
got=$(run_counter dirlock)
is "$got" 320 "8 processes x 40 increments under the locker's locks give 320"
got=$(run_counter none)
cmp_num "$got" -lt 320 "twin without a lock: increments are lost ($got < 320), so the count can fail"
history() { # history CASE [ENV...]: 4 fenced workers for 2 s; histcheck's line into $T/CASE.line
	mkdir -p "$T/$1"
	: >"$T/$1/store"
	local w pids=""
	for w in 1 2 3 4; do
		env "${@:2}" "$PROGS/histworker" "$S" h 2 5 5 fenced "$T/$1/store" "$T/$1" >"$T/$1/h-$w" 2>>"$T/$1.err" &
		pids="$pids $!"
	done
	for w in $pids; do wait "$w"; done
	"$PROGS/histcheck" "$T/$1"/h-* >"$T/$1.line"
	"$PROGS/histcheck" --store "$T/$1/store" "$T/$1"/h-* >>"$T/$1.line"
}
history locked
diag "locked: $(tr '\n' ' ' <"$T/locked.line")"
grep -q "overlaps 0 " "$T/locked.line"
ok $? "4 workers over TLS: no two holders at once ($(head -n 1 "$T/locked.line"))"
grep -q "lost 0 .* increasing yes" "$T/locked.line"
ok $? "... every acknowledged write kept, the fences strictly increasing in commit order"
holds=$(awk '/^holds/ {print $2; exit}' "$T/locked.line")
cmp_num "${holds:-0}" -ge 20 "... with real work done: $holds holds in 2 s"
history twin DIRLOCK_TEST_REDIS_NO_LOCK=1
diag "twin: $(tr '\n' ' ' <"$T/twin.line")"
grep -q "overlaps [1-9]" "$T/twin.line"
ok $? "twin, locks that take without looking: holders overlap, so the check can fail"
redis_cli --scan --pattern '*' | grep -v '^{tls}:' >"$T/foreign"
is "$(wc -l <"$T/foreign")" 0 "every key the locker made starts with {tls}: ($(head -n 3 "$T/foreign" | tr '\n' ' '))"
"$DIRLOCK" status -d "$S" >"$T/status" 2>&1
is "$?" 0 "dirlock status lists the space's locks as the locker"

# ---- refusals: each its own error, at once, nothing taken ------------------------------
# refused SPACE CODE WORDS DESCRIPTION: a wait of 10 s for lock "r", and
# a try (timeout 0), give CODE, the wait within 2 s; the message says
# WORDS and holds no password.
refused() {
	local code ms try
	read -r code ms <<<"$("$PROGS/lockworker" wait "$1" r 10 2>"$T/refused.err")"
	read -r try _ <<<"$("$PROGS/lockworker" wait "$1" r 0 2>>"$T/refused.err")"
	"$DIRLOCK" -d "$1" -w 10 r -- true 2>"$T/refused.msg"
	local msg
	msg=$(head -n 1 "$T/refused.msg")
	if [ "$code" = "$2" ] && [ "$try" = "$2" ] && fcmp "${ms:-99999}" '<' 2000 && [[ $msg == *"$3"* ]] &&
		! grep -qF -e "$(cat "$T/locker.pw")" -e "$(cat "$T/other.pw")" -e "$REDISCLI_AUTH" "$T/refused.msg"; then
		ok 0 "$4: code $code in ${ms%.*} ms: ${msg#dirlock: }"
	else
		ok 1 "$4: code ${code:-none}, at timeout 0 ${try:-none} (want $2) in ${ms:-?} ms, message: $msg (want \"$3\")"
	fi
}
printf 'wrong\n' >"$T/wrong.pw"
refused "rediss://locker@127.0.0.1:$port/0?prefix=tls&password_file=$T/wrong.pw&$TLSQ" $EAUTH \
	"refused the credentials" "a wrong password"
refused "rediss://other@127.0.0.1:$port/0?prefix=tls&password_file=$T/other.pw&$TLSQ" $EPERM \
	"may not run" "a user limited to another prefix (~{other}:*)"
refused "rediss://locker@127.0.0.1:$port/0?prefix=tls&password_file=$T/locker.pw&cacert=$C/other-ca.pem&cert=$C/client.pem&key=$C/client.key" \
	$EAUTH "certificate is not trusted" "the server's certificate checked against another CA"
refused "rediss://locker@localhost:$port/0?prefix=tls&password_file=$T/locker.pw&$TLSQ" $EAUTH \
	"does not name localhost" "a host name the server's certificate does not name"
refused "rediss://locker@127.0.0.1:$port/0?prefix=tls&password_file=$T/locker.pw&cacert=$C/ca.pem" $EAUTH \
	"asks for a client certificate" "no client certificate"
refused "rediss://locker@127.0.0.1:$port/0?prefix=tls&password_file=$T/locker.pw&cacert=$C/ca.pem&cert=$C/other-client.pem&key=$C/other-client.key" \
	$EAUTH "refused our client certificate" "a client certificate from another CA"
refused "redis://locker@127.0.0.1:$port/0?prefix=tls&password_file=$T/locker.pw" $EAUTH \
	"speaks TLS on this port" "a plain connection to the TLS-only port"
chmod o+r "$T/locker.pw"
refused "$S" $EINVAL "chmod o-r" "a password file every user may read"
chmod o-r "$T/locker.pw"
refused "rediss://locker@127.0.0.1:$port/0?prefix=tls&password_env=NO_SUCH_VAR_$$&$TLSQ" $EINVAL \
	"NO_SUCH_VAR" "a password variable that is not set"
# An encrypted client key: refused at once, naming the key, even with a
# terminal to ask on (pty_line): nothing waits for a pass phrase.
openssl pkey -in "$C/client.key" -aes256 -passout pass:phrase -out "$T/enc.key" 2>/dev/null
read -r secs msg <<<"$(pty_line "$DIRLOCK" -d "rediss://locker@127.0.0.1:$port/0?prefix=tls&password_file=$T/locker.pw&cacert=$C/ca.pem&cert=$C/client.pem&key=$T/enc.key" -w 10 r -- true)"
[[ $secs -lt 10 && $msg == *"enc.key"*"is encrypted"* ]]
ok $? "an encrypted client key is refused in ${secs} s, nothing prompted: ${msg#dirlock: }"
is "$(redis_cli --scan --pattern '{tls}:r:*' | wc -l)" 0 "nothing of lock r was taken by any refused attempt"

# ---- no password in arguments, messages or status -----------------------------------------
export LOCKER_PW
LOCKER_PW=$(head -n 1 "$T/locker.pw")
E="rediss://locker@127.0.0.1:$port/0?prefix=tls&password_env=LOCKER_PW&$TLSQ"
coproc HOLD { exec "$DIRLOCK" -d "$E" -w 10 held -- sh -c 'echo running; exec sleep 30'; }
read -r word <&"${HOLD[0]}"
is "$word" running "a command runs under a lock whose password comes from the environment"
pids=$(pgrep -f "sleep 30" | tr '\n' ' ')
found=0
for p in $HOLD_PID $pids $(pgrep -x dirlock-keeper); do
	tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$LOCKER_PW" && found=1
done
is "$found" 0 "no process's arguments hold the password (dirlock, its keeper, the command)"
"$DIRLOCK" status -d "$E" held >"$T/held.status" 2>&1
grep -q "held" "$T/held.status"
ok $? "dirlock status shows the holder ..."
grep -qF "$LOCKER_PW" "$T/held.status"
ok $((!$?)) "... and not the password"
"$DIRLOCK" status --json -d "$E" held | grep -qF "$LOCKER_PW"
ok $((!$?)) "... nor does its JSON"
kill "$HOLD_PID" 2>/dev/null
wait "$HOLD_PID" 2>/dev/null
inline="rediss://locker:$LOCKER_PW@127.0.0.1:$port/0?prefix=other&$TLSQ"
"$DIRLOCK" -d "$inline" -w 10 x -- true 2>"$T/inline.err"
grep -q ':\*\*\*@' "$T/inline.err" && ! grep -qF "$LOCKER_PW" "$T/inline.err"
ok $? "a password given in the address is *** in a message: $(head -n 1 "$T/inline.err")"

# ---- a forked child leaves its parent's TLS connection alone ---------------------------------
out=$("$PROGS/forkconn" "$S" fork)
is "$out" same "a forked child's close sends nothing on its parent's TLS connection (the parent's sockets: $out)"

# ---- what the server saw ------------------------------------------------------------------
grep -c "Error accepting a client connection" "$T/redis.log" >"$T/tlserrors"
cmp_num "$(cat "$T/tlserrors")" -ge 3 "the server refused the TLS handshakes of the refusals above ($(cat "$T/tlserrors") in its log)"
