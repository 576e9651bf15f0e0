#!/bin/bash
# core-etcd-tls.t - a lock space on a private three-member etcd cluster
# that speaks only HTTPS, asks for client certificates and has etcd's
# authentication on (tests/etcd-lib.sh: etcd_start tls; certificates made
# by tools/tls-certs, with openssl; log-in tokens that live 2 s unused): a
# locker whose role grants readwrite on its prefix alone, made with the
# etcdctl commands of docs/security.md, does real work -- 4 processes'
# increments of one counter all kept, and fences that strictly increase in
# the order of a fenced store's commits, with no two holders at once
# (tests/progs/histcheck) -- where its twins, no lock and takes that do
# not look at the queue, lose; a holder idle past its token's life keeps
# its lock (the token is got again); each refusal (a wrong password, no
# user, a user whose role covers another prefix, the members' certificate
# from another CA or not naming the host, no client certificate, one from
# another CA, one with a Common Name, plain HTTP to the TLS-only members,
# a password file every user may read) is its own error, returned at once
# by a wait of 10 s, and nothing is taken; no password shows in a
# process's arguments, a message or dirlock status; a forked child
# leaves its parent's TLS connections alone.
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/etcd-lib.sh"
etcd_available || {
	echo "1..0 # SKIP $ETCD_WHY"
	exit 0
}
command -v openssl >/dev/null || {
	echo "1..0 # SKIP openssl is not installed (make deps)"
	exit 0
}
plan 30
EAUTH=16 EPERM=14 EINVAL=4
TTL=2

etcd_start tls "$TTL" || exit 1
C=$ETCD_TLS
EPS=$ETCD_ENDPOINTS
umask 077
printf 'locker-%s\n' "$RANDOM$RANDOM" >"$T/locker.pw"
printf 'other-%s\n' "$RANDOM$RANDOM" >"$T/other.pw"
# The locker's role and user, as docs/security.md makes them (the
# password from stdin: never an argument), for prefix "tls"; the other
# user's role covers prefix "other".
mkuser() { # mkuser USER PASSWORD_FILE PREFIX
	tr -d '\n' <"$2" | etcd_ctl user add "$1" --interactive=false >/dev/null &&
		etcd_ctl role add "$3-locker" >/dev/null &&
		etcd_ctl role grant-permission "$3-locker" --prefix=true readwrite "$3/" >/dev/null &&
		etcd_ctl user grant-role "$1" "$3-locker" >/dev/null
}
mkuser locker "$T/locker.pw" tls && mkuser other "$T/other.pw" other
ok $? "the locker's role and user made as docs/security.md makes them (etcdctl)"
TLSQ="cacert=$C/ca.pem&cert=$C/client.pem&key=$C/client.key"
S="etcds://$EPS/tls?user=locker&password_file=$T/locker.pw&$TLSQ"
secrets() { printf '%s\n' "$(head -n 1 "$T/locker.pw")" "$(head -n 1 "$T/other.pw")"; }

# ---- a locker limited to its prefix, doing real work ------------------------------
"$DIRLOCK" -d "$S" -w 10 first -- true
is "$?" 0 "the locker takes and releases a lock over TLS, logged in with its password from a file"
run_counter() { # run_counter LOCKING -> the counter after 4 x 25 increments
	echo 0 >"$T/counter"
	local p pids=""
	for _ in 1 2 3 4; do
		"$PROGS/lockworker" counter "$S" c "$T/counter" 25 "$1" >/dev/null 2>>"$T/counter.err" &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	cat "$T/counter"
}
got=$(run_counter dirlock)
is "$got" 100 "4 processes x 25 increments under the locker's locks give 100 ($(head -n 1 "$T/counter.err"))"
got=$(run_counter none)
cmp_num "$got" -lt 100 "twin without a lock: increments are lost ($got < 100), so the count can fail"
# 4 s: each worker's log-in (a password hash on the cluster) comes first,
# and 4 at once on a busy machine take a second or more.
history() { # history CASE [ENV...]: 4 fenced workers for 4 s; histcheck's lines into $T/CASE.line
	mkdir -p "$T/$1"
	: >"$T/$1/store"
	local w pids=""
	for w in 1 2 3 4; do
		env "${@:2}" "$PROGS/histworker" "$S" h 4 5 5 fenced "$T/$1/store" "$T/$1" >"$T/$1/h-$w" 2>>"$T/$1.err" &
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
cmp_num "${holds:-0}" -ge 10 "... with real work done: $holds holds in 4 s"
history twin DIRLOCK_TEST_ETCD_NO_LOCK=1
diag "twin: $(tr '\n' ' ' <"$T/twin.line")"
grep -q "overlaps [1-9]" "$T/twin.line"
ok $? "twin, takes that do not look at the queue: holders overlap, so the check can fail"
etcd_ctl get --prefix "" --keys-only | grep -v -e '^$' -e '^tls/' -e '^dirlock-cluster-probe$' >"$T/foreign"
is "$(wc -l <"$T/foreign")" 0 "every key the locker made is under tls/ ($(head -n 3 "$T/foreign" | tr '\n' ' '))"
"$DIRLOCK" status -d "$S" >"$T/status" 2>&1
is "$?" 0 "dirlock status lists the space's locks as the locker"

# ---- a token that expires under a holder ----------------------------------------------------
"$DIRLOCK" -d "$S" -w 10 --stale 8 idle -- sleep $((TTL * 2 + 1)) 2>"$T/idle.err"
st=$?
is "$st" 0 "a holder idle past its token's life (${TTL} s unused) keeps its lock and releases it: $(head -n 1 "$T/idle.err")"
"$DIRLOCK" -d "$S" -w 0 idle -- true
is "$?" 0 "... and the lock is free after it"

# ---- refusals: each its own error, at once, nothing taken ------------------------------
# refused SPACE CODE WORDS DESCRIPTION: a wait of 10 s for lock "r", and
# a try (timeout 0), give CODE, the wait within 3 s; the message says
# WORDS and holds no password.
refused() {
	local code ms msg try
	read -r code ms <<<"$("$PROGS/lockworker" wait "$1" r 10 2>"$T/refused.err")"
	read -r try _ <<<"$("$PROGS/lockworker" wait "$1" r 0 2>>"$T/refused.err")"
	"$DIRLOCK" -d "$1" -w 10 r -- true 2>"$T/refused.msg"
	msg=$(head -n 1 "$T/refused.msg")
	if [ "$code" = "$2" ] && [ "$try" = "$2" ] && fcmp "${ms:-99999}" '<' 3000 && [[ $msg == *"$3"* ]] &&
		! grep -qF -f <(secrets) "$T/refused.msg"; then
		ok 0 "$4: code $code in ${ms%.*} ms: ${msg#dirlock: }"
	else
		ok 1 "$4: code ${code:-none}, at timeout 0 ${try:-none} (want $2) in ${ms:-?} ms, message: $msg (want \"$3\")"
	fi
}
printf 'wrong\n' >"$T/wrong.pw"
refused "etcds://$EPS/tls?user=locker&password_file=$T/wrong.pw&$TLSQ" $EAUTH \
	"refused the password of user 'locker'" "a wrong password"
refused "etcds://$EPS/tls?$TLSQ" $EAUTH "logs in as nobody" "no user, with authentication on"
refused "etcds://$EPS/tls?user=other&password_file=$T/other.pw&$TLSQ" $EPERM \
	"user 'other' may not read or write under 'tls/'" "a user whose role covers another prefix"
refused "etcds://$EPS/tls?user=locker&password_file=$T/locker.pw&cacert=$C/other-ca.pem&cert=$C/client.pem&key=$C/client.key" \
	$EAUTH "certificate is not trusted" "the members' certificate checked against another CA"
refused "etcds://${EPS//127.0.0.1/localhost}/tls?user=locker&password_file=$T/locker.pw&$TLSQ" $EAUTH \
	"does not name" "a host name the members' certificate does not name"
refused "etcds://$EPS/tls?user=locker&password_file=$T/locker.pw&cacert=$C/ca.pem" $EAUTH \
	"asks for a client certificate" "no client certificate"
refused "etcds://$EPS/tls?user=locker&password_file=$T/locker.pw&cacert=$C/ca.pem&cert=$C/other-client.pem&key=$C/other-client.key" \
	$EAUTH "refused our client certificate" "a client certificate from another CA"
refused "etcds://$EPS/tls?user=locker&password_file=$T/locker.pw&cacert=$C/ca.pem&cert=$C/cn-client.pem&key=$C/cn-client.key" \
	$EAUTH "Common Name" "a client certificate with a Common Name (etcd 3.4's JSON gateway)"
refused "etcd://$EPS/tls?user=locker&password_file=$T/locker.pw" $EAUTH "speaks only TLS" \
	"plain HTTP to the TLS-only members"
chmod o+r "$T/locker.pw"
refused "$S" $EINVAL "chmod o-r" "a password file every user may read"
chmod o-r "$T/locker.pw"
# An encrypted client key: refused at once, naming the key, even with a
# terminal to ask on (pty_line): nothing waits for a pass phrase.
openssl pkey -in "$C/client.key" -aes256 -passout pass:phrase -out "$T/enc.key" 2>/dev/null
read -r secs msg <<<"$(pty_line "$DIRLOCK" -d "etcds://$EPS/tls?user=locker&password_file=$T/locker.pw&cacert=$C/ca.pem&cert=$C/client.pem&key=$T/enc.key" -w 10 r -- true)"
[[ $secs -lt 10 && $msg == *"enc.key"*"is encrypted"* ]]
ok $? "an encrypted client key is refused in ${secs} s, nothing prompted: ${msg#dirlock: }"
is "$(etcd_ctl get --prefix tls/ --keys-only | grep -c '/r/\|/r$')" 0 \
	"nothing of lock r was taken by any refused attempt"

# ---- no password in arguments, messages or status -----------------------------------------
export LOCKER_PW
LOCKER_PW=$(head -n 1 "$T/locker.pw")
E="etcds://$EPS/tls?user=locker&password_env=LOCKER_PW&$TLSQ"
coproc HOLD { exec "$DIRLOCK" -d "$E" -w 10 held -- sh -c 'echo running; exec sleep 30'; }
read -r word <&"${HOLD[0]}"
is "$word" running "a command runs under a lock whose password comes from the environment"
found=0
for p in $HOLD_PID $(pgrep -f "sleep 30") $(pgrep -x dirlock-keeper); do
	tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$LOCKER_PW" && found=1
done
is "$found" 0 "no process's arguments hold the password (dirlock, its keeper, the command)"
"$DIRLOCK" status -d "$E" held >"$T/held.status" 2>&1
grep -q "held" "$T/held.status" && ! grep -qF "$LOCKER_PW" "$T/held.status"
ok $? "dirlock status shows the holder, and not the password"
"$DIRLOCK" status --json -d "$E" held | grep -qF "$LOCKER_PW"
ok $((!$?)) "... nor does its JSON"
kill "$HOLD_PID" 2>/dev/null
wait "$HOLD_PID" 2>/dev/null

# ---- a forked child leaves its parent's TLS connections alone ---------------------------------
out=$("$PROGS/forkconn" "$S" fork)
is "$out" same "a forked child's close sends nothing on its parent's TLS connections (the parent's sockets: $out)"

# ---- authentication turned on under a running process ---------------------------------
# A process that logged in while the cluster's authentication was off
# keeps no token; once it is turned on, the process logs in again and
# goes on (every acquire of the loop succeeds).
etcd_ctl auth disable >/dev/null 2>&1
"$PROGS/lockworker" counter "$S" late "$T/late" 150 tally 20000 >"$T/late.out" 2>"$T/late.err" &
late=$!
sleep 1
etcd_ctl auth enable >/dev/null 2>&1
wait "$late"
st=$?
is "$st/$(cat "$T/late.out")" "0/busy 0 failed 0 slow 0" \
	"authentication turned on while a process locks: it logs in again and no acquire fails ($(head -n 1 "$T/late.err"))"
