#!/bin/sh
# Server replicas read back from a saved result: a run on a fourth
# simulator scrapes three (three --metrics-url) while each is loaded
# differently by its own run; `infertop report` on the file then shows one
# line a replica (status, gauges, generated tokens and their share) as the
# run's own summary did, and `report --format html` a per-replica table
# with the file's figures. The file keeps each replica's series (running,
# waiting, KV usage, generated tok/s) on the run's time grid: the replica
# loaded hardest runs the most, the run's server_running is their sum point
# by point, and the page (checked in Chromium by tests/html_check.py) draws
# one line a replica in each per-replica chart.
: "${INFERTOP_BIN:?}"
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/check_lib.sh"
py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
chromium=${CHROMIUM:-chromium}
command -v "$chromium" >/dev/null || { echo "FAIL: $chromium is not installed (install-deps.sh installs it)"; exit 1; }
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT

for n in 0 1 2 3; do
	"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 1ms --itl 20ms >"$tmp/sim$n.out" 2>"$tmp/sim$n.err" &
	pids="$pids $!"
	wait_for "$tmp/sim$n.out" "listening on"
	eval "u$n=http://127.0.0.1:$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim$n.out")"
done
load() { # n url concurrency: 3 s of requests of 20 tokens (400 ms each)
	"$INFERTOP_BIN" "$2" --no-tui -q -c "$3" -d 3s --output-tokens 20 --metrics-url none -o "$tmp/l$1.json" \
		>/dev/null 2>&1
}
# shellcheck disable=SC2154
"$INFERTOP_BIN" "$u3" --no-tui -c 1 -d 5s --interval 200ms --metrics-interval 200ms --metrics-url "$u0/metrics" \
	--metrics-url "$u1/metrics" --metrics-url "$u2/metrics" -o "$tmp/r.json" >"$tmp/r.out" 2>&1 &
run=$!
pids="$pids $run"
wait_for "$tmp/r.out" "(3 of 3 replicas)"
# Side by side, replica 3 loaded four times as hard as replica 1.
load 0 "$u0" 1 &
l0=$!
load 1 "$u1" 2 &
l1=$!
load 2 "$u2" 4
l2=$?
wait $l0 && wait $l1 && [ $l2 -eq 0 ]
check "three loads side by side" $?
wait $run
check "a run with three --metrics-url ($?)" $?
"$INFERTOP_BIN" report "$tmp/r.json" >"$tmp/report.txt" 2>&1 &&
	"$INFERTOP_BIN" report "$tmp/r.json" --format html -o "$tmp/r.html"
check "report on the file, as text and as HTML" $?

$py - "$tmp/r.json" "$tmp/report.txt" "$tmp/r.out" "$tmp/r.html" <<'PY'
import json, re, sys
reps = json.load(open(sys.argv[1]))["infertop"]["server"]["replicas"]
report, live, page = (open(p).read() for p in sys.argv[2:])
gen = [r["generation_tokens"] for r in reps]
bad = []
if len(reps) != 3 or len(set(gen)) != 3 or None in gen:
    bad.append("the file's replicas: %s" % reps)
total = sum(g or 0 for g in gen)
for i, r in enumerate(reps):
    line = "Replica %d (%s):" % (i + 1, r["status"])
    got = [l for l in report.splitlines() if l.startswith(line)]
    want = "generated %d (%.1f%%)  %s" % (r["generation_tokens"], 100.0 * r["generation_tokens"] / total, r["url"])
    if len(got) != 1 or not got[0].endswith(want):
        bad.append("report: %r, want %r" % (got, want))
    elif got[0] not in live:
        bad.append("report's %r is not the run's own summary line" % got[0])
table = re.search(r'<table data-table="replicas">.*?</table>', page, re.S)
rows = re.findall(r"<tr><td>(\d+)</td>(.*?)</tr>", table.group(0)) if table else []
for (n, row), r in zip(rows, reps):
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    want = [r["url"], r["status"], "%d" % r["generation_tokens"],
            "%.1f" % (100.0 * r["generation_tokens"] / total)]
    if [cells[0], cells[1], cells[5], cells[6]] != want:
        bad.append("page row %s: %s, want %s" % (n, cells, want))
if len(rows) != 3:
    bad.append("page: %d replica rows" % len(rows))
print("; ".join(bad) or "replicas: %s tokens" % gen)
sys.exit(1 if bad else 0)
PY
check "report shows each replica's figures from the file, as the run did; the page a row each" $?

$py - "$tmp/r.json" <<'PY'
import json, math, sys
it = json.load(open(sys.argv[1]))["infertop"]
reps, run = it["server"]["replicas"], it["series"]
bad = []
def level1(ser):
    return next(l for l in ser["levels"] if l["resolution_s"] == 1)
main = level1(run)
means = []
for i, r in enumerate(reps):
    ser = r.get("series")
    if not ser:
        bad.append("replica %d: no series" % (i + 1))
        continue
    lv = level1(ser)
    keys = sorted(lv["values"])
    if keys != ["generation_tok_s", "kv_usage", "running", "waiting"] or sorted(ser["labels"]) != keys:
        bad.append("replica %d: keys %s, labels %s" % (i + 1, keys, sorted(ser["labels"])))
    # The run's grid: the same start and points as the run's own series.
    if (lv["start_s"], lv["points"]) != (main["start_s"], main["points"]) or \
            any(len(a) != lv["points"] for a in lv["values"].values()):
        bad.append("replica %d: start %s, %s points; the run's %s, %s" % (i + 1, lv["start_s"], lv["points"],
                                                                     main["start_s"], main["points"]))
    run_pts = [v for v in lv["values"]["running"] if v is not None]
    means.append(sum(run_pts) / len(run_pts) if run_pts else float("nan"))
    gen = [v for v in lv["values"]["generation_tok_s"] if v is not None]
    if not gen or max(gen) <= 0:
        bad.append("replica %d: generated tok/s %s" % (i + 1, lv["values"]["generation_tok_s"]))
if len(means) == 3 and not (means[0] < means[1] < means[2]):
    bad.append("mean running %s: not the loads' order (1, 2, 4 in flight)" % means)
# One sample of the same scrapes: the server block's running is the sum.
if not bad:
    summed = 0
    for j, tot in enumerate(main["values"]["server_running"]):
        parts = [level1(r["series"])["values"]["running"][j] for r in reps]
        if tot is None or None in parts:
            continue
        summed += 1
        if abs(sum(parts) - tot) > 1e-6:
            bad.append("point %d: run's server_running %s, replicas' %s" % (j, tot, parts))
    if summed < 3:
        bad.append("only %d points with every replica known" % summed)
print("; ".join(bad) or "replicas' mean running: %s" % ["%.2f" % m for m in means])
sys.exit(1 if bad else 0)
PY
check "the file keeps each replica's series on the run's grid; the hardest-loaded runs the most" $?

# The page in Chromium: every chart draws, one line a replica in each
# per-replica chart.
python3 "$here/html_check.py" "$chromium" tests/html-artifacts "$tmp/r.html" >"$tmp/r.check"
check "the page in Chromium: CSP clean, fits, charts drawn" $?
$py - "$tmp/r.check" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("lines: ")]
charts = json.loads(lines[0].split(": ", 2)[2]) if lines else {}
want = ["Replicas: running requests", "Replicas: KV cache usage", "Replicas: generated tokens per second"]
got = {k: charts.get(k) for k in want}
print(got)
sys.exit(0 if all(v == 3 for v in got.values()) else 1)
PY
check "the page: one line a replica in each per-replica chart" $?
# A merge keeps no server block: the replicas' series are dropped, and the
# merged series says so.
"$INFERTOP_BIN" merge "$tmp/r.json" "$tmp/l0.json" -o "$tmp/m.json" 2>/dev/null &&
	$py -c 'import json, sys
m = json.load(open(sys.argv[1]))["infertop"]
how = m["series"]["merge"].get("replica_series", "")
sys.exit(0 if m["server"] is None and how.startswith("dropped: 1 input kept") else 1)' "$tmp/m.json"
check "a merge drops the replicas' series and says so in series.merge" $?
[ "$fails" -eq 0 ]
