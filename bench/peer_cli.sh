#!/bin/bash
# peer_cli.sh - worker of the side-by-side benchmark (bench/peers-run) for
# the command-line lockers, each used as its manual shows, from a shell
# loop (every lock and unlock starts a process):
#   dirlock     dirlock -d DIR counter -- bash -c RMW   (bin/dirlock)
#   flock       flock DIR/counter.flock bash -c RMW     (util-linux)
#   dotlockfile dotlockfile -l -r -1 DIR/counter.lock; RMW; dotlockfile -u
#   lockfile    lockfile-create -r 1000000 DIR/counter; RMW; lockfile-remove
#               (lockfile-progs; both retry after 5 s, then 10 s, ...)
#
#   peer_cli.sh LOCKER DIR START SECONDS OUT
#   peer_cli.sh dotlockfile|lockfile DIR hold          (take, print "held", keep)
#   peer_cli.sh dotlockfile|lockfile DIR wait TIMEOUT  (take once: seconds, or "timeout")
#
# RMW reads DIR/counter, adds one and writes it back.  OUT gets one line
# per acquisition, "WAIT_US IN_TIME" as bench/peer_worker.c; for dirlock
# and flock, which run the critical section as their command, the wait
# ends when that command starts.
set -u
locker=$1 dir=$2 start=$3
case $start in
hold | wait)
	t0=${EPOCHREALTIME/./}
	case $locker in
	dotlockfile) [ "$start" = hold ] && r=-1 || r=$((${4%.*} / 5 + 1)); dotlockfile -l -r "$r" "$dir/counter.lock" || { echo timeout; exit 1; } ;;
	lockfile) [ "$start" = hold ] && r=1000000 || r=$((${4%.*} / 5 + 1)); lockfile-create -q -r "$r" "$dir/counter" || { echo timeout; exit 1; } ;;
	*) echo "peer_cli.sh: $start: dotlockfile or lockfile" >&2; exit 2 ;;
	esac
	if [ "$start" = hold ]; then
		echo held
		exec sleep infinity
	fi
	t1=${EPOCHREALTIME/./}
	awk -v us=$((t1 - t0)) 'BEGIN { printf "%.3f\n", us / 1e6 }'
	if [ "$locker" = dotlockfile ]; then dotlockfile -u "$dir/counter.lock"; else lockfile-remove "$dir/counter"; fi
	exit 0
	;;
esac
seconds=$4 out=$5
DIRLOCK=${DIRLOCK:-$(dirname "$0")/../bin/dirlock}
counter=$dir/counter
end=$(awk -v s="$start" -v d="$seconds" 'BEGIN { printf "%.6f", s + d }')
us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }
rmw='echo ${EPOCHREALTIME/./}; read -r v 2>/dev/null < "$0" || v=0; echo $((v + 1)) > "$0"'
: > "$out"
while [ "$(us)" -lt "${start/./}" ]; do sleep 0.01; done
end_us=${end/./}
while [ "$(us)" -lt "$end_us" ]; do
	t0=$(us)
	case $locker in
	dirlock)
		t1=$("$DIRLOCK" -d "$dir" -w 60 counter -- bash -c "$rmw" "$counter")
		t2=$(us) ;;
	flock)
		t1=$(flock -w 60 "$dir/counter.flock" bash -c "$rmw" "$counter")
		t2=$(us) ;;
	dotlockfile)
		dotlockfile -l -r -1 "$dir/counter.lock" || exit 1
		t1=$(us)
		read -r v 2>/dev/null < "$counter" || v=0
		echo $((v + 1)) > "$counter"
		dotlockfile -u "$dir/counter.lock"
		t2=$(us) ;;
	lockfile)
		lockfile-create -q -r 1000000 "$counter" || exit 1
		t1=$(us)
		read -r v 2>/dev/null < "$counter" || v=0
		echo $((v + 1)) > "$counter"
		lockfile-remove "$counter"
		t2=$(us) ;;
	*) echo "peer_cli.sh: unknown locker $locker" >&2; exit 2 ;;
	esac
	echo "$((t1 - t0)) $((t2 <= end_us ? 1 : 0))" >> "$out"
done
