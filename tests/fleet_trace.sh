#!/bin/sh
# A trace and --prefix-groups through run specs. Three `infertop serve`
# (the trace under each one's --data-dir) and `infertop fleet --start
# --trace ...` with every --trace-* option: each generator gets its slice
# (i/3) and replays its share (by session id: the fixture's six sessions,
# FNV-1a mod 3, computed here on its own), each result's "trace" object
# carries the options, together the three sent the whole trace once, and
# the block all sessions share is the same bytes from every generator.
# Then a run spec with "prefix-groups" posted to one generator.
: "${INFERTOP_BIN:?}"
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/check_lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
fx="${INFERTOP_FIXTURES:-$here/fixtures}/traces"
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 1ms --itl 1ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
pids="$pids $!"
wait_for "$tmp/sim.out" "listening on"
target="http://127.0.0.1:$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")"
api_of() { sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$1"; }
# The fixture with one hash id shared by every session (the first block of
# each prompt: what a common system prompt is), and a bad line, for
# --trace-skip-bad.
$py - "$fx/mooncake.jsonl" >"$tmp/t.jsonl" <<'EOF'
import json, sys
for l in open(sys.argv[1]):
    if l.strip():
        r = json.loads(l)
        r["hash_ids"][0] = 7777
        print(json.dumps(r))
print('{"timestamp": 5, "input_length": "x", "output_length": 1}')
EOF
for i in 0 1 2; do
	mkdir -p "$tmp/data$i" "$tmp/res$i"
	cp "$tmp/t.jsonl" "$tmp/data$i/t.jsonl"
	"$INFERTOP_BIN" serve --listen 127.0.0.1:0 --data-dir "$tmp/data$i" --results-dir "$tmp/res$i" \
		>"$tmp/s$i.out" 2>"$tmp/s$i.err" &
	pids="$pids $!"
	wait_for "$tmp/s$i.err" "control API on"
done
s0=$(api_of "$tmp/s0.err"); s1=$(api_of "$tmp/s1.err"); s2=$(api_of "$tmp/s2.err")
"$INFERTOP_BIN" fleet --targets "$s0,$s1,$s2" --no-tui --interval 500ms -o "$tmp/fleet.json" \
	--start --trace mooncake:t.jsonl --trace-speed 4 --trace-window 0,10 --trace-block-tokens 64 \
	--trace-skip-bad --metrics-url none "$target" >"$tmp/f.out" 2>"$tmp/f.err"
st=$?
[ $st -eq 0 ] && [ -s "$tmp/fleet.json" ]
check "fleet --start --trace over three generators: exit 0 ($st: $(tail -n 2 "$tmp/f.err"))" $?
$py - "$tmp/t.jsonl" "$tmp"/res0/*.json "$tmp"/res1/*.json "$tmp"/res2/*.json <<'EOF'
import json, sys
trace = [r for r in (json.loads(l) for l in open(sys.argv[1])) if isinstance(r["input_length"], int)]
def fnv1a(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) % (1 << 64)
    return h
want = [0, 0, 0]
for rec in trace:
    want[fnv1a(rec["session_id"]) % 3] += 1
got = []
for path in sys.argv[2:]:
    r = json.load(open(path))
    t = r["infertop"]["trace"]
    i = int(t["slice"].split("/")[0])
    assert t["slice"] == "%d/3" % i and t["split_by"] == "session_id", t
    assert t["speed"] == 4 and t["window"] == {"start_s": 0, "length_s": 10} and t["file"] == "t.jsonl", t
    assert t["skipped_bad_lines"] == 1 and t["records_in_window"] == len(trace), t
    assert t["block_tokens"] == 64 and t["records"] == t["sent"] == r["completed"] == want[i], (i, t, want)
    got.append(r["completed"])
assert sum(got) == len(trace), (got, len(trace))
print("records per generator", got, "of", len(trace))
EOF
check "each generator replayed its slice by session id, with the run spec's --trace-* options; together the trace" $?
$py - "$tmp/fleet.json" "$(wc -l <"$tmp/t.jsonl")" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["infertop"]["trace"]
n = int(sys.argv[2]) - 1  # the bad line
assert t["slices_merged"] == 3 and t["sent"] == t["records"] == n and t["replayed"] and t["slice"] is None, t
assert t["lateness"]["count"] == n, t
EOF
check "the fleet's merged result has the whole trace: 3 slices, every record sent" $?

# The three wrote the same bytes for the same hash ids (whatever the seed
# --start gave each): the shared simulator's prefix cache saw exactly the
# trace's own reuse, the block every session shares included (64-token hash blocks, its 16-token blocks chained,
# the last prompt token never a hit; in the trace's order, which 4x keeps
# with requests 6 ms apart and done in 3).
curl -s "$target/metrics" >"$tmp/metrics"
$py - "$tmp/t.jsonl" "$tmp/metrics" <<'EOF'
import json, sys
trace = [r for r in (json.loads(l) for l in open(sys.argv[1])) if isinstance(r["input_length"], int)]
m = {l.split("{")[0]: float(l.split()[-1]) for l in open(sys.argv[2]) if l.startswith("vllm:prefix_cache_")}
B, BT = 64, 16
seen, hits, queries = set(), 0, 0
for k, rec in enumerate(trace):
    L, ids = rec["input_length"], rec["hash_ids"]
    cover = min(L, len(ids) * B)
    toks = [(ids[i // B], i % B) if i < cover else ("own", k, i) for i in range(L)]
    blocks, key = [], 0
    for b in range(L // BT):
        key = hash((key, tuple(toks[b * BT:(b + 1) * BT])))
        blocks.append(key)
    lead = 0
    while lead < len(blocks) and lead < (L - 1) // BT and blocks[lead] in seen:
        lead += 1
    hits += lead * BT
    queries += L
    seen.update(blocks)
print("prefix cache: the simulator %d of %d, the trace's reuse %d of %d"
      % (m["vllm:prefix_cache_hits_total"], m["vllm:prefix_cache_queries_total"], hits, queries))
assert m["vllm:prefix_cache_queries_total"] == queries and m["vllm:prefix_cache_hits_total"] == hits
EOF
check "the fleet's three slices together: the simulator's cache hits are the trace's reuse" $?

# --prefix-groups over the fleet, against a simulator of its own: the
# three generators (each its own --seed from --start, each its slice of
# the pairs: 6, 5 and 5 requests) together walk the 16 requests one
# generator would, each group's requests spread over them, with the same
# system prompt per group from every generator: the simulator's hits are
# the groups' reuse computed here (4 groups x 2 questions, 40 + 9 tokens,
# twice over).
"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 1ms --itl 1ms >"$tmp/simpg.out" 2>"$tmp/simpg.err" &
pids="$pids $!"
wait_for "$tmp/simpg.out" "listening on"
targetpg="http://127.0.0.1:$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/simpg.out")"
"$INFERTOP_BIN" fleet --targets "$s0,$s1,$s2" --no-tui --interval 500ms -o "$tmp/fleetpg.json" \
	--start --prefix-groups 4,2,40,9 -n 16 -c 3 --output-tokens 1 --metrics-url none "$targetpg" \
	>"$tmp/fpg.out" 2>"$tmp/fpg.err"
check "fleet --start --prefix-groups: exit 0 ($(tail -n 1 "$tmp/fpg.err"))" $?
curl -s "$targetpg/metrics" >"$tmp/metricspg"
$py - "$tmp/metricspg" "$tmp/fleetpg.json" <<'EOF'
import json, sys
m = {l.split("{")[0]: float(l.split()[-1]) for l in open(sys.argv[1]) if l.startswith("vllm:prefix_cache_")}
res = json.load(open(sys.argv[2]))
G, PER, SYS, Q, N, BT = 4, 2, 40, 9, 16, 16
assert res["completed"] == N, res["completed"]
seen, hits = set(), 0
for k in range(N):
    pair = k % (G * PER)
    g, qi = pair % G, pair // G
    toks = [("sys", g, i) for i in range(SYS)] + [("q", g, qi, i) for i in range(Q)]
    toks[0] = ("role:system",) + toks[0]
    toks[SYS] = ("role:user",) + toks[SYS]
    blocks = [tuple(toks[:BT * (b + 1)]) for b in range(len(toks) // BT)]
    lead = 0
    while lead < len(blocks) and lead < (len(toks) - 1) // BT and blocks[lead] in seen:
        lead += 1
    hits += lead * BT
    seen.update(blocks)
print("prefix groups over 3 generators: the simulator %d of %d, the groups' reuse %d of %d"
      % (m["vllm:prefix_cache_hits_total"], m["vllm:prefix_cache_queries_total"], hits, N * (SYS + Q)))
assert m["vllm:prefix_cache_queries_total"] == N * (SYS + Q) and m["vllm:prefix_cache_hits_total"] == hits
EOF
check "--prefix-groups over the fleet: one system prompt per group from every generator" $?

# --prefix-groups through a run spec.
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data-binary \
	"{\"url\":\"$target\",\"prefix-groups\":\"2,2,20,5\",\"requests\":8,\"concurrency\":1,\"output-tokens\":1,\"metrics-url\":\"none\"}" \
	"$s0/v1/runs")
id=$(sed -n 's/.*"id":"\([0-9a-f]\{32\}\)".*/\1/p' "$tmp/b")
i=0
while [ $i -lt 200 ] && ! curl -s "$s0/v1/runs/$id" | grep -Eq '"state":"(done|failed)"'; do
	i=$((i + 1)); sleep 0.05
done
[ "$code" = 201 ] && $py -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert r["completed"] == 8 and r["total_input_tokens"] == 8 * 25, (r["completed"], r["total_input_tokens"])
' "$tmp/res0/infertop-run-$id.json"
check "a run spec with prefix-groups 2,2,20,5: 8 requests of 25 tokens ($code $(cat "$tmp/b"))" $?
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data-binary \
	"{\"url\":\"$target\",\"prefix-groups\":\"2,2,20\"}" "$s0/v1/runs")
[ "$code" = 400 ] && grep -q '"field":"prefix-groups"' "$tmp/b" && grep -q 'expected four numbers' "$tmp/b"
check "a bad prefix-groups in a run spec: 400 naming the field ($code $(cat "$tmp/b"))" $?

# Sessions over the fleet: each generator runs whole sessions (never one
# across generators), and the merged result has every session and turn.
"$INFERTOP_BIN" fleet --targets "$s0,$s1,$s2" --no-tui --interval 500ms -o "$tmp/fleetss.json" \
	--start --sessions turns=3,think=20ms,system=16,user=8 -n 6 -c 3 --output-tokens 2 --metrics-url none \
	"$target" >"$tmp/fss.out" 2>"$tmp/fss.err"
check "fleet --start --sessions: exit 0 ($(tail -n 1 "$tmp/fss.err"))" $?
$py - "$tmp/fleetss.json" "$(ls -t "$tmp"/res0/*.json | head -n 1)" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
one = json.load(open(sys.argv[2]))
s = r["infertop"]["sessions"]
turns = {k: v["ttft"]["count"] for k, v in s["by_turn"].items()}
print("merged: %d sessions, %d turns, by turn %s" % (s["done"], s["turns_completed"], turns))
assert s["done"] == 6 and s["failed"] == 0 and s["turns_completed"] == 18 and r["completed"] == 18
assert turns == {"1": 6, "2": 6, "3": 6}, turns
assert one["infertop"]["options"]["sessions"] == "turns=3,think=20ms,system=16,user=8"
assert one["infertop"]["sessions"]["turns_completed"] == 3 * one["infertop"]["sessions"]["done"]
EOF
check "--sessions over the fleet: 6 whole sessions of 3 turns in the merged result" $?
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data-binary \
	"{\"url\":\"$target\",\"sessions\":\"turns=0\"}" "$s0/v1/runs")
[ "$code" = 400 ] && grep -q '"field":"sessions"' "$tmp/b"
check "a bad sessions spec in a run spec: 400 naming the field ($code $(cat "$tmp/b"))" $?
exit $((fails > 0))
