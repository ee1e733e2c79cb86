#!/bin/sh
# The latency histograms say what their rows are: each label is the
# row's upper edge, written "≤ 10.0" (the zero row "= 0"), and the p50
# and p90 marks sit on bars of their own unless the two are equal (then
# one row says "p50 p90"), at 80x24, 120x40 and 200x60. The exact-zero
# row is tested in test_ui (test_hist_zero_row). Every wait polls the
# pane with a deadline. Exit 77 (skip) without tmux.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin

for size in 80x24 120x40 200x60; do
	cols=${size%x*}
	rows=${size#*x}
	T kill-session -t tui 2>/dev/null
	tmux_session "$cols" "$rows" "$tmp" \
		"env XDG_CONFIG_HOME=$tmp/xdg INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN --demo -d 60s"
	for view in latency histogram; do
		T send-keys -t tui v
		wait_for "$size: the $view view" " $view [|│] "
	done
	wait_for "$size: ITL histogram with its p50" '◀ p50' 20
	screen >"$tmp/screen"
	# Histogram rows: "│ <label>│■■■ <count>"; every label an upper edge.
	grep -E '^│ +[^ │]+( [^ │]+)?│[■ ]' "$tmp/screen" >"$tmp/rows"
	n=$(wc -l <"$tmp/rows")
	bad=$(grep -Evc '^│ +(≤ [0-9.]+s?|= 0)│' "$tmp/rows")
	[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
	check "$size: $n rows, each labelled as its upper edge" $? || cat "$tmp/screen"
	# p50 and p90 share a row only when the title gives them one value.
	ok=0
	grep -E '^╭─ (TTFT|ITL|E2E) client' "$tmp/screen" | sed 's/.*p50 \([^ ]*\) p90 \([^ ]*\) .*/\1 \2/' >"$tmp/p"
	if grep -q 'p50 p90' "$tmp/screen" && ! awk '$1 == $2 { f = 1 } END { exit !f }' "$tmp/p"; then
		ok=1
	fi
	[ "$ok" -eq 0 ]
	check "$size: p50 and p90 on bars of their own" $? || cat "$tmp/screen"
done
T kill-session -t tui 2>/dev/null
tui_sanitizer_check
[ "$fails" -eq 0 ]
