#!/usr/bin/env bash
# infertop against a real llama.cpp llama-server (CPU, a tiny random model;
# tests/real/build.sh makes both, cached outside the tree). Checks what the
# simulator cannot prove: exact token counts against the server's own usage
# on both endpoints, TPOT against the server's own timings, the llamacpp
# profile and its queue gauges, and no request lost to the server's
# keep-alive habits. Prints "PASS: name" / "FAIL: name" lines (tests/suite.sh
# counts them) and exits 1 if any failed. If the server cannot be built, that
# is a failure, never a skip.
#   INFERTOP_BIN=build/release/infertop tests/real/run.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${INFERTOP_BIN:-./infertop}
slots=4
out=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
pass=0
fail=0
ok() { echo "PASS: real: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: real: $1"; fail=$((fail + 1)); }
finish() { echo "real: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }
py=python3
$py -c 'import json' 2>/dev/null || py=/usr/bin/python3
# A JSON field of a result file: jq-like paths, e.g. infertop.server.profile
field() { $py -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v=v[k] if not isinstance(v,list) else v[int(k)]
print(v)' "$1" "$2"; }

[ -x "$bin" ] || { bad "no infertop binary at $bin"; finish; }
start=$(date +%s)
if ! "$here/build.sh" >"$out/paths"; then
	bad "llama-server could not be built (see the messages above)"
	finish
fi
server=$(sed -n 1p "$out/paths")
model=$(sed -n 2p "$out/paths")
echo "real: llama-server ready in $(($(date +%s) - start)) s"

port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port
"$server" -m "$model" --host 127.0.0.1 --port "$port" -t 1 --parallel $slots -c $((slots * 1024)) \
	--metrics --slots --no-webui >"$out/server.log" 2>&1 &
srv=$!
for _ in $(seq 1 300); do
	curl -sf "$base/health" >/dev/null 2>&1 && break
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.1
done
if ! curl -sf "$base/health" >/dev/null 2>&1; then
	tail -20 "$out/server.log"
	bad "llama-server did not come up"
	finish
fi

run() { # name, infertop options...: headless run against the server, -o $out/name.json
	local name=$1
	shift
	"$bin" --no-tui -q -m tiny -o "$out/$name.json" "$@" "$base" >"$out/$name.out" 2>"$out/$name.err"
	local rc=$?
	if [ ! -s "$out/$name.json" ]; then
		tail -5 "$out/$name.err"
		return 1
	fi
	return $rc
}

# 1. Exact output token counts against the server's own usage, both
# endpoints. llama.cpp sends usage on /v1/completions in the last chunk that
# still has choices; missing it would fall back to counting chunks.
for api in completions chat; do
	if [ $api = chat ]; then path=/v1/chat/completions
		body='{"model":"tiny","messages":[{"role":"user","content":"hello there"}],"max_tokens":24,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}'
	else path=/v1/completions
		body='{"model":"tiny","prompt":"hello there","max_tokens":24,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}'
	fi
	want=$(curl -sN "$base$path" -H 'Content-Type: application/json' -d "$body" |
		$py -c 'import json,sys
u=None
for l in sys.stdin:
    if l.startswith("data: {"):
        d=json.loads(l[6:])
        u=d.get("usage") or u
print(u["completion_tokens"] if u else -1)')
	if run tokens_$api --api $api -c 2 -n 6 --output-tokens 24 --metrics-url none; then
		got=$(field "$out/tokens_$api.json" total_output_tokens)
		usage=$(field "$out/tokens_$api.json" infertop.requests_counted_from_usage)
		if [ "$want" = 24 ] && [ "$got" = 144 ] && [ "$usage" = 6 ]; then
			ok "$api: 6 x 24 output tokens, counted from the server's usage"
		else
			bad "$api: server usage $want per request; infertop counted $got tokens, $usage of 6 from usage"
		fi
	else
		bad "$api: the run failed"
	fi
done

# 2. TPOT at c=1 against the server's own decode time over the same
# requests: llama.cpp's tokens_predicted_seconds_total / tokens_predicted_total
# moved by exactly this run (decode slows as the context grows, so only the
# same requests compare).
counter() { curl -s "$base/metrics" | awk -v n="$1" '$1 == n {print $2}'; }
sec0=$(counter llamacpp:tokens_predicted_seconds_total)
tok0=$(counter llamacpp:tokens_predicted_total)
if run tpot --api completions -c 1 -n 8 --output-tokens 64 --metrics-url none; then
	sec1=$(counter llamacpp:tokens_predicted_seconds_total)
	tok1=$(counter llamacpp:tokens_predicted_total)
	srv_tpot=$($py -c "print(round(1000 * ($sec1 - $sec0) / ($tok1 - $tok0), 3))")
	tpot=$(field "$out/tpot.json" mean_tpot_ms)
	if $py -c "import sys; a,b=$tpot,$srv_tpot; sys.exit(0 if abs(a-b) <= 0.15*b else 1)"; then
		ok "TPOT at c=1: infertop $tpot ms, the server's own $srv_tpot ms (within 15%)"
	else
		bad "TPOT at c=1: infertop $tpot ms, the server's own $srv_tpot ms (more than 15% apart)"
	fi
	echo "real: the model decodes at $srv_tpot ms per token (server's counters)"
else
	bad "TPOT run failed"
fi

# 3. At 3 x the slots, the llamacpp profile is detected and its deferred
# gauge shows the queue.
c=$((slots * 3))
if run queue --api completions -c $c -d 8s --output-tokens 48 --metrics-interval 250ms; then
	prof=$(field "$out/queue.json" infertop.server.profile)
	waiting=$(field "$out/queue.json" infertop.server.run.waiting.max)
	running=$(field "$out/queue.json" infertop.server.run.running.max)
	if [ "$prof" = llamacpp ] && $py -c "import sys; sys.exit(0 if $waiting > 0 and $running >= $slots - 1 else 1)"; then
		ok "c=$c on $slots slots: profile llamacpp, deferred up to $waiting, processing up to $running"
	else
		bad "c=$c on $slots slots: profile $prof, deferred max $waiting, processing max $running"
	fi
else
	bad "queue run failed"
fi

# 4. No request lost to the server's keep-alive habits, 200 requests each.
for c in 1 12; do
	if run keepalive_c$c --api completions -c $c -n 200 --output-tokens 8 --metrics-url none; then
		failed=$(field "$out/keepalive_c$c.json" failed)
		done_=$(field "$out/keepalive_c$c.json" completed)
		retries=$(field "$out/keepalive_c$c.json" infertop.connection_retry)
		conns=$(field "$out/keepalive_c$c.json" infertop.connections_opened)
		if [ "$failed" = 0 ] && [ "$done_" = 200 ]; then
			ok "200 requests at c=$c with keep-alive: 0 failed ($conns connections, $retries resent)"
		else
			bad "200 requests at c=$c: $failed failed, $done_ completed ($conns connections, $retries resent)"
			grep -h "error" "$out/keepalive_c$c.err" | head -3
		fi
	else
		bad "200 requests at c=$c: the run failed"
		tail -3 "$out/keepalive_c$c.err"
	fi
done

# 5. Sessions against the server's prompt cache. Each turn resends the
# conversation so far; llama-server keeps a slot's prompt and evaluates
# only what follows the longest cached prefix. Its log prints, per
# request, the prompt tokens it evaluated ("prompt eval time = ... / N
# tokens"): the server's own cached count is the prompt's tokens minus N,
# independent of the stream infertop parsed. At c=1 the log's lines and
# the request log's are in the same order, so they compare turn by turn;
# at c=4 (one slot per session) they compare in sum.
evals() { grep -o 'prompt eval time = *[0-9.]* ms / *[0-9]* tokens' "$out/server.log" | awk '{print $(NF-1)}'; }
for c in 1 4; do
	before=$(evals | wc -l)
	if run sessions_c$c --api chat -c $c -n $c --sessions turns=4,think=100ms,system=128,user=16 \
		--output-tokens 8 --metrics-url none --request-log "$out/sessions_c$c.jsonl"; then
		evals | tail -n +$((before + 1)) >"$out/evals_c$c"
		verdict=$($py - "$out/sessions_c$c.jsonl" "$out/evals_c$c" $c <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ev = [int(l) for l in open(sys.argv[2]) if l.strip()]
c = int(sys.argv[3])
bad = []
if len(rows) != 4 * c or any(r["outcome"] != "ok" for r in rows):
    bad.append("%d requests, %d ok (want %d)" % (len(rows), sum(r["outcome"] == "ok" for r in rows), 4 * c))
if len(ev) != len(rows):
    bad.append("server evaluated %d prompts for %d requests" % (len(ev), len(rows)))
server = [r["input_tokens"] - n for r, n in zip(rows, ev)]
mine = [r["cached_tokens"] for r in rows]
if c == 1 and mine != server:
    bad.append("cached per turn: infertop %s, server %s" % (mine, server))
if c > 1 and sum(m or 0 for m in mine) != sum(server):
    bad.append("cached in sum: infertop %d, server %d" % (sum(m or 0 for m in mine), sum(server)))
later = [r for r in rows if r["turn"] and r["turn"] > 1]
if not later or any((r["cached_tokens"] or 0) <= 0 for r in later):
    bad.append("a turn after the first used no cache: %s" % [(r["turn"], r["cached_tokens"]) for r in later])
t1 = sorted(r["ttft_ms"] for r in rows if r["turn"] == 1)
tn = sorted(r["ttft_ms"] for r in later)
# At c=1 every later turn starts faster than every first turn. At c=4 a
# later turn may wait behind another session's first-turn prefill on the
# server's one thread, so there the medians compare.
if t1 and tn and c == 1 and not max(tn) < min(t1):
    bad.append("TTFT of turns 2-4 (max %.1f ms) not below turn 1's (min %.1f ms)" % (max(tn), min(t1)))
if t1 and tn and c > 1 and not tn[len(tn) // 2] < t1[len(t1) // 2]:
    bad.append("median TTFT of turns 2-4 (%.1f ms) not below turn 1's (%.1f ms)" % (tn[len(tn) // 2], t1[len(t1) // 2]))
print("; ".join(bad) if bad else "ok: cached %s, TTFT turn 1 %.0f ms, later %.0f ms (medians)" %
      (mine if c == 1 else sum(mine), t1[len(t1) // 2], tn[len(tn) // 2]))
PY
)
		case $verdict in
		ok:*) ok "4-turn sessions at c=$c: ${verdict#ok: }" ;;
		*) bad "4-turn sessions at c=$c: $verdict" ;;
		esac
	else
		bad "4-turn sessions at c=$c: the run failed"
		tail -3 "$out/sessions_c$c.err"
	fi
done

# 6. The profile's metric names against this server's /metrics: the ones
# the dashboard cannot do without must be there; the others are listed.
curl -s "$base/metrics" >"$out/metrics"
missing=
for name in llamacpp:requests_processing llamacpp:requests_deferred \
	llamacpp:prompt_tokens_total llamacpp:tokens_predicted_total; do
	grep -q "^$name" "$out/metrics" || missing="$missing $name"
done
if [ -z "$missing" ]; then
	ok "the llamacpp profile's queue and token metrics are on the real /metrics"
else
	bad "names the llamacpp profile reads but this server does not export:$missing"
fi
grep -q '^llamacpp:kv_cache_usage_ratio' "$out/metrics" ||
	echo "real: note: no llamacpp:kv_cache_usage_ratio in this llama.cpp (older ones had it): KV usage shows as unknown"
echo "real: took $(($(date +%s) - start)) s"
finish
