#!/bin/bash
# tests/http-deploy.t - tools/deploy when a start fails, or can do only
# part of what it was asked: a port in use (found before anything
# starts, and, with ss hidden, only by the web server's failure to bind)
# ends the start with a line naming a free port, and leaves no board
# process running and status saying "not running"; a data directory on
# a network filesystem (bindfs, a FUSE filesystem) leaves out the sqlite
# board with the reason and serves the others; a tree where the Perl
# module is not built yet (make, without make bindings) serves every
# board but the one that needs it.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"
need_board
need_cmd nginx spawn-fcgi fcgiwrap perl curl python3

# deploy_in DIR [VAR=VALUE...]: tools/deploy start with its own run and
# data directories under DIR and a free port (DEPLOY_PORT); output in
# DIR/out, status in DEPLOY_RC; stopped by the exit trap.
deploy_in() {
	local d=$1
	shift
	mkdir -p "$d"
	DEPLOY_PORT=$(free_port) || bail_out "no free port"
	DEPLOY_ENV=(PORT="$DEPLOY_PORT" RUN_DIR="$d/run" DATA_DIR="$d/data" WORKERS=2 "$@")
	at_exit "env ${DEPLOY_ENV[*]@Q} '${DEPLOY:-$TOP/tools/deploy}' stop >/dev/null 2>&1"
	DEPLOY_RC=0
	env "${DEPLOY_ENV[@]}" "${DEPLOY:-$TOP/tools/deploy}" start >"$d/out" 2>&1 || DEPLOY_RC=$?
}

# board_processes DIR: how many processes run a board of the deployment
# in DIR (their environment names its configuration).
board_processes() {
	grep -las "BOARD_CONF=$1/run/conf/" /proc/[0-9]*/environ 2>/dev/null | wc -l
}

code_of() { curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$1"; }

# ---- a port in use ---------------------------------------------------------

# A listener that is not ours on a free port.
busy_port=$(free_port) || bail_out "no free port"
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); open(sys.argv[2], "w").close(); time.sleep(600)' \
	"$busy_port" "$T/listening" &
squatter=$!
at_exit "kill $squatter"
for _ in $(seq 100); do [ -e "$T/listening" ] && break; sleep 0.05; done

LIST=$(boards_file "mkdir lock_mode=mkdir" "none lock_mode=none" "perl-none program=perl lock_mode=none")
for how in "ss" "no-ss"; do
	d=$T/port-$how
	mkdir -p "$d/bin"
	path=$PATH
	if [ "$how" = no-ss ]; then # the port is found taken only when nginx cannot bind it
		printf '#!/bin/sh\nexit 0\n' >"$d/bin/ss"
		chmod +x "$d/bin/ss"
		path=$d/bin:$PATH
	fi
	denv=(PORT="$busy_port" RUN_DIR="$d/run" DATA_DIR="$d/data" WORKERS=2 BOARDS_FILE="$LIST" PATH="$path")
	at_exit "env ${denv[*]@Q} '$TOP/tools/deploy' stop >/dev/null 2>&1"
	rc=0
	env "${denv[@]}" "$TOP/tools/deploy" start >"$d/out" 2>&1 || rc=$?
	line=$(grep "port $busy_port is in use" "$d/out" || true)
	ok "$([ "$rc" -eq 1 ] && grep -q "; try PORT=[0-9]" <<<"$line" && echo 0 || echo 1)" \
		"$how: a start on a port in use fails with a line naming a free port to try"
	diag "${line:-$(tail -n 3 "$d/out")}"
	is "$(board_processes "$d")" 0 "$how: and leaves no board process running"
	status=$(env "${denv[@]}" "$TOP/tools/deploy" status 2>&1 || true)
	is "$status" "not running" "$how: and status says so"
done
if grep -q 'PORT=' "$TOP/README.md"; then r=0; else r=1; fi
ok $r "README.md says how to pick another port"

# ---- a data directory on a network filesystem --------------------------------

if [ "$(id -u)" -ne 0 ] || [ ! -e /dev/fuse ] || ! command -v bindfs >/dev/null; then
	skip "boards on a network filesystem" "needs root, /dev/fuse and bindfs"
	skip "the others served" "needs root, /dev/fuse and bindfs"
	skip "the sqlite board left out" "needs root, /dev/fuse and bindfs"
else
	d=$T/netfs
	mkdir -p "$d/src" "$d/mnt"
	bindfs "$d/src" "$d/mnt"
	at_exit "umount '$d/mnt'"
	LIST=$(boards_file "mkdir lock_mode=mkdir" "sqlite lock_mode=mkdir store=sqlite" "rw lock_mode=rw")
	deploy_in "$d" BOARDS_FILE="$LIST" DATA_DIR="$d/mnt"
	line=$(grep '^deploy: skipped sqlite: ' "$d/out" || true)
	ok "$([ "$DEPLOY_RC" -eq 0 ] && grep -q 'network filesystem' <<<"$line" && echo 0 || echo 1)" \
		"DATA_DIR on a network filesystem: the start succeeds and says why the sqlite board is left out"
	diag "${line:-status $DEPLOY_RC: $(tail -n 5 "$d/out")}"
	J=$T/netfs.jar
	U=http://127.0.0.1:$DEPLOY_PORT/board/rw/
	is "$(code_of "http://127.0.0.1:$DEPLOY_PORT/board/mkdir/"):$(post "${U}post" "$J" "$(get_token "$U" "$J")" "body=on a network filesystem")" \
		"200:303" "the others are served, and take posts"
	is "$(code_of "http://127.0.0.1:$DEPLOY_PORT/board/sqlite/")" 404 "the sqlite board is not"
fi

# ---- a tree where make bindings has not run ------------------------------------

# A copy of the tree's layout without bindings/: what "make" alone leaves.
tree=$T/tree
mkdir -p "$tree/tools"
cp "$TOP/tools/deploy" "$tree/tools/deploy"
for x in conf htdocs cgi-bin; do ln -s "$TOP/$x" "$tree/$x"; done
if perl -MDirlock -e 1 2>/dev/null; then
	skip "a tree without the Perl module" "Dirlock is installed where perl looks"
	skip "its other boards served" "Dirlock is installed where perl looks"
else
	LIST=$(boards_file "mkdir lock_mode=mkdir" "perl-none program=perl lock_mode=none" \
		"perl-dirlock program=perl lock_mode=dirlock")
	DEPLOY=$tree/tools/deploy deploy_in "$T/nobind" BOARDS_FILE="$LIST"
	line=$(grep '^deploy: skipped perl-dirlock: ' "$T/nobind/out" || true)
	ok "$([ "$DEPLOY_RC" -eq 0 ] && grep -q 'make bindings-perl' <<<"$line" && echo 0 || echo 1)" \
		"without make bindings: the start succeeds and says the Perl board that needs the module is left out"
	diag "${line:-status $DEPLOY_RC: $(tail -n 5 "$T/nobind/out")}"
	base=http://127.0.0.1:$DEPLOY_PORT/board
	is "$(code_of "$base/mkdir/") $(code_of "$base/perl-none/") $(code_of "$base/perl-dirlock/")" "200 200 404" \
		"the C board and the Perl board without a lock are served"
fi
done_testing
