#!/bin/sh
# Console details a user trips over, in a tmux pane at 80x24, 120x40 and
# 200x60 against the simulator:
# - the requests view: the selected request keeps its row when it finishes
#   (marked finished) and Enter opens that request, not the next one;
# - the plan view of a finished sweep: no stale live row, titled
#   "Plan: done, N steps";
# - --demo's GPU view shows the simulator's GPU and J/token.
# Every wait polls the pane with a deadline; nothing sleeps blindly.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin

tui_sim --max-running 8 --step-time 100ms || exit 1

ROW='^(│|\|) +[0-9]+ infertop-s'
ids() { screen | grep -E "$ROW" | awk '{print $2}' | tr '\n' ' '; }
# The row of request $1, "" when it is not listed.
row_of() { screen | grep -E "$ROW" | awk -v id="$1" '$2 == id'; }
# The number of the selected (reverse video) row, "" when none.
sel_id() {
	T capture-pane -p -e -t tui | grep -E "$(printf '\033')\\[([0-9;]*;)?7[;m]" |
		sed "s/$(printf '\033')\\[[0-9;]*m//g" | grep -E "$ROW" | awk '{print $2}' | head -1
}

session() { # COLS ROWS ARGS...
	c=$1
	l=$2
	shift 2
	T kill-session -t tui 2>/dev/null
	rm -f "$tmp/status"
	tmux_session "$c" "$l" "$tmp" \
		"env TERM=screen-256color INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN --metrics-url none $* http://127.0.0.1:$port; echo \$? >$tmp/status"
}

# Item: the requests view's selection follows its request.
follow() { # COLS ROWS
	s="$1x$2"
	# 3 users, 40 tokens at 100 ms a step: each request streams ~4 s.
	session "$1" "$2" -c 3 --output-tokens 40 -d 600s
	wait_for "$s: dashboard shows up" "Latency" 20 || return 1
	T send-keys -t tui R
	wait_for "$s: three requests stream" " streaming .* streaming .*|streaming" 20 || return 1
	i=0
	while [ $i -lt 100 ] && [ "$(screen | grep -c ' streaming ')" -lt 3 ]; do i=$((i + 1)); sleep 0.1; done
	# j selects the second row: read back from the reverse-video row.
	first=$(sel_id)
	T send-keys -t tui j
	i=0
	while [ $i -lt 50 ] && { [ -z "$(sel_id)" ] || [ "$(sel_id)" = "$first" ]; }; do i=$((i + 1)); sleep 0.1; done
	x=$(sel_id)
	[ -n "$x" ] && [ "$x" != "$first" ]
	check "$s: j selects another row ($first -> $x)" $? || return 1
	# Wait for request $x to finish (its row no longer streaming).
	i=0
	while [ $i -lt 150 ] && row_of "$x" | grep -Eq 'streaming|prefill|waiting'; do i=$((i + 1)); sleep 0.1; done
	! row_of "$x" | grep -Eq 'streaming|prefill|waiting'
	check "$s: request $x finished" $? || return 1
	row_of "$x" | grep -q ' ok '
	check "$s: its row stays, status ok ($(row_of "$x" | tr -s ' ' | cut -c1-60))" $?
	if [ "$1" -ge 120 ]; then
		row_of "$x" | grep -q 'finished, now in recent'
		check "$s: the row says it finished and moved to recent" $?
		screen | grep -Eq '([0-9]+) of \1 in flight \(\+1 finished, selected\)'
		check "$s: the footer counts it apart from the in-flight ones" $?
	fi
	T send-keys -t tui Enter
	wait_for "$s: Enter opens request $x, the selected one" "Request $x[^0-9]" 5
	T send-keys -t tui Escape
	T send-keys -t tui j
	wait_for "$s: moving on drops the finished row" "streaming" 5
	i=0
	while [ $i -lt 30 ] && [ -n "$(row_of "$x")" ]; do i=$((i + 1)); sleep 0.1; done
	[ -z "$(row_of "$x")" ]
	check "$s: request $x gone from the in-flight list once the cursor left it" $?
}

# Item: a finished sweep's plan view.
plan_done() { # COLS ROWS
	s="$1x$2"
	session "$1" "$2" --sweep c=1,2 --stage-duration 2s --output-tokens 4
	wait_for "$s: sweep dashboard" "Latency" 20 || return 1
	for k in 1 2 3 4 5 6; do T send-keys -t tui v; done
	wait_for "$s: plan view" "Plan" 10 || return 1
	wait_for "$s: the run ends with the plan" "q quits" 30 || return 1
	wait_for "$s: titled 'Plan: done, 2 steps'" "Plan: done, 2 steps" 5
	screen | grep -q "Plan plan done"
	[ $? -ne 0 ]
	check "$s: no 'Plan plan done'" $?
	n=$(screen | grep -Ec '^(│|\|) +2 c=2 ')
	[ "$n" = 1 ]
	check "$s: the last step listed once ($n)" $?
	screen | grep -Eq 'c=[0-9]+ \*'
	[ $? -ne 0 ]
	check "$s: no live row once done" $?
	T send-keys -t tui q
}

# Item: --demo has a GPU (the simulator's DCGM exporter).
demo_gpu() { # COLS ROWS
	s="$1x$2"
	T kill-session -t tui 2>/dev/null
	tmux_session "$1" "$2" "$tmp" \
		"env TERM=screen-256color INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN --demo -c 4 -d 600s"
	wait_for "$s: demo dashboard" "Latency" 20 || return 1
	for k in 1 2 3 4; do T send-keys -t tui v; done
	wait_for "$s: GPU view lists the simulated GPU" "infertop sim \(simulated" 15
	wait_for "$s: J/token shown" "J/tok" 15
	T send-keys -t tui q
}

# Item: latency cells over their --slo in another colour.
# sgr ROWNAME: the colour escapes before the row's first figure.
sgr() {
	T capture-pane -p -e -t tui | sed "s/$(printf '\033')\\[\\([0-9;]*\\)m/<\\1>/g" |
		awk -v n="$1" '{ p = $0; gsub(/<[0-9;]*>/, "", p) } p ~ "^(│|\\|) " n " +[0-9]" { print; exit }' |
		sed "s/$1/@@/; s/^[^@]*@@//" | grep -o '<[0-9;]*>[0-9]' | head -1 | sed 's/.$//'
}
slo_colours() { # COLS ROWS
	s="$1x$2"
	T kill-session -t tui 2>/dev/null
	tmux_session "$1" "$2" "$tmp" \
		"env TERM=screen-256color INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN --demo -c 4 --slo ttft=1ms,e2e=100s -d 600s"
	wait_for "$s: --slo demo, latency table" "E2E +[0-9]" 20 || return 1
	b=$(sgr TTFB)
	t=$(sgr TTFT)
	e=$(sgr E2E)
	[ -n "$b" ] && [ -n "$t" ] && [ "$t" != "$b" ]
	check "$s: TTFT over its 1 ms SLO coloured ($t), not as TTFB ($b)" $?
	[ -n "$e" ] && [ "$e" = "$b" ]
	check "$s: E2E within its 100 s SLO as TTFB ($e)" $?
	T send-keys -t tui q
}

for size in "80 24" "120 40" "200 60"; do
	# shellcheck disable=SC2086
	slo_colours $size
	# shellcheck disable=SC2086
	demo_gpu $size
	# shellcheck disable=SC2086
	follow $size
	# shellcheck disable=SC2086
	plan_done $size
done
T kill-session -t tui 2>/dev/null
tui_sanitizer_check
echo "$fails failed"
[ "$fails" -eq 0 ]
