# tests/http-browser-lib.sh - headless Chromium for the browser tests
# (tests/http-browser*.t), driven through chromedriver's WebDriver HTTP
# interface with curl and jq.  Source after tests/http-lib.sh:
#   browser_need             skips the whole script without chromium/chromedriver
#   browser_start [W,H]      chromedriver on a free port and a session ($S),
#                            both stopped by the exit trap; one TAP line;
#                            three tries, each failure explained; with
#                            BROWSER_PHONE=1, a phone of W x H CSS pixels
#                            (Chromium's mobile emulation: a touch screen
#                            at twice the density, which honours a page's
#                            viewport and lays out one without it 980 px
#                            wide, as phones do)
#   wd METHOD PATH [JSON]    one WebDriver command, prints the response
#   wd_go URL                load URL in the session
#   wd_find CSS              the element id of the first match
#   wd_js SCRIPT [ARGS-JSON] run SCRIPT (a function body) in the page,
#                            print its return value as JSON
#   wd_wait_js SECONDS SCRIPT  poll SCRIPT until it returns true
#   type_into CSS TEXT, is_png FILE
#   screenshot FILE          the window as PNG
#   screenshot_page FILE     the whole page, however long, as PNG
# shellcheck shell=bash

CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
CHROMEDRIVER=${CHROMEDRIVER:-$(command -v chromedriver || true)}

browser_need() {
	[ -n "$CHROMIUM" ] || skip_all "chromium is not installed (make deps)"
	[ -n "$CHROMEDRIVER" ] || skip_all "chromedriver is not installed (make deps: chromium-driver)"
}

wd() {
	if [ $# -ge 3 ]; then
		curl -s --max-time 30 -X "$1" -H 'Content-Type: application/json' -d "$3" "$WD$2"
	else
		curl -s --max-time 30 -X "$1" "$WD$2"
	fi
}

# browser_start [WIDTH,HEIGHT]: a private profile under $T, no network
# beyond 127.0.0.1 (no first-run, sync, component or background fetches).
# Up to three tries, each with a fresh chromedriver on a fresh port and a
# fresh profile: a try counts only if the chromedriver that answers is the
# one it started (its own log says it bound that port) and it hands out a
# session.  Each failed try says why; the third ends the script.
browser_start() {
	local size=${1:-1000,1200} try
	driver=
	at_exit 'browser_driver_stop'
	for try in 1 2 3; do
		if browser_try_session "$try" "$size"; then
			S=/session/$session
			at_exit "curl -s --max-time 10 -X DELETE '$WD$S' >/dev/null"
			ok 0 "Chromium session started"
			return 0
		fi
		browser_driver_stop
	done
	bail_out "could not start a Chromium session in three tries"
}

browser_driver_stop() {
	[ -n "${driver:-}" ] || return 0
	kill "$driver" 2>/dev/null || true
	wait "$driver" 2>/dev/null || true
	driver=
}

# browser_try_session TRY WIDTH,HEIGHT: one chromedriver, one profile and
# one session request; sets driver, WD and session, or prints why not and
# fails.
browser_try_session() {
	local try=$1 size=$2 caps dport log reply rc state
	caps=$(jq -n --arg bin "$CHROMIUM" --arg prof "$T/profile.$try" --arg size "$size" '{capabilities: {alwaysMatch: {
		browserName: "chrome",
		"goog:chromeOptions": {binary: $bin, args: [
			"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--disable-dev-shm-usage", "--user-data-dir=" + $prof, "--window-size=" + $size,
			"--lang=en-US"]}}}}')
	if [ "${BROWSER_PHONE:-0}" = 1 ]; then
		caps=$(jq --argjson w "${size%,*}" --argjson h "${size#*,}" '.capabilities.alwaysMatch["goog:chromeOptions"].mobileEmulation =
			{deviceMetrics: {width: $w, height: $h, pixelRatio: 2, mobile: true, touch: true}}' <<<"$caps")
	fi
	dport=$(free_port) || bail_out "no free port"
	log=$T/chromedriver.$try.log
	HOME=$T "$CHROMEDRIVER" --port="$dport" --allowed-ips=127.0.0.1 --log-path="$log" >/dev/null 2>&1 &
	driver=$!
	WD=http://127.0.0.1:$dport
	# Up to 30 s, unless it exits: the first start on a new machine reads
	# chromedriver and its libraries from a cold disk.
	local ready=
	for _ in $(seq 1 300); do
		if grep -qs "started successfully on port $dport" "$log" &&
			curl -s --max-time 1 "$WD/status" | jq -e '.value.ready' >/dev/null 2>&1; then
			ready=1
			break
		fi
		[ -z "$(browser_driver_state)" ] || break
		sleep 0.1
	done
	if [ -z "$ready" ]; then
		diag "try $try: chromedriver was not ready on $WD$(browser_driver_state)"
		browser_driver_log "$log"
		return 1
	fi
	# A failed request must not end the script under set -e.
	rc=0
	reply=$(wd POST /session "$caps") || rc=$?
	session=$(printf '%s' "$reply" | jq -r '.value.sessionId // empty' 2>/dev/null) || session=
	[ -n "$session" ] && return 0
	state=$(browser_driver_state)
	diag "try $try: no session from $WD (curl exit status $rc)$state"
	diag "try $try: chromedriver's answer: ${reply:-(none)}"
	browser_driver_log "$log"
	return 1
}

# browser_driver_state: ", chromedriver has exited" when it has (a zombie
# counts: kill -0 alone would call it alive).
browser_driver_state() {
	local st=
	read -r _ _ st _ 2>/dev/null <"/proc/$driver/stat" || st=
	case "$st" in
	'' | Z | X) printf ', chromedriver has exited' ;;
	esac
}

browser_driver_log() {
	if [ -s "$1" ]; then
		diag "chromedriver log ($1), its last records:"
		grep '^\[' "$1" | tail -n 12 | cut -c 1-300 | sed 's/^/#   /'
	else
		diag "chromedriver wrote no log at $1"
	fi
}

wd_go() { wd POST "$S/url" "$(jq -n --arg u "$1" '{url: $u}')" >/dev/null; }

wd_find() {
	wd POST "$S/element" "$(jq -n --arg v "$1" '{using: "css selector", value: $v}')" |
		jq -r '.value | to_entries[0].value // empty'
}

wd_js() {
	wd POST "$S/execute/sync" "$(jq -n --arg s "$1" --argjson a "${2:-[]}" '{script: $s, args: $a}')" |
		jq -c '.value'
}

wd_wait_js() {
	local end=$((SECONDS + $1))
	while [ "$SECONDS" -lt "$end" ]; do
		[ "$(wd_js "$2")" = true ] && return 0
		sleep 0.2
	done
	return 1
}

type_into() {
	local el
	el=$(wd_find "$1")
	[ -n "$el" ] || return 1
	wd POST "$S/element/$el/value" "$(jq -n --arg t "$2" '{text: $t}')" >/dev/null
}

screenshot() { wd GET "$S/screenshot" | jq -r '.value' | base64 -d >"$1"; }

# Through chromedriver's Chrome DevTools passthrough: the page's full size,
# then one capture of all of it.
screenshot_page() {
	local size
	size=$(wd POST "$S/goog/cdp/execute" '{"cmd": "Page.getLayoutMetrics", "params": {}}' |
		jq -c '.value.cssContentSize | {x: 0, y: 0, width: (.width | ceil), height: (.height | ceil), scale: 1}')
	wd POST "$S/goog/cdp/execute" "$(jq -n --argjson clip "$size" \
		'{cmd: "Page.captureScreenshot", params: {format: "png", captureBeyondViewport: true, clip: $clip}}')" |
		jq -r '.value.data' | base64 -d >"$1"
}

is_png() { [ "$(head -c 8 "$1" | od -An -c | tr -d ' ')" = '211PNG\r\n032\n' ]; }
