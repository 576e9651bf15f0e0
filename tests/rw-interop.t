#!/bin/sh
# rw-interop.t - the command line: `dirlock NAME -- cmd` and
# `dirlock -s NAME -- cmd` exclude each other; two -s share.
# shellcheck source=tests/rw-lib.sh
. "$(dirname "$0")/rw-lib.sh"
echo "1..4"
if [ ! -x "$DIRLOCK" ]; then
	for k in 1 2 3 4; do echo "ok $k # SKIP bin/dirlock not built"; done
	exit 0
fi
"$DIRLOCK" -d "$T" -s n -- sleep 1 &
sleep 0.3
"$DIRLOCK" -d "$T" -n -q n -- true; [ $? -ne 0 ]; ok $? "a shared holder keeps 'dirlock NAME' out"
"$DIRLOCK" -d "$T" -n -s n -- true; ok $? "two 'dirlock -s NAME' share"
wait
"$DIRLOCK" -d "$T" n -- sleep 1 &
sleep 0.3
"$DIRLOCK" -d "$T" -n -q -s n -- true; [ $? -ne 0 ]; ok $? "an exclusive holder keeps 'dirlock -s NAME' out"
wait
"$DIRLOCK" -d "$T" --intent n -- sleep 1 &
sleep 0.3
"$DIRLOCK" -d "$T" -n -s n -- true; ok $? "'dirlock --intent NAME' lets readers in"
wait
[ "$fails" -eq 0 ]
