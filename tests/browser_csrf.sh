#!/bin/sh
# A real browser as the attacker: headless Chromium opens a page served
# from another loopback origin (python's http.server on a port of its own)
# and the same page as a file:// URL (Origin: null). Each page tries what
# any web site could: no-cors fetches with Content-Type text/plain and a
# text/plain form POST to a run's control API (--listen) and to `infertop
# serve`, to raise the load, pause, stop, and start runs reading a local
# file. Afterwards the run's own status must show nothing changed, serve
# must have no run, and both must have logged the requests as refused (so
# the browser did send them). Chromium, python3, curl and jq come with
# install-deps.sh: a missing one fails the test rather than skip it.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
chromium=${CHROMIUM:-chromium}
for tool in "$chromium" python3 curl jq; do
	command -v "$tool" >/dev/null || { echo "FAIL: $tool is not installed (install-deps.sh installs it)"; exit 1; }
done
tmp=$(mktemp -d)
simpid= runpid= servepid= webpid=
trap 'for p in $simpid $runpid $servepid $webpid; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 5ms --itl 5ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
simpid=$!
wait_for "$tmp/sim.out" "listening on"
simport=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
[ -n "$simport" ]
check "the simulator is up" $?

printf 'SECRET-LINE-%s\n' 1 2 3 4 5 6 7 8 >"$tmp/secret.txt"
mkdir "$tmp/results"
# The run under attack (-c 2 for two minutes, steered only through
# --listen) and a serve, with a file a page would love to send somewhere;
# new ones for each page. Their ports go into the page.
start_targets() {
	"$INFERTOP_BIN" -c 2 -d 120s --output-tokens 20 --no-tui -q --metrics-url none --listen 127.0.0.1:0 \
		"http://127.0.0.1:$simport" >"$tmp/run.out" 2>"$tmp/run.err" &
	runpid=$!
	"$INFERTOP_BIN" serve --listen 127.0.0.1:0 --results-dir "$tmp/results" >"$tmp/serve.out" 2>"$tmp/serve.err" &
	servepid=$!
	wait_for "$tmp/run.err" "control API on"
	wait_for "$tmp/serve.err" "control API on"
	ctl=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/run.err")
	srv=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/serve.err")
	[ -n "$ctl" ] && [ -n "$srv" ]
}
stop_targets() {
	kill $runpid $servepid 2>/dev/null
	wait $runpid $servepid 2>/dev/null
	runpid= servepid=
}

# The page. Every request is one a browser sends without asking anyone:
# no preflight (simple method, text/plain), no reading of the answer.
mkdir "$tmp/web"
write_page() {
cat >"$tmp/web/attack.html" <<EOF
<!doctype html><html><body><pre id="log">start</pre>
<iframe name="sink" style="display:none"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="$srv/v1/runs">
<input name='{"url":"http://127.0.0.1:$simport","requests":3,"dataset":"text:$tmp/secret.txt","model":"' value='"}'>
</form>
<script>
const log = m => { document.getElementById('log').textContent += '\n' + m; };
const text = 'text/plain';
const shots = [
	['$ctl/v1/load', '{"concurrency":77}'],
	['$ctl/v1/pause', ''],
	['$ctl/v1/stop', '{}'],
	['$srv/v1/runs', JSON.stringify({url: 'http://127.0.0.1:$simport', requests: 3,
		dataset: 'text:$tmp/secret.txt'})],
	['$srv/start-load', JSON.stringify({host: '127.0.0.1', port: $simport, num_prompts: 3,
		dataset_name: 'sonnet', dataset_path: '$tmp/secret.txt', sonnet_input_len: 20,
		sonnet_prefix_len: 0})],
];
(async () => {
	for (const [u, b] of shots) {
		try {
			await fetch(u, {method: 'POST', mode: 'no-cors', headers: {'Content-Type': text}, body: b});
			log('sent ' + u);
		} catch (e) {
			log('error ' + u + ' ' + e);
		}
	}
	document.getElementById('f').onsubmit = null;
	document.getElementById('f').submit();
	log('form posted');
	setTimeout(() => log('done'), 1500);
})();
</script></body></html>
EOF
}
python3 -m http.server 0 --bind 127.0.0.1 --directory "$tmp/web" >"$tmp/web.out" 2>&1 &
webpid=$!
wait_for "$tmp/web.out" "Serving HTTP"
webport=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$tmp/web.out" | head -1)
[ -n "$webport" ]
check "the attacker's origin is up (127.0.0.1:$webport)" $?

browse() { # url: the DOM after the page has run, in $tmp/dom
	HOME=$tmp timeout 90 "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--no-first-run --user-data-dir="$tmp/profile" --virtual-time-budget=15000 --dump-dom "$1" \
		>"$tmp/dom" 2>"$tmp/chromium.err"
}

run_state() { # the run's state through its own API
	curl -s -m 5 -H 'Content-Type: application/json' "$ctl/v1/status" |
		jq -c '.infertop.state | [.status, .concurrency, .paused, .load_changes]'
}

for page in "http://127.0.0.1:$webport/attack.html" "file://$tmp/web/attack.html"; do
	start_targets
	check "$page: a run's control API and a serve are up" $?
	write_page
	before=$(run_state)
	case $before in '["running",2,false,'*) true ;; *) false ;; esac
	check "$page: the run before: running, -c 2, not paused ($before)" $?
	browse "$page"
	grep -q 'done' "$tmp/dom" && [ "$(grep -c '^sent ' "$tmp/dom")" -eq 5 ]
	check "$page: the browser sent all five requests and the form ($(tr '\n' ' ' <"$tmp/dom" | head -c 400))" $?
	# An obeyed stop shows as "stopping" (or no answer once the run is over).
	after=$(run_state)
	[ "$after" = "$before" ]
	check "$page: the run's own status is unchanged ($after)" $?
	runs=$(curl -s -m 5 -H 'Content-Type: application/json' "$srv/v1/runs" | jq -c '.runs | length')
	[ "$runs" = 0 ]
	check "$page: serve started no run ($runs)" $?
	grep -q 'refused' "$tmp/run.err" && grep -q 'refused' "$tmp/serve.err"
	check "$page: the run and serve logged the requests as refused" $?
	! grep -qi "sanitizer\|runtime error" "$tmp/run.err" "$tmp/serve.err"
	check "$page: no sanitizer report" $?
	stop_targets
done
[ -z "$(ls "$tmp/results")" ]
check "serve wrote no result" $?
[ "$fails" -eq 0 ]
