#!/bin/sh
# --save-detailed: the -o result carries vLLM's header keys and its
# per-request arrays, read the way vLLM's plotting scripts read them
# (python3's json): one entry per request that ended, itls of the right
# length, errors where requests failed, generated_texts only when asked.
: "${INFERTOP_BIN:?}"
set -u
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check_lib.sh"
sim="--sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg 5ms --sim-arg --itl --sim-arg 1ms"

# 300 output tokens: more gaps than a request's ITL buffer holds (256), so
# the early batches must reach the arrays too.
# shellcheck disable=SC2086
"$INFERTOP_BIN" --demo $sim --no-tui -q -c 4 -n 40 --output-tokens 300 --save-detailed \
	-o "$tmp/d.json" >/dev/null 2>"$tmp/d.err"
check "run with --save-detailed (exit $?)" $?
python3 - "$tmp/d.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = d["completed"] + d["failed"]
assert d["num_prompts"] == n == 40, (d["num_prompts"], n)
for k in ("date", "backend", "model_id", "tokenizer_id", "request_rate", "burstiness", "max_concurrency"):
    assert k in d, k
assert d["backend"] == "openai-chat" and d["model_id"] == "infertop-sim" and d["tokenizer_id"] == "infertop-sim"
assert len(d["date"]) == 15 and d["date"][8] == "-", d["date"]
for k in ("input_lens", "output_lens", "ttfts", "itls", "errors"):
    assert len(d[k]) == n, (k, len(d[k]), n)
assert "generated_texts" not in d
assert all(o == 300 for o in d["output_lens"]), d["output_lens"]
assert all(i == 128 for i in d["input_lens"]), d["input_lens"]
assert all(len(g) == 299 for g in d["itls"]), [len(g) for g in d["itls"]]
assert all(e == "" for e in d["errors"])
assert all(0.004 < t < 1.0 for t in d["ttfts"]), d["ttfts"]
# The gaps add up to each request's decode time: mean ITL as the summary's.
gaps = [x for g in d["itls"] for x in g]
mean = sum(gaps) / len(gaps) * 1000
assert abs(mean - d["mean_itl_ms"]) < 0.05 * d["mean_itl_ms"] + 0.01, (mean, d["mean_itl_ms"])
PY
check "header keys, arrays of length completed+failed, itls of output_lens-1, python3 reads it" $?

# Failed requests are in the arrays as vLLM has them: output 0, no gaps,
# the error's text. generated_texts with --save-detailed-texts.
# shellcheck disable=SC2086
"$INFERTOP_BIN" --demo $sim --sim-arg --fail-rate --sim-arg 0.3 --no-tui -q --seed 3 -c 2 -n 30 \
	--output-tokens 12 --timeout 2s --save-detailed-texts -o "$tmp/f.json" >/dev/null 2>"$tmp/f.err"
python3 - "$tmp/f.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = d["completed"] + d["failed"]
assert d["failed"] > 0 and d["completed"] > 0, (d["completed"], d["failed"])
for k in ("input_lens", "output_lens", "ttfts", "itls", "errors", "generated_texts"):
    assert len(d[k]) == n, (k, len(d[k]), n)
bad = [i for i, e in enumerate(d["errors"]) if e]
assert len(bad) == d["failed"], (len(bad), d["failed"])
for i in bad:
    assert d["output_lens"][i] == 0 and d["itls"][i] == [], i
for i in range(n):
    if i not in bad:
        assert d["generated_texts"][i].strip(), i
        assert len(d["itls"][i]) == d["output_lens"][i] - 1, i
PY
check "failed requests in the arrays, generated_texts with --save-detailed-texts" $?

# Without -o there is nowhere to put them.
"$INFERTOP_BIN" --demo --save-detailed --no-tui -n 1 >/dev/null 2>"$tmp/e.err"
[ $? -eq 2 ] && grep -q -- "give -o FILE" "$tmp/e.err"
check "--save-detailed without -o: exit 2 with a message" $?

# Nothing is left in the result's directory but the result.
[ "$(ls -A "$tmp" | grep -v -e '^d\.json$' -e '^f\.json$' -e '\.err$' | wc -l)" -eq 0 ]
check "no temporary files left beside the result" $?

[ "$fails" -eq 0 ]
