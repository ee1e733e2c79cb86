#!/bin/sh
# The dashboard end to end, as a user sees it: infertop --demo in a tmux
# pane of fixed size, keys sent with send-keys, the screen read back with
# capture-pane. Every wait polls the pane with a deadline; nothing sleeps
# blindly. Exit 77 (skip) only when tmux is not installed.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
# A private tmux server whose socket goes away with $tmp; screen, wait_for.
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
# Sanitizer reports must not vanish with the alternate screen: tui_begin
# sends them to files under $tmp.
tui_begin
mkdir -p "$tmp/xdg" "$tmp/run"

# With SGR escape sequences: the colours actually drawn.
screen_sgr() { T capture-pane -p -e -t tui; }
# A box's left border, in UTF-8 or ASCII.
V='(│|\|)'
esc=$(printf '\033')
# An SGR sequence setting a foreground colour (39, the default, is none).
FG8="$esc\\[([0-9]+;)*3[0-7](;[0-9]+)*m"
FG256="$esc\\[([0-9]+;)*38;5;[0-9]+(;[0-9]+)*m"
# After the exit the summary may have scrolled: read the history too.
screen_all() { T capture-pane -p -S - -t tui; }
# wait_gone DESCRIPTION REGEX [SECONDS]
wait_gone() {
	n=$(( ${3:-15} * 10 ))
	i=0
	while [ $i -lt $n ]; do
		screen | grep -Eq -- "$2" || { check "$1" 0; return 0; }
		i=$((i + 1))
		sleep 0.1
	done
	check "$1 (/$2/ still there after ${3:-15}s)" 1
	screen
	return 1
}
dead() { [ -s "$tmp/status" ]; }
wait_exit() { # SECONDS: infertop has ended (its exit status is in $tmp/status)
	n=$(( $1 * 10 ))
	i=0
	while [ $i -lt $n ]; do
		dead && return 0
		i=$((i + 1))
		sleep 0.1
	done
	return 1
}
exit_status() { cat "$tmp/status" 2>/dev/null; }
num_after() { # LABEL-REGEX: the number after it on the load line
	screen | sed -En "2s/.*($1) ([0-9]+).*/\2/p"
}
start() { # COLS ROWS ENV-AND-ARGS...
	cols=$1
	rows=$2
	shift 2
	rm -f "$tmp/status"
	tmux_session "$cols" "$rows" "$tmp/run" \
		"env XDG_CONFIG_HOME=$tmp/xdg INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $*; echo \$? >$tmp/status.new; mv $tmp/status.new $tmp/status"
}
finish() { # kill what is left of a session
	T kill-session -t tui 2>/dev/null
}

# Widgets and layout only read: no clock, no stats or load writes.
grep -nE 'clock_now_ns|clock_gettime|stats_(record|request_done|tick|window_reset)|load_(set|pause|stop)|engine_(stop|abort)' \
	"$INFERTOP_SRCDIR"/src/ui/w_*.c "$INFERTOP_SRCDIR"/src/ui/widget.c "$INFERTOP_SRCDIR"/src/ui/layout.c
[ $? -ne 0 ]
check "drawing code reads no clock and changes nothing" $?

# ---------------------------------------------------------------- run 1
# 256 colours, UTF-8: the default look.
start 120 40 TERM=screen-256color "$INFERTOP_BIN" --demo -c 4 --output-tokens 24 -o "$tmp/result.json"
wait_for "dashboard shows up" "Latency" 20 || { finish; exit 1; }
wait_for "header: target URL and model" "infertop +http://127\.0\.0\.1:[0-9]+ +model infertop-sim"
wait_for "load line: target and in-flight" "closed loop .*target 4[^0-9].*in-flight 4[^0-9]"
wait_for "latency table: all rows, window and whole run" "whole run"
for m in TTFB TTFT ITL TPOT E2E; do
	screen | grep -Eq "^$V $m +[0-9]" || wait_for "latency row $m has live numbers" "^$V $m +[0-9]"
done
# btop-style furniture: boxed, titled panels; charts with their value
# scale in the top border and a time axis ending in "now" in the bottom.
wait_for "boxed panels: latency titled in its top border" "^╭─ Latency client ms"
wait_for "boxed panels: server and a chart side by side" "╭─ Server .*"
wait_for "boxed panels: bottom borders" "^╰─+╯"
wait_for "chart: value scale 0…max in its top border" "╭─ output tok/s [0-9.k]+ \\(1 s\\) ─+ 0…[0-9.k]+ ─╮"
wait_for "chart: time axis, -span … now, in its bottom border" "╰─-[0-9]+s─+(-[0-9]+s─+)*now─╯"
wait_for "client figures say so" "╭─ TTFT p99 client [0-9.]+ ms"
wait_for "server figures say so" "srv TTFT p99 +(<=|>)?[0-9]"
# The mouse, as an xterm reports it (X10: ESC [ M, then button, column and
# row, each plus 32, 1-based): the wheel zooms the charts, a click on a
# panel maximises it and a second click gives the view back.
mouse() { # BUTTON COL ROW (0-based)
	T send-keys -t tui -l "$(printf "\\033[M\\$(printf %o $((32 + $1)))\\$(printf %o $((33 + $2)))\\$(printf %o $((33 + $3)))")"
}
mouse 64 10 22
wait_for "mouse: wheel up zooms in" "charts: 1m"
mouse 65 10 22
wait_for "mouse: wheel down zooms out" "charts: 10m"
mouse 0 10 22
mouse 3 10 22 # the release
wait_gone "mouse: a click maximises the chart under it" "╭─ Latency client"
screen | grep -Eq "^╭─ output tok/s"
check "mouse: the clicked chart fills the screen" $?
mouse 0 10 22
mouse 3 10 22
wait_for "mouse: a second click gives the view back" "╭─ Latency client"
wait_for "server panel" "Server"
wait_for "charts" "output tok/s"
wait_for "errors line" "errors +none"
wait_for "key bar from the key table" "\? help +q quit"
wait_for "requests complete" "(done|ok) [1-9]"
screen_sgr | grep -Eq "$FG256"
check "256 colours in use" $?

# + four times: the target rises by four and in-flight follows.
for k in 1 2 3 4; do T send-keys -t tui +; done
wait_for "+ x4: target 8" "target 8[^0-9]"
wait_for "+ x4: in-flight follows to 8" "in-flight 8[^0-9]"
T send-keys -t tui ']'
wait_for "]: target doubles to 16" "target 16[^0-9]"
wait_for "]: in-flight 16" "in-flight 16[^0-9]"
T send-keys -t tui c 3 2 Enter
wait_for "c 32 Enter: target 32" "target 32[^0-9]"
wait_for "c 32 Enter: in-flight 32" "in-flight 32[^0-9]"
T send-keys -t tui c 9 Escape
wait_for "c then Esc: cancelled, target stays" "cancelled"
[ "$(num_after target)" = 32 ]
check "target still 32 after Esc" $?
T send-keys -t tui '-'
wait_for "-: target 31" "target 31[^0-9]"
T send-keys -t tui '['
wait_for "[: target halves to 15" "target 15[^0-9]"

# p: no new requests; in-flight ones finish, so in-flight reaches 0 and done
# stops moving.
T send-keys -t tui p
wait_for "p: paused" "PAUSED"
wait_for "p: in-flight drains to 0" "in-flight 0[^0-9]" 20
d1=$(num_after 'done|ok')
i=0
while [ $i -lt 10 ]; do i=$((i + 1)); sleep 0.1; done # a second of pause, on purpose: nothing may start
d2=$(num_after 'done|ok')
[ -n "$d1" ] && [ "$d1" = "$d2" ] && screen | grep -Eq "in-flight 0[^0-9]"
check "paused: no request started ($d1 -> $d2)" $?
T send-keys -t tui p
wait_gone "p again: resumed" "PAUSED"
wait_for "resumed: in-flight back to 15" "in-flight 15[^0-9]"

# s: a snapshot, its path on screen, valid JSON.
T send-keys -t tui s
wait_for "s: snapshot path shown" "snapshot written to .*infertop-[0-9]{8}-[0-9]{6}\.json"
snap=$(ls "$tmp/run"/infertop-*.json 2>/dev/null | head -1)
[ -n "$snap" ] && grep -q '"infertop_schema"' "$snap" && grep -q '"completed"' "$snap"
check "snapshot file written" $?
if command -v jq >/dev/null 2>&1; then
	jq -e '.completed > 0 and .infertop.infertop_schema == 1' "$snap" >/dev/null
	check "snapshot is valid JSON (jq)" $?
elif command -v python3 >/dev/null 2>&1; then
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["completed"] > 0 else 1)' "$snap"
	check "snapshot is valid JSON (python3)" $?
else
	tail -c 2 "$snap" | grep -q '}'
	check "snapshot ends its JSON object" $?
fi

# z empties the window; the whole-run count stays.
T send-keys -t tui z
wait_for "z: window reset" "sliding window emptied"
wait_for "z: window count restarts" "window 30s: [0-9]+ req"

# ? help from the key table, ? again closes it.
T send-keys -t tui '?'
wait_for "?: help shows" "infertop keys"
wait_for "?: help lists the keys" "double the concurrency or the rate"
T send-keys -t tui '?'
wait_gone "?: help closes" "infertop keys"

# Views: v and Tab.
T send-keys -t tui v
wait_for "v: latency view (p95, TTFT from intended)" "TTFT\+q"
T send-keys -t tui v
wait_for "v: histogram view, TTFT" "╭─ TTFT client ms, window p50 [0-9.]+ p90 [0-9.]+ p99 [0-9.]+ "
wait_for "histogram view: ITL and E2E too" "╭─ E2E client ms"
wait_for "histogram view: a p99 mark" "◀ [p0-9 ]*p99"
# The p99 mark sits in the bucket holding the p99 of the title: the row
# above it ends below that value, its own row ends at or above it (both
# as printed, "≤ 24.3", so within the rounding of three digits).
screen | awk '
	/╭─ TTFT client/ { on = 1; for (i = 1; i <= NF; i++) if ($i == "p99") p99 = $(i + 1); next }
	on && /^╰/ { exit }
	on { split($0, a, "│"); lab = a[2]; gsub(/[^0-9.]/, "", lab); b = lab + 0; if ($0 ~ /◀.*p99/) { hi = b; lo = prev; found = 1; exit } prev = b }
	END {
		printf "p99 %s, bucket (%s, %s]\n", p99, lo, hi
		if (!found || p99 == "") exit 1
		if (hi < p99 * 0.995) exit 1
		if (lo != "" && lo > p99 * 1.005) exit 1
	}'
check "histogram view: the p99 mark is in the bucket that holds p99" $?
# F maximises the focused panel (the first: TTFT), Enter gives the view back.
T send-keys -t tui F
wait_gone "F: the focused panel alone (ITL gone)" "╭─ ITL client"
screen | grep -q "╭─ TTFT client"
check "F: TTFT maximised" $?
T send-keys -t tui Enter
wait_for "Enter: back to the view" "╭─ ITL client"
T send-keys -t tui Tab
wait_for "Tab: server view" " server [|│] "
T send-keys -t tui v
wait_for "v: GPU view (--demo: the simulator's GPU)" "infertop sim \\(simulated"
T send-keys -t tui v
wait_for "v: errors view" "Errors .* of [0-9]+ requests"
T send-keys -t tui v
wait_for "v: plan view (no plan given)" "no plan: run with --stages"
T send-keys -t tui v
wait_for "v: back to the overview" " overview [|│] "

# Zoom and theme.
T send-keys -t tui Left
wait_for "Left: zoom out to 1h" "charts: 1h"
T send-keys -t tui Left
wait_for "Left: whole run" "charts: whole run"
T send-keys -t tui Right
wait_for "Right: zoom in" "charts: 1h"
T send-keys -t tui t
wait_for "t: next theme" "theme dracula"

# m: open loop at the measured rate, and back.
T send-keys -t tui m
wait_for "m: open loop" "open loop: [0-9.]+ req/s"
wait_for "m: load line in rate mode" "open.*rate [0-9.]+"
T send-keys -t tui '+'
wait_for "+ in open loop: rate +10%" "rate [0-9.]+ req/s"
T send-keys -t tui m
wait_for "m again: closed loop" "closed loop: [0-9]+ users"

# Resize below the minimum: a message, and the run goes on.
T resize-window -t tui -x 40 -y 12
wait_for "40x12: too small message" "terminal too small"
wait_for "40x12: says what is needed" "40x12, need 80x24"
T resize-window -t tui -x 20 -y 10
wait_for "20x10: too small message" "too small"
wait_for "20x10: still counting" "done [0-9]+ err"
dead
[ $? -ne 0 ]
check "20x10: still running" $?
T resize-window -t tui -x 80 -y 24
wait_for "80x24: dashboard again" "Latency"
wait_for "80x24: server panel" "Server"
wait_for "80x24: charts" "output tok/s"
wait_for "80x24: key bar" "q quit"
wait_for "80x24: live latency numbers" "^$V TTFT +[0-9]"
wait_for "80x24: boxed latency panel" "^╭─ Latency client ms"
wait_for "80x24: chart scale" "╭─ output tok/s .*0…[0-9.k]+ ─╮"
wait_for "80x24: chart time axis" "╰─-[0-9]+[sm]─+.*now─╯"
wait_for "80x24: load line" "target [0-9]+[^0-9].*in-flight [0-9]"
T resize-window -t tui -x 120 -y 40
wait_for "120x40 again" "whole run"

# q: stops (in-flight requests finish), the terminal comes back, the
# summary follows and the result file is written.
T send-keys -t tui q
wait_exit 30
check "q: infertop exits" $?
[ "$(exit_status)" = 0 ]
check "q: exit status 0 ($(exit_status))" $?
screen_all | grep -q "Serving Benchmark Result"
check "summary printed on the restored terminal" $?
screen | grep -q "Latency client ms"
[ $? -ne 0 ]
check "no dashboard left on the screen" $?
grep -Eq '"stop_reason":[[:space:]]*"quit \(q\)"' "$tmp/result.json" 2>/dev/null
check "result written, stopped by q" $?
finish

# ---------------------------------------------------------------- run 2
# 8 colours, NO_COLOR and --ascii: still a full dashboard, pure ASCII.
start 100 30 TERM=xterm NO_COLOR=1 "$INFERTOP_BIN" --demo -c 2 --output-tokens 8 --ascii
wait_for "ascii: dashboard shows up" "Latency" 20 && wait_for "ascii: requests complete" "(done|ok) [1-9]"
screen | LC_ALL=C grep -q '[^ -~]'
[ $? -ne 0 ]
check "ascii: only ASCII on screen" $?
wait_for "ascii: charts drawn with # and ." "[#.]{2}"
screen_sgr | grep -Eq "$FG8|$FG256"
[ $? -ne 0 ]
check "NO_COLOR: no colour drawn" $?
# Ctrl-C: the engine's graceful stop; its message, caught while the
# screen was up, is printed again afterwards.
T send-keys -t tui C-c
wait_exit 30 && [ "$(exit_status)" = 0 ]
check "ascii: Ctrl-C stops, exit 0" $?
screen_all | grep -q "infertop: stopping: in-flight requests get"
check "stderr written during the run is replayed" $?
screen_all | grep -q "Serving Benchmark Result"
check "summary after Ctrl-C" $?
finish

# ---------------------------------------------------------------- run 3
# 8 colours and a non-UTF-8 locale (ASCII by itself). A run that ends by
# itself keeps the final screen until q; a bad theme is a warning naming
# the file and line.
printf 'theme[title]="#12"\n' >"$tmp/bad.theme"
start 120 40 TERM=xterm LC_ALL=C LANG=C "$INFERTOP_BIN" --demo -c 2 -n 6 --output-tokens 4 --theme "$tmp/bad.theme"
wait_for "finished run waits for q" "run finished .*q quits" 30
wait_for "header says done" "done +[0-9]{2}:[0-9]{2}:[0-9]{2}"
screen_sgr | grep -Eq "$FG8"
check "8 colours in use" $?
screen_sgr | grep -Eq "$FG256"
[ $? -ne 0 ]
check "8 colours: no 256-colour codes" $?
screen | LC_ALL=C grep -q '[^ -~]'
[ $? -ne 0 ]
check "C locale: ASCII only" $?
dead
[ $? -ne 0 ]
check "still showing the final screen" $?
T send-keys -t tui q
wait_exit 10 && [ "$(exit_status)" = 0 ]
check "q after the end exits 0" $?
screen_all | grep -q "bad\.theme:1: expected a colour"
check "bad theme: warning with file and line" $?
screen_all | grep -Eq "Successful requests: +6"
check "summary after the finished run" $?
finish

# ---------------------------------------------------------------- run 4
# A fatal signal still gives the terminal back. (SIGABRT: sanitizers leave
# it to the default action, so the status is the same in every build.)
start 100 30 "$INFERTOP_BIN" --demo -c 2 --output-tokens 8
wait_for "dashboard before the crash" "Latency" 20
pid=$(pgrep -P "$(T display-message -p -t tui '#{pane_pid}')" infertop | head -1)
[ -n "$pid" ] && kill -ABRT "$pid"
wait_exit 10 && [ "$(exit_status)" = 134 ]
check "SIGABRT: dies of the signal ($(exit_status))" $?
screen | grep -q "Latency client ms"
[ $? -ne 0 ]
check "SIGABRT: alternate screen left, terminal restored" $?
finish

# ---------------------------------------------------------------- run 5
# A sweep: the plan view's table grows a row per step, the open step live.
start 140 40 "$INFERTOP_BIN" --demo --sweep c=1,2,4 --stage-duration 4s --output-tokens 8 --slo ttft=10s
wait_for "sweep: dashboard up" "Latency" 20
wait_for "sweep: the header names the stage" "step [0-9]/3 c=[124]"
wait_for "sweep: goodput on the load line (--slo)" "good(put)? [0-9.]+( req)?/s \\([0-9]+ s\\)"
for k in 1 2 3 4 5 6; do T send-keys -t tui v; done
wait_for "plan view: the first step is live" " 1 c=1 \*" 10
wait_for "plan view: the second step is live" " 2 c=2 \*" 10
screen | grep -Eq " 1 c=1 +[0-9]"
check "plan view: the first step stays as a fixed row" $?
# At 120 columns every heading is a whole word, goodput included.
T resize-window -t tui -x 120 -y 40
wait_for "plan view at 120 columns: all headings, none cut" \
	"^│ +# step +seconds +done +failed +req/s +out tok/s +in flight +TTFT p50 +TTFT p99 +ITL p50 +E2E p50 +goodput +│"

wait_for "plan view: all three steps" " 3 c=4 " 15
wait_for "sweep: the run ends with the plan" "q quits" 15
T send-keys -t tui q
wait_exit 15 && [ "$(exit_status)" = 0 ]
check "sweep: q exits 0" $?
screen_all | grep -q -- "- Steps -"
check "sweep: the steps table in the summary" $?
finish

# ---------------------------------------------------------------- run 6
# The terminal goes away (tmux kill-session, a dropped SSH session): SIGHUP
# stops the run as SIGTERM does, and it finishes headless with its result.
start 100 30 "$INFERTOP_BIN" --demo -c 2 --output-tokens 8 -d 60s --grace 1s -o "$tmp/hup.json"
wait_for "hangup: dashboard up" "Latency" 20
wait_for "hangup: requests complete" "(done|ok) [1-9]" 20
pid=$(pgrep -P "$(T display-message -p -t tui '#{pane_pid}')" infertop | head -1)
T kill-session -t tui
i=0
while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ $i -lt 200 ]; do i=$((i + 1)); sleep 0.1; done
[ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && jq -e '.completed > 0' "$tmp/hup.json" >/dev/null &&
	jq -e '.infertop.state.stop_reason | test("SIGHUP")' "$tmp/hup.json" >/dev/null
st=$?
[ $st -eq 0 ] || echo "hangup: pid '$pid', $(kill -0 "$pid" 2>/dev/null && echo alive || echo gone), $(ls -l "$tmp/hup.json" 2>&1), $(jq -c '[.completed, .infertop.state.stop_reason]' "$tmp/hup.json" 2>&1)"
check "hangup: kill-session leaves a valid -o file" $st

# ---------------------------------------------------------------- run 7
# A -n run that ends with the dashboard open writes -o at the end of the
# run, not when q is pressed later, and the screen says where it went.
start 160 30 "$INFERTOP_BIN" --demo -c 2 -n 6 --output-tokens 4 -o "$tmp/end.json"
wait_for "end of run: the screen says where the result went" "result saved to .*end\.json" 20
[ -s "$tmp/end.json" ] && ! dead && jq -e '.completed == 6' "$tmp/end.json" >/dev/null
check "end of run: -o is there while the dashboard is still open" $?
T send-keys -t tui q
wait_exit 10 && [ "$(exit_status)" = 0 ]
check "end of run: q exits 0" $?
finish

# ---------------------------------------------------------------- run 9
# Only the metrics endpoint is down: the header says so, and that the
# target itself is fine (it used to read "server down").
start 160 30 "$INFERTOP_BIN" --demo -c 2 --output-tokens 8 --metrics-url http://127.0.0.1:1/metrics \
	--metrics-interval 200ms
wait_for "metrics down, target ok: the target" "target ok" 20
wait_for "metrics down, target ok: the metrics endpoint" "metrics (stale|down)" 20
finish

# ---------------------------------------------------------------- run 8
# A terminal that cannot place the cursor gets a notice and a headless run,
# not a blank screen.
start 100 30 TERM=dumb "$INFERTOP_BIN" --demo -c 2 -n 4 --output-tokens 4
wait_exit 20 && [ "$(exit_status)" = 0 ]
check "TERM=dumb: the run ends by itself, exit 0" $?
T capture-pane -p -J -S - -t tui | grep -Eq "cannot place the cursor.*running headless"
check "TERM=dumb: a one-line notice" $?
screen_all | grep -Eq "Successful requests: +4"
check "TERM=dumb: the summary is printed" $?
finish

# ---------------------------------------------------------------- run 10
# The control API changes the load as a key does: the dashboard follows
# and names the source; /v1/stop ends the run as Ctrl-C would.
if command -v curl >/dev/null 2>&1; then
	start 160 30 "$INFERTOP_BIN" --demo -c 2 --output-tokens 24 -o "$tmp/api.json" --listen 127.0.0.1:0 \
		"2>$tmp/api.err"
	wait_for "api: dashboard up" "Latency" 20
	api=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/api.err")
	[ -n "$api" ]
	check "api: the address was printed before the dashboard" $?
	curl -s -H 'Content-Type: application/json' -X POST -d '{"concurrency":7}' "$api/v1/load" | grep -q '"status":"ok"'
	check "api: POST /v1/load answers ok" $?
	wait_for "api: the status line names the source" "concurrency 7 \(by api\)"
	wait_for "api: target 7" "target 7[^0-9]"
	wait_for "api: in-flight follows to 7" "in-flight 7[^0-9]"
	curl -s -H 'Content-Type: application/json' -X POST "$api/v1/stop" | grep -q '"status":"ok"'
	check "api: POST /v1/stop answers ok" $?
	wait_for "api: the run ends" "q quits" 20
	T send-keys -t tui q
	wait_exit 10 && [ "$(exit_status)" = 0 ] &&
		jq -e '.infertop.state.stop_reason == "stopped by the control API"' "$tmp/api.json" >/dev/null
	check "api: /v1/stop wrote the -o result, exit 0" $?
	finish
fi

# ---------------------------------------------------------------- run 11
# GPU metrics from a DCGM exporter whose energy counter does not move (a
# fixture served as a file): J/token is unknown, a dash, never "0".
if command -v python3 >/dev/null 2>&1; then
	mkdir -p "$tmp/dcgm"
	cp "$INFERTOP_SRCDIR/tests/fixtures/prom/dcgm.txt" "$tmp/dcgm/metrics"
	python3 -c '
import http.server, functools, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
h.log_message = lambda *a: None
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
open(sys.argv[2] + ".new", "w").write(str(s.server_address[1]))
import os; os.rename(sys.argv[2] + ".new", sys.argv[2])
s.serve_forever()' "$tmp/dcgm" "$tmp/dcgm.port" &
	dcgm_pid=$!
	i=0
	while [ ! -s "$tmp/dcgm.port" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
	start 120 40 "$INFERTOP_BIN" --demo -c 2 --output-tokens 8 \
		--gpu-metrics-url "http://127.0.0.1:$(cat "$tmp/dcgm.port")/metrics"
	wait_for "gpu: dashboard up" "Latency" 20
	for k in 1 2 3 4; do T send-keys -t tui v; done
	wait_for "gpu: GPU view with the exporter's GPUs" "╭─ GPU [0-9]+ +total" 20
	wait_for "gpu: requests complete" "(done|ok) [1-9]" 20
	wait_for "gpu: J/token is a dash while energy has not moved" "total [0-9]+ W +– J/token"
	wait_for "gpu: history charts per GPU: util, memory, power" "│ 0 util [0-9]+% .*0 mem [0-9]+% .*0 power [0-9]+ W"
	wait_for "gpu: history has a time axis" "╰─+-[0-9]+[smh]─+.*now─╯"
	screen | grep -Eq "[^0-9.]0 J/token"
	[ $? -ne 0 ]
	check "gpu: no 0 J/token" $?
	finish
	kill "$dcgm_pid" 2>/dev/null
	wait "$dcgm_pid" 2>/dev/null
fi

tui_sanitizer_check
echo "$fails failed"
[ "$fails" -eq 0 ]
