#!/bin/sh
# Server replicas: three simulators given as three --metrics-url, loaded
# differently (each straight, by its own run with --metrics-url none)
# while a headless run on a fourth one scrapes the three. The result's
# summed server block equals the sum of what the three /metrics say
# (generation and prompt tokens, read with curl before and after), and
# its "replicas" array carries each one's share. Then a fourth URL that
# answers JSON, and one replica killed mid-run: each is marked down and
# the others go on being read.
: "${INFERTOP_BIN:?}"
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/check_lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT

for n in 0 1 2 3; do   # not $i: wait_for's
	"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 1ms --itl 1ms >"$tmp/sim$n.out" 2>"$tmp/sim$n.err" &
	pids="$pids $!"
	eval "sim${n}pid=$!"
	wait_for "$tmp/sim$n.out" "listening on"
	eval "u$n=http://127.0.0.1:$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim$n.out")"
done
# shellcheck disable=SC2154
reps="--metrics-url $u0/metrics --metrics-url $u1/metrics --metrics-url $u2/metrics"
counters() { # file: "gen prompt" of each replica, one line each
	for u in "$u0" "$u1" "$u2"; do
		curl -s "$u/metrics" | awk '/^vllm:generation_tokens_total/ { g += $NF }
			/^vllm:prompt_tokens_total/ { p += $NF } END { printf "%d %d\n", g, p }'
	done >"$1"
}
load() { # url requests output-tokens
	"$INFERTOP_BIN" "$1" --no-tui -q -c 2 -n "$2" --output-tokens "$3" --metrics-url none -o "$tmp/l.json" \
		>/dev/null 2>&1
}

# Bad input: 'none' with a replica, a URL that is not http(s).
"$INFERTOP_BIN" --metrics-url none --metrics-url "$u0/metrics" "$u3" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "'none' cannot be combined with another --metrics-url" "$tmp/err"
check "--metrics-url none with a replica: exit 2, said why" $?
"$INFERTOP_BIN" --metrics-url "$u0/metrics" --metrics-url ftp://x/metrics "$u3" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "expected an http(s) URL" "$tmp/err"
check "a replica URL that is not http(s): exit 2, said why" $?

# Replica 1 served requests before the run: its totals do not start at 0.
load "$u1" 7 5
counters "$tmp/before"
# shellcheck disable=SC2086
"$INFERTOP_BIN" "$u3" --no-tui -c 1 -d 4s --interval 200ms --metrics-interval 200ms $reps -o "$tmp/r.json" \
	>"$tmp/r.out" 2>&1 &
run=$!
pids="$pids $run"
wait_for "$tmp/r.out" "(3 of 3 replicas)"
check "the progress line says how many replicas it read" $?
load "$u0" 10 8
load "$u1" 20 16
load "$u2" 30 4
wait $run
st=$?
check "a run with three --metrics-url: exit 0 ($st: $(tail -n 2 "$tmp/r.out"))" $st
counters "$tmp/after"
grep -q "3 of 3 replicas" "$tmp/r.out"
check "the summary says 3 of 3 replicas" $?
$py - "$tmp/before" "$tmp/after" "$tmp/r.json" <<'PY'
import json, sys
b = [list(map(int, l.split())) for l in open(sys.argv[1])]
a = [list(map(int, l.split())) for l in open(sys.argv[2])]
srv = json.load(open(sys.argv[3]))["infertop"]["server"]
gen = [a[i][0] - b[i][0] for i in range(3)]
prompt = [a[i][1] - b[i][1] for i in range(3)]
tot = srv["run_totals"]
ok = True
def want(what, got, exp):
    global ok
    print(("ok: " if got == exp else "FAIL: ") + "%s: %r, /metrics says %r" % (what, got, exp))
    ok = ok and got == exp
want("loads differ (generated per replica)", len(set(gen)), 3)
want("summed generation tokens", tot["generation_tokens"], sum(gen))
want("summed prompt tokens", tot["prompt_tokens"], sum(prompt))
want("replicas read", srv["replicas_read"], 3)
want("per-replica generation tokens", [r["generation_tokens"] for r in srv["replicas"]], gen)
want("per-replica status", [r["status"] for r in srv["replicas"]], ["up"] * 3)
sys.exit(0 if ok else 1)
PY
check "the server block is the exact sum of the three /metrics" $?

# A replica answering JSON, one that accepts and never answers (its
# scrape outlives the run: the scrape timeout is 10 s at least), and
# replica 3 killed mid-run.
$py - "$tmp/hang.port" <<'PY' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1] + ".tmp", "w").write("%d\n" % s.getsockname()[1])
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
    c, _ = s.accept()
    held.append(c)
PY
pids="$pids $!"
wait_for "$tmp/hang.port" "[0-9]"
hang="http://127.0.0.1:$(cat "$tmp/hang.port")/metrics"
# shellcheck disable=SC2086
"$INFERTOP_BIN" "$u3" --no-tui -c 1 -d 8s --interval 200ms --metrics-interval 200ms $reps \
	--metrics-url "$u3/v1/models" --metrics-url "$hang" -o "$tmp/k.json" >"$tmp/k.out" 2>&1 &
run=$!
pids="$pids $run"
wait_for "$tmp/k.out" "(3 of 5 replicas)"
check "a replica answering JSON or nothing is not read, the three others are" $?
# shellcheck disable=SC2154
kill "$sim2pid"
wait_for "$tmp/k.out" "(2 of 5 replicas)"
check "a replica killed mid-run is marked down" $?
load "$u0" 5 8
wait $run
st=$?
check "the run goes on to its end: exit 0 ($st)" $st
$py - "$tmp/k.json" <<'PY'
import json, sys
srv = json.load(open(sys.argv[1]))["infertop"]["server"]
st = [r["status"] for r in srv["replicas"]]
ok = st == ["up", "up", "down", "down", "down"] and srv["status"] == "up" and srv["replicas_read"] == 2
ok = ok and "JSON" in srv["replicas"][3]["error"] and srv["replicas"][2]["error"]
ok = ok and "no answer before the run ended" in srv["replicas"][4]["error"]
# The two live replicas were read until the end, the hung one never.
ok = ok and srv["replicas"][0]["generation_tokens"] is not None
print(st, srv["status"], srv["replicas_read"], [r.get("error") for r in srv["replicas"]])
sys.exit(0 if ok else 1)
PY
check "the result marks the dead, the JSON and the silent replica down, the others up" $?
[ "$fails" -eq 0 ]
