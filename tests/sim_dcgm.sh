#!/bin/sh
# The simulator's DCGM exporter (infertop sim, /dcgm/metrics): the names
# and labels dcgm-exporter uses, an idle GPU at idle power, power and
# utilisation rising with the simulated load and the energy counter
# growing; and --demo reading it, so the run has GPU power and J/token.
: "${INFERTOP_BIN:?}"
set -u
command -v curl >/dev/null 2>&1 || { echo "curl not installed: skipped"; exit 77; }
tmp=$(mktemp -d)
simpid=""
loadpid=""
cleanup() {
	[ -n "$loadpid" ] && kill "$loadpid" 2>/dev/null
	[ -n "$simpid" ] && kill "$simpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/check_lib.sh"

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --max-running 4 --step-time 50ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
simpid=$!
wait_for "$tmp/sim.out" "listening on"
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
[ -n "$port" ]
check "the simulator listens" $? || exit 1
url=http://127.0.0.1:$port/dcgm/metrics
# value NAME FILE: the sample's value.
value() { sed -n "s/^$1{.*} \([0-9.e+]*\)\$/\1/p" "$2"; }

curl -sf "$url" >"$tmp/idle"
check "GET /dcgm/metrics answers" $?
for n in DCGM_FI_DEV_GPU_UTIL DCGM_FI_DEV_POWER_USAGE DCGM_FI_DEV_FB_USED DCGM_FI_DEV_FB_FREE \
	DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION DCGM_FI_DEV_GPU_TEMP DCGM_FI_DEV_SM_CLOCK; do
	grep -Eq "^$n\{gpu=\"0\",UUID=\"GPU-[0-9a-f-]+\",.*modelName=\"[^\"]+\"" "$tmp/idle"
	check "$n with dcgm-exporter's labels (gpu, UUID, modelName)" $?
done
[ "$(value DCGM_FI_DEV_GPU_UTIL "$tmp/idle")" = 0 ]
check "idle: utilisation 0" $?
pidle=$(value DCGM_FI_DEV_POWER_USAGE "$tmp/idle")

# Load: 4 users of 4 slots, long answers, headless for 20 s at most.
"$INFERTOP_BIN" -c 4 --output-tokens 2000 -d 20s --metrics-url none -q "http://127.0.0.1:$port" \
	>"$tmp/load.out" 2>&1 &
loadpid=$!
i=0
while [ $i -lt 100 ]; do
	curl -sf "$url" >"$tmp/busy"
	[ "$(value DCGM_FI_DEV_GPU_UTIL "$tmp/busy")" = 100 ] && break
	i=$((i + 1))
	sleep 0.1
done
[ "$(value DCGM_FI_DEV_GPU_UTIL "$tmp/busy")" = 100 ]
check "4 of 4 slots running: utilisation 100" $?
pbusy=$(value DCGM_FI_DEV_POWER_USAGE "$tmp/busy")
awk -v a="$pidle" -v b="$pbusy" 'BEGIN { exit !(b > a && a > 0) }'
check "power rises with the load ($pidle W idle, $pbusy W busy)" $?
e1=$(value DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION "$tmp/busy")
curl -sf "$url" >"$tmp/busy2"
e2=$(value DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION "$tmp/busy2")
awk -v a="$e1" -v b="$e2" 'BEGIN { exit !(b > a) }'
check "the energy counter grows ($e1 -> $e2 mJ)" $?
kill "$loadpid" 2>/dev/null
wait "$loadpid" 2>/dev/null
loadpid=""

# --demo points --gpu-metrics-url at it: the run has GPU power and J/token.
"$INFERTOP_BIN" --demo -c 4 --output-tokens 50 -d 4s -o "$tmp/demo.json" >"$tmp/demo.out" 2>&1
check "--demo runs" $?
grep -q '"gpu_metrics_url":[[:space:]]*"http://127.0.0.1:[0-9]*/dcgm/metrics"' "$tmp/demo.json"
check "--demo: --gpu-metrics-url is the simulator's exporter" $?
grep -Eq '"joules_per_token":[[:space:]]*[0-9]' "$tmp/demo.json"
check "--demo: J/token measured" $?
grep -Eq 'GPU power \(W\): +mean [0-9]' "$tmp/demo.out"
check "--demo: GPU power in the summary" $?
echo "$fails failed"
[ "$fails" -eq 0 ]
