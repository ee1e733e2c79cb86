#!/bin/sh
# Chart titles give current values: the server's queue as its gauge reads
# now, and once /metrics stops answering the last figure is marked
# "stale" (or is a dash), never shown as if live; the output tok/s
# chart says its figure is over the last second ("(1 s)"), beside the
# load line's window figure. At 80x24, 120x40 and 200x60: a simulator
# is the target, a second one serves /metrics and is killed mid-run.
# Every wait polls the pane with a deadline. Exit 77 (skip) without tmux.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin
metpid=""
tui_end_more() { [ -n "$metpid" ] && kill "$metpid" 2>/dev/null; }
mkdir -p "$tmp/xdg"

# start_sim OUTFILE: a fixed-timing simulator; prints its port.
start_sim() {
	"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 20ms --itl 10ms >"$1" 2>"$1.err" &
	i=0
	while [ $i -lt 100 ] && ! grep -q "listening on" "$1" 2>/dev/null; do i=$((i + 1)); sleep 0.1; done
}

start_sim "$tmp/sim.out"
simpid=$!
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
[ -n "$port" ]
check "the target simulator listens" $? || exit 1

for size in 80x24 120x40 200x60; do
	cols=${size%x*}
	rows=${size#*x}
	rm -f "$tmp/met.out"
	start_sim "$tmp/met.out"
	metpid=$!
	mport=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/met.out")
	T kill-session -t tui 2>/dev/null
	tmux_session "$cols" "$rows" "$tmp" \
		"env XDG_CONFIG_HOME=$tmp/xdg INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN -c 2 -d 60s --metrics-url http://127.0.0.1:$mport/metrics --metrics-interval 200ms http://127.0.0.1:$port"
	# The metrics simulator has no load: its queue is 0, and live.
	wait_for "$size: the queue's current value" '─ server queue 0 ─' 20
	wait_for "$size: output tok/s over the last second" '─ output tok/s [0-9.k]+ \(1 s\)' 20
	kill "$metpid"
	wait "$metpid" 2>/dev/null
	metpid=""
	wait_for "$size: once /metrics is gone the queue is stale" '─ server queue (0 stale|–) ─' 20
	screen | grep -Eq '─ server queue 0 ─'
	[ $? -ne 0 ]
	check "$size: no live-looking queue figure left" $?
done
T kill-session -t tui 2>/dev/null
tui_sanitizer_check
[ "$fails" -eq 0 ]
