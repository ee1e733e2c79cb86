#!/bin/sh
# Measurement fidelity against a known truth: the simulator in fixed timing
# sends the first token exactly TTFT after each request and then one every
# ITL. infertop's medians and tails are compared with that truth, and the
# simulator's own send lag (its histogram on /metrics) is printed so the
# client's error can be told apart from the server's.
#   bench/fidelity.sh [STREAMS] [REQUESTS]     (run from the build directory)
set -eu
bin=${INFERTOP_BIN:-./infertop}
streams=${1:-500}
requests=${2:-$((streams * 5))}
ttft_ms=50
itl_ms=10
out=$(mktemp -d)
trap 'kill $simpid 2>/dev/null; rm -rf "$out"' EXIT
"$bin" sim --listen 127.0.0.1:0 --timing fixed --ttft ${ttft_ms}ms --itl ${itl_ms}ms \
	--max-connections $((streams + 100)) >"$out/sim.out" 2>&1 &
simpid=$!
i=0
while ! grep -q listening "$out/sim.out" && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
port=$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$out/sim.out" | head -1)
"$bin" -q --no-tui -c "$streams" -n "$requests" --output-tokens 64 ${FIDELITY_ARGS:-} -o "$out/r.json" \
	"http://127.0.0.1:$port" >/dev/null
curl -s "http://127.0.0.1:$port/metrics" >"$out/metrics"
python3 - "$out/r.json" "$out/metrics" "$streams" "$ttft_ms" "$itl_ms" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
streams, ttft, itl = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
print(f"fidelity at {streams} streams, {r['completed']} requests, {r['failed']} failed "
      f"(truth: TTFT {ttft} ms, ITL {itl} ms)")
print(f"  median TTFT {r['median_ttft_ms']:.2f} ms  error {r['median_ttft_ms'] - ttft:+.2f} ms   (target within 2 ms)")
print(f"  p99 TTFT    {r['p99_ttft_ms']:.2f} ms  error {r['p99_ttft_ms'] - ttft:+.2f} ms")
print(f"  median ITL  {r['median_itl_ms']:.3f} ms  error {r['median_itl_ms'] - itl:+.3f} ms")
print(f"  p99 ITL     {r['p99_itl_ms']:.2f} ms  error {r['p99_itl_ms'] - itl:+.2f} ms   (target within 5 ms)")
buckets = []
for line in open(sys.argv[2]):
    if line.startswith("infertop_sim_send_lag_seconds_bucket"):
        le = line.split('le="')[1].split('"')[0]
        buckets.append((float(le), float(line.split()[-1])))
if buckets:
    total = buckets[-1][1]
    def q(p):
        for le, c in buckets:
            if c >= p * total:
                return le * 1000
    print(f"  simulator's own send lag: p50 <= {q(0.5):.3f} ms, p99 <= {q(0.99):.3f} ms (bucket bounds)")
PY
