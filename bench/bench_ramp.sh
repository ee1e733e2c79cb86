#!/bin/bash
# Ramp to many streams at once: infertop -c STREAMS against `infertop sim`
# (fixed timing), headless with a progress line every second. Prints when
# the first progress line came (the loop's first breath after the ramp) and
# how long the whole run took, against the -d it was given.
#   bench/bench_ramp.sh [STREAMS] [DURATION_S]   (run from the build
#                                                  directory; 15000 5)
# INFERTOP_BIN (./infertop), TTFT (50ms), ITL (10ms), TOKENS (64) and
# INFERTOP_ARGS (more options, e.g. --http-client curl) may be set.
set -eu
bin=${INFERTOP_BIN:-./infertop}
streams=${1:-15000}
dur=${2:-5}
[ -x "$bin" ] || { echo "bench_ramp.sh: $bin not built" >&2; exit 2; }
# Each side holds one descriptor per stream plus a few.
need=$((streams + 256))
ulimit -n "$need" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
have=$(ulimit -n)
if [ "$have" -lt "$need" ]; then
	echo "bench_ramp.sh: fd limit $have < $need; try fewer streams" >&2
	exit 2
fi
out=$(mktemp -d)
simpid=
trap '[ -n "$simpid" ] && kill $simpid 2>/dev/null; rm -rf "$out"' EXIT

"$bin" sim --listen 127.0.0.1:0 --timing fixed --ttft "${TTFT:-50ms}" --itl "${ITL:-10ms}" \
	--max-connections $((streams + 64)) >"$out/sim" 2>/dev/null &
simpid=$!
for _ in $(seq 100); do
	grep -q listening "$out/sim" 2>/dev/null && break
	sleep 0.05
done
addr=$(sed -n 's/^listening on //p' "$out/sim" | head -1)
[ -n "$addr" ] || { echo "bench_ramp.sh: simulator did not start" >&2; exit 1; }

# Each stderr line is stamped with the milliseconds since launch.
t0=$(date +%s%N)
set +e
"$bin" --no-tui --interval 1s -c "$streams" -d "${dur}s" --output-tokens "${TOKENS:-64}" \
	--metrics-url none ${INFERTOP_ARGS:-} "http://$addr" 2>&1 >"$out/summary" |
	while IFS= read -r line; do
		printf '%d %s\n' $((($(date +%s%N) - t0) / 1000000)) "$line"
	done >"$out/stderr"
set -e
t1=$(date +%s%N)

first=$(grep -m1 -E '^[0-9]+ \[ *[0-9.]+s\]' "$out/stderr" | cut -d' ' -f1)
# The loop's longest breath-hold: the widest gap between two progress
# lines (due every second), the first one counted from launch.
gap=$(grep -E '^[0-9]+ \[ *[0-9.]+s\]' "$out/stderr" | awk '{ if ($1 - p > g) g = $1 - p; p = $1 } END { print g + 0 }')
printf 'streams %d, -d %ds\n' "$streams" "$dur"
printf 'first progress line  %s ms\n' "${first:-none}"
printf 'longest gap          %s ms between progress lines (due every 1000 ms)\n' "$gap"
printf 'run length           %d ms\n' $(((t1 - t0) / 1000000))
grep -iE -A3 "^(Successful requests|Failed requests|Errors by kind)" "$out/summary" | grep -v '^--' | head -12 || true
