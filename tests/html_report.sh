#!/bin/sh
# The HTML report in a real browser: pages of a plain run (--html at its
# end, and `report --format html`), a sweep, a matrix, a fleet merge, a comparison
# and a run whose model name is hostile markup (echoed back by the server
# in its errors), all made against the built-in simulator, opened in
# headless Chromium under `Content-Security-Policy: default-src 'none';
# style-src 'unsafe-inline'; img-src data:` at 1280x800 and 390x844 by
# tests/html_check.py: no console error or blocked request, nothing wider
# than the viewport, every chart draws data, the percentile markers are the
# result's figures. Screenshots stay in tests/html-artifacts/ of the build
# folder. A synthetic 24-hour series must give a page under 2 MB. The
# checker itself must fail a page that fetches an image or overflows.
# Chromium and python3 come with install-deps.sh: missing, the test fails.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
chromium=${CHROMIUM:-chromium}
for tool in "$chromium" python3; do
	command -v "$tool" >/dev/null || { echo "FAIL: $tool is not installed (install-deps.sh installs it)"; exit 1; }
done
checker="$(dirname "$0")/html_check.py"
art=tests/html-artifacts
mkdir -p "$art"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # name, options...: a run against the simulator, -o NAME.json
	n=$1
	shift
	timeout 120 "$INFERTOP_BIN" --demo --no-tui -q --output-tokens 8 -o "$tmp/$n.json" "$@" >"$tmp/$n.out" 2>"$tmp/$n.err"
}

run plain -c 4 -d 3s --html "$tmp/plain-run.html"
check "a plain run writes its result and, with --html, its page" $?
"$INFERTOP_BIN" report "$tmp/plain.json" --format html -o "$tmp/plain.html"
check "report --format html -o" $?
# The page at the run's end is drawn from the live run, report's from the
# file: the same charts either way.
[ "$(grep -c '<svg' "$tmp/plain-run.html")" -eq "$(grep -c '<svg' "$tmp/plain.html")" ] &&
	[ "$(grep -c '<svg' "$tmp/plain.html")" -ge 12 ]
check "--html at the run's end draws the charts report draws ($(grep -c '<svg' "$tmp/plain-run.html"))" $?
run other -c 2 -d 3s
check "a second run" $?
# A fleet: two generators side by side, merged.
run gen1 -c 2 -d 3s &
g1=$!
run gen2 -c 3 -d 3s
st2=$?
wait $g1
[ $? -eq 0 ] && [ $st2 -eq 0 ]
check "two generators side by side" $?
run sweep --sweep c=1,2,4 --stage-duration 2s --slo ttft=10s
check "a sweep" $?
run sweep2 --sweep c=2,4 --stage-duration 2s
check "a second sweep" $?
run sessions -c 4 -d 3s --sessions turns=4,think=100ms,system=256,user=32
check "a run of sessions" $?
"$INFERTOP_BIN" report "$tmp/sessions.json" --format html -o "$tmp/sessions.html" &&
	grep -q 'aria-label="TTFT by turn of the session"' "$tmp/sessions.html" && grep -q 'Prefix cache' "$tmp/sessions.html"
check "the sessions' page: TTFT by turn, the prefix cache" $?
"$INFERTOP_BIN" report "$tmp/sweep.json" --format html -o "$tmp/sweep.html" &&
	"$INFERTOP_BIN" merge "$tmp/gen1.json" "$tmp/gen2.json" -o "$tmp/fleet.json" 2>"$tmp/merge.err" &&
	"$INFERTOP_BIN" report "$tmp/fleet.json" --format html -o "$tmp/fleet.html" &&
	"$INFERTOP_BIN" compare "$tmp/plain.json" "$tmp/other.json" --format html -o "$tmp/compare.html" &&
	"$INFERTOP_BIN" compare "$tmp/sweep.json" "$tmp/sweep2.json" --format html -o "$tmp/compare-sweeps.html"
check "pages of the sweep, the merge and the comparisons" $?
# The server's histograms over the run, bucket by bucket (the simulator
# exposes vLLM's): saved as counts per bucket that agree with the bucket
# each saved percentile falls in, and drawn as those bars, nothing else.
python3 - "$tmp/plain.json" "$tmp/plain.html" <<'EOF'
import json, re, sys
lat = json.load(open(sys.argv[1]))["infertop"]["server"]["latency_run"]
page = open(sys.argv[2]).read()
bad, seen = [], 0
for m, o in lat.items():
    b = o.get("buckets")
    if not b:
        bad.append("%s: no buckets saved" % m)
        continue
    le, cnt = b["le_ms"], b["count"]
    total = sum(cnt)
    if le[-1] is not None or len(le) != len(cnt) or min(cnt) < 0 or not total > 0:
        bad.append("%s: buckets %s" % (m, b))
        continue
    for q in ("p50", "p99"):
        lo, hi = o[q + "_bucket_ms"]
        k = next(i for i, x in enumerate(le) if x is None or x >= hi) if hi is not None else len(le) - 1
        below, upto = sum(cnt[:k]), sum(cnt[:k + 1])
        rank = total * int(q[1:]) / 100
        if not (below < rank <= upto):
            bad.append("%s %s in (%s, %s]: counts below %s, up to %s of %s" % (m, q, lo, hi, below, upto, total))
    div = re.search(r'<div data-server-metric="%s">.*?</div>' % m, page, re.S)
    d = re.search(r'data-counts="([^"]*)" data-le="([^"]*)"', div.group(0)) if div else None
    if not d:
        bad.append("%s: no bucket chart" % m)
        continue
    seen += 1
    counts = [int(x) for x in d.group(1).split()]
    bounds = [float(x) if x != "inf" else None for x in d.group(2).split()]
    at = [i for i, x in enumerate(le) if x == bounds[0] or (x is None and bounds[0] is None)][0]
    if counts != [round(c) for c in cnt[at:at + len(counts)]] or sum(counts) != round(total):
        bad.append("%s: page %s, file %s" % (m, counts, cnt))
print("; ".join(bad) or "%d server histograms saved and drawn as bucket bars" % seen)
sys.exit(1 if bad or seen < 3 else 0)
EOF
check "the server's bucket counts over the run: saved, consistent with its percentiles, drawn as bars" $?
# The saved series: TTFT and ITL p50 next to the p99, the GPU power (the
# demo runs a simulated DCGM exporter), the cache hit rate of a run of
# sessions; each drawn, with data, where the file has it.
python3 - "$tmp/plain.json" "$tmp/plain.html" "$tmp/sessions.json" "$tmp/sessions.html" <<'EOF'
import json, re, sys
bad = []
def values(fn):
    return json.load(open(fn))["infertop"]["series"]["levels"][0]["values"]
def lines(page, title):
    fig = re.search(r'<figcaption>' + re.escape(title) + r'</figcaption>.*?</figure>', open(page).read(), re.S)
    return [int(x) for x in re.findall(r'<path class="data[^"]*"[^>]*data-n="(\d+)"', fig.group(0))] if fig else []
p, s = values(sys.argv[1]), values(sys.argv[3])
for key, v in (("ttft_p50_ms", p), ("itl_p50_ms", p), ("gpu_power_w", p), ("cache_hit_rate", s)):
    known = [x for x in v.get(key, []) if x is not None]
    if not known or not max(known) > 0:
        bad.append("%s: no value > 0 saved (%s)" % (key, v.get(key)))
for lo, hi in (("ttft_p50_ms", "ttft_p99_ms"), ("itl_p50_ms", "itl_p99_ms")):
    if any(a is not None and b is not None and a > b for a, b in zip(p.get(lo, []), p[hi])):
        bad.append("%s above %s" % (lo, hi))
for page, title, want in ((sys.argv[2], "TTFT, sliding window", 2), (sys.argv[2], "ITL, sliding window", 2),
                          (sys.argv[2], "GPU power, all GPUs", 1),
                          (sys.argv[4], "Prefix cache hit rate, sliding window", 1)):
    n = [x for x in lines(page, title) if x > 0]
    if len(n) < want:
        bad.append("%s: %d line(s) with data, want %d" % (title, len(n), want))
if lines(sys.argv[2], "Prefix cache hit rate, sliding window"):
    bad.append("a run without cached prompts draws a cache hit rate")
print("; ".join(bad) or "p50s, GPU power and the cache hit rate saved and drawn")
sys.exit(1 if bad else 0)
EOF
check "the series keep TTFT/ITL p50, GPU power and the cache hit rate; the page draws them" $?
# The merge's series: the generators' windows of the wall clock, rates
# summed and percentiles the max of theirs (recomputed here from the
# generators' files), drawn with data and labelled as what they are.
python3 - "$tmp/fleet.json" "$tmp/fleet.html" "$tmp/gen1.json" "$tmp/gen2.json" <<'EOF'
import json, math, re, sys
m = json.load(open(sys.argv[1]))["infertop"]
page = open(sys.argv[2]).read()
gens = [json.load(open(p))["infertop"] for p in sys.argv[3:]]
lv = m["series"]["levels"][0]
assert lv["resolution_s"] == 1, lv["resolution_s"]
t0 = m["run"]["start_unix"] + lv["start_s"]
want = {"requests_s": {}, "ttft_p99_ms": {}}
for g in gens:
    glv = g["series"]["levels"][0]
    for key, slots in want.items():
        for i, v in enumerate(glv["values"][key]):
            if v is None:
                continue
            k = math.floor(g["run"]["start_unix"] + glv["start_s"] + i - t0 + 1e-6)
            slots[k] = slots.get(k, 0) + v if key == "requests_s" else max(slots.get(k, 0), v)
bad = []
for key, slots in want.items():
    got = lv["values"][key]
    for k, v in slots.items():
        if not (0 <= k < len(got)) or got[k] is None or abs(got[k] - v) > 1e-3 * max(1, v):
            bad.append("%s[%d]: merged %s, generators %s" % (key, k, got[k] if 0 <= k < len(got) else "-", v))
    if not any(v for v in got if v is not None):
        bad.append(key + ": no value")
how = m["series"]["merge"]["how"]
if how["requests_s"] != "sum" or how["ttft_p99_ms"] != "max":
    bad.append("merge.how: %s" % how)
for title in ("Requests completed per second: sum of the inputs",
              "TTFT, sliding window: max of the inputs&#39; (an upper bound)"):
    fig = re.search(r'<figcaption>' + re.escape(title) + r'</figcaption>.*?</figure>', page, re.S)
    n = [int(x) for x in re.findall(r'data-n="(\d+)"', fig.group(0))] if fig else []
    if not n or max(n) < 2:
        bad.append("no chart with data: " + title)
print("; ".join(bad) or "merged series: %d windows" % len(lv["values"]["requests_s"]))
sys.exit(1 if bad else 0)
EOF
check "the merge's page draws the series over time: rates summed, p99 the max, on the wall clock" $?
grep -q 'Sweeps, A against B' "$tmp/compare-sweeps.html"
check "two sweeps compared: their steps overlaid" $?
grep -q 'knee\|Latency against throughput' "$tmp/sweep.html" && grep -q 'Merged inputs' "$tmp/fleet.html" &&
	grep -q '<td class="better">better</td>\|<td class="worse">worse</td>' "$tmp/compare.html"
check "the sweep's chart, the merge's inputs and the compare verdicts are there" $?

# A matrix, made fast (1 s steps, a simulator of fixed 5 ms TTFT and
# 0.1 ms ITL): one small chart per scenario, each a point per step.
# shellcheck disable=SC2086
timeout 120 "$INFERTOP_BIN" --demo --sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg 5ms --sim-arg --itl \
	--sim-arg 0.1ms --no-tui -q --matrix --sweep c=1,2 --stage-duration 1s -o "$tmp/matrix.json" \
	>"$tmp/matrix.out" 2>"$tmp/matrix.err" &&
	"$INFERTOP_BIN" report "$tmp/matrix.json" --format html -o "$tmp/matrix.html"
check "a matrix and its page" $?
python3 - "$tmp/matrix.json" "$tmp/matrix.html" <<'EOF'
import json, re, sys
mx = json.load(open(sys.argv[1]))["infertop"]["matrix"]
page = open(sys.argv[2]).read()
bad = []
for sc in mx["scenarios"]:
    steps = sum(1 for r in mx["results"] if r["scenario"] == sc)
    fig = re.search(r'<figcaption>' + re.escape(sc) + r': TTFT</figcaption>.*?</figure>', page, re.S)
    n = [int(x) for x in re.findall(r'<path class="data[^"]*"[^>]*data-n="(\d+)"', fig.group(0))] if fig else []
    if n != [steps, steps]:
        bad.append("%s: lines of %s points, want p50 and p99 of %d" % (sc, n, steps))
print("; ".join(bad) or "%d scenarios, one chart each" % len(mx["scenarios"]))
sys.exit(1 if bad or len(mx["scenarios"]) < 2 else 0)
EOF
check "the matrix's page: one chart per scenario, a point per step" $?

# Hostile markup as the model name: the simulator refuses it and echoes it
# in every error message, so it reaches the page from the options and
# from the server.
evil='<script>alert("x")</script><img src=x onerror=alert(1)>&amp;'"'"
run evil -c 1 -d 2s --model "$evil"
[ $? -ne 2 ] && "$INFERTOP_BIN" report "$tmp/evil.json" --format html -o "$tmp/evil.html" &&
	! grep -q '<script\|<img' "$tmp/evil.html" &&
	grep -q '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&amp;amp;&#39;' \
		"$tmp/evil.html" && grep -q 'HTTP 404: The model `&lt;script&gt;' "$tmp/evil.html"
check "a hostile model name is escaped, in the header and in the server's errors" $?

python3 "$checker" "$chromium" "$art" "$tmp/plain.html=$tmp/plain.json" "$tmp/plain-run.html=$tmp/plain.json" \
	"$tmp/sweep.html=$tmp/sweep.json" "$tmp/fleet.html=$tmp/fleet.json" "$tmp/compare.html=$tmp/plain.json,$tmp/other.json" \
	"$tmp/compare-sweeps.html=$tmp/sweep.json,$tmp/sweep2.json" "$tmp/sessions.html=$tmp/sessions.json" \
	"$tmp/matrix.html=$tmp/matrix.json" "$tmp/evil.html"
check "every page in Chromium: CSP clean, fits 1280 and 390 wide, charts drawn, markers right" $?

# 24 hours of series (the levels a run keeps: 1 s for the last hour, 10 s
# for the last day, 1 min for the whole) grafted into the plain result,
# with a fleet's block.
python3 - "$tmp/plain.json" "$tmp/long.json" <<'EOF'
import json, math, sys
d = json.load(open(sys.argv[1]))
ser = d["infertop"]["series"]
keys = list(ser["labels"].keys())
end = 86400
levels = []
for res, span in ((1, 3600), (10, 86400), (60, 86400)):
    n = span // res
    start = end - span
    vals = {k: [round(50 + 40 * math.sin((start + i * res) / 600.0) + (i % 97 == 0) * 500, 3) for i in range(n)]
            for k in keys}
    levels.append({"resolution_s": res, "start_s": start, "points": n, "values": vals})
ser["levels"] = levels
# A fleet --start's block, one generator lost for a reason a generator
# made up: the warning, the fleet table and the escaping.
d["infertop"]["fleet"] = {"generators_planned": 3, "generators_merged": 2, "load": {"mode": "concurrency",
    "planned": 12, "achieved": 8}, "generators_lost": [{"generator": "http://10.0.0.3:9464", "run_id": "ab12",
    "last_seen_unix": 1700000000, "lost_after_s": 5.5, "why": "<b onmouseover=x>gone</b>"}]}
json.dump(d, open(sys.argv[2], "w"))
EOF
"$INFERTOP_BIN" report "$tmp/long.json" --format html -o "$tmp/long.html"
size=$(wc -c <"$tmp/long.html")
maxn=$(grep -o 'data-n="[0-9]*"' "$tmp/long.html" | tr -dc '0-9\n' | sort -n | tail -1)
echo "24-hour page: $size bytes, at most $maxn points a line"
[ "$size" -lt 2000000 ] && [ "$maxn" -le 480 ] && [ "$maxn" -ge 400 ]
check "a 24-hour run's page stays under 2 MB, its lines down-sampled" $?
grep -q '1 generator(s) lost' "$tmp/long.html" && grep -q '&lt;b onmouseover=x&gt;gone&lt;/b&gt;' "$tmp/long.html" &&
	! grep -q '<b onmouseover' "$tmp/long.html"
check "a fleet's lost generator: warned, listed, its reason escaped" $?
python3 "$checker" "$chromium" "$art" "$tmp/long.html" >"$tmp/long.check"
check "the 24-hour page in Chromium" $?

# Printed: A4 pages (the page's @page rule), as many as the sweep needs.
HOME=$tmp timeout 90 "$chromium" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
	--user-data-dir="$tmp/print-profile" --no-pdf-header-footer --print-to-pdf="$art/sweep.pdf" \
	"file://$tmp/sweep.html" >/dev/null 2>&1
pages=$(grep -a -c 'MediaBox \[0 0 59[45]\.[0-9]* 84[12]\.[0-9]*\]' "$art/sweep.pdf")
others=$(grep -a 'MediaBox' "$art/sweep.pdf" | grep -a -v -c 'MediaBox \[0 0 59[45]\.[0-9]* 84[12]\.[0-9]*\]')
echo "the sweep printed: $pages A4 pages, $others others"
[ "$pages" -ge 2 ] && [ "$others" -eq 0 ]
check "the sweep's page prints on A4" $?

# The checker must see what it looks for.
sed 's|</h1>|</h1><img src="http://127.0.0.1:9/x.png" alt=""><div style="width:3000px">wide</div>|' \
	"$tmp/plain.html" >"$tmp/broken.html"
python3 "$checker" "$chromium" "$tmp/broken-art" "$tmp/broken.html" >"$tmp/broken.check"
[ $? -ne 0 ] && grep -q 'FAIL: .*no request but the page' "$tmp/broken.check" &&
	grep -q 'FAIL: .*nothing wider than the viewport' "$tmp/broken.check"
check "the checker fails a page that fetches an image and one too wide" $?

[ $fails -eq 0 ]
