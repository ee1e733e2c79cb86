#!/bin/sh
# --workers N against the simulator: the load split over N serve processes
# and merged exactly (the -o result equals `infertop merge` of the
# workers' own results, histogram for histogram), each worker's CPU said,
# one simulator for all with --demo, bad values refused, and no worker
# outlives the dashboard, even after kill -9.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
command -v jq >/dev/null || { echo "SKIP: no jq"; exit 77; }
tmp=$(mktemp -d)
simpid=
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; [ -n "$simpid" ] && kill $simpid 2>/dev/null; rm -rf "$tmp"' EXIT

# Polls until no process of a list is alive (bounded: 10 s).
all_gone() {
	i=0
	while [ $i -lt 200 ]; do
		alive=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive -eq 0 ] && return 0
		i=$((i + 1)); sleep 0.05
	done
	return 1
}

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 10ms --itl 2ms >"$tmp/sim.out" 2>&1 &
simpid=$!
wait_for "$tmp/sim.out" "listening on"
sim=http://$(sed -n 's/^listening on //p' "$tmp/sim.out")

"$INFERTOP_BIN" --no-tui --workers 2 -c 6 -n 120 --output-tokens 8 --metrics-url none \
	--results-dir "$tmp/res" -o "$tmp/merged.json" "$sim" >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 0 ]
check "--workers 2: exit 0 ($st; $(tail -2 "$tmp/err" | tr '\n' ' '))" $?
[ "$(jq '.completed' "$tmp/merged.json")" = 120 ]
check "the merged result counts all 120 requests" $?
[ "$(ls "$tmp/res" | wc -l)" = 2 ]
check "two workers, two results" $?
seeds=$(cat "$tmp"/res/*.json | jq -r '.infertop.options.seed' | sort -u | wc -l)
[ "$seeds" = 2 ]
check "each worker had a seed of its own" $?
conc=$(cat "$tmp"/res/*.json | jq '.infertop.options.concurrency' | awk '{ s += $1 } END { print s }')
[ "$conc" = 6 ]
check "the concurrency split over the workers adds up to -c ($conc)" $?
"$INFERTOP_BIN" merge -o "$tmp/merge.json" "$tmp"/res/*.json >/dev/null 2>&1
same=0
for m in ttft itl tpot e2el queue ttfb; do
	a=$(jq -r ".infertop.metrics.$m.hist" "$tmp/merged.json")
	b=$(jq -r ".infertop.metrics.$m.hist" "$tmp/merge.json")
	[ -n "$a" ] && [ "$a" = "$b" ] || same=1
done
[ $same -eq 0 ]
check "the merged histograms equal infertop merge of the workers' results" $?
[ "$(grep -c '^infertop: worker [01]: CPU' "$tmp/err")" = 2 ]
check "each worker's CPU is said" $?
pids=$(sed -n 's/.*workers (pids \([0-9]*\)\.\.\([0-9]*\)).*/\1 \2/p' "$tmp/err")
[ -n "$pids" ] && all_gone $pids
check "no worker is left after the run" $?

mkdir "$tmp/cwd"
(cd "$tmp/cwd" && "$INFERTOP_BIN" --no-tui -q --demo --workers 2 -n 40 --output-tokens 4 -o "$tmp/demo.json" \
	>/dev/null 2>"$tmp/err.demo")
[ $? -eq 0 ] && [ "$(jq '.completed' "$tmp/demo.json")" = 40 ]
check "--demo --workers 2: one simulator, 40 requests merged" $?
[ -z "$(ls -A "$tmp/cwd")" ]
check "without --results-dir the workers leave no file behind ($(ls -A "$tmp/cwd" | head -2))" $?

# Files: the workers are serve processes, which read files only under a
# --data-dir; they get the file's directory, and the file by its full
# path (given here relative to the caller's directory).
mkdir "$tmp/data"
python3 -c "
import json
print(json.dumps([{'conversations': [{'from': 'human', 'value': 'question %d' % i},
                                     {'from': 'gpt', 'value': 'answer'}]} for i in range(8)]))" >"$tmp/data/sg.json"
python3 -c "
import json
for i in range(30):
    print(json.dumps({'timestamp': i * 20, 'input_length': 64, 'output_length': 4, 'hash_ids': [1, 2 + i % 3]}))" \
	>"$tmp/data/tr.jsonl"
(cd "$tmp" && "$INFERTOP_BIN" --no-tui -q --workers 2 -n 12 --output-tokens 4 --metrics-url none \
	--dataset sharegpt:data/sg.json -o "$tmp/ds.json" "$sim" >/dev/null 2>"$tmp/err.ds")
st=$?
[ $st -eq 0 ] && [ "$(jq '.completed' "$tmp/ds.json")" = 12 ]
check "--workers 2 --dataset sharegpt:FILE: 12 requests merged (exit $st; $(grep -m1 'not started' "$tmp/err.ds"))" $?
# The merged result keeps the options its workers share, as a plain run
# records them; the ones they do not (seed, slice, each one's share of
# -c and -n) are listed with each worker's value.
ds="sharegpt:$tmp/data/sg.json"
"$INFERTOP_BIN" --no-tui -q --workers 2 -c 4 -n 12 --output-tokens 4 --prefix-tokens 16 --metrics-url none \
	--dataset "$ds" -o "$tmp/dsw.json" "$sim" >/dev/null 2>"$tmp/err.dsw" &&
	"$INFERTOP_BIN" --no-tui -q -c 4 -n 12 --output-tokens 4 --prefix-tokens 16 --metrics-url none \
		--dataset "$ds" -o "$tmp/dsp.json" "$sim" >/dev/null 2>&1
check "--dataset, with --workers 2 and plain (exit $?)" $?
for k in dataset prefix_tokens output_tokens api; do
	w=$(jq -c ".infertop.options.$k" "$tmp/dsw.json")
	p=$(jq -c ".infertop.options.$k" "$tmp/dsp.json")
	[ "$w" != null ] && [ "$w" = "$p" ]
	check "merged options.$k is the plain run's ($w, $p)" $?
done
[ "$(jq -c '.infertop.options_differ.seed | length' "$tmp/dsw.json")" = 2 ] &&
	[ "$(jq -c '.infertop.options_differ.slice' "$tmp/dsw.json")" = '["0/2","1/2"]' ] &&
	[ "$(jq '.infertop.options_differ.concurrency | add' "$tmp/dsw.json")" = 4 ] &&
	[ "$(jq '.infertop.options_differ.requests | add' "$tmp/dsw.json")" = 12 ] &&
	[ "$(jq '.infertop.options | has("seed") or has("slice") or has("concurrency")' "$tmp/dsw.json")" = false ]
check "seed, slice and the load's shares are under options_differ, a value a worker" $?
(cd "$tmp/data" && "$INFERTOP_BIN" --no-tui -q --workers 2 --metrics-url none --trace mooncake:tr.jsonl \
	-o "$tmp/tr.json" "$sim" >/dev/null 2>"$tmp/err.tr")
st=$?
[ $st -eq 0 ] && [ "$(jq '.completed' "$tmp/tr.json")" = 30 ] &&
	[ "$(jq '.infertop.trace.slices_merged' "$tmp/tr.json")" = 2 ] &&
	[ "$(jq '.infertop.trace.sent' "$tmp/tr.json")" = 30 ]
check "--workers 2 --trace: each worker replays its slice, the 30 records merged (exit $st)" $?
"$INFERTOP_BIN" --no-tui -q --workers 2 --dataset "sharegpt:$tmp/none.json" "$sim" >/dev/null 2>"$tmp/err.nf"
st=$?
[ $st -eq 2 ] && grep -q "none.json" "$tmp/err.nf"
check "a missing dataset file: exit 2 naming it ($st: $(head -1 "$tmp/err.nf"))" $?

for bad in "--workers 0" "--workers x" "--workers 257" "--workers 2 --listen 127.0.0.1:0" "--workers 2 --request-log $tmp/r.log"; do
	# shellcheck disable=SC2086
	"$INFERTOP_BIN" --no-tui -n 1 $bad "$sim" >/dev/null 2>"$tmp/bad"
	st=$?
	[ $st -eq 2 ] && grep -q -- "--workers\|workers" "$tmp/bad"
	check "$bad: exit 2 with a message ($st: $(head -1 "$tmp/bad"))" $?
done

# kill -9 of the dashboard: the workers end with it. (Their logs stay, in
# $TMPDIR: nobody is left to clean them.)
TMPDIR=$tmp "$INFERTOP_BIN" --no-tui --workers 2 -c 2 -d 60s --output-tokens 8 --metrics-url none "$sim" >/dev/null 2>"$tmp/err.k" &
pid=$!
wait_for "$tmp/err.k" "workers (pids"
pids=$(sed -n 's/.*workers (pids \([0-9]*\)\.\.\([0-9]*\)).*/\1 \2/p' "$tmp/err.k")
kill -9 $pid
wait $pid 2>/dev/null
pid=
[ -n "$pids" ] && all_gone $pids
check "kill -9 of the dashboard ends its workers" $?
! grep -qi "sanitizer\|runtime error" "$tmp/err" "$tmp/err.demo" "$tmp/err.k" "$tmp/err.ds" "$tmp/err.tr"
check "no sanitizer report" $?
echo "workers: $fails failed"
[ "$fails" -eq 0 ]
