#!/bin/bash
# A real Prometheus scrapes a run's /metrics (--listen): what it stores must
# be what the run counted. A headless run against the simulator (TTFT 50 ms)
# is scraped every second for over ten seconds, then paused through the API
# so that its counts stand still; after two more scrapes Prometheus's
# infertop_requests_total must equal the run's own count (GET /v1/status),
# and its histogram_quantile(0.5) of TTFT must fall in the bucket that holds
# 50 ms. promtool checks the exposition itself. Ends "N passed, N failed".
# Needs prometheus and promtool (Debian's prometheus package): without them
# it fails, saying so.
set -u
bin=${INFERTOP_BIN:-./infertop}
tmp=$(mktemp -d)
pids=()
passed=0
failed=0
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

check() {
	if [ "$2" -eq 0 ]; then
		echo "ok: $1"
		passed=$((passed + 1))
	else
		echo "FAIL: $1"
		failed=$((failed + 1))
	fi
}
finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit $?
}

for tool in prometheus promtool curl jq; do
	if ! command -v "$tool" >/dev/null; then
		echo "FAIL: $tool is not installed (./install-deps.sh installs it)"
		failed=$((failed + 1))
		finish
	fi
done

# wait_for FILE REGEX SECONDS: the first match of REGEX's group 1 in FILE.
wait_for() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		if grep -qE "$2" "$1" 2>/dev/null; then
			sed -nE "s|.*$2.*|\1|p" "$1" | head -1
			return 0
		fi
		sleep 0.05
	done
	return 1
}

"$bin" sim --listen 127.0.0.1:0 --timing fixed --ttft 50ms --itl 5ms >"$tmp/sim" 2>&1 &
pids+=($!)
sim=$(wait_for "$tmp/sim" 'listening on ([0-9.:]+)' 10) || { echo "FAIL: simulator did not start"; cat "$tmp/sim"; exit 1; }

"$bin" --no-tui --interval 1s -c 4 -d 120s --output-tokens 16 --metrics-url none \
	--listen 127.0.0.1:0 "http://$sim" >"$tmp/run.out" 2>"$tmp/run.err" &
run=$!
pids+=($run)
api=$(wait_for "$tmp/run.err" 'control API on (http://[0-9.:]+)' 20) ||
	{ echo "FAIL: no control API line"; cat "$tmp/run.err"; exit 1; }
target=${api#http://}

# promtool on the exposition as served.
curl -sf "$api/metrics" >"$tmp/metrics.txt"
promtool check metrics <"$tmp/metrics.txt" >"$tmp/promtool.out" 2>&1
st=$?
[ $st -eq 0 ] || cat "$tmp/promtool.out"
check "promtool check metrics passes on /metrics" $st

# Prometheus on a free port, scraping every second.
port=
for try in 1 2 3 4 5; do
	p=$((20000 + RANDOM % 40000))
	cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: infertop
    static_configs:
      - targets: ['$target']
EOF
	prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb$try" \
		--web.listen-address="127.0.0.1:$p" >"$tmp/prom$try.log" 2>&1 &
	ppid=$!
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$p/-/ready" >/dev/null 2>&1 && break
		kill -0 $ppid 2>/dev/null || break
		sleep 0.1
	done
	if curl -sf "http://127.0.0.1:$p/-/ready" >/dev/null 2>&1; then
		port=$p
		pids+=($ppid)
		break
	fi
	kill $ppid 2>/dev/null
done
[ -n "$port" ] || { echo "FAIL: prometheus did not start"; tail -5 "$tmp"/prom*.log; exit 1; }
prom="http://127.0.0.1:$port"

query() {
	curl -sf --get "$prom/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'
}

# Ten seconds of scrapes under load.
sleep 10
up=$(query 'up{job="infertop"}')
[ "$up" = 1 ]
check "prometheus scrapes the run (up = ${up:-none})" $?

# Pause: no new requests; once in-flight ones are done the count stands.
curl -sf -X POST -H 'Content-Type: application/json' "$api/v1/pause" >/dev/null
for _ in $(seq 100); do
	[ "$(curl -sf "$api/v1/status" | jq '.infertop.state.in_flight // .infertop.load.in_flight // empty')" = 0 ] && break
	sleep 0.1
done
own=$(curl -sf "$api/v1/status" | jq '.completed')
# Two more scrapes after the count stopped moving.
got=
for _ in $(seq 50); do
	sleep 0.5
	got=$(query 'infertop_requests_total{outcome="ok"}')
	[ "$got" = "$own" ] && break
done
[ -n "$own" ] && [ "$own" -gt 0 ] && [ "$got" = "$own" ]
check "prometheus's infertop_requests_total equals the run's count ($got vs $own)" $?

q=$(query 'histogram_quantile(0.5, sum by (le) (infertop_ttft_seconds_bucket))')
awk -v q="$q" 'BEGIN { exit !(q > 0.04 && q <= 0.06) }'
check "histogram_quantile(0.5) of TTFT ($q s) in the bucket holding 50 ms (0.04, 0.06]" $?

curl -sf -X POST -H 'Content-Type: application/json' "$api/v1/stop" >/dev/null
wait $run
check "the run ends through the API" $?
finish
