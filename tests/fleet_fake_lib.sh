# Sourced by the fleet tests that use tests/fake_generator.py (after
# check_lib.sh, with $tmp and $pids set): a real generator's running lean
# status as the fakes' template, and a fake started from it. Its waits are
# its own (tmux_lib.sh's wait_for reads the pane, not a file).

# fake_wait FILE PATTERN: until PATTERN is in FILE (bounded: 10 s).
fake_wait() {
	_w=0
	while [ $_w -lt 200 ] && ! grep -q -- "$2" "$1" 2>/dev/null; do _w=$((_w + 1)); sleep 0.05; done
	grep -q -- "$2" "$1" 2>/dev/null
}

# fleet_template FILE: the simulator and a generator run until it has
# completed 10 requests; its GET /v1/status?lean=1 is saved in FILE, its
# completed count in $template_completed; both are stopped.
fleet_template() {
	"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 5ms --itl 1ms >"$tmp/tsim.out" 2>"$tmp/tsim.err" &
	_simpid=$!
	fake_wait "$tmp/tsim.out" "listening on"
	_port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/tsim.out")
	"$INFERTOP_BIN" --no-tui -q -c 2 -d 60s --output-tokens 5 --metrics-url none --listen 127.0.0.1:0 \
		"http://127.0.0.1:$_port" >"$tmp/tgen.out" 2>"$tmp/tgen.err" &
	_gpid=$!
	fake_wait "$tmp/tgen.err" "control API on"
	_api=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/tgen.err")
	_i=0
	until curl -s "$_api/v1/status?lean=1" >"$1" && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["infertop"]["counters"]["run"]["completed"] >= 10 else 1)' "$1" 2>/dev/null; do
		_i=$((_i + 1)); [ $_i -lt 200 ] || break; sleep 0.05
	done
	kill "$_gpid" "$_simpid" 2>/dev/null
	wait "$_gpid" "$_simpid" 2>/dev/null
	template_completed=$(python3 -c '
import json, sys
print(json.load(open(sys.argv[1]))["infertop"]["counters"]["run"]["completed"])' "$1")
	[ "$template_completed" -ge 10 ]
}

# fake NAME TEMPLATE [OPTIONS...]: a fake generator; its URL in $fake_url,
# its output in $tmp/NAME.*.
fake() {
	_name=$1
	shift
	python3 "$(dirname "$0")/fake_generator.py" "$@" >"$tmp/$_name.out" 2>"$tmp/$_name.err" &
	pids="$pids $!"
	fake_wait "$tmp/$_name.out" "listening on"
	fake_url=$(sed -n 's/^listening on //p' "$tmp/$_name.out")
}
