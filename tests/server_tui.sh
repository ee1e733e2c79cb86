#!/bin/sh
# The server's latency quantiles on screen are what its /metrics buckets
# say, never a number interpolated inside a bucket: with the simulator's
# TTFT fixed at 50 ms, vLLM's buckets put every TTFT in (40, 60] ms, so the
# server view reads "40-60" where it used to read "50 (40-60)" (and the
# overview's "srv TTFT p99 40-60 ms"), at 80x24, 120x40 and 200x60. Every
# wait polls the pane with a deadline. Exit 77 (skip) without tmux.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin

tui_sim --timing fixed --ttft 50ms --no-prefix-caching || exit 1

for size in 80x24 120x40 200x60; do
	cols=${size%x*}
	rows=${size#*x}
	T kill-session -t tui 2>/dev/null
	tmux_session "$cols" "$rows" "$tmp" \
		"env XDG_CONFIG_HOME=$tmp/xdg INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN -c 2 -d 60s $url"
	wait_for "$size: the server is scraped" "srv TTFT p[^ ]* +40-60"
	if [ "$cols" -ge 120 ]; then
		wait_for "$size: overview's server TTFT p99 is its bucket" 'srv TTFT p99 +40-60 ms'
	fi
	# v cycles the views: overview, latency, histogram, server.
	for view in latency histogram server; do
		T send-keys -t tui v
		wait_for "$size: the $view view" " $view [|│] "
	done
	wait_for "$size: server TTFT p50, p90, p99 as the bucket" 'TTFT +40-60 +40-60 +40-60'
	screen | grep -Eq '[0-9] \([0-9.]+-[0-9.]+\)'
	[ $? -ne 0 ]
	check "$size: no interpolated value beside its bucket" $?
done
T kill-session -t tui 2>/dev/null
tui_sanitizer_check
[ "$fails" -eq 0 ]
