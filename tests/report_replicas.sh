#!/bin/sh
# Server replicas read back from a saved result: a run on a fourth
# simulator scrapes three (three --metrics-url) while each is loaded
# differently by its own run; `infertop report` on the file then shows one
# line a replica (status, gauges, generated tokens and their share) as the
# run's own summary did, and `report --format html` a per-replica table
# with the file's figures.
: "${INFERTOP_BIN:?}"
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/check_lib.sh"
py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT

for n in 0 1 2 3; do
	"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 1ms --itl 1ms >"$tmp/sim$n.out" 2>"$tmp/sim$n.err" &
	pids="$pids $!"
	wait_for "$tmp/sim$n.out" "listening on"
	eval "u$n=http://127.0.0.1:$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim$n.out")"
done
load() { # url requests
	"$INFERTOP_BIN" "$1" --no-tui -q -c 2 -n "$2" --output-tokens 8 --metrics-url none -o "$tmp/l.json" \
		>/dev/null 2>&1
}
# shellcheck disable=SC2154
"$INFERTOP_BIN" "$u3" --no-tui -c 1 -d 3s --interval 200ms --metrics-interval 200ms --metrics-url "$u0/metrics" \
	--metrics-url "$u1/metrics" --metrics-url "$u2/metrics" -o "$tmp/r.json" >"$tmp/r.out" 2>&1 &
run=$!
pids="$pids $run"
wait_for "$tmp/r.out" "(3 of 3 replicas)"
load "$u0" 10
load "$u1" 20
load "$u2" 30
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
[ "$fails" -eq 0 ]
