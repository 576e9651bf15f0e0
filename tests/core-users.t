#!/bin/bash
# core-users.t - one lock directory shared by two real users, root and
# nobody (setpriv), set up the two ways docs/sharing.md describes:
#   - sticky and world-writable (like /run/lock): neither user may remove
#     the other's entries, so a stale lock of the other user is reported
#     (DIRLOCK_EPERM, naming the owner), never taken or read beside;
#   - a setgid directory of a group both belong to: the library gives the
#     directories it makes the same permissions, so either user breaks the
#     other's stale lock and readers of both share a lock.
# Needs root (to become nobody); skipped otherwise.
. "$(dirname "$0")/tap.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
	echo "1..0 # SKIP needs root, setpriv and the user nobody"
	exit 0
fi
plan 11
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
chmod 711 "$T"
EPERM=14 # DIRLOCK_EPERM

# ---- sticky, world-writable -------------------------------------------
S="$T/sticky"
mkdir "$S" && chmod 1777 "$S"
"$PROGS/lockworker" hold "$S" w 2.5 0.3 >"$T/root-w" & # never refreshes
rp=$!
sleep 0.7 # stale by now, but root's: nobody may not unlink its entry
as_nobody "$DIRLOCK" -d "$S" -s -w 1 --stale 0.3 w -- true 2>"$T/err"
st=$?
is "$st" 2 "sticky: nobody's reader is refused beside root's stale writer (status 2)"
grep -q "may not break" "$T/err"
ok $? "... with a message naming the owner: $(cat "$T/err")"
read -r code ms <<<"$(as_nobody "$PROGS/lockworker" wait "$S" w 1 0.3)"
is "$code" $EPERM "sticky: nobody's writer gets DIRLOCK_EPERM, not the lock"
wait $rp
is "$(tail -1 "$T/root-w")" released "sticky: root's lock was never broken (released, not lost)"
as_nobody "$PROGS/lockworker" hold "$S" n 2 0.3 >"$T/nobody-n" &
np=$!
sleep 0.7
read -r code ms <<<"$("$PROGS/lockworker" wait "$S" n 1 0.3)"
wait $np
is "$code/$(tail -1 "$T/nobody-n")" "0/lost" "sticky: root may break nobody's stale lock, and nobody learns it lost it"

# ---- setgid group directory ---------------------------------------------
G="$T/group"
mkdir "$G" && chgrp nogroup "$G" && chmod 2770 "$G"
"$PROGS/lockworker" hold "$G" w 2 0.3 >"$T/root-gw" &
rp=$!
sleep 0.7
read -r code ms <<<"$(as_nobody "$PROGS/lockworker" wait "$G" w 1 0.3)"
wait $rp
is "$code/$(tail -1 "$T/root-gw")" "0/lost" "group: nobody breaks root's stale lock, and root learns it lost it"
"$DIRLOCK" -d "$G" -s r -- sleep 1.5 &
rp=$!
sleep 0.3
as_nobody "$DIRLOCK" -d "$G" -s -n r -- true 2>"$T/err"
is "$?" 0 "group: readers of both users share a lock $(cat "$T/err")"
as_nobody "$DIRLOCK" -d "$G" -n r -- true 2>/dev/null
is "$?" 1 "group: ... and nobody's writer is held off by root's reader"
wait $rp
is "$(ls -A "$G" | grep -v '\.fence$')" "r.readers" "group: nothing is left behind (but the fence counter, and the readers' directory kept for the next reader)"
is "$(ls -A "$G/r.readers")" "" "group: ... which is empty"
"$DIRLOCK" -d "$G" -s r -- sh -c 'stat -c %a "'"$G"'/r.readers"' >"$T/mode"
is "$(cat "$T/mode")" 2770 "group: the readers' directory gets the lock directory's permissions"
