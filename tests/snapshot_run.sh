#!/bin/sh
# Snapshots during a real run against --demo: SIGUSR1 and --snapshot-every
# write them, a missing directory is reported and the run goes on, the final
# snapshot exists after SIGINT and after SIGTERM, --request-log has one line
# per request, --max-error-rate exits 3.
: "${INFERTOP_BIN:?}"
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check_lib.sh"
# Polls (every 0.1 s, 30 s at most) until the command succeeds.
wait_for() {
	i=0
	while ! eval "$1"; do
		i=$((i + 1))
		[ $i -ge 300 ] && return 1
		sleep 0.1
	done
	return 0
}
count() {
	n=0
	for f in "$1"/infertop-*.json; do [ -e "$f" ] && n=$((n + 1)); done
	echo $n
}
has() {
	grep -l "\"reason\":[[:space:]]*\"$2\"" "$1"/infertop-*.json 2>/dev/null | head -1
}

# 1. SIGUSR1 and --snapshot-every during a run; SIGINT ends it; -o is the
#    final snapshot.
mkdir "$tmp/s1"
"$INFERTOP_BIN" --demo -c 4 --output-tokens 16 --no-tui --interval 200ms --snapshot-dir "$tmp/s1" \
	--snapshot-every 1s -o "$tmp/final1.json" >"$tmp/out1" 2>"$tmp/err1" &
pid=$!
pids="$pids $pid"
wait_for 'grep -q "^\[" "$tmp/err1"'
check "run 1 started" $?
# SIGUSR1 until one shows up: the first may come before the watcher is up
# (it is ignored then, never fatal).
wait_for 'kill -USR1 $pid; [ -n "$(has "$tmp/s1" signal)" ]'
check "SIGUSR1 writes a snapshot" $?
wait_for '[ "$(grep -l "\"reason\":[[:space:]]*\"periodic\"" "$tmp/s1"/infertop-*.json 2>/dev/null | wc -l)" -ge 2 ]'
check "--snapshot-every 1s writes snapshots" $?
kill -INT $pid
wait $pid
st=$?
sig=$(has "$tmp/s1" signal)
[ $st -eq 0 ] && grep -q '"reason":[[:space:]]*"final"' "$tmp/final1.json" &&
	grep -q '"stop_reason":[[:space:]]*"interrupted (SIGINT)"' "$tmp/final1.json" &&
	grep -q '"status":[[:space:]]*"running"' "$sig" && grep -q "snapshot written to $tmp/s1/infertop-" "$tmp/err1"
check "SIGINT: exit 0, final snapshot written to -o" $?
ok=1
for f in "$tmp"/s1/infertop-*.json "$tmp/final1.json"; do
	"$INFERTOP_BIN" report "$f" >/dev/null || ok=0
done
ls -a "$tmp/s1" | grep -q '\.tmp\.' && ok=0
[ $ok -eq 1 ]
check "every snapshot reads back, no temporary file left" $?
# Snapshots only grow: in the order they were taken (taken_unix; names
# that share a second get -2, -3 and do not sort), completed requests never
# go down, and the final result has the most.
for f in "$tmp"/s1/infertop-*.json "$tmp/final1.json"; do
	t=$(grep -m1 '"taken_unix"' "$f" | tr -dc '0-9.')
	c=$(grep -m1 '"completed"' "$f" | tr -dc '0-9')
	echo "$t $c"
done | sort -n -k1,1 >"$tmp/order"
awk 'NR > 1 && $2 < prev { bad = 1 } { prev = $2 } END { exit bad }' "$tmp/order" &&
	[ "$(tail -1 "$tmp/order" | cut -d' ' -f2)" = "$(grep -m1 '"completed"' "$tmp/final1.json" | tr -dc '0-9')" ]
check "snapshots in time order show growing counts" $?

# 2. SIGTERM without -o: the final snapshot goes to --snapshot-dir.
mkdir "$tmp/s2"
"$INFERTOP_BIN" --demo -c 2 --output-tokens 8 --no-tui --interval 200ms --snapshot-dir "$tmp/s2" \
	>"$tmp/out2" 2>"$tmp/err2" &
pid=$!
pids="$pids $pid"
wait_for 'grep -q "^\[" "$tmp/err2"'
kill -TERM $pid
wait $pid
st=$?
fin=$(has "$tmp/s2" final)
[ $st -eq 0 ] && [ -n "$fin" ] && grep -q '"stop_reason":[[:space:]]*"terminated (SIGTERM)"' "$fin" &&
	grep -q "final snapshot written to $fin" "$tmp/err2"
check "SIGTERM: exit 0, final snapshot in --snapshot-dir" $?

# 3. A snapshot directory that goes away during the run (a missing one is
#    refused at start, tests/cli.sh): the failure is reported, the run
#    finishes normally, -o still written.
mkdir "$tmp/missing"
"$INFERTOP_BIN" --demo -c 2 -n 200 --output-tokens 8 --no-tui --interval 200ms --snapshot-dir "$tmp/missing" \
	-o "$tmp/final3.json" >"$tmp/out3" 2>"$tmp/err3" &
pid=$!
pids="$pids $pid"
wait_for 'grep -q "^\[" "$tmp/err3"'
rmdir "$tmp/missing"
wait_for 'kill -USR1 $pid 2>/dev/null; grep -q "snapshot failed: " "$tmp/err3" || ! kill -0 $pid 2>/dev/null'
wait $pid
st=$?
[ $st -eq 0 ] && grep -q "snapshot failed: cannot create a file in $tmp/missing" "$tmp/err3" &&
	grep -q '"completed":[[:space:]]*200' "$tmp/final3.json" && [ ! -e "$tmp/missing" ]
check "snapshot directory gone: reported, run goes on, exit 0" $?

# 4. --request-log: one JSON line per request, outcomes as counted.
"$INFERTOP_BIN" --demo --sim-arg --fail-rate --sim-arg 0.3 --sim-arg --fail-kinds --sim-arg 500 \
	-c 4 -n 50 --output-tokens 4 -q --request-log "$tmp/req.jsonl" -o "$tmp/r4.json" >/dev/null 2>&1
st=$?
lines=$(wc -l <"$tmp/req.jsonl")
oks=$(grep -c '"outcome":"ok"' "$tmp/req.jsonl")
errs=$(grep -c '"outcome":"error","error":"http","http_status":500' "$tmp/req.jsonl")
done4=$(grep -m1 '"completed"' "$tmp/r4.json" | tr -dc '0-9')
[ $st -eq 0 ] && [ "$lines" -eq 50 ] && [ "$oks" -eq "$done4" ] && [ $((oks + errs)) -eq 50 ] &&
	grep -q '"records":[[:space:]]*50' "$tmp/r4.json"
check "--request-log: 50 lines, outcomes match the result" $?

# 5. --max-error-rate: exit 3 on a broken server; the result is still saved.
"$INFERTOP_BIN" --demo --sim-arg --fail-rate --sim-arg 0.5 --sim-arg --fail-kinds --sim-arg 500 \
	-c 4 -n 40 --output-tokens 4 -q --max-error-rate 0.2 -o "$tmp/r5.json" >/dev/null 2>"$tmp/err5"
st=$?
[ $st -eq 3 ] && grep -q "above --max-error-rate" "$tmp/err5" && grep -q '"reason":[[:space:]]*"final"' "$tmp/r5.json"
check "--max-error-rate 0.2 at a 50% failure rate: exit 3, result saved" $?

echo "snapshot_run: $fails failed"
exit "$fails"
