#!/bin/sh
# The replicas panel: three simulators given as three --metrics-url, the
# server view shows one row per replica (host:port, up, figures), "3 of 3
# read" and the imbalance; a replica killed is shown down while the
# others stay up. Every wait polls the pane with a deadline. Exit 77
# (skip) without tmux.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin
pids=""
tui_end_more() { for p in $pids; do kill "$p" 2>/dev/null; done; }
mkdir -p "$tmp/xdg"

for n in 0 1 2; do
	"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 5ms --itl 5ms >"$tmp/sim$n.out" 2>"$tmp/sim$n.err" &
	pids="$pids $!"
	eval "sim${n}pid=$!"
	k=0
	while [ $k -lt 100 ] && ! grep -q "listening on" "$tmp/sim$n.out" 2>/dev/null; do k=$((k + 1)); sleep 0.1; done
	eval "p$n=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim$n.out")"
done
# shellcheck disable=SC2154
[ -n "$p0" ] && [ -n "$p1" ] && [ -n "$p2" ]
check "three simulators listen" $? || exit 1

tmux_session 120 40 "$tmp" \
	"env XDG_CONFIG_HOME=$tmp/xdg INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN -c 2 -d 60s \
	--metrics-interval 200ms --metrics-url http://127.0.0.1:$p0/metrics --metrics-url http://127.0.0.1:$p1/metrics \
	--metrics-url http://127.0.0.1:$p2/metrics http://127.0.0.1:$p0"
wait_for "the server is scraped" "run [0-9]+ .*3 of 3|srv"
# v cycles the views: overview, latency, histogram, server.
for view in latency histogram server; do
	T send-keys -t tui v
	wait_for "the $view view" " $view [|│] "
done
wait_for "the replicas panel: 3 of 3 read" "Replicas.*3 of 3 read"
wait_for "the imbalance line" "imbalance \(max/mean of running\+waiting\) +[0-9.]+"
rows=$(screen | grep -cE "[│|] *[123] 127\.0\.0\.1:($p0|$p1|$p2) +up ")
[ "$rows" -eq 3 ]
check "three replica rows, each up ($rows)" $?
# shellcheck disable=SC2154
kill "$sim2pid"
wait_for "the killed replica is shown down" "3 127\.0\.0\.1:$p2 +down " 30
wait_for "the others still read: 2 of 3" "Replicas.*2 of 3 read" 30
rows=$(screen | grep -cE "[│|] *[12] 127\.0\.0\.1:($p0|$p1) +up ")
[ "$rows" -eq 2 ]
check "the two others stay up ($rows)" $?
T kill-session -t tui 2>/dev/null
tui_sanitizer_check
[ "$fails" -eq 0 ]
