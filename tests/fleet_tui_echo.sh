#!/bin/sh
# The fleet's dashboard over a generator that echoes the fleet's token and
# terminal escapes (tests/fake_generator.py --echo): its model in the
# header and its refusal of p (pause) on the status line are shown
# scrubbed: "Bearer ***", each control character a '?', never the token,
# never an escape acted on or drawn as ^[.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
command -v curl >/dev/null 2>&1 || { echo "curl not installed: skipped"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed: skipped"; exit 77; }

. "$(dirname "$0")/check_lib.sh"
. "$INFERTOP_SRCDIR/tests/tmux_lib.sh"
tui_begin
pids=""
tui_end_more() { for p in $pids; do kill -9 "$p" 2>/dev/null; done; }
. "$INFERTOP_SRCDIR/tests/fleet_fake_lib.sh"
tok="fleet-TOKEN-echo-4d1f9a"
export INFERTOP_FLEET_ECHO_TOKEN="$tok"

fleet_template "$tmp/t.json"
check "a real generator's running status is the template" $?
fake echo "$tmp/t.json" --echo
tmux_session 140 45 "$tmp" "env TERM=screen-256color INFERTOP_THEMES_DIR=$INFERTOP_SRCDIR/themes $INFERTOP_BIN fleet --targets $fake_url --token-env INFERTOP_FLEET_ECHO_TOKEN; echo \$? >$tmp/status"

wait_for "the dashboard shows up" "Latency" 20 || exit 1
wait_for "the header shows its model scrubbed" "model model\?\[2J\?\]0;pwned\?\?31m"
T send-keys -t tui p
wait_for "p: its refusal is shown scrubbed" "pause: HTTP 401 bad token Bearer \*\*\* \?\[2J" 5
T capture-pane -p -S - -t tui >"$tmp/pane"
! grep -q "$tok" "$tmp/pane"
check "the token is never on the screen" $?
! grep -q '\^\[' "$tmp/pane"
check "no escape drawn as ^[" $?
T send-keys -t tui q
tui_sanitizer_check
[ "$fails" -eq 0 ]
