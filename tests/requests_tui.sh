#!/bin/sh
# The requests view (R) as a user sees it, in a tmux pane at 120x40 and at
# 80x24, against the simulator in batching mode with 4 slots and slow steps:
# of 8 users, 4 stream (a token every 200 ms, 4000 tokens: they never end
# during the test) and 4 wait in the server's queue. The table lists as many
# rows as the load line's in-flight figure; O reverses the order; / filters
# the rows; Enter on a streaming request shows its chunk count growing.
# Every wait polls the pane with a deadline; nothing sleeps blindly.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin

tui_sim --max-running 4 --step-time 200ms || exit 1

# The table's rows: a box border, a request number, the model.
ROW='^(│|\|) +[0-9]+ infertop-s'
rows() { screen | grep -Ec "$ROW"; }
ids() { screen | grep -E "$ROW" | awk '{print $2}' | tr '\n' ' '; }
inflight() { screen | sed -En '2s/.*in-flight ([0-9]+).*/\1/p'; }
chunks() { screen | sed -En 's/.* chunks ([0-9]+).*/\1/p' | head -1; }

run() { # COLS ROWS
	cols=$1
	lines=$2
	T kill-session -t tui 2>/dev/null
	tmux_session "$cols" "$lines" "$tmp" \
		"env TERM=screen-256color INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN -c 8 --output-tokens 4000 --metrics-url none -d 600s http://127.0.0.1:$port; echo \$? >$tmp/status"
	wait_for "${cols}x$lines: dashboard shows up" "Latency" 20 || return 1
	T send-keys -t tui R
	wait_for "${cols}x$lines: R opens the requests view, in-flight list" "in flight 8 " || return 1
	# All four past their first token: a request between its first event
	# and its first token is "prefill", which sorts before "streaming".
	i=0
	while [ $i -lt 200 ] && [ "$(screen | grep -c ' streaming ')" -lt 4 ]; do i=$((i + 1)); sleep 0.1; done
	[ "$(screen | grep -c ' streaming ')" -ge 4 ]
	check "${cols}x$lines: 4 requests stream" $?
	wait_for "${cols}x$lines: column heads" "MODEL +STATUS +TTFT ms +AGE ms .*GAP ms"
	wait_for "${cols}x$lines: load line in-flight 8" "in-flight 8[^0-9]"
	n=$(rows)
	f=$(inflight)
	[ "$n" = "$f" ] && [ "$n" -eq 8 ]
	check "${cols}x$lines: table rows ($n) = the load line's in-flight ($f)" $?
	# Nothing runs past the panel's right border.
	bad=$(screen | sed -n '3,$p' | grep -E "$ROW" | grep -Evc '(│|\|)$')
	[ "$bad" -eq 0 ]
	check "${cols}x$lines: rows end at the border" $?

	# Sorting: O reverses the order of the rows, o names the next column.
	before=$(ids)
	T send-keys -t tui O
	wait_for "${cols}x$lines: O: sorted descending" "sorted by number desc" || return 1
	after=$(ids)
	rev=$(echo "$before" | tr ' ' '\n' | sed '/^$/d' | sort -n -r | tr '\n' ' ')
	[ "$before" != "$after" ] && [ "$after" = "$rev" ]
	check "${cols}x$lines: O changes the row order ($before -> $after)" $?
	T send-keys -t tui o o
	wait_for "${cols}x$lines: o o: sorted by status" "sorted by status asc" || return 1
	first=$(screen | grep -E "$ROW" | head -1)
	echo "$first" | grep -q streaming
	check "${cols}x$lines: by status, streaming rows come first" $?

	# Filtering: / then text; the rows follow as it is typed.
	T send-keys -t tui / w a i t
	wait_for "${cols}x$lines: the filter prompt" "filter requests .*: wait_" || return 1
	T send-keys -t tui Enter
	wait_for "${cols}x$lines: filter kept" "4 of 8 in flight.*filter \"wait\"" || return 1
	n=$(rows)
	w=$(screen | grep -E "$ROW" | grep -c waiting)
	[ "$n" -eq 4 ] && [ "$w" -eq 4 ]
	check "${cols}x$lines: /wait keeps the 4 waiting rows ($n)" $?
	T send-keys -t tui Escape
	wait_for "${cols}x$lines: Esc clears the filter" "8 of 8 in flight" || return 1
	T send-keys -t tui / z z z Enter
	wait_for "${cols}x$lines: a filter nothing matches" "no request matches the filter" || return 1
	[ "$(rows)" -eq 0 ]
	check "${cols}x$lines: no rows for /zzz" $?
	T send-keys -t tui Escape / s t r e a m Enter
	wait_for "${cols}x$lines: /stream" "4 of 8 in flight" || return 1

	# Enter opens the selected (first) streaming request; its chunks grow.
	T send-keys -t tui Enter
	wait_for "${cols}x$lines: Enter opens a request in flight" "Request [0-9]+ in flight" || return 1
	wait_for "${cols}x$lines: detail: status and chunks" "streaming .* chunks [0-9]+"
	wait_for "${cols}x$lines: detail: timeline" "first byte .* first token .* now"
	wait_for "${cols}x$lines: detail: the strip chart of chunk gaps" "chunk gaps ms, the last [0-9]+"
	c1=$(chunks)
	i=0
	c2=$c1
	while [ $i -lt 100 ] && [ "${c2:-0}" -le "${c1:-0}" ]; do
		i=$((i + 1))
		sleep 0.1
		c2=$(chunks)
	done
	[ -n "$c1" ] && [ "${c2:-0}" -gt "$c1" ]
	check "${cols}x$lines: the chunk count grows while it streams ($c1 -> $c2)" $?
	T send-keys -t tui Escape
	wait_for "${cols}x$lines: Esc: back to the list" "4 of 8 in flight" || return 1
	T send-keys -t tui R
	wait_for "${cols}x$lines: R again: back to the overview" "Latency client" || return 1
	T send-keys -t tui q q
}

run 120 40
run 80 24

tui_sanitizer_check
echo "$fails failed"
[ "$fails" -eq 0 ]
