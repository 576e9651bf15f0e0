#!/bin/bash
# rw-wake.t - a writer waiting for readers to leave hears the last one go,
# even when the readers' directory was removed and made again meanwhile
# (a writer that found it empty removes it, the next reader in makes a
# new one).  An
# intent holder upgrading (and a `reader`-policy writer waiting) in a loop
# against a reader in a loop, with the waits' re-check interval raised to
# 10 s (DIRLOCK_TEST_RECHECK_MS, test builds only): a wake-up the waiter
# did not hear costs it those 10 s, so the longest wait shows it.  Run in
# the scratch directory and on tmpfs (/dev/shm, where `make start` puts
# the boards' locks), where the race shows most.
# shellcheck source=tests/rw-lib.sh
. "$(dirname "$0")/rw-lib.sh"
CYCLES=${RW_WAKE_CYCLES:-300}
export DIRLOCK_TEST_RECHECK_MS=10000
D=$T/d
SHM=""
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	SHM=$(mktemp -d /dev/shm/dirlock-rw-wake.XXXXXX) || SHM=""
fi
trap 'rm -rf "$T" ${SHM:+"$SHM"}' EXIT
echo "1..$([ -n "$SHM" ] && echo 8 || echo 4)"

# churn LABEL WRITER-ARGS...: the writer's cycles against a reader taking
# and releasing the lock in a loop until the writer is done; prints the
# writer's "done" line.
churn() {
	local label=$1
	shift
	rm -rf "$D" && mkdir "$D"
	"$HOLD" -c 100000000 "$D" n r > /dev/null &
	local reader=$!
	timeout 120 "$HOLD" -l "$label" -t 60 "$@" > "$T/$label.out" 2>&1
	echo "rc=$?" >> "$T/$label.out"
	kill "$reader"
	wait "$reader" 2> /dev/null
	cat "$T/$label.out"
}

for D in "$T/d" ${SHM:+"$SHM/d"}; do
where=$(stat -f -c %T "$(dirname "$D")")
# 1-2: intent, 2 ms (the reader comes and goes meanwhile), upgrade,
# release; CYCLES times.
out=$(churn up -u -P 2 -c "$CYCLES" "$D" n i)
line=$(echo "$out" | grep '^up done')
max_up=$(echo "$line" | awk '{ print $5 }')
echo "$out" | grep -q '^rc=0$'
ok $? "$where: upgrade loop against a reader loop finishes ($line)"
[ -n "$max_up" ] && lt "$max_up" 5000
ok $? "$where: no upgrade sleeps through the re-check interval: longest ${max_up:-?} ms (a lost wake-up: 10000)"

# 3-4: a writer of policy `reader` (waits with no W held until no reader is left).
out=$(churn rp -p reader -H 2 -c "$CYCLES" "$D" n w)
line=$(echo "$out" | grep '^rp done')
max_acq=$(echo "$line" | awk '{ print $4 }')
echo "$out" | grep -q '^rc=0$'
ok $? "$where: reader-policy writer loop against a reader loop finishes ($line)"
[ -n "$max_acq" ] && lt "$max_acq" 5000
ok $? "$where: no reader-policy writer sleeps through the re-check interval: longest ${max_acq:-?} ms"
done
[ "$fails" -eq 0 ]
