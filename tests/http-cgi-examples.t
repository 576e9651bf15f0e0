#!/bin/bash
# tests/http-cgi-examples.t - the CGI examples of docs/examples/ (the hit
# counter in shell, C, Perl, Python and Node.js) run as CGI programs
# under a private nginx and fcgiwrap, each sent 32 visits, 16 at a time,
# with a 20 ms pause inside its read-modify-write: every visit is
# answered, with its own number, and the count ends at 32.  The twin,
# the shell example with a `dirlock` that takes no lock, loses visits
# under the same load: the test can fail.  A language whose binding is
# not built (make bindings) is skipped, saying so.
set -eu
# shellcheck source=tests/http-lib.sh
. "$(dirname "$0")/http-lib.sh"
need_cmd nginx spawn-fcgi fcgiwrap curl
DIRLOCK=${DIRLOCK:-$TOP/bin/dirlock}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR=$TOP/$BUILD_DIR ;; esac
C_COUNTER=$BUILD_DIR/tests/examples/counter
[ -x "$DIRLOCK" ] || skip_all "bin/dirlock is not built (make)"
VISITS=32
CLIENTS=16

# ---- the examples, as a web server runs them -------------------------------

mkdir -p "$T/cgi" "$T/nolock-bin" "$T/node_modules" "$T/nginx/logs" "$T/nginx/tmp"
ln -s "$TOP/docs/examples/counter.sh" "$T/cgi/sh"
ln -s "$C_COUNTER" "$T/cgi/c"
ln -s "$TOP/docs/examples/counter.pl" "$T/cgi/perl"
ln -s "$TOP/docs/examples/counter.py" "$T/cgi/python"
ln -s "$TOP/docs/examples/counter.js" "$T/cgi/node"
ln -s "$TOP/bindings/node" "$T/node_modules/dirlock"
# The twin's dirlock runs the command and takes no lock.
cat >"$T/nolock-bin/dirlock" <<'EOF'
#!/bin/sh
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
shift
exec "$@"
EOF
chmod +x "$T/nolock-bin/dirlock"

# Which examples can run here.
langs=(sh)
if [ -x "$C_COUNTER" ]; then langs+=(c); else skip "the C example" "not built ($C_COUNTER: make test-build)"; fi
if [ -d "$TOP/bindings/perl/blib/arch/auto/Dirlock" ]; then langs+=(perl); else skip "the Perl example" "the Dirlock module is not built (make bindings)"; fi
if ls "$TOP"/bindings/python/dirlock/_dirlock*.so >/dev/null 2>&1; then langs+=(python); else skip "the Python example" "the dirlock package is not built (make bindings)"; fi
if [ -f "$TOP/bindings/node/build/Release/dirlock.node" ] && command -v node >/dev/null; then langs+=(node); else skip "the Node.js example" "the addon is not built (make bindings)"; fi

port=$(free_port) || bail_out "no free port"
path=$(dirname "$DIRLOCK"):/usr/local/bin:/usr/bin:/bin
user_line=""
[ "$(id -u)" -ne 0 ] || user_line="user $(id -un) $(id -gn);"
params() { # params PATH: the CGI environment of a location
	cat <<EOF
            fastcgi_pass unix:$T/fcgiwrap.sock;
            fastcgi_param REQUEST_METHOD \$request_method;
            fastcgi_param QUERY_STRING \$query_string;
            fastcgi_param GATEWAY_INTERFACE CGI/1.1;
            fastcgi_param SERVER_SOFTWARE nginx;
            fastcgi_param SERVER_PROTOCOL \$server_protocol;
            fastcgi_param REMOTE_ADDR \$remote_addr;
            fastcgi_param PATH $1;
            fastcgi_param COUNTER_DELAY_MS 20;
            fastcgi_param PERL5LIB $TOP/bindings/perl/blib/lib:$TOP/bindings/perl/blib/arch;
            fastcgi_param PYTHONPATH $TOP/bindings/python;
            fastcgi_param NODE_PATH $T/node_modules;
EOF
}
cat >"$T/nginx/nginx.conf" <<EOF
$user_line
worker_processes 1;
pid $T/nginx/nginx.pid;
error_log $T/nginx/logs/error.log warn;
daemon on;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $T/nginx/tmp/body;
    proxy_temp_path $T/nginx/tmp/proxy;
    fastcgi_temp_path $T/nginx/tmp/fastcgi;
    uwsgi_temp_path $T/nginx/tmp/uwsgi;
    scgi_temp_path $T/nginx/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        location ~ ^/(sh|c|perl|python|node)\$ {
$(params "$path")
            fastcgi_param SCRIPT_FILENAME $T/cgi/\$1;
            fastcgi_param COUNTER_DIR $T/data/\$1;
        }
        location = /sh-nolock {
$(params "$T/nolock-bin:$path")
            fastcgi_param SCRIPT_FILENAME $T/cgi/sh;
            fastcgi_param COUNTER_DIR $T/data/sh-nolock;
        }
    }
}
EOF
spawn-fcgi -s "$T/fcgiwrap.sock" -M 0600 -F "$CLIENTS" -P "$T/fcgiwrap.pid" -- "$(command -v fcgiwrap || echo /usr/sbin/fcgiwrap)" \
	>"$T/spawn.log" 2>&1 || bail_out "spawn-fcgi: $(cat "$T/spawn.log")"
at_exit "kill \$(cat '$T/fcgiwrap.pid') 2>/dev/null"
nginx -p "$T/nginx" -c "$T/nginx/nginx.conf" -e "$T/nginx/logs/error.log" 2>"$T/nginx.err" ||
	bail_out "nginx did not start: $(cat "$T/nginx.err")"
at_exit "kill \$(cat '$T/nginx/nginx.pid') 2>/dev/null"
for _ in $(seq 100); do curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/" && break; sleep 0.1; done

# visits NAME: VISITS visits of /NAME, CLIENTS at a time; each answer's
# status and body in $T/out/NAME.<i>.
visits() {
	mkdir -p "$T/out" "$T/data/$1"
	seq "$VISITS" | xargs -P "$CLIENTS" -I{} curl -s --max-time 60 -o "$T/out/$1.{}" -w '%{http_code}\n' \
		"http://127.0.0.1:$port/$1" >"$T/out/$1.codes" || true
}

# numbers NAME: the visit numbers the answers gave, one a line, sorted.
numbers() { cat "$T/out/$1".[0-9]* 2>/dev/null | sed -n 's/^visit \([0-9]*\)$/\1/p' | sort -n; }

# ---- each example, then the twin --------------------------------------------

for lang in "${langs[@]}"; do
	t0=$(date +%s%N)
	visits "$lang"
	ms=$((($(date +%s%N) - t0) / 1000000))
	ok_codes=$(grep -c '^200$' "$T/out/$lang.codes" || true)
	count=$(cat "$T/data/$lang/count" 2>/dev/null || echo 0)
	distinct=$(numbers "$lang" | uniq | wc -l)
	is "$ok_codes answered, count $count, $distinct distinct" "$VISITS answered, count $VISITS, $VISITS distinct" \
		"$lang: $VISITS visits, $CLIENTS at a time, none lost (${ms} ms)"
	if [ "$count" != "$VISITS" ]; then
		diag "statuses: $(sort "$T/out/$lang.codes" | uniq -c | tr '\n' ' ')"
		answers=("$T/out/$lang".[0-9]*)
		diag "an answer: $(head -c 300 "${answers[0]}")"
		tail -n 5 "$T/nginx/logs/error.log" | sed 's/^/# /'
	fi
done

visits sh-nolock
ok_codes=$(grep -c '^200$' "$T/out/sh-nolock.codes" || true)
count=$(cat "$T/data/sh-nolock/count" 2>/dev/null || echo 0)
distinct=$(numbers sh-nolock | uniq | wc -l)
# Without the lock some visits also fail outright (two of them renaming
# the same temporary file): lost is what was answered but not counted.
cmp=$([ "$ok_codes" -gt 0 ] && { [ "$count" -lt "$ok_codes" ] || [ "$distinct" -lt "$ok_codes" ]; } && echo 0 || echo 1)
ok "$cmp" "the twin without a lock loses visits: $ok_codes of $VISITS answered, count $count, $distinct distinct numbers"
done_testing
