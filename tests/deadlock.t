#!/bin/bash
# deadlock.t - deadlock detection across processes: 8 processes take 3
# names in random orders for DEADLOCK_SECONDS (default 8; make
# bench-deadlock runs 60) with the truth kept in shared memory
# (tests/progs/deadlockstress.c): every DIRLOCK_EDEADLK matches a cycle of
# waits that existed, and no cycle waits more than 1 s unreported; the
# same processes taking their locks with DIRLOCK_NO_DEADLOCK leave cycles
# unreported for seconds, which the checker sees (this test can fail);
# and the command: nested dirlock commands taking P then Q against Q then
# P -- one exits 4 saying "deadlock" at once and the other runs -- and a
# command that asks for the lock its own dirlock holds for it.
. "$(dirname "$0")/tap.sh"
plan 9
L="$T/locks"
SECS=${DEADLOCK_SECONDS:-8}

out=$("$PROGS/deadlockstress" "$L" 8 3 "$SECS" 2>"$T/err")
st=$?
ok $st "8 processes x 3 names x ${SECS} s: every report a real cycle, none unreported past 1 s ($out)"
[ $st -ne 0 ] && sed 's/^/# /' "$T/err" | head -n 20
out=$("$PROGS/deadlockstress" "$L" 8 3 4 --no-check 2>/dev/null)
diag "without detection: $out"
case $out in *" unreported=0 "*) bad=0 ;; *) bad=1 ;; esac
is "$bad" 1 "without detection cycles wait out their timeouts, which the checker reports: it can fail"

# ---- the command ----
t0=$(date +%s%N)
"$DIRLOCK" -d "$L" P -- sh -c "sleep 0.5; exec '$DIRLOCK' -d '$L' -w 5 Q -- echo first" >"$T/out1" 2>"$T/err1" &
"$DIRLOCK" -d "$L" Q -- sh -c "sleep 0.5; exec '$DIRLOCK' -d '$L' -w 5 P -- echo second" >"$T/out2" 2>"$T/err2" &
wait %1
st1=$?
wait %2
st2=$?
ms=$((($(date +%s%N) - t0) / 1000000))
diag "statuses $st1 $st2 after $ms ms; $(cat "$T/err1" "$T/err2")"
[ "$st1" = 4 ] || [ "$st2" = 4 ]
ok $? "P then Q against Q then P: a nested dirlock exits 4"
[ "$st1" = 0 ] || [ "$st2" = 0 ]
ok $? "... and the other one's command ran: $(cat "$T/out1" "$T/out2" | tr '\n' ' ')"
cmp_num "$ms" -lt 2000 "... at once, not at the 5 s timeout (${ms} ms)"
grep -q "deadlock: .* would wait for '[PQ]' held by pid [0-9]* on .* for its command, pid [0-9]*, which waits for '[PQ]'" "$T/err1" "$T/err2"
ok $? "with the cycle named"

t0=$(date +%s%N)
"$DIRLOCK" -d "$L" self -- "$DIRLOCK" -d "$L" -w 5 self -- true 2>"$T/err"
st=$?
ms=$((($(date +%s%N) - t0) / 1000000))
is "$st" 4 "a command asking for the lock its own dirlock holds for it exits 4"
cmp_num "$ms" -lt 1000 "... at once (${ms} ms): $(cat "$T/err")"
"$DIRLOCK" -d "$L" -n other -- "$DIRLOCK" -d "$L" -n other -- true 2>/dev/null
is "$?" 1 "with -n it is busy, as a try is"
