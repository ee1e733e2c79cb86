#!/bin/sh
# Shared by the tmux tests (tests/*_tui*.sh, tui.sh), sourced after
# check_lib.sh: a UTF-8 locale (the dashboard's box drawing), a private
# tmux server, the pane's text, and a wait that polls the pane with a
# deadline (never a blind sleep).
LANG=C.UTF-8
LC_ALL=C.UTF-8
export LANG LC_ALL
# tui_begin: how every tmux test starts. Skipped (77) without tmux; $tmp
# made, and at exit (tui_end) the tmux server, the simulator ($simpid,
# from tui_sim), what the test's own tui_end_more stops and $tmp go;
# sanitizer reports under $tmp; $tmp/xdg for a config home.
tui_begin() {
	command -v tmux >/dev/null 2>&1 || { echo "tmux not installed: skipped"; exit 77; }
	tmp=$(mktemp -d)
	simpid=""
	trap tui_end EXIT
	tui_sanitizer_logs
	mkdir -p "$tmp/xdg"
}
tui_end() {
	T kill-server 2>/dev/null
	[ -n "$simpid" ] && kill "$simpid" 2>/dev/null
	command -v tui_end_more >/dev/null 2>&1 && tui_end_more
	rm -rf "$tmp"
}
# A private tmux server whose socket goes away with $tmp.
T() { tmux -S "$tmp/tmux.sock" -f /dev/null "$@"; }
screen() { T capture-pane -p -t tui; }
# wait_for DESCRIPTION EXTENDED-REGEX [SECONDS]: polls the pane every 0.1 s.
wait_for() {
	n=$(( ${3:-15} * 10 ))
	i=0
	while [ $i -lt $n ]; do
		if screen | grep -Eq -- "$2"; then
			check "$1" 0
			return 0
		fi
		i=$((i + 1))
		sleep 0.1
	done
	check "$1 (waited ${3:-15}s for /$2/)" 1
	echo "---- screen:"
	screen
	echo "----"
	return 1
}
# tmux_session COLS ROWS DIR COMMAND: the pane "tui", that size, running
# COMMAND in DIR and kept on screen after it ends. The previous session's
# server may still be exiting when this one connects ("server exited
# unexpectedly"): tried again on a new server.
tmux_session() {
	for try in 1 2 3; do
		T new-session -d -s tui -x "$1" -y "$2" -c "$3" "$4" && break
		T kill-server 2>/dev/null
		rm -f "$tmp/tmux.sock"
	done
	T set-option -t tui remain-on-exit on >/dev/null
	T set-option -t tui window-size manual >/dev/null 2>&1
}
# Sanitizer reports go to files under $tmp (printed into the pane they
# would be lost with it); a test reads $tmp/asan* and $tmp/ubsan* at its end.
tui_sanitizer_logs() {
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$tmp/asan"
	UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$tmp/ubsan:print_stacktrace=1"
	export ASAN_OPTIONS UBSAN_OPTIONS
}
# tui_sanitizer_check: each report the sanitizers left under $tmp printed,
# and a failed check; nothing when there is none.
tui_sanitizer_check() {
	for f in "$tmp"/asan* "$tmp"/ubsan*; do
		[ -s "$f" ] || continue
		cat "$f"
		check "no sanitizer report (${f##*/})" 1
	done
}
# tui_sim [SIM OPTIONS]: a simulator on a free loopback port; its pid in
# $simpid, its port in $port, its base URL in $url. Fails (after a failed
# check) when it does not come up within 10 s.
tui_sim() {
	"$INFERTOP_BIN" sim --listen 127.0.0.1:0 "$@" >"$tmp/sim.out" 2>"$tmp/sim.err" &
	simpid=$!
	i=0
	while [ $i -lt 100 ] && ! grep -q "listening on" "$tmp/sim.out" 2>/dev/null; do i=$((i + 1)); sleep 0.1; done
	port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
	[ -n "$port" ]
	check "the simulator listens" $? || return 1
	url="http://127.0.0.1:$port"
}
