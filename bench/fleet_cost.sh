#!/bin/bash
# What the fleet view costs: N stub generators (one Python process serving
# a recorded /v1/status document on N ports, each with its own run id) polled
# at 4 Hz and merged by `infertop fleet --no-tui -q` for SECONDS. Prints the
# fleet's CPU (user + sys over the measured span, /proc) as a share of one
# core; the target is <= 5% at N = 64.
#   bench/fleet_cost.sh [N] [SECONDS]   (from the build directory; FLEET_WRAP="perf record --" profiles)
# Every stub answer is a new document (its taken_unix is the time of the
# answer), as a generator's mid-run: the fleet's skip of an unchanged
# document is not what is measured.
set -eu
bin=${INFERTOP_BIN:-./infertop}
n=${1:-64}
secs=${2:-20}
out=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$out"' EXIT
wait_for() { for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# A real status document: a short run against the simulator, polled once
# it has histograms to show.
"$bin" sim --listen 127.0.0.1:0 --timing fixed --ttft 20ms --itl 5ms >"$out/sim.out" 2>&1 &
pids+=($!)
wait_for "$out/sim.out" listening
sim=$(sed -n 's/^listening on //p' "$out/sim.out" | head -1)
"$bin" --no-tui -q --listen 127.0.0.1:0 -c 8 -d 60s --output-tokens 64 --metrics-url none "http://$sim" \
	>"$out/gen.out" 2>"$out/gen.err" &
pids+=($!)
wait_for "$out/gen.err" "control API on"
api=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$out/gen.err")
sleep 3 # requests done, so the histograms are filled as in a real run
curl -s "$api/v1/status?lean=1" >"$out/status.json" # what a generator answers a fleet
echo "recorded status document: $(wc -c <"$out/status.json") bytes"

cat >"$out/stub.py" <<'EOF'
import http.server, re, socketserver, sys, threading, time
doc = open(sys.argv[1], "rb").read()
import json
run_id = json.loads(doc)["infertop"]["run"]["run_id"].encode()
taken = re.compile(rb'"taken_unix":[0-9.e+]+')
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        # A new document every poll, as from a generator mid-run (the
        # fleet skips a document that did not change).
        body = doc.replace(run_id, self.server.run_id)
        body = taken.sub(b'"taken_unix":%.6f' % time.time(), body, count=1)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
ports = []
for i in range(int(sys.argv[2])):
    s = S(("127.0.0.1", 0), H)
    s.run_id = ("%032x" % (0xfeed0000 + i)).encode()
    ports.append(s.server_address[1])
    threading.Thread(target=s.serve_forever, daemon=True).start()
print(",".join("http://127.0.0.1:%d" % p for p in ports), flush=True)
threading.Event().wait()
EOF
python3 -u "$out/stub.py" "$out/status.json" "$n" >"$out/stub.out" 2>&1 &
pids+=($!)
wait_for "$out/stub.out" "http://"
targets=$(head -1 "$out/stub.out")

${FLEET_WRAP:-} "$bin" fleet --targets "$targets" --no-tui -q >"$out/fleet.out" 2>"$out/fleet.err" &
fpid=$!
pids+=($fpid)
cpu() { awk '{print $14, $15}' "/proc/$fpid/stat"; }
sleep 3 # the first polls, connections made
t0=$(date +%s.%N); read -r u0 s0 < <(cpu)
sleep "$secs"
t1=$(date +%s.%N); read -r u1 s1 < <(cpu)
kill -INT "$fpid"
wait "$fpid" || true
hz=$(getconf CLK_TCK)
awk -v u="$((u1 - u0))" -v s="$((s1 - s0))" -v hz="$hz" -v t0="$t0" -v t1="$t1" -v n="$n" \
	'BEGIN { t = t1 - t0; printf "fleet of %d generators at 4 Hz: %.2f%% of a core over %.1f s (user %.2f%%, sys %.2f%%)\n", n, 100 * (u + s) / hz / t, t, 100 * u / hz / t, 100 * s / hz / t }'
