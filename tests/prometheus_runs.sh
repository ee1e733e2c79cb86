#!/bin/bash
# A real Prometheus (scraping every second) sees every request of a run:
# one CLI run with --listen (the load held back by --start-at so the first
# scrapes read 0, and its final counts kept on /metrics by --linger's
# default, two scrape intervals) and two back-to-back `infertop serve`
# runs (counters that grow across runs, final counts exported between
# them, the run id a label of infertop_run_info). For each run,
# increase(infertop_requests_total[...]) from the last scrape before the
# run to the last scrape before the next one (or the end) equals the
# result file's completed + failed exactly; serve is up all along.
# Needs prometheus, promtool, curl and jq (./install-deps.sh).
set -u
bin=${INFERTOP_BIN:-./infertop}
tmp=$(mktemp -d)
pids=()
passed=0
failed=0
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
check() {
	if [ "$2" -eq 0 ]; then echo "ok: $1"; passed=$((passed + 1)); else echo "FAIL: $1"; failed=$((failed + 1)); fi
}
finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit $?
}
for tool in prometheus promtool curl jq python3; do
	command -v "$tool" >/dev/null || { echo "FAIL: $tool is not installed (./install-deps.sh installs it)"; exit 1; }
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
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
now_plus() { python3 -c 'import sys, time; print("%.3f" % (time.time() + float(sys.argv[1])))' "$1"; }

"$bin" sim --listen 127.0.0.1:0 --timing fixed --ttft 20ms --itl 5ms >"$tmp/sim" 2>&1 &
pids+=($!)
sim=$(wait_for "$tmp/sim" 'listening on ([0-9.:]+)' 10) || { echo "FAIL: simulator did not start"; exit 1; }

mkdir "$tmp/res"
"$bin" serve --listen 127.0.0.1:0 --results-dir "$tmp/res" >"$tmp/serve.out" 2>"$tmp/serve.err" &
pids+=($!)
sapi=$(wait_for "$tmp/serve.err" 'control API on (http://[0-9.:]+)' 20) || { echo "FAIL: serve did not start"; exit 1; }
cport=$(free_port)

port=
for try in 1 2 3 4 5; do
	p=$(free_port)
	cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: cli
    static_configs:
      - targets: ['127.0.0.1:$cport']
  - job_name: serve
    static_configs:
      - targets: ['${sapi#http://}']
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
[ -n "$port" ] || { echo "FAIL: prometheus did not start"; exit 1; }
prom="http://127.0.0.1:$port"
# Prometheus hands its first targets to the scrapers some seconds after it
# is ready: the runs begin once it scrapes serve.
for _ in $(seq 150); do
	[ "$(curl -sf --get "$prom/api/v1/query" --data-urlencode 'query=up{job="serve"}' | jq -r '.data.result[0].value[1] // empty')" = 1 ] && break
	sleep 0.1
done

# The CLI run: the load 4 s ahead (the first scrapes read 0), 4 s long.
"$bin" --no-tui --interval 1s -c 2 -d 4s --output-tokens 16 --metrics-url none --start-at "$(now_plus 4)" \
	--listen "127.0.0.1:$cport" -o "$tmp/cli.json" "http://$sim" >"$tmp/cli.out" 2>"$tmp/cli.err"
st=$?
[ $st -eq 0 ] && grep -q "/metrics keeps the final counts for 2.0s (--linger)" "$tmp/cli.err"
check "the CLI run ends (exit $st) after lingering two scrape intervals ($(grep -o 'for [0-9.]*s' "$tmp/cli.err"))" $?

# Two serve runs back to back: the second posted as soon as the first is done.
post_run() {
	curl -sf -X POST -H 'Content-Type: application/json' \
		-d "{\"url\":\"http://$sim\",\"concurrency\":2,\"duration\":\"3s\",\"output-tokens\":16,\"metrics-url\":\"none\",\"start-at\":\"$(now_plus 2)\"}" \
		"$sapi/v1/runs" | jq -r .id
}
wait_done() {
	for _ in $(seq 200); do
		[ "$(curl -sf "$sapi/v1/runs/$1" | jq -r .state)" = done ] && return 0
		sleep 0.1
	done
	return 1
}
id1=$(post_run) && wait_done "$id1" && id2=$(post_run) && wait_done "$id2"
check "two serve runs, one after the other ($id1, $id2)" $?
# Three more scrapes of the final counts.
sleep 3.5

python3 - "$prom" "$tmp/cli.json" "127.0.0.1:$cport" "$tmp/res/infertop-run-$id1.json" \
	"$tmp/res/infertop-run-$id2.json" "${sapi#http://}" <<'EOF'
import json, sys, urllib.parse, urllib.request
prom, cli_file, cli_inst, r1_file, r2_file, serve_inst = sys.argv[1:]

def get(path, **q):
    with urllib.request.urlopen(prom + path + "?" + urllib.parse.urlencode(q)) as r:
        return json.load(r)["data"]["result"]

def samples(inst):
    """[(t, ok + error)] of every scrape of inst, oldest first."""
    by_t = {}
    for s in get("/api/v1/query", query='infertop_requests_total{instance="%s"}[10m]' % inst):
        for t, v in s["values"]:
            by_t[t] = by_t.get(t, 0) + int(float(v))
    return sorted(by_t.items())

def increase(inst, t_a, t_b):
    ms = round((t_b - t_a) * 1000)
    r = get("/api/v1/query", query='sum(increase(infertop_requests_total{instance="%s"}[%dms]))' % (inst, ms),
            time="%.3f" % t_b)
    return float(r[0]["value"][1]) if r else None

def last_before(ss, t):
    before = [x for x in ss if x[0] <= t]
    return before[-1] if before else None

def count(path):
    d = json.load(open(path))
    return d["completed"] + d["failed"], d["infertop"]["run"]["start_unix"]

fails = 0
def check(what, ok):
    global fails
    print(("ok: " if ok else "FAIL: ") + what)
    fails += not ok

cli_n, cli_start = count(cli_file)
ss = samples(cli_inst)
# From the last scrape that read 0 (before the load: --start-at).
zeros = [x for x in ss if x[1] == 0]
a, b = zeros[-1] if zeros else None, ss[-1]
check("the CLI was scraped before its load, reading 0 (%s)" % (a,), a is not None and a[0] <= cli_start + 0.5)
check("its last scrape reads the final count (%d, the file %d)" % (b[1], cli_n), b[1] == cli_n)
inc = increase(cli_inst, a[0], b[0])
check("CLI: increase() = %s, the file's completed+failed = %d" % (inc, cli_n), inc == cli_n and cli_n > 0)

(n1, s1), (n2, s2) = count(r1_file), count(r2_file)
ss = samples(serve_inst)
a1, b1 = last_before(ss, s1), last_before(ss, s2)
b2 = ss[-1]
values = [v for _, v in ss]
check("serve's counter never drops across runs", all(x <= y for x, y in zip(values, values[1:])))
check("between the runs it reads run 1's final count (%s, the file %d)" % (b1, n1), b1[1] - a1[1] == n1)
inc1, inc2, inc12 = increase(serve_inst, a1[0], b1[0]), increase(serve_inst, b1[0], b2[0]), \
    increase(serve_inst, a1[0], b2[0])
check("serve run 1: increase() = %s, the file %d" % (inc1, n1), inc1 == n1 and n1 > 0)
check("serve run 2: increase() = %s, the file %d" % (inc2, n2), inc2 == n2 and n2 > 0)
check("both: increase() = %s, the files %d" % (inc12, n1 + n2), inc12 == n1 + n2)
up = get("/api/v1/query", query='min_over_time(up{instance="%s"}[10m])' % serve_inst)
check("serve was up at every scrape, between runs too", up and up[0]["value"][1] == "1")
info = get("/api/v1/query", query='infertop_run_info{instance="%s"}' % serve_inst)
check("infertop_run_info names run 2's id", info and info[0]["metric"].get("run_id") == json.load(open(r2_file))["infertop"]["run"]["run_id"])
sys.exit(1 if fails else 0)
EOF
check "Prometheus's increase() over each run equals its result's counts" $?

curl -sf "$sapi/metrics" >"$tmp/between.txt" && promtool check metrics <"$tmp/between.txt" >"$tmp/promtool.out" 2>&1
check "promtool accepts serve's /metrics between runs" $?
finish
