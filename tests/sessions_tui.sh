#!/bin/sh
# The sessions / cache panel as a user sees it, in a tmux pane at 120x45
# against the simulator (its prefix cache on, cached_tokens in every
# usage): absent with random prompts (nothing is ever cached), present
# with one prompt repeated (live hit rate, TTFT warm/cold), and, with
# --sessions, TTFT p50 by turn and sessions ended; at 80x24 the overview
# leaves it out (the charts keep their room). Every wait polls
# the pane with a deadline; nothing sleeps blindly. Exit 77 (skip) when
# tmux is not installed, or when this build's parser does not read
# cached tokens yet (the result has no "cache" object).
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin

tui_sim || exit 1

# One long prompt over and over: from the second request on, the
# simulator's prefix cache serves all its whole blocks.
words=""
for i in $(seq 1 200); do words="$words word$i"; done
printf '{"prompt": "%s"}\n' "$words" >"$tmp/same.jsonl"
same="--dataset jsonl:$tmp/same.jsonl"

# shellcheck disable=SC2086
"$INFERTOP_BIN" --no-tui -q -n 4 -c 1 $same -o "$tmp/probe.json" "$url" >/dev/null 2>&1
grep -q '"cache"' "$tmp/probe.json" || { echo "cached tokens not parsed by this build: skipped"; exit 77; }

start() { # COLS ROWS ARGS...
	cols=$1
	rows=$2
	shift 2
	T kill-session -t tui 2>/dev/null
	tmux_session "$cols" "$rows" "$tmp" \
		"env XDG_CONFIG_HOME=$tmp/xdg INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN $*"
}

# Random prompts: the simulator says 0 cached to every request; the panel
# stays away (and the summary's block, and the result's object).
start 120 45 -c 2 -d 60s "$url"
wait_for "the overview runs" 'in-flight 2'
wait_for "requests done" 'done [1-9]'
screen | grep -q 'Sessions / cache'
[ $? -ne 0 ]
check "no panel when no prompt token was ever cached" $?

# One prompt repeated: the cache row and TTFT warm/cold, no turn figures.
start 120 45 -c 2 -d 60s "$same" "$url"
wait_for "the panel appears once a response says what was cached" 'Sessions / cache'
wait_for "the live hit rate" 'cache +hit rate [0-9.]+% +run [0-9.]+%'
wait_for "TTFT warm and cold" 'TTFT +warm p50 .* cold p50 '
screen | grep -Eq 'TTFT p50 ms +(–|-) +(–|-)'
check "no turn figures without sessions" $?

if "$INFERTOP_BIN" --help 2>&1 | grep -q -- '--sessions'; then
	start 120 45 -c 2 -d 60s --sessions turns=6,think=0.05s,system=256,user=32 "$url"
	wait_for "TTFT p50 of turns 1 and 2" 'TTFT p50 ms +[0-9.]+ +[0-9.]+ ' 30
	wait_for "later turns mostly cached" 'cache +hit rate [1-9][0-9.]*%' 30
	wait_for "a session ended" 'sessions +done [1-9]' 30
else
	echo "no --sessions in this build: the by-turn part not run"
fi

# 80x24: the overview has no room for it, the charts keep theirs.
start 80 24 -c 2 -d 60s "$same" "$url"
wait_for "the overview at 80x24" 'TTFT'
wait_for "a chart at 80x24" 'output tok/s'
screen | grep -q 'Sessions / cache'
[ $? -ne 0 ]
check "no sessions panel at 80x24" $?

T kill-session -t tui 2>/dev/null
tui_sanitizer_check
[ "$fails" -eq 0 ]
