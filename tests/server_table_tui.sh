#!/bin/sh
# The server view's quantile table stays a table whatever the bucket
# bounds look like: with the simulator's TTFT fixed at 800 ms the cells
# read "0.75-1 s" (E2E "2.5-5 s"), wider than the old fixed 8-column
# pitch, which ran them into each other ("0.75-1 s0.75-1 s"). Each row
# must be its name then three cells, two spaces apart at least, and every
# cell a whole value or one cut with a marker, at 80x24, 120x40 and
# 200x60 and with the vllm, sglang and tgi profiles. Every wait polls the
# pane with a deadline. Exit 77 (skip) without tmux.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin

# A cell: a dash, a number, bucket bounds (in ms, or in s with " s"), or
# something cut short with an ellipsis.
cell='(–|-|[0-9.]+|<=[0-9.]+( s)?|>[0-9.]+( s)?|[0-9.]+-[0-9.]+( s)?|[^ ]*…)'
row="^│ (TTFT|ITL|E2E|queue) +$cell {2,}$cell {2,}$cell( |│)"

for profile in vllm sglang tgi; do
	[ -n "$simpid" ] && kill "$simpid" 2>/dev/null
	rm -f "$tmp/sim.out"
	"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --profile "$profile" --timing fixed --ttft 800ms --itl 20ms \
		>"$tmp/sim.out" 2>"$tmp/sim.err" &
	simpid=$!
	i=0
	while [ $i -lt 100 ] && ! grep -q "listening on" "$tmp/sim.out" 2>/dev/null; do i=$((i + 1)); sleep 0.1; done
	port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
	[ -n "$port" ]
	check "$profile: the simulator listens" $? || exit 1
	sizes="120x40"
	[ "$profile" = vllm ] && sizes="80x24 120x40 200x60"
	for size in $sizes; do
		cols=${size%x*}
		rows=${size#*x}
		T kill-session -t tui 2>/dev/null
		tmux_session "$cols" "$rows" "$tmp" \
			"env XDG_CONFIG_HOME=$tmp/xdg INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN -c 4 -d 60s http://127.0.0.1:$port"
		for view in latency histogram server; do
			T send-keys -t tui v
			wait_for "$profile $size: the $view view" " $view [|│] "
		done
		# Once requests finished, their E2E bucket (seconds) is on the
		# table, and TTFT's where the profile exports it (tgi does not).
		wait_for "$profile $size: E2E p99 in its bucket" "^│ E2E .*[0-9] s" 20
		[ "$profile" = tgi ] || wait_for "$profile $size: TTFT p99 in its bucket" "^│ TTFT .*0\.75-1 s" 20
		screen | grep -E '^│ (TTFT|ITL|E2E|queue) ' >"$tmp/rows"
		n=$(wc -l <"$tmp/rows")
		bad=$(grep -Evc -- "$row" "$tmp/rows")
		[ "$n" -eq 4 ] && [ "$bad" -eq 0 ]
		check "$profile $size: four rows, three separate cells each" $? || { cat "$tmp/rows"; screen; }
	done
done
T kill-session -t tui 2>/dev/null
tui_sanitizer_check
[ "$fails" -eq 0 ]
