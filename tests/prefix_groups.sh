#!/bin/sh
# --prefix-groups against the simulator, whose prefix cache (on by default,
# 16-token blocks, LRU far larger than the run) counts in
# vllm:prefix_cache_hits_total the prompt tokens it found cached. The
# expected count is computed here on its own, from the option's rule
# (round robin over the pairs, group = pair mod G) and the simulator's
# (whole blocks, chained, the last prompt token always computed): a
# group's system prompt is found on every request of the group but its
# first, and a pair's whole prompt on its repeat. Chat (system message +
# user message) and completions (joined).
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT

groups=4 per=3 sys=100 q=21 n=30
for api in chat completions; do
	"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 1ms --itl 1ms >"$tmp/sim_$api.out" \
		2>"$tmp/sim_$api.err" &
	pids="$pids $!"
	wait_for "$tmp/sim_$api.out" "listening on"
	port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim_$api.out")
	"$INFERTOP_BIN" --no-tui -q --api $api --prefix-groups "$groups,$per,$sys,$q" -n $n -c 1 --output-tokens 2 \
		-o "$tmp/r_$api.json" "http://127.0.0.1:$port" >/dev/null 2>"$tmp/err_$api"
	check "$api: the run ends with exit 0 ($(head -c 300 "$tmp/err_$api"))" $?
	curl -s "http://127.0.0.1:$port/metrics" >"$tmp/metrics_$api"
	$py - "$tmp/metrics_$api" "$tmp/r_$api.json" $groups $per $sys $q $n <<'EOF'
import json, sys
metrics = {}
for l in open(sys.argv[1]):
    if l.startswith("vllm:prefix_cache_"):
        name, v = l.split()[0].split("{")[0], float(l.split()[-1])
        metrics[name] = v
res = json.load(open(sys.argv[2]))
G, PER, SYS, Q, N = (int(a) for a in sys.argv[3:8])
BT = 16  # the simulator's --kv-block-tokens default
assert res["completed"] == N and res["failed"] == 0, res["completed"]
# Calibrated against the simulator: each prompt is SYS + Q tokens.
assert res["total_input_tokens"] == N * (SYS + Q), res["total_input_tokens"]
seen = set()
hits = 0
for k in range(N):
    pair = k % (G * PER)
    g, qi = pair % G, pair // G
    # A token is named by what it is; the first token of a message also
    # carries its role (the simulator hashes the role with it).
    toks = [("sys", g, i) for i in range(SYS)] + [("q", g, qi, i) for i in range(Q)]
    toks[0] = ("role:system",) + toks[0]
    toks[SYS] = ("role:user",) + toks[SYS]
    blocks = [tuple(toks[:BT * (b + 1)]) for b in range(len(toks) // BT)]
    max_hit = (len(toks) - 1) // BT
    lead = 0
    while lead < len(blocks) and lead < max_hit and blocks[lead] in seen:
        lead += 1
    hits += lead * BT
    seen.update(blocks)
got_h = metrics["vllm:prefix_cache_hits_total"]
got_q = metrics["vllm:prefix_cache_queries_total"]
assert got_q == N * (SYS + Q), (got_q, N * (SYS + Q))
assert got_h == hits, ("hits", got_h, "expected", hits)
print("prefix cache: %d of %d prompt tokens hit (%.1f%%), as computed" % (got_h, got_q, 100.0 * got_h / got_q))
EOF
	check "$api: the simulator's prefix-cache hits are the groups' reuse" $?
done
exit $((fails > 0))
