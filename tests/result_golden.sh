#!/bin/sh
# The -o result keeps its shape: deterministic runs against the built-in
# simulator (fixed timing, fixed seed, -n) write the same JSON keys as the
# golden list in tests/fixtures/result/golden.txt, and the same values for
# every figure that is not a timing (counts, token totals, the options
# echoed back, names). Timings, wall clocks, URLs with the simulator's port
# and the scraper's block are left out by key name (see `skip` below).
#
# Three runs: a request-count run with --slo and --models (all values
# compared), a --stages run and a small --matrix (keys only, plus the
# options: their step counts depend on the clock).
#
# GOLDEN_UPDATE=1 rewrites the golden list from the current binary (made
# from main before the result layer was restructured; do not regenerate it
# to make a change pass).
: "${INFERTOP_BIN:?}"
set -u

golden="${INFERTOP_FIXTURES:-tests/fixtures}/result/golden.txt"
py=python3
command -v $py >/dev/null 2>&1 || py=/usr/bin/python3
if ! $py -c 'import json' >/dev/null 2>&1; then
	echo "SKIP: no python3 to read the JSON"
	exit 77
fi
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
[ -n "${KEEP:-}" ] && echo "tmp=$tmp"
. "$(dirname "$0")/check_lib.sh"

sim="--sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg 20ms --sim-arg --itl --sim-arg 2ms"
# shellcheck disable=SC2086
"$INFERTOP_BIN" --demo $sim --no-tui -q --seed 7 -c 2 -n 24 --output-tokens 8 --slo ttft=10s,e2e=30s \
	--models infertop-sim -o "$tmp/count.json" >"$tmp/count.out" 2>"$tmp/count.err"
check "count run (exit $?)" $?
# shellcheck disable=SC2086
"$INFERTOP_BIN" --demo $sim --no-tui -q --seed 7 --output-tokens 8 --stages "1s@c=2, 1s@c=3" --slo ttft=10s \
	-o "$tmp/stages.json" >"$tmp/stages.out" 2>"$tmp/stages.err"
check "stages run (exit $?)" $?
# shellcheck disable=SC2086
"$INFERTOP_BIN" --demo $sim --no-tui -q --seed 7 --matrix --scenario chatbot --sweep c=1,2 --stage-duration 1s \
	-o "$tmp/matrix.json" >"$tmp/matrix.out" 2>"$tmp/matrix.err"
check "matrix run (exit $?)" $?

# Flattens each result to lines "run key-path value" (arrays as [] in the
# key list; values with their index), timing figures and run-specific
# fields skipped by name.
cat >"$tmp/flat.py" <<'EOF'
import json, re, sys

# Keys (last path component) whose values depend on the clock or the
# machine: never compared.
TIMING = re.compile(r"(_ms|_unix|_utc|_per_s|_tok_s|throughput|goodput|^duration$|^elapsed_s$|"
                    r"^measured_s$|^t_s$|^start_s$|^end_s$|^held_s$|^seconds$|^hist$|"
                    r"^mean_concurrency$|^run_id$|^host$|^url$|^target_url$|^output$|^definitions$|"
                    r"^plan_summary_text$|^max_output_tokens_per_s$|^date$|^gpu_metrics_url$)")
# Subtrees whose values depend on the clock (the scraper's samples, the
# time series).
SKIP_TREE = ("infertop/server", "infertop/series")
# Keys the restructured result layer may stop writing: the plan's
# pre-rendered text (its figures are in "plan", "steps", "slo", "models").
OPTIONAL = ("infertop/plan_summary_text",)
# Keys that come and go with the clock, never listed: the time series'
# levels (none in a run shorter than a second) and a server quantile's
# bucket (written only while the bucket is wide), and the GPU block of
# --demo's simulated DCGM exporter (its GPUs only once it was scraped).
OPTIONAL_RE = re.compile(r"^infertop/series/levels/|^infertop/server/.*_bucket_ms|^infertop/server/gpu/")

def walk(o, path, keys, vals, idx_path):
    if isinstance(o, dict):
        keys.add(path + "{}")
        for k, v in o.items():
            walk(v, path + "/" + k if path else k, keys, vals, (idx_path + "/" + k) if idx_path else k)
    elif isinstance(o, list):
        keys.add(path + "[]")
        for i, v in enumerate(o):
            walk(v, path + "/[]", keys, vals, idx_path + "/" + str(i))
    else:
        keys.add(path)
        last = path.rsplit("/", 1)[-1]
        if TIMING.search(last) or any(path.startswith(t) for t in SKIP_TREE):
            return
        vals[idx_path] = json.dumps(o, sort_keys=True)

for arg in sys.argv[1:]:
    name, f, mode = arg.split(":")
    keys, vals = set(), {}
    walk(json.load(open(f)), "", keys, vals, "")
    for k in sorted(keys):
        if k in OPTIONAL or OPTIONAL_RE.search(k):
            continue
        print("key", name, k)
    for k in sorted(vals):
        if mode == "all" or k.startswith("infertop/options/"):
            print("val", name, k, vals[k])
EOF
$py "$tmp/flat.py" count:"$tmp/count.json":all stages:"$tmp/stages.json":keys matrix:"$tmp/matrix.json":keys \
	>"$tmp/now.txt"
check "results flattened" $?

if [ -n "${GOLDEN_UPDATE:-}" ]; then
	mkdir -p "$(dirname "$golden")"
	cp "$tmp/now.txt" "$golden"
	echo "golden list written to $golden"
fi
diff -u "$golden" "$tmp/now.txt" >"$tmp/diff"
st=$?
[ $st -ne 0 ] && head -60 "$tmp/diff"
check "keys and non-timing values as in $golden" $st

# The plan's results are data: the summary's plan sections are rendered
# from them, once, also by `infertop report`.
grep -q '"plan_summary_text"' "$tmp/count.json"
[ $? -ne 0 ]
check "no pre-rendered plan text in a new file" $?
"$INFERTOP_BIN" report "$tmp/count.json" >"$tmp/count.report"
st=$?
[ $st -eq 0 ] && [ "$(grep -c -- '- Goodput -' "$tmp/count.report")" -eq 1 ] &&
	[ "$(grep -c -- '- Models -' "$tmp/count.report")" -eq 1 ] &&
	[ "$(grep -c 'Server metrics' "$tmp/count.report")" -eq 1 ] &&
	[ "$(grep -c 'Serving Benchmark Result' "$tmp/count.report")" -eq 1 ] &&
	sed -n '/- Goodput -/,$p' "$tmp/count.out" >"$tmp/plan.run" &&
	sed -n '/- Goodput -/,/^| infertop-sim /p' "$tmp/count.report" >"$tmp/plan.report" &&
	cmp -s "$tmp/plan.run" "$tmp/plan.report"
check "report: the plan's sections once, as the run printed them" $?
# The report's own table gives the run's goodput when it had SLOs (it said
# "no SLOs given" whatever the file held), and so does its JSON.
grep -Eq '^goodput, req/s +[0-9.]+ \(ttft<=10.0s e2e<=30.0s: 24 of 24' "$tmp/count.report" &&
	"$INFERTOP_BIN" report --format json "$tmp/count.json" | jq -e '.goodput.requests_meeting_all == 24' >/dev/null
check "report: goodput from the run's SLOs, text and JSON" $?
"$INFERTOP_BIN" report "$tmp/stages.json" >"$tmp/stages.report" &&
	[ "$(grep -c -- '- Steps -' "$tmp/stages.report")" -eq 1 ] &&
	sed -n '/- Goodput -/,$p' "$tmp/stages.out" >"$tmp/steps.run" &&
	sed -n '/- Goodput -/,/^| 2 | c=3/p' "$tmp/stages.report" >"$tmp/steps.report" &&
	cmp -s "$tmp/steps.run" "$tmp/steps.report"
check "report: the steps table once, as the run printed it" $?

# Files of the previous version: the plan's text was saved beside its data
# ("plan_summary_text"). With the data, the data is shown (once); a file
# with the text alone shows the text.
$py - "$tmp/count.json" "$tmp/old_both.json" "$tmp/old_text.json" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
d["infertop"]["plan_summary_text"] = "--- saved plan text ---\n"
json.dump(d, open(sys.argv[2], "w"), indent=1)
for k in ("plan", "steps", "matrix", "slo", "models"):
    d["infertop"].pop(k, None)
json.dump(d, open(sys.argv[3], "w"), indent=1)
EOF2
"$INFERTOP_BIN" report "$tmp/old_both.json" >"$tmp/old_both.txt" &&
	"$INFERTOP_BIN" report "$tmp/old_text.json" >"$tmp/old_text.txt" &&
	! grep -q 'saved plan text' "$tmp/old_both.txt" && [ "$(grep -c -- '- Goodput -' "$tmp/old_both.txt")" -eq 1 ] &&
	[ "$(grep -c 'saved plan text' "$tmp/old_text.txt")" -eq 1 ] && ! grep -q -- '- Goodput -' "$tmp/old_text.txt"
check "older files: plan data shown once, or the saved text when there is no data" $?

[ $fails -eq 0 ]
