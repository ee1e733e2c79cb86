#!/bin/sh
# The Grafana board in deploy/ reads only series that exist: every metric
# name its queries (and variables) name is in what the simulator's vLLM
# profile (`infertop sim`, /metrics) or infertop's own exporter (a run with
# --listen, read during --linger) actually exports; vllm:* from the
# simulator, infertop_* from infertop. Its server panels use vLLM's current
# names (vllm:request_time_per_output_token_seconds, not the deprecated
# vllm:time_per_output_token_seconds) and are drawn per replica.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
board=$INFERTOP_SRCDIR/deploy/grafana/infertop.json
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 20ms --itl 5ms >"$tmp/sim.out" 2>&1 &
pids="$pids $!"
wait_for "$tmp/sim.out" "listening on"
sim=$(sed -n 's/^listening on \(.*\)$/\1/p' "$tmp/sim.out")
# A short run, its /metrics kept up 30 s after it ends: read then (every
# family has samples, the window summaries included).
"$INFERTOP_BIN" --no-tui -n 12 -c 2 --output-tokens 8 --metrics-url none --listen 127.0.0.1:0 --linger 30s \
	"http://$sim" >"$tmp/run.out" 2>"$tmp/run.err" &
pids="$pids $!"
wait_for "$tmp/run.err" "keeps the final counts"
check "the run ended and lingers" $?
api=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/run.err")
curl -sf "$api/metrics" >"$tmp/infertop.txt" && curl -sf "http://$sim/metrics" >"$tmp/sim.txt"
check "both /metrics read" $?

python3 - "$board" "$tmp/sim.txt" "$tmp/infertop.txt" <<'PY'
import json, re, sys
board = json.load(open(sys.argv[1]))
def names(path):
    return {m.group(1) for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]", open(path).read(), re.M)}
sim, inf = names(sys.argv[2]), names(sys.argv[3])
exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
exprs += [v["query"]["query"] if isinstance(v.get("query"), dict) else str(v.get("query", ""))
          for v in board["templating"]["list"] if v.get("type") == "query"]
# A metric name in PromQL: followed by a selector or a range; not a
# function (followed by "(") nor a label (inside braces or by (...)).
used = set()
for e in exprs:
    bare = re.sub(r"\{[^}]*\}", "{}", e)
    bare = re.sub(r"\b(by|without)\s*\([^)]*\)", "", bare)
    used |= {m.group(1) for m in re.finditer(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{\[]", bare)}
    used |= {m.group(1) for m in re.finditer(r"label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)", e)}
fails = 0
def check(what, ok):
    global fails
    print(("ok: " if ok else "FAIL: ") + what)
    fails += not ok
vllm = sorted(n for n in used if n.startswith("vllm:"))
ours = sorted(n for n in used if n.startswith("infertop_"))
other = sorted(used - set(vllm) - set(ours))
print("the board reads %d names: %d vllm:*, %d infertop_*" % (len(used), len(vllm), len(ours)))
check("no other names (%s)" % other, not other)
miss = [n for n in vllm if n not in sim]
check("every vllm:* name is exported by the simulator%s" % (" (missing: %s)" % miss if miss else ""), not miss)
miss = [n for n in ours if n not in inf]
check("every infertop_* name is exported by infertop%s" % (" (missing: %s)" % miss if miss else ""), not miss)
want = ["vllm:inter_token_latency_seconds_bucket", "vllm:request_time_per_output_token_seconds_bucket",
        "vllm:kv_cache_usage_perc", "vllm:request_queue_time_seconds_bucket",
        "vllm:request_prefill_time_seconds_bucket", "vllm:request_decode_time_seconds_bucket"]
check("it reads vLLM's current names, KV, queue, prefill and decode", all(n in used for n in want))
check("not the deprecated vllm:time_per_output_token_seconds", "vllm:time_per_output_token_seconds_bucket" not in used)
per = [p["title"] for p in board["panels"] if any("$replica" in t["expr"] for t in p.get("targets", []))]
check("per-replica panels (by $replica): %s" % per,
      all(any(k in t for t in per) for k in ("KV", "Queue", "Prefill", "Decode")))
sys.exit(1 if fails else 0)
PY
check "the board's names exist in what the simulator and infertop export" $?
[ "$fails" -eq 0 ]
