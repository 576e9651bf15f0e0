# tests/spaces-lib.sh - the lock spaces that the shared multi-process tests
# run the same checks against: a lock directory under the test's directory
# $T, and a private server of every server backend that can run on this
# machine and in this build, each brought by its backend's plug-in,
# lib/NAME/test-space.sh.  Source it after tap.sh or rw-lib.sh (which make
# $T, set $TOP and define diag).
#
#   spaces_start            start every plug-in's server, once per test
#                           script.  A plug-in that cannot run here says why
#                           in one diag line ("# Redis: skipped:
#                           redis-server is not installed ...") and its space
#                           is left out.  Returns 1 when a server that could
#                           run did not start (the test then exits 1).
#   test_spaces             the spaces, one a line: $SPACE_DIR first, then
#                           each started server's space
#   spaces_count            how many lines test_spaces prints
#   SPACE_DIR               the lock directory, $T/locks (made by
#                           spaces_start): for what is checked in a
#                           directory only
#   space_kind SPACE        its label in test descriptions: directory, Redis
#   space_is_server SPACE   0 when SPACE is a server's, 1 for the directory
#   space_sub SPACE TAG     a space of the same kind (on the same server),
#                           disjoint from SPACE and from those of other TAGs:
#                           a fresh space for one run (TAG: [A-Za-z0-9.-]);
#                           a directory is made
#   space_leftovers SPACE   what SPACE still holds after a test, one item a
#                           line, nothing when it holds nothing; what a lock
#                           keeps by design (fence counters, ...) is not shown
#   space_waiters SPACE LOCK  how many waiters are queued for lock LOCK
#   space_rounds SPACE N    how many rounds to make on SPACE of a loop that
#                           makes N on a Redis server (N in a directory):
#                           fewer where a hand-off costs far more, so that
#                           the suite's time stays bounded
#   space_min_stale SPACE   the shortest stale age SPACE takes, in seconds
#                           (DIRLOCK_MIN_STALE_AGE, 0.1, unless the plug-in
#                           says more)
#   space_no_lock SPACE     the VAR=VALUE of the test seam under which the
#                           space's locks take without looking (the
#                           counter's twin), or nothing (status 1)
#   space_of PLUGIN         the space of plug-in PLUGIN's server when it was
#                           started (status 0), else nothing (status 1):
#                           for the checks of one backend's own (its test
#                           hooks, its keys), beside the shared ones
#
# A started server is a background job of the test's shell: a test that
# waits for its children names them (`wait $pids`); a bare `wait` would wait
# for the servers too.
#
# THE PLUG-IN.  A server backend NAME (its folder's name, a shell name)
# plugs in with lib/NAME/test-space.sh; this file sources every such file,
# in the order of their names, with nothing to edit elsewhere.  Sourcing it
# only defines functions and variables whose names begin with NAME_ (or
# with the prefix of a helper it sources); it starts and prints nothing.
# It defines:
#   NAME_space_available    0 when its server can run here (the server
#                           program is installed, the library was built with
#                           the backend); else 1 and one line on stdout that
#                           says why, and what to install
#   NAME_space_start        start a private server for this test script:
#                           its files under $T, on a unix socket or
#                           127.0.0.1 (a port from $PORT_RANGE, LOW-HIGH),
#                           never the system's, dying with the test's shell
#                           however that ends (setpriv --pdeathsig KILL);
#                           0 once it answers, else 1 with why on stderr
#   NAME_space              the space of the started server
#   NAME_space_kind         the label in descriptions ("Redis")
#   NAME_space_sub SPACE TAG        as space_sub; what it prints begins with
#                           what NAME_space prints (that is how this file
#                           knows whose a space is)
#   NAME_space_leftovers SPACE      as space_leftovers
#   NAME_space_waiters SPACE LOCK   as space_waiters
# and may define (else the defaults of the functions above):
#   NAME_space_rounds N     as space_rounds
#   NAME_space_min_stale    as space_min_stale
#   NAME_space_no_lock      as space_no_lock
# shellcheck shell=bash

SPACE_DIR="$T/locks"
spaces_plugins=()  # the plug-ins found, by name
spaces_names=()    # those whose server started ...
spaces_servers=()  # ... and their spaces, in the same order
spaces_started=""

for spaces_file in "$TOP"/lib/*/test-space.sh; do
	[ -e "$spaces_file" ] || continue
	# shellcheck disable=SC1090 # a plug-in, lib/NAME/test-space.sh
	. "$spaces_file"
	spaces_file=${spaces_file%/test-space.sh}
	spaces_plugins+=("${spaces_file##*/}")
done
unset spaces_file

spaces_start() {
	[ -z "$spaces_started" ] || return 0
	spaces_started=yes
	mkdir -p "$SPACE_DIR" || return 1
	local name why
	for name in "${spaces_plugins[@]}"; do
		if ! why=$("${name}_space_available"); then
			diag "$("${name}_space_kind"): skipped: $why"
			continue
		fi
		if ! "${name}_space_start"; then
			echo "# $("${name}_space_kind"): the private server did not start" >&2
			return 1
		fi
		spaces_names+=("$name")
		spaces_servers+=("$("${name}_space")")
	done
	return 0
}

test_spaces() {
	local s
	echo "$SPACE_DIR"
	for s in "${spaces_servers[@]}"; do echo "$s"; done
}

spaces_count() { echo $((1 + ${#spaces_servers[@]})); }

space_of() {
	local i
	for i in "${!spaces_names[@]}"; do
		if [ "${spaces_names[$i]}" = "$1" ]; then
			echo "${spaces_servers[$i]}"
			return 0
		fi
	done
	return 1
}

# spaces_plugin SPACE: the name of the plug-in whose server SPACE is on,
# or status 1 (a directory).
spaces_plugin() {
	local i
	for i in "${!spaces_servers[@]}"; do
		case $1 in "${spaces_servers[$i]}"*)
			echo "${spaces_names[$i]}"
			return 0
			;;
		esac
	done
	return 1
}

space_is_server() { spaces_plugin "$1" >/dev/null; }

space_kind() {
	local p
	if p=$(spaces_plugin "$1"); then "${p}_space_kind"; else echo directory; fi
}

space_sub() {
	local p
	if p=$(spaces_plugin "$1"); then
		"${p}_space_sub" "$1" "$2"
	else
		mkdir -p "$1-$2" && echo "$1-$2"
	fi
}

# A directory keeps by design each lock's fence counter (NAME.fence/),
# range meta-lock file (.NAME.rmeta) and, once a deadlock was reported,
# the verdict counter (.waits/verdicts/); lib/dir/layout.h has its names.
space_leftovers() {
	local p
	if p=$(spaces_plugin "$1"); then
		"${p}_space_leftovers" "$1"
	else
		# the wait register is kept for the next waiter; not its entries
		find "$1" -mindepth 1 -maxdepth 1 ! -name '*.fence' ! -name '.*.rmeta' ! -name .waits -printf '%f\n' 2>/dev/null
		find "$1/.waits" -mindepth 1 -maxdepth 1 ! -name verdicts -printf '.waits/%f\n' 2>/dev/null
	fi
	return 0
}

# A directory's waiters each hold a ticket, LOCK.fifo/t.<SEQ>.
space_waiters() {
	local p
	if p=$(spaces_plugin "$1"); then
		"${p}_space_waiters" "$1" "$2"
	else
		find "$1/$2.fifo" -mindepth 1 -maxdepth 1 -name 't.*' 2>/dev/null | wc -l
	fi
}

space_rounds() {
	local p
	if p=$(spaces_plugin "$1") && declare -F "${p}_space_rounds" >/dev/null; then
		"${p}_space_rounds" "$2"
	else
		echo "$2"
	fi
}

space_min_stale() {
	local p
	if p=$(spaces_plugin "$1") && declare -F "${p}_space_min_stale" >/dev/null; then
		"${p}_space_min_stale"
	else
		echo 0.1
	fi
}

space_no_lock() {
	local p
	p=$(spaces_plugin "$1") && declare -F "${p}_space_no_lock" >/dev/null && "${p}_space_no_lock"
}
