#!/bin/sh
# COLORTERM=truecolor gives the theme's exact colours: with TERM's
# terminfo at 256 colours and a direct-colour entry of the same terminal
# installed (tmux-direct, compiled here with tic into a private TERMINFO
# from tmux-256color plus 24-bit setaf/setab), the dashboard uses it, and
# the pane's cells carry 38;2;R;G;B: the default theme's TTFT chart
# colour #88c0d0 as 38;2;136;192;208. The help says which colours are in
# use. Without COLORTERM, or with no direct entry to be found, the old
# 256-colour palette (38;5;N) and the help says why; NO_COLOR: none. At
# 80x24, 120x40 and 200x60. Every wait polls the pane with a deadline.
# Exit 77 (skip) without tmux or tic.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
command -v tic >/dev/null 2>&1 || { echo "tic not installed: skipped"; exit 77; }
infocmp tmux-256color >/dev/null 2>&1 || { echo "no tmux-256color terminfo: skipped"; exit 77; }
# check_lib first: tmux_lib's wait_for (on the pane) replaces its file one.
. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin
mkdir -p "$tmp/xdg" "$tmp/terminfo" "$tmp/empty"

# A direct-colour entry: 0-7 are the ANSI colours, any other number is
# 0xRRGGBB, sent as SGR 38;2;R;G;B (48;2 for the background).
cat >"$tmp/direct.src" <<'EOF'
tmux-direct|tmux with 24-bit colour (infertop test),
	colors#0x1000000, pairs#0x10000, RGB,
	setab=\E[%?%p1%{8}%<%t4%p1%d%e48;2;%p1%{65536}%/%d;%p1%{256}%/%{255}%&%d;%p1%{255}%&%d%;m,
	setaf=\E[%?%p1%{8}%<%t3%p1%d%e38;2;%p1%{65536}%/%d;%p1%{256}%/%{255}%&%d;%p1%{255}%&%d%;m,
	use=tmux-256color,
EOF
tic -x -o "$tmp/terminfo" "$tmp/direct.src" 2>"$tmp/tic.err"
[ "$(TERMINFO="$tmp/terminfo" tput -T tmux-direct colors)" = 16777216 ]
check "a tmux-direct entry compiled" $? || { cat "$tmp/tic.err"; exit 1; }

# start COLS ROWS ENV...: the demo with the default theme, in that size.
start() {
	c=$1
	r=$2
	shift 2
	T kill-session -t tui 2>/dev/null
	tmux_session "$c" "$r" "$tmp" \
		"env -u COLORTERM -u NO_COLOR TERM=tmux-256color XDG_CONFIG_HOME=$tmp/xdg INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $* $INFERTOP_BIN --demo -d 60s --theme default"
	wait_for "$c x $r $*: the TTFT chart" '─ TTFT p99 client [0-9.]+ ms' 20
}
# help PATTERN WHAT: the help overlay (scrolled to its end) says PATTERN.
help() {
	T send-keys -t tui '?'
	wait_for "help open" 'infertop keys' 10
	T send-keys -t tui End
	wait_for "$1" "$2" 10
	T send-keys -t tui Escape
}
# The TTFT chart's braille cells as the pane's escapes give them.
cells() {
	T capture-pane -e -p -t tui >"$tmp/cap"
	grep -c "$1" "$tmp/cap"
}

for size in 80x24 120x40 200x60; do
	cols=${size%x*}
	rows=${size#*x}
	start "$cols" "$rows" TERMINFO="$tmp/terminfo" COLORTERM=truecolor
	[ "$(cells '38;2;136;192;208m')" -gt 0 ]
	check "$size COLORTERM=truecolor: the theme's #88c0d0 as 38;2;136;192;208" $? || cat -v "$tmp/cap" | head -30
	[ "$(cells '38;5;')" -eq 0 ]
	check "$size COLORTERM=truecolor: no 256-colour index left" $?
	help "$size: the help says 24-bit from tmux-direct" 'Colours: 24-bit \(TERM=tmux-direct'

	start "$cols" "$rows" TERMINFO="$tmp/terminfo" COLORTERM=24bit
	[ "$(cells '38;2;136;192;208m')" -gt 0 ]
	check "$size COLORTERM=24bit: the same" $?

	start "$cols" "$rows" TERMINFO="$tmp/terminfo"
	[ "$(cells '38;2;')" -eq 0 ] && [ "$(cells '38;5;')" -gt 0 ]
	check "$size no COLORTERM: the 256-colour palette" $?
	help "$size: the help says 256 from tmux-256color" 'Colours: 256 \(TERM=tmux-256color\)'

	start "$cols" "$rows" TERMINFO="$tmp/empty" COLORTERM=truecolor
	[ "$(cells '38;2;')" -eq 0 ] && [ "$(cells '38;5;')" -gt 0 ]
	check "$size COLORTERM=truecolor, no direct entry: the 256-colour palette" $?
	help "$size: the help says which entry was missing" 'no tmux-direct'

	start "$cols" "$rows" TERMINFO="$tmp/terminfo" COLORTERM=truecolor NO_COLOR=1
	[ "$(cells '38;[25];')" -eq 0 ]
	check "$size NO_COLOR beats COLORTERM: no colour" $?
	help "$size: the help says none" 'Colours: none \(NO_COLOR'
done
T kill-session -t tui 2>/dev/null
tui_sanitizer_check
[ "$fails" -eq 0 ]
