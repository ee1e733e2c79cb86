#!/bin/bash
# --workers: the same load from one engine and from N workers, against the
# simulator in fixed timing (TTFT 50 ms, ITL 10 ms) in its own process.
# Prints each worker's CPU and share, and the merged figures beside one
# engine's: they should agree within noise (the split must not change
# what is measured), and the shares should be even.
#   bench/workers.sh [STREAMS] [REQUESTS] [N]   (from the build directory;
#                                                default 200 2000 2)
set -eu
bin=${INFERTOP_BIN:-./infertop}
streams=${1:-200}
requests=${2:-2000}
n=${3:-2}
out=$(mktemp -d)
simpid=
trap '[ -n "$simpid" ] && kill $simpid 2>/dev/null; rm -rf "$out"' EXIT
"$bin" sim --listen 127.0.0.1:0 --timing fixed --ttft 50ms --itl 10ms \
	--max-connections $((streams + 100)) >"$out/sim.out" 2>&1 &
simpid=$!
for _ in $(seq 100); do grep -q listening "$out/sim.out" && break; sleep 0.1; done
sim=http://$(sed -n 's/^listening on //p' "$out/sim.out" | head -1)

one() { # workers label
	local args=()
	[ "$1" -gt 1 ] && args=(--workers "$1")
	TIMEFORMAT='%3U %3S'
	{ time "$bin" --no-tui -c "$streams" -n "$requests" --output-tokens 64 --metrics-url none \
		"${args[@]}" -o "$out/$2.json" "$sim" >/dev/null 2>"$out/$2.err"; } 2>"$out/$2.time"
}
one 1 single
one "$n" workers
echo "load: $streams streams, $requests requests of 64 tokens, simulator TTFT 50 ms, ITL 10 ms"
read -r u s <"$out/single.time"
echo "one engine: CPU ${u} s user + ${s} s sys"
echo "$n workers:"
sed -n 's/^infertop: worker/  worker/p' "$out/workers.err"
printf '%-22s %12s %12s\n' "" "one engine" "$n workers"
for k in completed failed median_ttft_ms p99_ttft_ms median_itl_ms p99_itl_ms median_e2el_ms output_throughput; do
	printf '%-22s %12s %12s\n' "$k" "$(jq ".$k" "$out/single.json")" "$(jq ".$k" "$out/workers.json")"
done
