#!/bin/sh
# Steps as the GKE job and GuideLLM run them, against the simulator:
# each step records its incomplete requests (sent, not finished at the
# step's end) and the per-request mean input/output tokens, in -o's steps
# and the text steps table.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 8 tokens 100 ms apart: a request takes ~0.72 s, so at each 1 s stage's
# end every user has one in flight.
slow="--sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg 20ms --sim-arg --itl --sim-arg 100ms"
# shellcheck disable=SC2086
"$INFERTOP_BIN" --demo $slow --no-tui -q --output-tokens 8 --input-tokens 64 --stages "1s@c=2, 1s@c=3" \
	-o "$tmp/st.json" >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 0 ] && python3 - "$tmp/st.json" <<'PY'
import json, sys
steps = json.load(open(sys.argv[1]))["infertop"]["steps"]
assert [s["incomplete"] for s in steps] == [2, 3], steps
for s in steps:
    assert s["completed"] > 0 and s["mean_output_tokens"] == 8, s
    assert s["mean_input_tokens"] > 0, s
    assert abs(s["mean_input_tokens"] * s["completed"] - s["total_input_tokens"]) < 1e-6, s
PY
check "steps: incomplete at each step's end and mean tokens per request (exit $st)" $?
grep -q '^| # | step | time s | done | failed | incomplete | in/out tok/req |' "$tmp/out" &&
	grep -Eq '^\| 1 \| c=2 \| [0-9.]+ \| [1-9][0-9]* \| 0 \| 2 \| [1-9][0-9]*/8 \|' "$tmp/out"
check "steps table: incomplete and in/out tokens per request columns" $?

[ $fails -eq 0 ]
