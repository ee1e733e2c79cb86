#!/bin/sh
# The fleet's dashboard as a user sees it, in a tmux pane: three generators
# (--listen runs against the simulator) shown as one run with a generators
# panel; + raises the fleet's total target by one and the generators' own
# targets sum to it; kill -9 of one marks it lost while the run goes on;
# q stops every generator. Every wait polls with a deadline.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
command -v curl >/dev/null 2>&1 || { echo "curl not installed: skipped"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed: skipped"; exit 77; }

# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin
pids=""
tui_end_more() { for p in $pids; do kill -9 "$p" 2>/dev/null; done; }
tok="fleet-tui-token-77c2a1"
export INFERTOP_FLEET_TUI_TOKEN="$tok"

wait_file() { # FILE PATTERN
	i=0
	while [ $i -lt 100 ] && ! grep -q -- "$2" "$1" 2>/dev/null; do i=$((i + 1)); sleep 0.1; done
	grep -q -- "$2" "$1" 2>/dev/null
}
api_of() { sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$1"; }
target_of() { # URL: the generator's own concurrency target
	curl -s -H "Authorization: Bearer $tok" "$1/v1/status" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["infertop"]["state"]["concurrency"])'
}

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 20ms --itl 5ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
pids="$pids $!"
wait_file "$tmp/sim.out" "listening on"
simport=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
mkdir -p "$tmp/gensnap"
for n in 1 2 3; do
	"$INFERTOP_BIN" --no-tui -q --listen 127.0.0.1:0 --listen-token-env INFERTOP_FLEET_TUI_TOKEN -c 2 -d 120s \
		--snapshot-dir "$tmp/gensnap" \
		--output-tokens 20 --metrics-url none "http://127.0.0.1:$simport" >"$tmp/g$n.out" 2>"$tmp/g$n.err" &
	eval "gpid$n=$!"
	pids="$pids $!"
	wait_file "$tmp/g$n.err" "control API on"
done
u1=$(api_of "$tmp/g1.err"); u2=$(api_of "$tmp/g2.err"); u3=$(api_of "$tmp/g3.err")
[ -n "$u1" ] && [ -n "$u2" ] && [ -n "$u3" ]
check "three generators listen" $?

# A tmux server still exiting may refuse the session ("server exited
# unexpectedly"): try again on a new one, as tui.sh does.
for try in 1 2 3; do
	T new-session -d -s tui -x 140 -y 45 -c "$tmp" \
		"env TERM=screen-256color INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN fleet --targets $u1,$u2,$u3 --token-env INFERTOP_FLEET_TUI_TOKEN -o $tmp/fleet.json; echo \$? >$tmp/status" &&
		break
	T kill-server 2>/dev/null
	rm -f "$tmp/tmux.sock"
done
T set-option -t tui remain-on-exit on >/dev/null

wait_for "the dashboard shows up" "Latency" 20 || exit 1
wait_for "header: the generators' target and model" "infertop +http://127\.0\.0\.1:$simport +model infertop-sim"
wait_for "the merged load: target 6 (3 x 2)" "target 6[^0-9]"
wait_for "latency rows with live numbers" "TTFT +[0-9]"
wait_for "the generators panel" "Generators.*3 runs, 3 in the totals"
n=$(screen | grep -Ec "127\.0\.0\.1:[0-9]+ +running")
[ "$n" -eq 3 ]
check "three generator rows, running ($n)" $?

T send-keys -t tui +
wait_for "+: the fleet's total target is 7" "target 7[^0-9]"
i=0
while [ $i -lt 50 ]; do
	t=$(( $(target_of "$u1") + $(target_of "$u2") + $(target_of "$u3") ))
	[ "$t" -eq 7 ] && break
	i=$((i + 1)); sleep 0.1
done
[ "$t" -eq 7 ] && [ "$(target_of "$u1")" -eq 3 ]
check "the generators' own targets sum to 7, the remainder to the first ($(target_of "$u1")+$(target_of "$u2")+$(target_of "$u3"))" $?
wait_for "the panel shows the split" "c=3 .*" 5

# s: the merged state, each generator's last status beside it.
T send-keys -t tui s
wait_for "s: the fleet snapshot is written" "fleet snapshot written to" 5
ls "$tmp"/infertop-*.json >/dev/null 2>&1 && [ "$(ls "$tmp"/infertop-*-gen-*.json | wc -l)" -eq 3 ]
check "a fleet snapshot: the merge and three generators' own statuses" $?
i=0
while [ $i -lt 50 ] && [ "$(ls "$tmp"/gensnap/*.json 2>/dev/null | wc -l)" -lt 3 ]; do i=$((i + 1)); sleep 0.1; done
[ "$(ls "$tmp"/gensnap/*.json 2>/dev/null | wc -l)" -eq 3 ]
check "and each generator wrote its own snapshot where it runs" $?

done_before=$(screen | sed -En 's/.*(done|ok) ([0-9]+).*/\2/p' | head -1)
kill -9 "$gpid3"
wait_for "kill -9: its row says lost" "127\.0\.0\.1:${u3##*:} +lost" 10
n=$(screen | grep -Ec "127\.0\.0\.1:[0-9]+ +running")
[ "$n" -eq 2 ]
check "the two others still run ($n)" $?
wait_for "the panel still counts the lost run" "3 runs, 3 in the totals"

# q, as on a single run: every generator is stopped, and the fleet ends
# once their runs are over (a run whose process exits is gone: lost).
T send-keys -t tui q
wait_for "q: the stop went to the generators" "stop: sent to 2 generators" 5
i=0
while [ $i -lt 300 ] && [ ! -s "$tmp/status" ]; do i=$((i + 1)); sleep 0.1; done
[ "$(cat "$tmp/status" 2>/dev/null)" = 0 ] && [ -s "$tmp/fleet.json" ]
check "the fleet ends with status 0, -o written" $?
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["infertop"]["run"]["runs"] == 3 and d["completed"] > 0 else 1)' "$tmp/fleet.json"
check "-o is the merge of the three runs" $?
: "$done_before"
! T capture-pane -p -S - -t tui | grep -q "$tok"
check "the token is never on the screen" $?

tui_sanitizer_check
[ "$fails" -eq 0 ]
