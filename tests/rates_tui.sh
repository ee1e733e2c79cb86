#!/bin/sh
# Every output tok/s on the dashboard says its window: the load line's
# rates are over the sliding window ("790 out tok/s (30 s)", the run so
# far while it is shorter), the output tok/s chart's figure over the last
# second ("output tok/s 793 (1 s)"), so the two are never read as one
# figure. At 80x24, 120x40 and 200x60 under --demo (--window 10s), every
# tok/s figure on the screen is followed by its window. Every wait polls
# the pane with a deadline. Exit 77 (skip) without tmux.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin

figure='[0-9][0-9.]*[kM]?'
for size in 80x24 120x40 200x60; do
	cols=${size%x*}
	rows=${size#*x}
	T kill-session -t tui 2>/dev/null
	tmux_session "$cols" "$rows" "$tmp" \
		"env XDG_CONFIG_HOME=$tmp/xdg INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN --demo --window 10s -d 60s"
	wait_for "$size: the run is a few seconds old" 'running +00:00:0[4-9]' 20 || continue
	wait_for "$size: the load line's output rate over its window" "^ .*$figure out t(ok)?/s \\([0-9]+ s\\)" 10
	wait_for "$size: the chart's over the last second" "─ output tok/s $figure \\(1 s\\)" 10
	# Every "out/output/total tok/s" on the screen has its window after
	# it (the server panel's "gen tok/s" is a label, its value after).
	screen >"$tmp/screen"
	all=$(grep -Eo '(out|output|tot|total) t(ok)?/s' "$tmp/screen" | wc -l)
	said=$(grep -Eo "$figure (out|tot|total) t(ok)?/s \\([0-9]+ (s|min)\\)|output tok/s $figure \\(1 s\\)" "$tmp/screen" | wc -l)
	[ "$all" -ge 2 ] && [ "$all" -eq "$said" ]
	check "$size: each of the $all tok/s figures says its window ($said do)" $? || cat "$tmp/screen"
	# Once the run is past the window, the load line says the window.
	wait_for "$size: past 10 s, the window is 10 s" "^ .*$figure out t(ok)?/s \\(10 s\\)" 20
done
T kill-session -t tui 2>/dev/null
tui_sanitizer_check
[ "$fails" -eq 0 ]
