#!/bin/sh
# infertop fleet over loopback with real processes: three generators
# (--listen runs against the simulator) merged by a headless fleet whose
# totals equal the sum of the generators' own; a generator killed is shown
# lost and its counts stay, once; one restarted at the same address is a
# new row and the lost run leaves the totals (they hold every generator's
# current run only); a generator loading another target is refused. Then --start
# over three `infertop serve`: the -o merge is byte-equal to `infertop
# merge` of their result files, completed is the sum, the totals are
# split and the seeds differ (the serves started with an Indexed Job's
# environment, each with its slice). The generators' token is never shown.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill -9 $p 2>/dev/null; done; [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT

# wait_for FILE PATTERN [TRIES of 0.1 s]: until PATTERN is in FILE.
wait_for() {
	i=0
	while [ $i -lt "${3:-100}" ] && ! grep -q -- "$2" "$1" 2>/dev/null; do
		i=$((i + 1)); sleep 0.1
	done
	grep -q -- "$2" "$1" 2>/dev/null
}
api_of() { sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$1"; }

tok="fleet-token-0d9b3c51e7"
export INFERTOP_FLEET_TEST_TOKEN="$tok"

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 20ms --itl 5ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
pids="$pids $!"
wait_for "$tmp/sim.out" "listening on"
simport=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
[ -n "$simport" ]
check "the simulator is up" $?
target="http://127.0.0.1:$simport"

# gen N [ARGS...]: a generator with the token, output in $tmp/gN.*
gen() {
	n=$1
	shift
	"$INFERTOP_BIN" --no-tui -q --listen-token-env INFERTOP_FLEET_TEST_TOKEN -c 2 -d 120s --output-tokens 20 \
		--metrics-url none "$@" >"$tmp/g$n.out" 2>"$tmp/g$n.err" &
	eval "gpid$n=$!"
	pids="$pids $!"
	wait_for "$tmp/g$n.err" "control API on"
}
gen 1 --listen 127.0.0.1:0 "$target"
gen 2 --listen 127.0.0.1:0 "$target"
gen 3 --listen 127.0.0.1:0 "$target"
u1=$(api_of "$tmp/g1.err"); u2=$(api_of "$tmp/g2.err"); u3=$(api_of "$tmp/g3.err")
[ -n "$u1" ] && [ -n "$u2" ] && [ -n "$u3" ]
check "three generators listen" $?

# status URL -> "completed in_flight run_id" of a generator
status() {
	curl -s -H "Authorization: Bearer $tok" "$1/v1/status" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["completed"], d["infertop"]["state"]["in_flight"], d["infertop"]["run"]["run_id"])'
}
post() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -X POST "$1$2"; }
# The fleet's latest line: the number of requests it counts as ok.
fleet_ok() { grep '^fleet: .* ok,' "$tmp/f.err" | tail -1 | sed 's/.*: \([0-9]*\) ok,.*/\1/'; }
# wait_ok N: until the fleet's latest line counts N.
wait_ok() {
	i=0
	while [ $i -lt 100 ] && [ "$(fleet_ok)" != "$1" ]; do i=$((i + 1)); sleep 0.1; done
	[ "$(fleet_ok)" = "$1" ]
}
# drained URL: paused and nothing in flight (counts frozen)
drained() {
	i=0
	while [ $i -lt 100 ]; do
		set -- "$1" $(status "$1")
		[ "$3" = 0 ] && return 0
		i=$((i + 1)); sleep 0.1
	done
	return 1
}

"$INFERTOP_BIN" fleet --targets "$u1,$u2,$u3" --token-env INFERTOP_FLEET_TEST_TOKEN --no-tui --interval 100ms \
	-o "$tmp/live.json" >"$tmp/f.out" 2>"$tmp/f.err" &
fpid=$!
pids="$pids $fpid"
wait_for "$tmp/f.err" "(3 up"
check "the fleet sees three generators running" $?

# Frozen counts: every generator paused and drained, then the fleet's
# total must be their sum exactly.
for u in $u1 $u2 $u3; do post "$u" /v1/pause >/dev/null; done
drained "$u1" && drained "$u2" && drained "$u3"
check "the generators are paused and drained" $?
c1=$(status "$u1" | cut -d' ' -f1); c2=$(status "$u2" | cut -d' ' -f1); c3=$(status "$u3" | cut -d' ' -f1)
sum=$((c1 + c2 + c3))
wait_ok "$sum"
check "merged completed = the sum of the generators' ($c1+$c2+$c3=$sum, fleet $(fleet_ok))" $?
[ "$c1" -gt 0 ] && [ "$c2" -gt 0 ] && [ "$c3" -gt 0 ]
check "each generator completed requests" $?

# kill -9 one: lost, its counts stay.
port3=${u3##*:}
run3=$(status "$u3" | cut -d' ' -f3)
kill -9 "$gpid3"
wait_for "$tmp/f.err" "127.0.0.1:$port3: lost"
check "a generator killed with -9 is marked lost" $?
wait_for "$tmp/f.err" "1 lost" && [ "$(fleet_ok)" = "$sum" ]
check "the totals keep the lost generator's last counts ($(fleet_ok))" $?

# A new generator at the same address: a new run id, a new row; the lost
# run is over and leaves the totals (listed among the finished runs).
gen 4 --listen "127.0.0.1:$port3" "$target"
u4=$(api_of "$tmp/g4.err")
[ "$u4" = "$u3" ]
check "a generator restarted at the same address" $?
run4=$(status "$u4" | cut -d' ' -f3)
wait_for "$tmp/f.err" "127.0.0.1:$port3: run $(printf %.8s "$run4")"
check "its new run id is a new row" $?
post "$u4" /v1/pause >/dev/null
drained "$u4"
c4=$(status "$u4" | cut -d' ' -f1)
sum2=$((c1 + c2 + c4))
wait_ok "$sum2"
check "totals = the current runs only ($c1 + $c2 + $c4 = $sum2, fleet $(fleet_ok))" $?
grep -q "4 runs (3 up, 0 done, 1 lost" "$tmp/f.err"
check "four rows: three up, the killed run lost" $?
[ "$run3" != "$run4" ]
check "the restarted generator has another run id" $?

# A hung generator (SIGSTOP: its socket accepts, nothing answers) is
# lost after the poll timeout while the fleet goes on; when it answers
# again with the same run id its counts replace its old ones, once.
lines_before=$(grep -c '^fleet:' "$tmp/f.err")
kill -STOP "$gpid1"
wait_for "$tmp/f.err" "2 lost" 100
check "a hung generator is marked lost" $?
lines_during=$(grep -c '^fleet:' "$tmp/f.err")
[ "$lines_during" -gt $((lines_before + 6)) ]  # 4 Hz ticks over the 2 s before lost
check "the fleet's loop did not stall meanwhile ($lines_before -> $lines_during lines)" $?
kill -CONT "$gpid1"
wait_for "$tmp/f.err" "(3 up, 0 done, 1 lost"
check "it answers again: the same row is back" $?
wait_ok "$sum2"
check "and its counts are not counted twice ($(fleet_ok))" $?

# Ctrl-C ends the live view and writes the merged state.
kill -INT "$fpid"
wait "$fpid"
st=$?
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["completed"] == int(sys.argv[2]) and d["infertop"]["run"]["runs"] == 3 else 1)' "$tmp/live.json" "$sum2"
[ $? -eq 0 ] && [ $st -eq 0 ]
check "Ctrl-C: exit 0, -o holds the merge of the three current runs ($sum2 completed)" $?
# Status documents carry no history: the over-time record is the one the
# fleet drew from its polls (a point a second, output tokens counted).
python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))["infertop"]["series"]["levels"][0]["values"]
pts = [x for x in v["output_tok_s"] if x is not None]
sys.exit(0 if len(pts) >= 3 and max(pts) > 0 and "ttft_p99_ms" in v else 1)' "$tmp/live.json"
check "Ctrl-C: the merged state has the series the fleet drew (output tok/s, TTFT p99 over the run)" $?

# A generator that loads another target (same server, another URL) is
# refused with a message and stays out of the totals.
# The majority sets the fleet's target and a tie keeps the one in use:
# generator 5 answers only once generator 1's has been (SIGSTOP until then).
gen 5 --listen 127.0.0.1:0 "http://localhost:$simport"
u5=$(api_of "$tmp/g5.err")
kill -STOP "$gpid5"
"$INFERTOP_BIN" fleet --targets "$u1,$u5" --token-env INFERTOP_FLEET_TEST_TOKEN --no-tui --interval 100ms \
	>"$tmp/f2.out" 2>"$tmp/f2.err" &
f2=$!
pids="$pids $f2"
wait_for "$tmp/f2.err" "(1 up"
kill -CONT "$gpid5"
wait_for "$tmp/f2.err" "refused: it loads http://localhost"
check "a status of another target URL is refused with a message" $?
wait_for "$tmp/f2.err" "1 refused): $c1 ok"
check "the refused generator stays out of the totals" $?
kill -INT "$f2"
wait "$f2"

for p in $gpid1 $gpid2 $gpid4 $gpid5; do kill -INT "$p" 2>/dev/null; done

# --start over three serve-mode generators started as the pods of a
# Kubernetes Indexed Job are: JOB_COMPLETION_INDEX 0..2 and the Job's
# completions in INFERTOP_SLICE_COUNT (deploy/k8s sets both).
for i in 0 1 2; do
	mkdir -p "$tmp/res$i"
	JOB_COMPLETION_INDEX=$i INFERTOP_SLICE_COUNT=3 \
	"$INFERTOP_BIN" serve --listen 127.0.0.1:0 --listen-token-env INFERTOP_FLEET_TEST_TOKEN \
		--results-dir "$tmp/res$i" >"$tmp/s$i.out" 2>"$tmp/s$i.err" &
	pids="$pids $!"
	wait_for "$tmp/s$i.err" "control API on"
done
s0=$(api_of "$tmp/s0.err"); s1=$(api_of "$tmp/s1.err"); s2=$(api_of "$tmp/s2.err")
grep -q "slice 0/3" "$tmp/s0.err" && grep -q "slice 1/3" "$tmp/s1.err" && grep -q "slice 2/3" "$tmp/s2.err"
check "each serve took its slice from JOB_COMPLETION_INDEX and INFERTOP_SLICE_COUNT" $?
"$INFERTOP_BIN" fleet --targets "$s0,$s1,$s2" --token-env INFERTOP_FLEET_TEST_TOKEN --no-tui --interval 500ms \
	-o "$tmp/start.json" --start -c 12 -d 8s --output-tokens 20 --metrics-url none "$target" \
	>"$tmp/st.out" 2>"$tmp/st.err"
st=$?
[ $st -eq 0 ] && [ -s "$tmp/start.json" ]
check "fleet --start: exit 0, the merged result written ($st)" $?
r0=$(ls "$tmp"/res0/*.json); r1=$(ls "$tmp"/res1/*.json); r2=$(ls "$tmp"/res2/*.json)
"$INFERTOP_BIN" merge "$r0" "$r1" "$r2" -o "$tmp/merged.json" 2>/dev/null
# The fleet's merge adds its "fleet" object (generators planned, merged,
# lost); without it the file is byte-equal to infertop merge's.
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
f = d["infertop"].pop("fleet")
ok = f["generators_planned"] == 3 and f["generators_merged"] == 3 and f["generators_lost"] == []
open(sys.argv[2], "w").write(json.dumps(d, indent=2) + "\n")
m = json.load(open(sys.argv[3]))
open(sys.argv[4], "w").write(json.dumps(m, indent=2) + "\n")
sys.exit(0 if ok else 1)' "$tmp/start.json" "$tmp/start.cmp" "$tmp/merged.json" "$tmp/merged.cmp" &&
	cmp -s "$tmp/merged.cmp" "$tmp/start.cmp"
check "the -o merge is infertop merge of the generators' result files, and 3 generators of 3 merged" $?
python3 - "$tmp/start.json" "$r0" "$r1" "$r2" >"$tmp/py.out" 2>&1 <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
rs = [json.load(open(p)) for p in sys.argv[2:]]
ok = m["completed"] == sum(r["completed"] for r in rs) and m["completed"] > 0
print("completed", m["completed"], [r["completed"] for r in rs])
seeds = [r["infertop"]["options"]["seed"] for r in rs]
conc = sorted(r["infertop"]["options"]["concurrency"] for r in rs)
print("seeds", seeds, "concurrency", conc)
ok = ok and len(set(seeds)) == 3 and conc == [4, 4, 4]
starts = [r["infertop"]["run"]["start_unix"] for r in rs]
print("start spread %.3f s" % (max(starts) - min(starts)))
ok = ok and max(starts) - min(starts) < 0.25
slices = sorted(str(r["infertop"]["options"].get("slice")) for r in rs)
print("slices", slices)
ok = ok and slices == ["0/3", "1/3", "2/3"]
# The merge's percentiles are those of the generators' exact merge (the
# byte comparison above says it too; this names the figures).
for k in ("p50_ttft_ms", "p99_ttft_ms", "p99_itl_ms", "median_e2el_ms"):
    print(k, m.get(k))
sys.exit(0 if ok else 1)
EOF
st=$?
cat "$tmp/py.out"
[ $st -eq 0 ]
check "completed is the sum; -c 12 split 4+4+4; three seeds; slices 0/3 1/3 2/3; a common start" $?
grep -q "3 results merged into" "$tmp/st.err"
check "the fleet says it merged three results" $?

# A refused spec starts nothing: the CLI's own parser checks it first.
"$INFERTOP_BIN" fleet --targets "$s0" --token-env INFERTOP_FLEET_TEST_TOKEN --no-tui --start --bogus 1 "$target" \
	>/dev/null 2>"$tmp/bad.err"
[ $? -eq 2 ] && grep -q "unknown option --bogus" "$tmp/bad.err"
check "--start with an unknown run option: exit 2 before anything starts" $?

! grep -rq "$tok" "$tmp"/*.out "$tmp"/*.err "$tmp"/*.json "$tmp"/res*
check "the token is in no output and no file" $?

[ "$fails" -eq 0 ]
