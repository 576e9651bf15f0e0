#!/bin/sh
# rw-trace.t - `dirlock-demo --trace FILE` writes what each process of an
# attack did (docs/rw-trace.md): three lanes (two attackers, one victim),
# every lock request as [asked, got, released] in order, and the victim's
# traced wait is the wait the demonstration measured and printed.  A torn
# run cannot be traced, and a failed trace leaves no partial file.
# shellcheck source=tests/rw-lib.sh
. "$(dirname "$0")/rw-lib.sh"
SECS=${RW_TRACE_SECONDS:-1.5}
echo "1..13"
command -v jq >/dev/null 2>&1 || {
	echo "Bail out! jq is not installed (make deps)"
	exit 1
}

for sc in read-attack write-attack; do
	tr=$T/$sc.json
	line=$("$DEMO" -d "$T" -s "$SECS" --trace "$tr" "$sc" reader)
	ok $? "$sc, reader policy, traced: exit status 0"
	diag "$line"
	jq -e . "$tr" >/dev/null 2>&1
	ok $? "$sc: the trace is valid JSON"
	got=$(jq -c '[.format, (.experiments | length), .experiments[0].scenario, .experiments[0].lock,
		[.experiments[0].processes[] | .role + ":" + .mode]]' "$tr")
	if [ "$sc" = read-attack ]; then
		want='["dirlock-demo trace 1",1,"read-attack","reader",["attacker:read","attacker:read","victim:write"]]'
	else
		want='["dirlock-demo trace 1",1,"write-attack","reader",["attacker:write","attacker:write","victim:read"]]'
	fi
	[ "$got" = "$want" ]
	ok $? "$sc: one experiment, two attackers and a victim"
	[ "$got" = "$want" ] || diag "got $got"
	# Each lane: at least one request; asked <= got <= released; a
	# process's next request starts after its last one let go.
	bad=$(jq '[.experiments[0].processes[] | .spans as $s | (($s | length) == 0),
		($s[] | (.[1] == null or .[0] > .[1] or .[1] > .[2])),
		(range(1; $s | length) as $i | $s[$i][0] < $s[$i - 1][2])] | map(select(.)) | length' "$tr")
	[ "$bad" = 0 ]
	ok $? "$sc: every lane is a sequence of ordered wait-then-hold spans ($bad bad)"
	key=$([ "$sc" = read-attack ] && echo writer_wait_max_ms || echo reader_wait_max_ms)
	printed=$(field "$line" "$key")
	traced=$(jq '.experiments[0].processes[2].spans[0] | (.[1] - .[0]) * 10 | round / 10' "$tr")
	[ -n "$printed" ] && [ -n "$traced" ] &&
		awk -v a="$printed" -v b="$traced" 'BEGIN { d = a - b; exit !(d < 1 && d > -1) }'
	ok $? "$sc: the victim's traced wait ($traced ms) is the measured one ($printed ms)"
done

# Under the reader policy the read attack locks the writer out, and the
# trace shows it: the attacking readers hold the lock while it waits.
tr=$T/read-attack.json
overlap=$(jq '.experiments[0].processes as $p | $p[2].spans[0] as $w |
	[$p[0].spans[], $p[1].spans[] | select(.[1] > $w[0] and .[1] < $w[1])] | length' "$tr")
[ "$overlap" -gt 0 ]
ok $? "read attack, reader: the readers took the lock $overlap times while the writer waited"

"$DEMO" -d "$T" -s 1 --trace "$T/torn.json" torn fair >/dev/null 2>"$T/err"
rc=$?
[ "$rc" = 2 ] && grep -q 'not torn reads' "$T/err" && [ ! -e "$T/torn.json" ]
ok $? "a torn run is not traced: status 2, a message, no file"

"$DEMO" -d "$T" -s 1 --trace "$T/no/such/dir/t.json" read-attack fair >/dev/null 2>"$T/err"
rc=$?
[ "$rc" = 2 ] && grep -q 'cannot write the trace' "$T/err" && [ -z "$(ls "$T/no" 2>/dev/null)" ]
ok $? "an unwritable trace path: status 2 before anything runs, and a message"
[ "$fails" -eq 0 ]
