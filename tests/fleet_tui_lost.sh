#!/bin/sh
# The fleet's dashboard over a --start run, in a tmux pane: the generators
# panel's title says how many generators the run was planned on and at
# what load; kill -9 of one of the three `infertop serve` generators is
# said there ("1 LOST"), the fleet's end names the missing result, and
# after q it exits 5 with the loss in its -o file. Every wait polls with a
# deadline.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed: skipped"; exit 77; }
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin
pids=""
tui_end_more() { for p in $pids; do kill -9 "$p" 2>/dev/null; done; }
wait_file() { # FILE PATTERN
	i=0
	while [ $i -lt 100 ] && ! grep -q -- "$2" "$1" 2>/dev/null; do i=$((i + 1)); sleep 0.1; done
	grep -q -- "$2" "$1" 2>/dev/null
}
api_of() { sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$1"; }

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 20ms --itl 5ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
pids="$pids $!"
wait_file "$tmp/sim.out" "listening on"
simport=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
for n in 1 2 3; do
	mkdir -p "$tmp/res$n"
	"$INFERTOP_BIN" serve --listen 127.0.0.1:0 --results-dir "$tmp/res$n" >"$tmp/s$n.out" 2>"$tmp/s$n.err" &
	eval "spid$n=$!"
	pids="$pids $!"
	wait_file "$tmp/s$n.err" "control API on"
done
u1=$(api_of "$tmp/s1.err"); u2=$(api_of "$tmp/s2.err"); u3=$(api_of "$tmp/s3.err")
[ -n "$u1" ] && [ -n "$u2" ] && [ -n "$u3" ]
check "three serve generators listen" $?

tmux_session 150 45 "$tmp" "env TERM=screen-256color INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN fleet --targets $u1,$u2,$u3 --expect 3 -o $tmp/fleet.json --start -c 12 -d 8s --output-tokens 20 --metrics-url none http://127.0.0.1:$simport; echo \$? >$tmp/status"
wait_for "the dashboard shows up" "Latency" 20 || exit 1
wait_for "the panel title: planned 3 at c=12" "Generators.*planned 3 at c=12" 15
i=0
while [ $i -lt 150 ] && [ "$(screen | grep -Ec "127\.0\.0\.1:[0-9]+ +running")" -lt 3 ]; do i=$((i + 1)); sleep 0.1; done
n=$(screen | grep -Ec "127\.0\.0\.1:[0-9]+ +running")
[ "$n" -eq 3 ]
check "three generator rows, running ($n)" $?
kill -9 "$spid2"
wait_for "kill -9: the panel title says 1 LOST" "Generators.*planned 3 at c=12, 1 LOST" 15
wait_for "its row says lost" "127\.0\.0\.1:${u2##*:} +lost" 5
# The runs end (8 s); the lost one's result is given up 30 s after its
# last answer; the fleet then says so and waits for q.
wait_for "the end names the missing result" "see the messages about" 60
T send-keys -t tui q
i=0
while [ $i -lt 100 ] && [ ! -s "$tmp/status" ]; do i=$((i + 1)); sleep 0.1; done
[ "$(cat "$tmp/status" 2>/dev/null)" = 5 ]
check "after q the fleet exits 5 ($(cat "$tmp/status" 2>/dev/null))" $?
python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))["infertop"]["fleet"]
sys.exit(0 if f["generators_planned"] == 3 and [g["generator"] for g in f["generators_lost"]] == [sys.argv[2]] else 1)' \
	"$tmp/fleet.json" "$u2"
check "-o records the lost generator" $?
tui_sanitizer_check
[ "$fails" -eq 0 ]
