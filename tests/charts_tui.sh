#!/bin/sh
# The charts' axes read at a glance: time ticks at nice values (a 1-2-5
# step, or 30) in one unit per axis, never the quarter points of the
# run's odd length (-27s -20s -14s -7s), and every chart keeps its value
# scale ("0…200") however long its title, at 80x24, 120x40 and 200x60.
# The run is sampled while it grows (6 s to 14 s), when its span is
# rarely a round number. Every wait polls the pane with a deadline. Exit
# 77 (skip) without tmux.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin

# axis_ok FILE: every bottom border with "now" has ticks in one unit, all
# multiples of the nearest one to now, whose step is 1, 2, 3 or 5 times a
# power of ten.
axis_ok() {
	grep -E '^╰.*now─╯' "$1" | awk '
	{
		n = 0; unit = ""; line = $0
		while (match(line, /-[0-9]+[smh]/)) {
			tok = substr(line, RSTART + 1, RLENGTH - 1)
			line = substr(line, RSTART + RLENGTH)
			u = substr(tok, length(tok)); v = substr(tok, 1, length(tok) - 1) + 0
			if (unit != "" && u != unit) { print "two units: " $0; bad = 1 }
			unit = u; val[++n] = v
		}
		if (n == 0) next
		step = val[n]; m = step
		while (m % 10 == 0) m /= 10
		if (m != 1 && m != 2 && m != 3 && m != 5) { print "step " step ": " $0; bad = 1 }
		for (i = 1; i <= n; i++) if (val[i] % step) { print "not a multiple: " $0; bad = 1 }
		seen = 1
	}
	END { exit (bad || !seen) }'
}

for size in 80x24 120x40 200x60; do
	cols=${size%x*}
	rows=${size#*x}
	T kill-session -t tui 2>/dev/null
	tmux_session "$cols" "$rows" "$tmp" \
		"env XDG_CONFIG_HOME=$tmp/xdg INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN --demo -d 60s"
	wait_for "$size: a chart with its time axis" '^╰.*-[0-9]+s.*now─╯' 20
	# Sampled a few times as the run grows: its span changes each second.
	for k in 1 2 3 4; do
		wait_for "$size: the run passes $((4 + 2 * k)) s" "running +00:00:(0[$((4 + 2 * k))-9]|1)" 20
		screen >"$tmp/screen"
		axis_ok "$tmp/screen"
		check "$size ($k): nice ticks in one unit" $? || cat "$tmp/screen"
		# Every chart title (a box corner, a title, a value) keeps its scale.
		bad=$(grep -E '^╭─ (output tok/s|server queue|server KV|in flight|TTFT|ITL|req/s)' "$tmp/screen" | tr '╮' '\n' |
			grep -E '─ (output tok/s|server queue|server KV|in flight|TTFT|ITL|req/s)' | grep -Evc ' 0…[0-9.]+[kM]?( ?[a-z%]+)? ─?')
		[ "$bad" -eq 0 ]
		check "$size ($k): every chart keeps its value scale" $? || cat "$tmp/screen"
	done
done
T kill-session -t tui 2>/dev/null
tui_sanitizer_check
[ "$fails" -eq 0 ]
