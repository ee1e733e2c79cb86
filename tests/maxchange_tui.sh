#!/bin/sh
# A typo must not flood the target: on the dashboard, `c 300 Enter` at
# -c 2 (over --max-change: 4x the current, or +256) asks on the bottom
# line instead of applying; `n` keeps the load, `y` applies it; within the
# limit `c` applies at once; eight `]` from 2 ask at 512 (the limit counts
# from the lowest load of the last 10 s); with --max-change 0 nothing asks. At 80x24,
# 120x40 and 200x60, against the simulator. Every wait polls the pane
# with a deadline. Exit 77 (skip) without tmux.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin

tui_sim || exit 1

start() { # COLS ROWS ARGS...
	cols=$1
	rows=$2
	shift 2
	T kill-session -t tui 2>/dev/null
	tmux_session "$cols" "$rows" "$tmp" \
		"env XDG_CONFIG_HOME=$tmp/xdg INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN $*"
}

for size in 80x24 120x40 200x60; do
	start "${size%x*}" "${size#*x}" -c 2 -d 60s "$url"
	wait_for "$size: running at 2" "target 2[^0-9]"
	T send-keys -t tui c 3 0 0 Enter
	wait_for "$size: c 300 asks first" "apply\? y/n: concurrency 300 is over 4x the current 2 "
	screen | grep -Eq "target 300"
	[ $? -ne 0 ]
	check "$size: not applied while asking" $?
	T send-keys -t tui n
	wait_for "$size: n keeps the load" "not applied: concurrency stays 2"
	screen | grep -Eq "target 2[^0-9]"
	check "$size: target still 2" $?
	T send-keys -t tui c 8 Enter
	wait_for "$size: c 8 within the limit applies at once" "target 8[^0-9]"
	T send-keys -t tui c 3 0 0 Enter
	wait_for "$size: c 300 from 8 asks" "apply\? y/n"
	T send-keys -t tui y
	wait_for "$size: y applies it" "target 300[^0-9]"
done

# Repeated ]: each doubles, but the limit counts from the lowest load of
# the last 10 s, so 2 -> 256 goes through and 512 asks.
start 120 40 -c 2 -d 60s "$url"
wait_for "]: running at 2" "target 2[^0-9]"
for k in 1 2 3 4 5 6 7 8; do T send-keys -t tui ']'; done
wait_for "] x8: 512 from 2 within 10 s asks" "apply\? y/n: concurrency 512 is over 4x 2 \(lowest in 10 s\)"
T send-keys -t tui n
wait_for "] x8, n: the load stays 256" "not applied: concurrency stays 256"

start 120 40 -c 2 -d 60s --max-change 0 "$url"
wait_for "--max-change 0: running at 2" "target 2[^0-9]"
T send-keys -t tui c 3 0 0 Enter
wait_for "--max-change 0: c 300 applies at once" "target 300[^0-9]"
T kill-session -t tui 2>/dev/null
tui_sanitizer_check
[ "$fails" -eq 0 ]
