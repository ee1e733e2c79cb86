#!/bin/sh
# infertop fleet --start that waits and tells, over loopback with real
# processes (three `infertop serve` generators, the simulator):
# --expect with too few generators fails with how many answered (exit 2,
# nothing started); --expect met by a generator that answers late starts
# the run on all three; a generator killed with -9 mid-run is recorded in
# the merged file (generators_planned, generators_lost with its address and
# when, the load planned against achieved, a warning), shown by the
# headless fleet line, `infertop report` and `infertop compare`, and the
# fleet exits 5.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill -CONT $p 2>/dev/null; kill -9 $p 2>/dev/null; done; [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT

api_of() { sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$1"; }
tok="fleet-lost-token-4f1c"
export INFERTOP_FLEET_TEST_TOKEN="$tok"

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 20ms --itl 5ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
pids="$pids $!"
wait_for "$tmp/sim.out" "listening on"
simport=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
target="http://127.0.0.1:$simport"

for i in 0 1 2; do
	mkdir -p "$tmp/res$i"
	"$INFERTOP_BIN" serve --listen 127.0.0.1:0 --listen-token-env INFERTOP_FLEET_TEST_TOKEN \
		--results-dir "$tmp/res$i" >"$tmp/s$i.out" 2>"$tmp/s$i.err" &
	eval "spid$i=$!"
	pids="$pids $!"
	wait_for "$tmp/s$i.err" "control API on"
done
s0=$(api_of "$tmp/s0.err"); s1=$(api_of "$tmp/s1.err"); s2=$(api_of "$tmp/s2.err")
[ -n "$s0" ] && [ -n "$s1" ] && [ -n "$s2" ]
check "three serve generators listen" $?

fleet() {
	"$INFERTOP_BIN" fleet --targets "$s0,$s1,$s2" --token-env INFERTOP_FLEET_TEST_TOKEN --no-tui "$@"
}

# --expect 3 with one of the three not answering (stopped: its socket
# accepts, nothing answers): the fleet gives up, says how many answered,
# starts nothing.
kill -STOP "$spid2"
fleet --expect 3 --expect-timeout 3s -o "$tmp/none.json" --start -c 6 -d 2s --metrics-url none "$target" \
	>"$tmp/e1.out" 2>"$tmp/e1.err"
st=$?
cat "$tmp/e1.err"
[ $st -eq 2 ] && grep -q -- "--expect 3: gave up after --expect-timeout with 2 of 3 generators answering" "$tmp/e1.err"
check "--expect 3 with two answering: exit 2 naming the count ($st)" $?
[ ! -e "$tmp/none.json" ] && ! grep -q "run [0-9a-f]" "$tmp/e1.err" && [ -z "$(find "$tmp"/res0 "$tmp"/res1 -type f)" ]
check "and no run was started anywhere" $?

# More than the generators given, without --discover: refused at once.
fleet --expect 4 --start -c 6 -d 2s "$target" >/dev/null 2>"$tmp/e0.err"
st=$?
[ $st -eq 2 ] && grep -q -- "--expect 4: only 3 generators are given" "$tmp/e0.err"
check "--expect 4 over three --targets: exit 2 at once ($st)" $?

# The same with the third answering late: the fleet waits, then starts
# the run on all three.
fleet --expect 3 --expect-timeout 60s -o "$tmp/late.json" --start -c 6 -d 2s --output-tokens 10 --metrics-url none \
	"$target" >"$tmp/e2.out" 2>"$tmp/e2.err" &
fpid=$!
pids="$pids $fpid"
wait_for "$tmp/e2.err" "waiting for 3 generators"
check "the fleet waits for --expect 3" $?
sleep 1   # the fleet has polled the two that answer (4 Hz) and still waits
! grep -q "run [0-9a-f]" "$tmp/e2.err"
check "and starts nothing while only two answer" $?
kill -CONT "$spid2"
wait "$fpid"
st=$?
[ $st -eq 0 ] && grep -q "3 generators answer" "$tmp/e2.err" && [ "$(grep -c ": run [0-9a-f]\{32\}$" "$tmp/e2.err")" -eq 3 ]
check "the late generator answers: the run starts on all three, exit 0 ($st)" $?
python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))["infertop"]["fleet"]
print(f)
sys.exit(0 if f["generators_planned"] == 3 and f["generators_merged"] == 3 and f["generators_lost"] == []
         and f["load"] == {"mode": "concurrency", "planned": 6, "achieved": 6} else 1)' "$tmp/late.json"
check "its merge: 3 planned, 3 merged, none lost, c=6 planned and achieved" $?

# kill -9 of one generator mid-run.
fleet --interval 250ms -o "$tmp/lost.json" --start -c 12 -d 8s --output-tokens 20 --metrics-url none "$target" \
	>"$tmp/k.out" 2>"$tmp/k.err" &
fpid=$!
pids="$pids $fpid"
# Killed once the three have done some of the run: 100 requests merged.
ok_now() {
	n=$(grep '^fleet: 3 runs (3 up' "$tmp/k.err" | tail -1 | sed 's/.*: \([0-9]*\) ok,.*/\1/')
	echo "${n:-0}"
}
i=0
while [ $i -lt 150 ] && [ "$(ok_now)" -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
[ "$(ok_now)" -ge 100 ]
check "the fleet's run is going on three generators" $?
kill -9 "$spid1"
killed=$(date +%s)
wait "$fpid"
st=$?
tail -5 "$tmp/k.err"
[ $st -eq 5 ]
check "a generator lost: the fleet exits 5 ($st)" $?
grep -q "planned 3 at c=12, 1 LOST" "$tmp/k.err"
check "the fleet's line says 1 of the 3 planned is lost" $?
python3 - "$tmp/lost.json" "$s1" "$killed" "$tmp/res0" "$tmp/res2" >"$tmp/py.out" 2>&1 <<'EOF'
import glob, json, os, sys
d = json.load(open(sys.argv[1]))
f = d["infertop"]["fleet"]
print(json.dumps(f))
lost = f["generators_lost"]
ok = f["generators_planned"] == 3 and f["generators_merged"] == 2 and len(lost) == 1
ok = ok and lost[0]["generator"] == sys.argv[2] and len(lost[0]["run_id"]) == 32
# When: its last answer, at most a second (the collector's period) before the kill.
ok = ok and 0 < lost[0]["lost_after_s"] < 8 and int(sys.argv[3]) - 2 <= lost[0]["last_seen_unix"] <= int(sys.argv[3]) + 1
ok = ok and f["load"] == {"mode": "concurrency", "planned": 12, "achieved": 8}
ok = ok and d["infertop"]["warnings"]["generators_lost"]["count"] == 1
# The merge holds the two collected results exactly.
rs = [json.load(open(max(glob.glob(p + "/*.json"), key=os.path.getmtime))) for p in sys.argv[4:]]
print("completed", d["completed"], [r["completed"] for r in rs])
ok = ok and d["completed"] == sum(r["completed"] for r in rs) > 0
sys.exit(0 if ok else 1)
EOF
st=$?
cat "$tmp/py.out"
[ $st -eq 0 ]
check "the file: 3 planned, 2 merged, the killed one lost (address, run, when), c=12 planned, 8 achieved" $?

"$INFERTOP_BIN" report "$tmp/lost.json" >"$tmp/report.txt" 2>&1
grep -q "Fleet: 2 of 3 generators merged, 1 lost; concurrency planned 12, achieved 8" "$tmp/report.txt" &&
	grep -q "LOST $s1 (run " "$tmp/report.txt"
check "infertop report shows the lost generator and the load achieved" $?
grep -q "LOST $s1" "$tmp/k.out" && grep -q "Fleet: 2 of 3 generators merged, 1 lost" "$tmp/k.out"
check "so does the fleet's own summary on stdout" $?
"$INFERTOP_BIN" compare "$tmp/late.json" "$tmp/lost.json" >"$tmp/cmp.txt" 2>&1
grep -Eq "^generators_lost +count +0 +1 " "$tmp/cmp.txt" && grep -Eq "^generators_merged +count +3 +2 " "$tmp/cmp.txt"
check "infertop compare shows generators merged 3 -> 2, lost 0 -> 1" $?

! grep -rq "$tok" "$tmp"/*.out "$tmp"/*.err "$tmp"/*.json "$tmp"/*.txt
check "the token is in no output and no file" $?

[ "$fails" -eq 0 ]
