#!/bin/bash
# --metrics-prometheus URL --metrics-selector '{...}': the server's replicas
# read through a real Prometheus (Debian's package) that scrapes three
# simulators every second (job "vllm", namespace "x"), plus the run's own
# target under another job, which the selector must leave out. Loaded
# differently while the run reads them: 3 replicas, and the summed
# generation and prompt tokens equal what Prometheus itself says with
# sum(...) over the same selector, before and after. Tolerance: none. Both
# read the same stored samples: the loads happen after the run's first
# read (Prometheus had caught up before the run started), and the run ends
# only after Prometheus holds the final counts (equal to the three
# /metrics read with curl) and two more of the run's 1 s queries; a run
# ending mid-load would be short by up to one scrape interval's increase.
# Then Prometheus's own error, a selector that is not {...}, and the
# conflict with --metrics-url. Needs prometheus, curl, jq: without them it
# fails, saying so (as tests/prometheus.sh does).
set -u
: "${INFERTOP_BIN:?}"
. "$(dirname "$0")/check_lib.sh"
for tool in prometheus curl jq python3; do
	command -v "$tool" >/dev/null || { echo "FAIL: $tool is not installed (./install-deps.sh installs it)"; exit 1; }
done
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
wait_until() { # seconds command...: polls every 0.2 s
	local n=0 max=$(($1 * 5))
	shift
	while [ $n -lt $max ]; do "$@" && return 0; n=$((n + 1)); sleep 0.2; done
	return 1
}

for n in 0 1 2 3; do
	"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 1ms --itl 1ms >"$tmp/sim$n.out" 2>&1 &
	pids="$pids $!"
	wait_for "$tmp/sim$n.out" "listening on"
	eval "a$n=$(sed -n 's/^listening on //p' "$tmp/sim$n.out")"
done
# shellcheck disable=SC2154
tgt=http://$a0

port=
for try in 1 2 3 4 5; do
	p=$((20000 + RANDOM % 40000))
	# shellcheck disable=SC2154
	cat >"$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: vllm
    static_configs:
      - targets: ['$a1', '$a2', '$a3']
        labels: {namespace: x}
  - job_name: other
    static_configs:
      - targets: ['$a0']
        labels: {namespace: x}
YML
	prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb$try" \
		--web.listen-address="127.0.0.1:$p" >"$tmp/prom$try.log" 2>&1 &
	ppid=$!
	if wait_until 20 curl -sf "http://127.0.0.1:$p/-/ready" -o /dev/null; then
		port=$p
		pids="$pids $ppid"
		break
	fi
	kill $ppid 2>/dev/null
done
[ -n "$port" ] || { echo "FAIL: prometheus did not start"; tail -5 "$tmp"/prom*.log; exit 1; }
prom=http://127.0.0.1:$port
sel='{namespace="x",job="vllm"}'
query() { # PromQL: the first value, or nothing
	curl -sf --get "$prom/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'
}
direct() { # metric: its sum over the three /metrics
	for a in "$a1" "$a2" "$a3"; do curl -s "http://$a/metrics"; done |
		awk -v m="$1" '$1 ~ "^" m "([{]|$)" { s += $NF } END { printf "%d\n", s }'
}
caught_up() { # Prometheus holds what the three say now
	[ "$(query "sum(vllm:generation_tokens_total$sel)")" = "$(direct vllm:generation_tokens_total)" ] &&
		[ "$(query "sum(vllm:prompt_tokens_total$sel)")" = "$(direct vllm:prompt_tokens_total)" ] &&
		[ "$(query "count(up$sel == 1)")" = 3 ]
}
load() { # addr requests output-tokens
	"$INFERTOP_BIN" "http://$1" --no-tui -q -c 2 -n "$2" --output-tokens "$3" --metrics-url none \
		-o "$tmp/l.json" >/dev/null 2>&1
}

load "$a2" 5 7   # totals that do not start at 0
wait_until 20 caught_up
check "prometheus scrapes the three simulators" $?
g0=$(query "sum(vllm:generation_tokens_total$sel)")
p0=$(query "sum(vllm:prompt_tokens_total$sel)")

"$INFERTOP_BIN" "$tgt" --no-tui -c 1 -d 60s --interval 200ms --metrics-interval 1s \
	--metrics-prometheus "$prom/" --metrics-selector "$sel" -o "$tmp/r.json" >"$tmp/r.out" 2>&1 &
run=$!
pids="$pids $run"
wait_for "$tmp/r.out" "(3 of 3 replicas)"
check "three instances under the selector: three replicas read" $?
load "$a1" 10 8
load "$a2" 20 16
load "$a3" 30 4
wait_until 20 caught_up
check "prometheus holds the final counts" $?
g1=$(query "sum(vllm:generation_tokens_total$sel)")
p1=$(query "sum(vllm:prompt_tokens_total$sel)")
# Two of the run's 1 s queries after that: ten of its 200 ms progress lines.
n=$(grep -c "replicas)" "$tmp/r.out")
wait_until 10 test "$(grep -c "replicas)" "$tmp/r.out")" -ge $((n + 10))
kill -INT $run
wait $run
st=$?
check "the run ends on Ctrl-C: exit 0 ($st)" $st
python3 - "$tmp/r.json" "$g0" "$g1" "$p0" "$p1" "$a1" "$a2" "$a3" <<'PY'
import json, sys
srv = json.load(open(sys.argv[1]))["infertop"]["server"]
g0, g1, p0, p1 = (int(float(x)) for x in sys.argv[2:6])
inst = sys.argv[6:9]
ok = True
def want(what, got, exp):
    global ok
    print(("ok: " if got == exp else "FAIL: ") + "%s: %r, Prometheus says %r" % (what, got, exp))
    ok = ok and got == exp
want("replicas", len(srv["replicas"]), 3)
want("replicas read", srv["replicas_read"], 3)
want("replica names (instance labels)", sorted(r["url"] for r in srv["replicas"]), sorted(inst))
want("summed generation tokens", srv["run_totals"]["generation_tokens"], g1 - g0)
want("summed prompt tokens", srv["run_totals"]["prompt_tokens"], p1 - p0)
gens = [r["generation_tokens"] for r in srv["replicas"]]
want("loads differ", len(set(gens)), 3)
want("per-replica shares add up", sum(gens), g1 - g0)
sys.exit(0 if ok else 1)
PY
check "the summed server block equals Prometheus's sum() over the selector" $?

# Prometheus's own error, as it says it (a regex it cannot compile).
"$INFERTOP_BIN" "$tgt" --no-tui -c 1 -d 1500ms --interval 200ms --metrics-prometheus "$prom" \
	--metrics-selector '{job=~"("}' >"$tmp/e.out" 2>&1
st=$?
[ $st -eq 0 ] && grep -q "server metrics: down (Prometheus: bad_data: invalid parameter" "$tmp/e.out"
check "a query Prometheus refuses: its message shown, the run goes on, exit 0 ($st)" $?
# No selector: every series, so the run's own target (job other) too.
"$INFERTOP_BIN" "$tgt" --no-tui -c 1 -d 2s --interval 200ms --metrics-prometheus "$prom" >"$tmp/a.out" 2>&1
grep -q "(4 of 4 replicas)" "$tmp/a.out"
check "no selector: every instance is a replica (4)" $?
# A base URL that is not Prometheus.
"$INFERTOP_BIN" "$tgt" --no-tui -c 1 -d 1500ms --interval 200ms --metrics-prometheus "$tgt" >"$tmp/n.out" 2>&1
grep -q "server metrics: down (HTTP 404 Not Found (is the URL Prometheus's base URL?))" "$tmp/n.out"
check "a URL that is not Prometheus: said so" $?
# Refused at start.
"$INFERTOP_BIN" "$tgt" --metrics-prometheus "$prom" --metrics-selector 'job="vllm"' -d 1s >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "expected a label selector such as '{namespace=\"x\",job=\"vllm\"}'" "$tmp/err"
check "a selector that is not {...}: exit 2, the expected form" $?
"$INFERTOP_BIN" "$tgt" --metrics-prometheus "$prom" --metrics-url "$tgt/metrics" -d 1s >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "cannot be combined with --metrics-url" "$tmp/err"
check "--metrics-prometheus with --metrics-url: refused, naming the conflict" $?
"$INFERTOP_BIN" "$tgt" --metrics-selector "$sel" -d 1s >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "needs --metrics-prometheus" "$tmp/err"
check "--metrics-selector alone: refused" $?
[ "$fails" -eq 0 ]
