#!/bin/bash
# shellcheck disable=SC2016 # outside's scripts expand in their own shell
# deb.t - the Debian packages (`make deb`, debian/) installed on this
# machine with apt, used from outside the tree the way their users use
# them, and purged: afterwards nothing of theirs is left (but the system
# user dirlock-board, which Debian keeps).  Every program and shared
# object in them is built with Debian's hardening flags.
#
# Installed, from a new directory with no variable in the environment
# (env -i, PATH the system's): the command and a redis:// space through
# it (a private redis-server on a free port, tests/redis-lib.sh) and its
# status --json, and what a redis:// space says without its module (the
# runtime package's note), a C program built with `pkg-config --cflags --libs
# dirlock`, perl -MDirlock,
# python3 -c 'import dirlock', man dirlock_acquire, and the version of
# each, the library's.  The board: systemd-analyze verify finds nothing
# in its unit; two boards, none and mkdir, are started the way the unit
# starts one (its ExecStartPre and ExecStart lines, %i put in, as root:
# spawn-fcgi gives the workers to the user dirlock-board) behind a
# private nginx that serves the installed site, and tests/lost-update
# posts to both: the board without a lock loses posts (the twin that
# shows the run able to fail), the locked one none.  A worker killed
# with SIGKILL is started again.
#
# Run by `make test-deb` (DIRLOCK_TEST_DEB=1), not by make test: it
# changes the machine's packages.  Root only (apt, the board's user);
# skipped when dpkg-buildpackage is missing or when a dirlock package is
# installed already (the test purges what it installs).  The packages
# are `make deb`'s: built when build/deb/ does not have those of this
# tree (about a minute on two cores), else reused.
# shellcheck source=/dev/null # tests/tap.sh
. "$(dirname "$0")/tap.sh"
cd "$TOP" || exit 1

if [ "${DIRLOCK_TEST_DEB:-}" != 1 ]; then
	echo "1..0 # SKIP installs and purges packages of this machine: make test-deb runs it (and CI)"
	exit 0
fi
if [ "${SANITIZE:-}" = 1 ]; then
	echo "1..0 # SKIP SANITIZE=1: the packages are built without sanitizers (make test runs this)"
	exit 0
fi
PKGS="libdirlock1 libdirlock-redis libdirlock-etcd libdirlock-dev dirlock libdirlock-perl python3-dirlock dirlock-board"
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP not root: installs Debian packages with apt"; exit 0; }
if ! command -v dpkg-buildpackage >/dev/null || ! command -v dh >/dev/null; then
	echo "1..0 # SKIP dpkg-buildpackage or debhelper is not installed (make deps)"
	exit 0
fi
# shellcheck disable=SC2086
installed=$(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' $PKGS 2>/dev/null | awk '$1 ~ /^.i/ { print $2 }')
[ -z "$installed" ] || { echo "1..0 # SKIP installed already (the test would purge them): $(echo "$installed" | tr '\n' ' ')"; exit 0; }
plan 30

version=$(sed -n 's/^#define DIRLOCK_VERSION "\(.*\)"$/\1/p' lib/core/dirlock.h)
start=$SECONDS
make -s deb >"$T/deb.out" 2>&1
st=$?
ok $st "make deb ($((SECONDS - start)) s)"
[ $st -eq 0 ] || { diag "$(tail -20 "$T/deb.out")"; exit 1; }
debs=$(ls build/deb/*.deb)
is "$(for d in $debs; do dpkg-deb -f "$d" Version; done | sort -u)" "$version" \
	"every package has the library's version ($version)"

# Every program and shared object the packages hold was built with
# Debian's hardening flags (debian/rules: hardening=+all): linked with
# -z now (BIND_NOW), and compiled with _FORTIFY_SOURCE, which shows as
# imports of the checking variants (__snprintf_chk, ...) wherever the
# object imports a function that has one.
mkdir -p "$T/x"
for d in $debs; do dpkg-deb -x "$d" "$T/x"; done
unhardened=$(find "$T/x" -type f \( -name '*.so*' -o -perm -u+x \) | while read -r f; do
	readelf -h "$f" >/dev/null 2>&1 || continue
	why=
	readelf -d "$f" | grep -q 'Flags:.*NOW\|(BIND_NOW)' || why="no BIND_NOW"
	imports=$(nm -D --undefined-only "$f" 2>/dev/null)
	if ! echo "$imports" | grep -q '__[a-z_]*_chk@' &&
		echo "$imports" | grep -qE ' U (snprintf|vsnprintf|sprintf|memcpy|memmove|memset|strcpy|strncpy|strcat|read|pread|readlink|fgets)@'; then
		why="$why${why:+, }protectable calls but no _chk import"
	fi
	[ -z "$why" ] || echo "${f#"$T/x"}: $why"
done)
[ -z "$unhardened" ]
ok $? "every program and shared object is built with Debian's hardening flags${unhardened:+: $(echo "$unhardened" | paste -sd ';')}"

# purge: what the test installed goes, whatever happens to the test.
purge() {
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -o DPkg::Lock::Timeout=120 $PKGS >"$T/purge.out" 2>&1
}
stop_board() {
	[ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null
	[ -f "$T/board.mains" ] && xargs -r kill <"$T/board.mains" 2>/dev/null
	[ -f "$T/board.pids" ] && xargs -r kill <"$T/board.pids" 2>/dev/null
	rm -f /etc/dirlock-board/none.conf /etc/dirlock-board/mkdir.conf
}
trap 'stop_board; purge; tap_cleanup' EXIT

start=$SECONDS
# shellcheck disable=SC2046,SC2086 # one word per package file
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=120 \
	$(printf './%s ' $debs) >"$T/install.out" 2>&1
st=$?
ok $st "apt install ./build/deb/*.deb ($((SECONDS - start)) s)"
[ $st -eq 0 ] || { diag "$(tail -20 "$T/install.out")"; exit 1; }
# What the packages hold, for the check after the purge.
# shellcheck disable=SC2086
dpkg -L $PKGS | grep -vx "/\." | sort -u >"$T/files"

# outside COMMAND: runs COMMAND (bash) in a new directory, with nothing in
# the environment but what a login shell has.
mkdir -p "$T/outside" "$T/home"
chmod 755 "$T"
outside() {
	env -i HOME="$T/home" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 T="$T" V="$version" \
		bash -c "cd \"\$T/outside\" && $1" >"$T/out" 2>&1
}
check() {
	local st=$?
	ok $st "$1"
	[ $st -eq 0 ] || diag "$(tail -15 "$T/out")"
}

# ---- the command, C, Perl, Python, man -----------------------------------

outside '[ "$(command -v dirlock)" = /usr/bin/dirlock ] && [ "$(dirlock --version)" = "dirlock $V" ] &&
	dirlock -d "$T/locks" cmd -- echo held | grep -qx held &&
	dirlock status -d "$T/locks" --json | grep -q "\"format\":\"dirlock-status/1\""'
check "dirlock (/usr/bin) takes a lock, says version $version, and writes status --json (json-c opened)"

cat >"$T/outside/prog.c" <<'EOF'
#include <dirlock.h>
#include <dirlock_rw.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	dirlock_options opts = DIRLOCK_OPTIONS_INIT;
	dirlock *lock;
	dirlock_error err;
	if (argc < 2 || dirlock_acquire(argv[1], "c", &opts, &lock, &err) != DIRLOCK_OK ||
	    dirlock_release(lock, &err) != DIRLOCK_OK)
		return 1;
	puts(DIRLOCK_VERSION);
	return 0;
}
EOF
outside 'cc -Wall -Werror -o prog prog.c $(pkg-config --cflags --libs dirlock) && [ "$(./prog "$T/locks")" = "$V" ] &&
	[ "$(pkg-config --modversion dirlock)" = "$V" ] && ! readelf -d prog | grep -E "RPATH|RUNPATH"'
check "a C program built with pkg-config takes a lock (no runpath; dirlock.pc says $version)"

outside 'cc -static -o prog-static prog.c $(pkg-config --cflags --libs --static dirlock) && ./prog-static "$T/locks"'
check "... and linked with the static library"

outside '[ "$(perl -MDirlock -e '\''my $l = Dirlock->acquire($ARGV[0], "perl"); print "$Dirlock::VERSION\n"'\'' "$T/locks")" = "$V" ]'
check "perl -MDirlock takes a lock (Dirlock $version)"

outside '[ "$(python3 -c "import dirlock, sys
with dirlock.Lock(sys.argv[1], \"py\"): print(dirlock.__version__)" "$T/locks")" = "$V" ] &&
	python3 -c "import importlib.metadata as m; print(m.version(\"dirlock\"))" | grep -qx "$V"'
check "python3 -c 'import dirlock' takes a lock (dirlock $version, its metadata too)"

# Node.js: make npm-pack's tarball, installed into a new project, builds
# its addon against the installed library and loads it with no search
# path.
node_dir=$(node -p 'require("path").resolve(process.execPath, "..", "..")' 2>/dev/null)
if ! command -v npm >/dev/null || [ ! -f "$node_dir/include/node/node_api.h" ]; then
	skip "npm or Node.js's headers are not installed"
elif ! make -s npm-pack >"$T/out" 2>&1; then
	ok 1 "make npm-pack"
	diag "$(tail -5 "$T/out")"
else
	mkdir -p "$T/outside/app"
	echo '{"name": "app", "version": "1.0.0", "private": true}' >"$T/outside/app/package.json"
	outside "cd app && npm install --offline --no-audit --no-fund --cache \"\$T/npm-cache\" --nodedir=$node_dir \
		$TOP/build/npm/dirlock-$version.tgz && [ \"\$(node -e 'const d = require(\"dirlock\")
new d.Lock(process.argv[1], \"node\").runExclusive(() => console.log(d.libraryVersion))' \"\$T/locks\")\" = \"\$V\" ] &&
		ldd node_modules/dirlock/build/Release/dirlock.node | grep -q 'libdirlock.so.1 => /'"
	check "npm install dirlock-$version.tgz (make npm-pack) builds against the installed library, and takes a lock"
fi

if command -v man >/dev/null; then
	outside 'man -w dirlock_acquire | grep -q "^/usr/share/man/man3/dirlock_acquire.3" &&
		man -w Dirlock | grep -q "^/usr/share/man/man3/Dirlock.3pm" && man -w 1 dirlock | grep -q "^/usr/share/man/man1/"'
	check "man dirlock_acquire, Dirlock(3pm), dirlock(1)"
else
	skip "man is not installed (man-db)"
fi

# ---- a redis:// space, through the installed command --------------------

# shellcheck source=/dev/null # tests/redis-lib.sh
DIRLOCK=/usr/bin/dirlock . "$TOP/tests/redis-lib.sh"
if ! DIRLOCK=/usr/bin/dirlock redis_available; then
	skip "$REDIS_WHY"
	skip "$REDIS_WHY"
else
	port=$(redis_free_port) && redis_start -p "$port"
	outside "dirlock -d redis://127.0.0.1:$port cmd -- echo held | grep -qx held"
	check "dirlock -d redis://127.0.0.1:PORT takes a lock (libdirlock-redis, loaded on first use)"
	redis_stop
	outside "dirlock -d redis://127.0.0.1:$port -w 0.2 cmd -- true; [ \$? -ne 0 ]"
	check "... and fails once the server is gone"
fi
# Without libdirlock-redis -- its module hidden: a module directory with
# the runtime package's note alone -- a redis:// space names the package.
mkdir -p "$T/outside/modules"
cp "$(dpkg -L libdirlock1 | grep '/dirlock/redis\.absent$')" "$T/outside/modules/" 2>"$T/out"
outside 'DIRLOCK_MODULE_DIR=$T/outside/modules dirlock -d redis://127.0.0.1:1 -n cmd -- true 2>&1 |
	tee /dev/stderr | grep -q "install the package libdirlock-redis"'
check "without its module, a redis:// space says to install libdirlock-redis (libdirlock1's note)"

# ---- the board as a service ---------------------------------------------

unit=/lib/systemd/system/dirlock-board@.service
if command -v systemd-analyze >/dev/null; then
	systemd-analyze verify "$unit" >"$T/out" 2>&1 && ! grep -q . "$T/out"
	check "systemd-analyze verify finds nothing in dirlock-board@.service"
else
	skip "systemd-analyze is not installed"
fi
getent passwd dirlock-board >/dev/null && [ "$(stat -c %U /var/lib/dirlock-board)" = dirlock-board ] &&
	[ "$(stat -c %U /run/dirlock-board/locks)" = dirlock-board ]
ok $? "the system user dirlock-board owns /var/lib/dirlock-board and /run/dirlock-board/locks"

# unit_lines KEY: the unit's KEY= lines, in order, %i as $1.
unit_lines() { sed -n "s/^$1=//p" "$unit" | sed "s/%i/$2/g"; }
# workers_of PID N: once PID has N children (10 s at most), their pids.
workers_of() {
	local k
	for ((k = 0; k < 200; k++)); do
		[ "$(pgrep -c -P "$1")" = "$2" ] && pgrep -P "$1" && return 0
		sleep 0.05
	done
	return 1
}
port=$(redis_free_port)
for name in none mkdir; do
	sed -e "s|/main|/$name|g" -e "s/^lock_mode = .*/lock_mode = $name/" \
		-e 's/^min_post_interval = .*/min_post_interval = 0/' -e 's/^delay_ms = .*/delay_ms = 25/' \
		/etc/dirlock-board/main.conf >"/etc/dirlock-board/$name.conf"
	env=$(unit_lines Environment "$name")
	{
		while read -r cmd; do
			# shellcheck disable=SC2086 # the unit's words, as systemd splits them
			env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin $env $cmd || exit 1
		done < <(unit_lines ExecStartPre "$name")
	} >"$T/start-$name.out" 2>&1
	st=$?
	if [ $st -eq 0 ]; then
		# The main process (spawn-fcgi, then multiwatch in its place) stays.
		# shellcheck disable=SC2046,SC2086 # the unit's words, as systemd splits them
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin $env $(unit_lines ExecStart "$name") \
			>>"$T/start-$name.out" 2>&1 &
		echo $! >>"$T/board.mains"
		workers_of $! 4 >>"$T/board.pids" || st=1
	fi
	ok $st "board $name started as dirlock-board@$name.service starts it"
	[ $st -eq 0 ] || diag "$(cat "$T/start-$name.out")"
done
users=$(xargs -r ps -o user= -p <"$T/board.pids" | sort | uniq -c | sed 's/^ *//')
is "$users" "8 dirlock-board" "its workers (4 a board) run as dirlock-board"

sed -e "s/listen 80;/listen 127.0.0.1:$port;/" -e '/listen \[::\]:80;/d' \
	/etc/nginx/sites-available/dirlock-board >"$T/site.conf"
mkdir -p "$T/nginx"
cat >"$T/nginx.conf" <<EOF
user www-data;
worker_processes 1;
pid $T/nginx.pid;
error_log $T/nginx/error.log warn;
events { worker_connections 256; }
http {
    include /etc/nginx/mime.types;
    access_log off;
    client_body_temp_path $T/nginx/body;
    proxy_temp_path $T/nginx/proxy;
    fastcgi_temp_path $T/nginx/fastcgi;
    uwsgi_temp_path $T/nginx/uwsgi;
    scgi_temp_path $T/nginx/scgi;
    include $T/site.conf;
}
EOF
nginx=$(command -v nginx || echo /usr/sbin/nginx)
"$nginx" -p "$T/nginx" -c "$T/nginx.conf" >"$T/out" 2>&1
check "a private nginx serves the installed site on 127.0.0.1:$port"
base=http://127.0.0.1:$port
code=$(curl -s -o "$T/page" -w '%{http_code}' "$base/board/mkdir/")
is "$code" 200 "GET /board/mkdir/ through the site"
is "$(curl -s -o /dev/null -w '%{http_code}' "$base/static/style.css")" 200 "GET /static/style.css"

"$TOP/tests/lost-update" -q -c 6 -n 5 -m "none mkdir" --expect-loss -o "$T/lu" "$base/board/" >"$T/lu.out" 2>&1
st=$?
sed 's/^/# /' "$T/lu.out"
field() {
	awk -F, -v m="$1" -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$1 == m { print $col[c] }' "$T/lu/summary.csv"
}
lost=$(field none lost)
[ -n "$lost" ] && [ "$lost" -gt 0 ]
ok $? "none: the board without a lock lost posts ($lost of $(field none acknowledged) acknowledged)"
is "$(field mkdir lost)/$(field mkdir stored)" "0/30" "mkdir: none of 30 posts lost, all stored"
is "$st" 0 "tests/lost-update exit status"

# A worker that dies is started again (multiwatch), and the board serves.
main=$(sed -n 2p "$T/board.mains")
victim=$(pgrep -P "$main" | head -n 1)
kill -KILL "$victim"
for ((k = 0; k < 200; k++)); do
	now=$(pgrep -P "$main" | sort)
	[ "$(echo "$now" | wc -l)" = 4 ] && ! echo "$now" | grep -qx "$victim" && break
	sleep 0.05
done
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/board/mkdir/")
[ "$(echo "$now" | wc -l)" = 4 ] && ! echo "$now" | grep -qx "$victim" && [ "$code" = 200 ]
ok $? "a worker killed (SIGKILL, pid $victim) is started again: 4 workers ($(echo "$now" | paste -sd ' ')), GET $code"
echo "$now" >>"$T/board.pids"
stop_board

# ---- purge: nothing left ------------------------------------------------

# The nginx site enabled as README.Debian says: purging must not leave
# nginx a link to a removed file (it would not start).
enabled=""
if [ -d /etc/nginx/sites-enabled ] && [ ! -e /etc/nginx/sites-enabled/dirlock-board ]; then
	ln -s ../sites-available/dirlock-board /etc/nginx/sites-enabled/ && enabled=1
fi
start=$SECONDS
purge
st=$?
ok $st "apt purge ($((SECONDS - start)) s)"
[ $st -eq 0 ] || diag "$(tail -20 "$T/purge.out")"
# What is still there, and no other package has (/usr/lib, say).
left=$(while read -r f; do
	if [ -e "$f" ] || [ -L "$f" ]; then
		dpkg -S "$f" >/dev/null 2>&1 || echo "$f"
	fi
done <"$T/files")
is "$left" "" "no file or directory of the packages is left"
left=$(ls -d /etc/dirlock-board /var/lib/dirlock-board /run/dirlock-board 2>/dev/null
	[ -z "$enabled" ] || ls -d /etc/nginx/sites-enabled/dirlock-board 2>/dev/null)
what="nor the board's configuration, data, run directory"
[ -z "$enabled" ] || what="$what, the link that enabled its nginx site"
is "$left" "" "$what"
getent passwd dirlock-board >/dev/null
ok $? "the system user dirlock-board stays, as Debian keeps them (its id is not reused)"
diag "$SECONDS s"
