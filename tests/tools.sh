#!/bin/sh
# infertop report / merge / compare through the binary, every --format:
# a result read back gives the summary the run printed; a merge adds up.
: "${INFERTOP_BIN:?}"
tmp=$(mktemp -d)
trap '[ -n "$KEEP" ] || rm -rf "$tmp"' EXIT; [ -n "$KEEP" ] && echo "tmp=$tmp"
. "$(dirname "$0")/check_lib.sh"

# The block from the "Serving Benchmark Result" line to the token-source line.
block() {
	sed -n '/Serving Benchmark Result/,/^Output tokens counted from/p' "$1"
}
# A CSV row's field by scope, metric and column number.
field() {
	awk -F, -v s="$2" -v m="$3" -v c="$4" '$1 == s && $2 == m { print $c }' "$1"
}

"$INFERTOP_BIN" --demo -c 2 -n 20 --output-tokens 4 -q -o "$tmp/a.json" >"$tmp/a.out" 2>"$tmp/a.err" &&
	"$INFERTOP_BIN" --demo --sim-arg --fail-rate --sim-arg 0.2 --sim-arg --fail-kinds --sim-arg 500 \
		-c 4 -n 40 --output-tokens 6 -q -o "$tmp/b.json" >"$tmp/b.out" 2>"$tmp/b.err"
check "two runs saved" $?

# Round trip: the file gives back the very summary the run printed.
"$INFERTOP_BIN" report "$tmp/a.json" >"$tmp/ra.txt"
st=$?
block "$tmp/a.out" >"$tmp/a.block"
block "$tmp/ra.txt" >"$tmp/ra.block"
[ $st -eq 0 ] && [ -s "$tmp/a.block" ] && cmp -s "$tmp/a.block" "$tmp/ra.block" &&
	grep -q "^Latency, whole run" "$tmp/ra.txt" && grep -q "^Latency, sliding window" "$tmp/ra.txt" &&
	grep -q "^Run: .*stopped: request limit reached" "$tmp/ra.txt"
check "report: text summary identical to the run's own" $?
# Each block once: the server's running / waiting / KV usage figures appear
# in the summary's "Server metrics" block and nowhere else.
[ "$(grep -c 'Server metrics' "$tmp/ra.txt")" -eq 1 ] && [ "$(grep -Ec '^ *(running|waiting|kv_usage) ' "$tmp/ra.txt")" -eq 0 ] &&
	grep -q "^More server gauges" "$tmp/ra.txt"
check "report: the server block printed once" $?
block "$tmp/b.out" >"$tmp/b.block"
"$INFERTOP_BIN" report "$tmp/b.json" | block /dev/stdin >"$tmp/rb.block"
cmp -s "$tmp/b.block" "$tmp/rb.block" && grep -q "Errors by kind" "$tmp/rb.block"
check "report: errors by kind read back too" $?

"$INFERTOP_BIN" report --format csv "$tmp/a.json" >"$tmp/a.csv"
[ $? -eq 0 ] && head -1 "$tmp/a.csv" | grep -qx "scope,metric,count,mean_ms,std_ms,min_ms,p50_ms,p90_ms,p95_ms,p99_ms,p99_9_ms,max_ms" &&
	[ "$(wc -l <"$tmp/a.csv")" -eq 18 ] && [ "$(field "$tmp/a.csv" run ttft 3)" = 20 ] &&
	[ "$(field "$tmp/a.csv" run itl 3)" = 60 ] && [ "$(field "$tmp/a.csv" run ttft_cold 3)" = 20 ]
# (17 rows: the simulator says "0 cached" of every random prompt, so the
# run's TTFT of cold requests is a row of its own.)
check "report --format csv: 17 rows, counts (20 TTFT, 20x3 ITL gaps, 20 cold)" $?

"$INFERTOP_BIN" report "$tmp/a.json" --format json >"$tmp/a.rep.json"
[ $? -eq 0 ] && grep -q '"completed":[[:space:]]*20' "$tmp/a.rep.json" && grep -q '"latency"' "$tmp/a.rep.json" &&
	grep -q '"p99_9_ms"' "$tmp/a.rep.json" && [ "$(tail -c 2 "$tmp/a.rep.json" | head -c 1)" = "}" ]
check "report --format json" $?

"$INFERTOP_BIN" report --format markdown "$tmp/a.json" >"$tmp/a.md"
[ $? -eq 0 ] && grep -q '^| Successful requests | 20 |$' "$tmp/a.md" && grep -q '^## Latency, whole run' "$tmp/a.md" &&
	grep -q '^| ttft | 20 |' "$tmp/a.md"
check "report --format markdown" $?

# Merge: counts add up; a run merged with itself keeps every percentile.
"$INFERTOP_BIN" merge "$tmp/a.json" "$tmp/b.json" -o "$tmp/ab.json" 2>"$tmp/m.err"
st=$?
"$INFERTOP_BIN" report "$tmp/ab.json" >"$tmp/ab.txt"
a_ok=$(grep '^Successful requests:' "$tmp/ra.txt" | awk '{print $3}')
b_ok=$(grep '^Successful requests:' "$tmp/rb.block" | awk '{print $3}')
b_fail=$(grep '^Failed requests:' "$tmp/rb.block" | awk '{print $3}')
ab_ok=$(grep '^Successful requests:' "$tmp/ab.txt" | awk '{print $3}')
ab_fail=$(grep '^Failed requests:' "$tmp/ab.txt" | awk '{print $3}')
a_tok=$(grep '^Total generated tokens:' "$tmp/ra.txt" | awk '{print $4}')
b_tok=$(grep '^Total generated tokens:' "$tmp/rb.block" | awk '{print $4}')
ab_tok=$(grep '^Total generated tokens:' "$tmp/ab.txt" | awk '{print $4}')
[ $st -eq 0 ] && [ $((a_ok + b_ok)) -eq "$ab_ok" ] && [ "$b_fail" -eq "$ab_fail" ] && [ $((a_tok + b_tok)) -eq "$ab_tok" ] &&
	[ "$((a_ok + b_ok + b_fail))" -eq 60 ] && grep -q "2 runs merged" "$tmp/ab.txt" && grep -q "written to" "$tmp/m.err"
check "merge: requests, failures and tokens add up" $?

"$INFERTOP_BIN" report --format csv "$tmp/b.json" >"$tmp/b.csv" &&
	"$INFERTOP_BIN" report --format csv "$tmp/ab.json" >"$tmp/ab.csv"
st=$?
sums=0
for m in ttfb ttft itl tpot e2el queue ttft_from_intended e2el_from_intended; do
	ca=$(field "$tmp/a.csv" run $m 3)
	cb=$(field "$tmp/b.csv" run $m 3)
	cab=$(field "$tmp/ab.csv" run $m 3)
	[ $((ca + cb)) -eq "$cab" ] || sums=1
	# min (column 6) and max (column 12) of the union
	awk -v a="$(field "$tmp/a.csv" run $m 6)" -v b="$(field "$tmp/b.csv" run $m 6)" \
		-v u="$(field "$tmp/ab.csv" run $m 6)" 'BEGIN { exit !(u == (a < b ? a : b)) }' || sums=1
	awk -v a="$(field "$tmp/a.csv" run $m 12)" -v b="$(field "$tmp/b.csv" run $m 12)" \
		-v u="$(field "$tmp/ab.csv" run $m 12)" 'BEGIN { exit !(u == (a > b ? a : b)) }' || sums=1
done
[ $st -eq 0 ] && [ $sums -eq 0 ]
check "merge: every metric's count is the sum, min and max of the union" $?

# The same run twice is refused: its requests would count twice.
"$INFERTOP_BIN" merge "$tmp/a.json" "$tmp/a.json" -o "$tmp/same.json" 2>"$tmp/same.err"
[ $? -eq 1 ] && grep -q "hold the same run" "$tmp/same.err" && [ ! -e "$tmp/same.json" ]
check "merge: the same run twice is refused" $?
"$INFERTOP_BIN" merge "$tmp/ab.json" "$tmp/b.json" -o "$tmp/same2.json" 2>"$tmp/same2.err"
[ $? -eq 1 ] && grep -q "hold the same run" "$tmp/same2.err"
check "merge: a merge with one of its own parts is refused" $?

# Two runs alike in every figure (a copy under another run id): counts
# double, the distribution keeps its shape.
jq '.infertop.run.run_id = "0123456789abcdef0123456789abcdef"' "$tmp/a.json" >"$tmp/a2.json"
"$INFERTOP_BIN" merge "$tmp/a.json" "$tmp/a2.json" -o "$tmp/aa.json" 2>/dev/null &&
	"$INFERTOP_BIN" report --format csv "$tmp/aa.json" >"$tmp/aa.csv"
st=$?
same=0
for m in ttfb ttft itl tpot e2el queue; do
	c1=$(field "$tmp/a.csv" run $m 3)
	c2=$(field "$tmp/aa.csv" run $m 3)
	[ $((c1 * 2)) -eq "$c2" ] || same=1
	for col in 4 6 12; do
		[ "$(field "$tmp/a.csv" run $m $col)" = "$(field "$tmp/aa.csv" run $m $col)" ] || same=1
	done
done
[ $st -eq 0 ] && [ $same -eq 0 ]
check "merge of two identical runs: counts double, mean, min and max unchanged" $?

# Runs against another target URL and model: merge warns (stderr and the
# result's warnings); --strict refuses and writes nothing.
python3 - "$tmp/a.json" "$tmp/other.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
old = {}
def find(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("target_url", "model_id", "run_id") and isinstance(v, str) and v:
                old[v] = {"target_url": "http://other.example:8000", "model_id": "other-model",
                          "run_id": "fedcba9876543210fedcba9876543210"}[k]
            find(v)
    elif isinstance(o, list):
        for v in o:
            find(v)
find(d)
def swap(o):
    if isinstance(o, dict):
        return {k: swap(v) for k, v in o.items()}
    if isinstance(o, list):
        return [swap(v) for v in o]
    return old.get(o, o) if isinstance(o, str) else o
json.dump(swap(d), open(sys.argv[2], "w"))
PY
"$INFERTOP_BIN" merge "$tmp/a.json" "$tmp/other.json" -o "$tmp/ao.json" 2>"$tmp/ao.err"
st=$?
[ $st -eq 0 ] && grep -q "warning: the runs are not of one target: target_url differs: .* vs http://other.example:8000; model differs: .* vs other-model" "$tmp/ao.err" &&
	python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))["infertop"]["warnings"]["merged_targets_differ"]
assert w["count"] == 2 and "other-model" in w["last_message"], w
' "$tmp/ao.json"
check "merge: runs of different targets and models warn, on stderr and in the result (exit $st)" $?
"$INFERTOP_BIN" merge --strict "$tmp/a.json" "$tmp/other.json" -o "$tmp/ao2.json" 2>"$tmp/ao2.err"
st=$?
[ $st -eq 1 ] && [ ! -e "$tmp/ao2.json" ] && grep -q "refused (--strict): the runs are not of one target" "$tmp/ao2.err"
check "merge --strict: refused, nothing written (exit $st)" $?
"$INFERTOP_BIN" merge --strict "$tmp/a.json" "$tmp/a2.json" -o "$tmp/aa2.json" 2>"$tmp/aa2.err"
st=$?
[ $st -eq 0 ] && ! grep -q "not of one target" "$tmp/aa2.err"
check "merge --strict: runs of one target merge (exit $st)" $?

# The merged file spans the union of both runs' time.
ad=$(grep '"duration"' "$tmp/a.json" | head -1 | tr -dc '0-9.')
abd=$(grep '"duration"' "$tmp/ab.json" | head -1 | tr -dc '0-9.')
awk -v a="$ad" -v m="$abd" 'BEGIN { exit !(m >= a) }'
check "merge: duration is the union of time" $?

# Compare, every format.
"$INFERTOP_BIN" compare "$tmp/a.json" "$tmp/b.json" >"$tmp/c.txt"
[ $? -eq 0 ] && grep -Eq '^completed +count +20 +'"$b_ok"' ' "$tmp/c.txt" && grep -q '^ttft p99 ' "$tmp/c.txt" &&
	grep -q '^e2el_from_intended p99.9 ' "$tmp/c.txt"
check "compare: text table" $?
"$INFERTOP_BIN" compare --format csv "$tmp/a.json" "$tmp/b.json" >"$tmp/c.csv"
[ $? -eq 0 ] && head -1 "$tmp/c.csv" | grep -qx "name,unit,a,b,delta,delta_pct,verdict,key" &&
	grep -q "^completed,count,20,$b_ok,$((b_ok - 20))," "$tmp/c.csv"
check "compare --format csv" $?
"$INFERTOP_BIN" compare "$tmp/a.json" "$tmp/b.json" --format json | grep -q '"delta_pct"'
check "compare --format json" $?
"$INFERTOP_BIN" compare "$tmp/a.json" "$tmp/b.json" --format markdown | grep -q '^| completed | count | 20 |'
check "compare --format markdown" $?

# compare for CI gates. A baseline and the same run against a simulator
# made slower (fixed timing: 4x the TTFT, 3x the ITL): the options that
# differ are listed, each change is marked, and --fail-if exits 1 on the
# slower run, 0 on a run like the baseline.
fixed="--sim-arg --timing --sim-arg fixed --sim-arg --itl --sim-arg 2ms"
# shellcheck disable=SC2086
"$INFERTOP_BIN" --demo $fixed --sim-arg --ttft --sim-arg 20ms -c 2 -n 16 --output-tokens 8 -q \
	-o "$tmp/base.json" >/dev/null 2>&1 &&
	"$INFERTOP_BIN" --demo $fixed --sim-arg --ttft --sim-arg 20ms -c 2 -n 16 --output-tokens 8 -q \
		-o "$tmp/same.json" >/dev/null 2>&1 &&
	"$INFERTOP_BIN" --demo --sim-arg --timing --sim-arg fixed --sim-arg --itl --sim-arg 6ms --sim-arg --ttft \
		--sim-arg 80ms -c 2 -n 16 --output-tokens 8 -q -o "$tmp/slow.json" >/dev/null 2>&1
check "compare: baseline, like run and slower run saved" $?
gate='p99_ttft_ms>+10%,output_throughput<-5%'
"$INFERTOP_BIN" compare "$tmp/base.json" "$tmp/slow.json" --fail-if "$gate" >"$tmp/g1.txt" 2>"$tmp/g1.err"
st=$?
[ $st -eq 1 ] && grep -q "FAIL: p99_ttft_ms>+10%" "$tmp/g1.err" && grep -q "FAIL: output_throughput<-5%" "$tmp/g1.err" &&
	grep -Eq '^ttft p99 .* worse +p99_ttft_ms$' "$tmp/g1.txt" &&
	grep -Eq '^output_throughput .* worse +output_throughput$' "$tmp/g1.txt" &&
	grep -q '^Options that differ' "$tmp/g1.txt" && grep -q '^  sim_args: ' "$tmp/g1.txt"
check "compare --fail-if: a slower run exits 1, each condition named, changes marked worse, options listed (exit $st)" $?
"$INFERTOP_BIN" compare "$tmp/slow.json" "$tmp/base.json" --fail-if "$gate" >"$tmp/g2.txt" 2>"$tmp/g2.err"
st=$?
[ $st -eq 0 ] && grep -Eq '^ttft p99 .* better +p99_ttft_ms$' "$tmp/g2.txt" && grep -q "pass" "$tmp/g2.err"
check "compare --fail-if: the faster run exits 0, marked better (exit $st)" $?
# The last line is the verdict; a run against itself is no difference.
grep -Eq '^Verdict: B is worse: [a-z]' "$tmp/g1.txt" && grep -Eq '^Verdict: B is better: [a-z]' "$tmp/g2.txt"
check "compare: a verdict ends the table" $?
"$INFERTOP_BIN" compare "$tmp/base.json" "$tmp/base.json" >"$tmp/self.txt"
grep -q '^Verdict: no significant difference' "$tmp/self.txt" && ! grep -Eq ' (worse|better) ' "$tmp/self.txt"
check "compare: a run against itself, no significant difference" $?
"$INFERTOP_BIN" compare "$tmp/base.json" "$tmp/slow.json" --min-change 100000% >"$tmp/mc.txt" 2>&1 &&
	grep -q '^Verdict: no significant difference' "$tmp/mc.txt" &&
	"$INFERTOP_BIN" compare "$tmp/base.json" "$tmp/slow.json" --min-change 5%x >/dev/null 2>"$tmp/mc.err"
[ $? -eq 2 ] && grep -q -- "--min-change: expected" "$tmp/mc.err"
check "compare --min-change: a floor above every change is no difference; a bad one exits 2" $?
"$INFERTOP_BIN" compare "$tmp/base.json" "$tmp/same.json" >"$tmp/like.txt"
! grep -Eq '[+-]0\.0% +(worse|better)' "$tmp/like.txt"
check "compare: never +0.0% worse" $?
"$INFERTOP_BIN" compare "$tmp/base.json" "$tmp/same.json" --fail-if 'median_ttft_ms>+100%,failed>0' >/dev/null 2>&1
st=$?
[ $st -eq 0 ]
check "compare --fail-if: a like run exits 0 (exit $st)" $?
"$INFERTOP_BIN" compare "$tmp/base.json" "$tmp/slow.json" --format json --fail-if 'mean_itl_ms>=2' >"$tmp/g.json" 2>/dev/null
st=$?
[ $st -eq 1 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["key"]: x for x in d["rows"]}
assert r["p99_ttft_ms"]["verdict"] == "worse" and r["completed"]["verdict"] is None
assert "sim_args" in d["options_differ"]
' "$tmp/g.json"
check "compare --format json: keys, verdicts, options_differ; an absolute condition (exit $st)" $?
for bad in 'p99_ttft_ms' 'p99_ttft_ms>' 'p99_ttft_ms>10%%' 'p99_ttft_ms=10%' ',failed>0' 'nosuch_ms>1%'; do
	"$INFERTOP_BIN" compare "$tmp/base.json" "$tmp/slow.json" --fail-if "$bad" >"$tmp/bad.out" 2>"$tmp/bad.err"
	st=$?
	[ $st -eq 2 ] && grep -q -- "--fail-if: " "$tmp/bad.err" && [ ! -s "$tmp/bad.out" ] || {
		echo "bad --fail-if '$bad': exit $st"
		cat "$tmp/bad.err"
		st=99
	}
	[ $st -eq 2 ]
	check "compare --fail-if '$bad': exit 2 with a message, no table" $?
done

# merge says how rates were computed, and warns when the runs did not
# overlap in time (base and slow ran one after the other).
"$INFERTOP_BIN" merge "$tmp/base.json" "$tmp/slow.json" -o "$tmp/bs.json" 2>"$tmp/bs.err"
[ $? -eq 0 ] && grep -q "did not overlap in time" "$tmp/bs.err" && grep -q "union of their measured time" "$tmp/bs.err"
check "merge: warns that the runs did not overlap, says how rates are computed" $?

# Usage and errors.
helps=0
for c in report merge compare; do
	"$INFERTOP_BIN" $c --help | grep -q "^Usage: infertop $c" || helps=1
done
check "--help of each subcommand" $helps
"$INFERTOP_BIN" report "$tmp/none.json" 2>"$tmp/e1"
[ $? -eq 1 ] && grep -q "cannot open" "$tmp/e1"
check "report: missing file, exit 1" $?
echo '{"completed": 1}' >"$tmp/other.json"
"$INFERTOP_BIN" report "$tmp/other.json" 2>"$tmp/e2"
[ $? -eq 1 ] && grep -q "not an infertop snapshot" "$tmp/e2"
check "report: not a snapshot, exit 1" $?
"$INFERTOP_BIN" report --format xml "$tmp/a.json" 2>/dev/null
[ $? -eq 2 ]
check "report: bad --format, exit 2" $?
"$INFERTOP_BIN" merge "$tmp/a.json" 2>/dev/null
[ $? -eq 2 ]
check "merge: no -o, exit 2" $?
"$INFERTOP_BIN" compare "$tmp/a.json" 2>/dev/null
[ $? -eq 2 ]
check "compare: one file, exit 2" $?
"$INFERTOP_BIN" merge "$tmp/a.json" -o "$tmp/no/dir/m.json" 2>"$tmp/e3"
[ $? -eq 1 ] && grep -q "cannot create" "$tmp/e3" && [ ! -e "$tmp/no" ]
check "merge: unwritable output, exit 1" $?

echo "tools: $fails failed"
exit "$fails"
