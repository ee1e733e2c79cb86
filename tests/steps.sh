#!/bin/sh
# Steps as the GKE job and GuideLLM run them, against the simulator:
# --stage-requests N ends each step after N requests ended (completed +
# failed, exactly N, failures included); rate=auto's throughput step
# saturates the server (open loop, in flight up to its cap, reaching a
# server that takes 12 connections); each step records its incomplete requests (sent, not finished at the
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

# A fifth of the requests fail (HTTP 500): they count towards N too.
fast="--sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg 10ms --sim-arg --itl --sim-arg 2ms"
fast="$fast --sim-arg --fail-rate --sim-arg 0.2 --sim-arg --fail-kinds --sim-arg 500"
for plan in "--sweep c=1,4,9" "--sweep r=30,80" "--stages 1m@c=3,1m@c=6" "-c 4 --warmup 5 --sweep c=4,2"; do
	# shellcheck disable=SC2086
	"$INFERTOP_BIN" --demo $fast --no-tui -q --output-tokens 8 $plan --stage-requests 15 \
		-o "$tmp/n.json" >"$tmp/out" 2>"$tmp/err"
	st=$?
	python3 - "$tmp/n.json" <<'PY'
import json, sys
steps = json.load(open(sys.argv[1]))["infertop"]["steps"]
assert len(steps) in (2, 3), steps
for s in steps:
    assert s["completed"] + s["failed"] == 15 and not s["partial"], s
    assert s["duration"] < 30, s    # ended by count, not by a clock
assert sum(s["failed"] for s in steps) > 0, steps
PY
	check "--stage-requests 15 with $plan: exactly 15 completed+failed a step (exit $st)" $?
done
# rate=auto against a server of 12 connections (more get 503): the
# throughput step's in-flight reaches them (8 x -c = 8 users before), and
# --max-concurrency caps it.
k12="--sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg 20ms --sim-arg --itl --sim-arg 20ms"
k12="$k12 --sim-arg --max-connections --sim-arg 12"
for cap in "" 10; do
	# shellcheck disable=SC2086
	"$INFERTOP_BIN" --demo $k12 --no-tui -q --output-tokens 16 -c 1 --sweep rate=auto:1 --stage-duration 1s \
		${cap:+--max-concurrency $cap} -o "$tmp/sat.json" >"$tmp/out" 2>"$tmp/err"
	st=$?
	python3 - "$tmp/sat.json" "$cap" <<'PY'
import json, sys
steps = json.load(open(sys.argv[1]))["infertop"]["steps"]
sync, top = steps[0], steps[1]
assert sync["label"] == "synchronous" and sync["max_concurrency"] == 1, sync
assert top["label"] == "throughput" and top["mode"] == "rate", top
# Well above what 1 request at a time carries, per slot.
assert top["target"] > 2 * sync["request_throughput"], top
if sys.argv[2]:
    # The cap holds in flight; the server's 12 connections may still
    # refuse a few (it counts a closed connection until it sees the close,
    # which a sanitizer build sees late), so failures are not asserted.
    assert top["max_concurrency"] == int(sys.argv[2]), top
    print("capped at %s: %d completed, %d failed" % (sys.argv[2], top["completed"], top["failed"]))
else:
    assert top["max_concurrency"] >= 12, top
PY
	check "rate=auto: the throughput step saturates${cap:+ up to --max-concurrency $cap} (exit $st)" $?
done

# The progress line counts a step's requests instead of its time left.
# shellcheck disable=SC2086
"$INFERTOP_BIN" --demo $slow --no-tui --interval 200ms --output-tokens 4 --sweep c=2 --stage-requests 6 \
	>/dev/null 2>"$tmp/prog"
grep -Eq 'step 1/1 c=2, [0-5]/6 requests' "$tmp/prog"
check "progress line: the step's requests so far out of N" $?

bad=$("$INFERTOP_BIN" -q --stage-requests 3 http://127.0.0.1:1 2>&1)
st=$?
[ $st -eq 2 ] && echo "$bad" | grep -q -- "--stage-requests applies to the steps"
check "--stage-requests without steps is refused (exit $st)" $?

[ $fails -eq 0 ]
