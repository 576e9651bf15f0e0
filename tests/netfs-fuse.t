#!/bin/bash
# tests/netfs-fuse.t - what the library allows on FUSE filesystems other
# than GlusterFS (lib/netfs/netfs.c, docs/netfs.md).
#
# sshfs: two mounts of one directory (default options) served by a private
# sshd (its own host key, configuration and port on 127.0.0.1, in a mount
# namespace of its own where /run/sshd is a private directory).  The
# library refuses every lock there, --one-client or not, and `dirlock
# break` judges no lock there: before, a holder that outlived its first
# refresh was told its lock was broken (the refresh follows the owner
# link to a target that does not exist), a rename onto a held lock was
# reported as another user's lock, and a break through one client broke a
# live holder whose refreshes that client did not see.  The reasons are
# checked too, as facts of sshfs: if one stops holding, the refusal
# should be looked at again.
#
# Another FUSE filesystem (bindfs of a local directory): every lock is
# refused unless --one-client, then allowed.
set -u
. "$(dirname "$0")/tap.sh"

plan 14

# ---- sshfs -----------------------------------------------------------------

ssh_pid=""
ssh_down() {
	local m
	for m in "$T/m1" "$T/m2"; do
		mountpoint -q "$m" 2>/dev/null && { fusermount -u "$m" 2>/dev/null || umount -l "$m"; }
	done
	[ -z "$ssh_pid" ] || kill "$ssh_pid" 2>/dev/null
	ssh_pid=""
}
trap 'ssh_down; fusermount -u "$T/fuse" 2>/dev/null; tap_cleanup' EXIT

# ssh_up: a private sshd on a free port in 22500-22999 serving $T/share
# over SFTP, mounted twice ($T/m1, $T/m2); when it cannot be had, 1 and
# the reason in $why.
ssh_up() {
	local tool port try i
	[ "$(id -u)" -eq 0 ] || { why="needs root (a private sshd, FUSE mounts)"; return 1; }
	[ -c /dev/fuse ] || { why="/dev/fuse is missing"; return 1; }
	for tool in /usr/sbin/sshd sshfs ssh-keygen unshare fusermount; do
		command -v "$tool" >/dev/null || { why="needs $tool (make deps: openssh-server, sshfs)"; return 1; }
	done
	mkdir -p "$T/share" "$T/m1" "$T/m2"
	if ! { ssh-keygen -q -t ed25519 -N '' -f "$T/hostkey" && ssh-keygen -q -t ed25519 -N '' -f "$T/userkey" &&
		cp "$T/userkey.pub" "$T/authorized_keys"; }; then
		why="ssh-keygen failed"
		return 1
	fi
	for ((try = 0; try < 5; try++)); do
		port=$((22500 + RANDOM % 500))
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
		cat >"$T/sshd_config" <<-EOF
			Port $port
			ListenAddress 127.0.0.1
			HostKey $T/hostkey
			PidFile $T/sshd.pid
			AuthorizedKeysFile $T/authorized_keys
			PermitRootLogin prohibit-password
			StrictModes no
			UsePAM no
			LogLevel ERROR
			Subsystem sftp internal-sftp
		EOF
		cat >"$T/ssh_config" <<-EOF
			Host dlsshfs
			  HostName 127.0.0.1
			  Port $port
			  User root
			  IdentityFile $T/userkey
			  IdentitiesOnly yes
			  StrictHostKeyChecking no
			  UserKnownHostsFile /dev/null
			  BatchMode yes
			  LogLevel ERROR
		EOF
		# shellcheck disable=SC2016 # the inner shell's
		setpriv --pdeathsig KILL unshare -m --propagation private sh -c \
			'mount -t tmpfs tmpfs /run && mkdir /run/sshd && exec /usr/sbin/sshd -D -f "$1" -E "$2"' \
			sh "$T/sshd_config" "$T/sshd.log" &
		ssh_pid=$!
		for ((i = 0; i < 500; i++)); do
			kill -0 "$ssh_pid" 2>/dev/null || break
			(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
			sleep 0.01
		done
		kill -0 "$ssh_pid" 2>/dev/null && break
		ssh_pid=""
	done
	[ -n "$ssh_pid" ] || { why="sshd did not start: $(tail -n 1 "$T/sshd.log" 2>/dev/null)"; return 1; }
	for i in 1 2; do
		sshfs -F "$T/ssh_config" "dlsshfs:$T/share" "$T/m$i" 2>"$T/sshfs.err" ||
			{ why="sshfs cannot mount here: $(head -c 200 "$T/sshfs.err")"; return 1; }
	done
}

why=""
if ssh_up; then
	M1=$T/m1 M2=$T/m2

	rc=0
	"$DIRLOCK" -d "$M1/l" --stale 1 z -- sleep 1.5 2>"$T/x.err" || rc=$?
	is "$rc" 2 "sshfs: an exclusive lock is refused (before: 'broken as stale' once the holder refreshed)"
	grep -q "is on sshfs, where no lock is safe: SFTP sets a symbolic link's times through the link" "$T/x.err"
	ok $? "... and the message says why"
	diag "$(cat "$T/x.err")"
	rc=0
	"$DIRLOCK" -d "$M1/l" --one-client -w 1 z -- true 2>/dev/null || rc=$?
	is "$rc" 2 "... refused with --one-client too"
	rc=0
	"$DIRLOCK" -d "$M1/l" -s -w 1 z -- true 2>/dev/null || rc=$?
	is "$rc" 2 "... and a shared lock is refused"

	# A live holder on the server's own directory, refreshing (stale age
	# 1 s); a break through the other client, whose cache keeps the times
	# it read 1.5 s before, must not break it.
	mkdir -p "$T/share/l"
	"$DIRLOCK" -d "$T/share/l" --stale 1 h -- sleep 5 2>"$T/h.err" &
	holder=$!
	for ((i = 0; i < 500; i++)); do
		compgen -G "$T/share/l/h.lock/owner.*" >/dev/null && break
		sleep 0.01
	done
	ls -l "$M2/l/h.lock/" >/dev/null 2>&1 # the other client reads the times now
	sleep 1.5
	rc=0
	"$DIRLOCK" break -d "$M2/l" --stale 1 h 2>"$T/b.err" || rc=$?
	is "$rc" 2 "dirlock break --stale 1 through sshfs judges nothing: refused"
	diag "$(cat "$T/b.err")"
	rc=0
	wait "$holder" || rc=$?
	is "$rc" 0 "... and the live holder on the server kept its lock ($(tr '\n' ' ' <"$T/h.err"))"

	# The reasons, as facts of sshfs.
	mkdir -p "$M1/f/held" "$M1/f/new" && touch "$M1/f/held/owner"
	ln -s "no such target" "$M1/f/link"
	touch -h "$M1/f/link" 2>"$T/touch.err"
	ok "$([ $? -ne 0 ] && grep -q 'No such file' "$T/touch.err" && echo 0 || echo 1)" \
		"reason: sshfs sets a symbolic link's times through the link ($(cat "$T/touch.err"))"
	mv -T "$M1/f/new" "$M1/f/held" 2>"$T/mv.err"
	ok "$([ $? -ne 0 ] && grep -q 'not permitted' "$T/mv.err" && echo 0 || echo 1)" \
		"reason: a rename onto a held lock fails as 'not permitted' ($(cat "$T/mv.err"))"
	ls "$M2/f" >/dev/null # the other client's listing, kept from now
	mkdir "$M1/f/late"
	ls "$M2/f" >"$T/ls.out"
	ok "$(grep -qx late "$T/ls.out" && echo 1 || echo 0)" \
		"reason: a client lists a name another one has just made late (listing: $(tr '\n' ' ' <"$T/ls.out"))"
	ssh_down
else
	for i in 1 2 3 4 5 6 7 8 9; do skip "sshfs: $why"; done
fi

# ---- another FUSE filesystem -------------------------------------------------

if command -v bindfs >/dev/null && mkdir -p "$T/under" "$T/fuse" && bindfs "$T/under" "$T/fuse" 2>"$T/bindfs.err"; then
	rc=0
	"$DIRLOCK" -d "$T/fuse/locks" -x -w 1 name -- true 2>"$T/refused.err" || rc=$?
	is "$rc" 2 "another FUSE filesystem (bindfs): an exclusive lock is refused"
	grep -q 'network filesystem (fuse) where exclusive locks are not safe' "$T/refused.err"
	ok $? "... and the message says why and what to do"
	diag "$(cat "$T/refused.err")"
	"$DIRLOCK" -d "$T/fuse/locks" -x -w 5 --one-client name -- true &&
		"$DIRLOCK" -d "$T/fuse/locks" -s -w 5 --one-client name -- true
	ok $? "... exclusive and shared locks are taken with --one-client"
	rc=0
	"$DIRLOCK" -d "$T/fuse/locks" -s -w 5 name -- true 2>/dev/null || rc=$?
	is "$rc" 2 "... and a shared lock is refused without it"
	"$DIRLOCK" -d "$T/fuse/locks" --range 0:1 -w 5 --one-client name -- true
	ok $? "... and a range lock taken with it"
	fusermount -u "$T/fuse"
else
	for i in 1 2 3 4 5; do skip "bindfs cannot mount here: $(head -c 200 "$T/bindfs.err" 2>/dev/null)"; done
fi
exit $((tap_failed > 0))
