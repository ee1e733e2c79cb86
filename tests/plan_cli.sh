#!/bin/sh
# Workload plans through the binary: bad plan options exit 2 with a message
# naming the option; a staged run with SLOs prints the steps table and the
# goodput row and writes them to -o; a small matrix prints its markdown table.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bad() { # description, expected text, options...
	desc=$1 want=$2
	shift 2
	"$INFERTOP_BIN" -q "$@" http://127.0.0.1:1 >/dev/null 2>"$tmp/err"
	st=$?
	[ $st -eq 2 ] && grep -q -- "$want" "$tmp/err"
	check "$desc (exit $st: $(head -c 160 "$tmp/err"))" $?
}
bad "bad stage" "--stages: stage 2" --stages "1m@c=2, 1m@x=3"
bad "bad sweep" "--sweep" --sweep "c=0"
bad "bad slo" "--slo: unknown SLO" --slo "ttfx=1s"
bad "split without models" "--traffic-split needs --models" --traffic-split 0.5,0.5
bad "split count" "--traffic-split: 1 value for 2 models" --models a,b --traffic-split 1
bad "cooldown without an end" "--cooldown" --cooldown 5s
bad "two kinds of plan" "one kind of plan" --stages 1m@c=1 --sweep c=1,2

sim="--sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg 20ms --sim-arg --itl --sim-arg 2ms"
# shellcheck disable=SC2086
"$INFERTOP_BIN" --demo $sim --no-tui -q --output-tokens 8 --stages "1s@c=2, 1s@c=4" --slo ttft=1s \
	-o "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 0 ] && grep -q -- "- Steps -" "$tmp/out" && grep -q '^| 1 | c=2 |' "$tmp/out" &&
	grep -q '^| 2 | c=4 |' "$tmp/out" && grep -Eq '^Request goodput \(req/s\): +[1-9]' "$tmp/out" &&
	grep -q "stopped: plan finished" "$tmp/out"
check "stages: steps table and goodput in the summary (exit $st)" $?
grep -q '"request_goodput":[[:space:]]*[1-9]' "$tmp/r.json" && grep -q '"steps":' "$tmp/r.json" &&
	grep -q '"kind":[[:space:]]*"stages"' "$tmp/r.json" && grep -q '"event":[[:space:]]*"step"' "$tmp/r.json"
check "stages: steps, plan timeline and request_goodput in -o" $?

# shellcheck disable=SC2086
"$INFERTOP_BIN" --demo $sim --no-tui -q --matrix --scenario chatbot --sweep c=1,2 --stage-duration 1s \
	-o "$tmp/m.json" >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 0 ] && grep -q -- "- Scenario matrix -" "$tmp/out" && grep -q '^| chatbot | 128/128 | 1 |' "$tmp/out" &&
	grep -q '^| chatbot | 128/128 | 2 |' "$tmp/out" && grep -q '"matrix":' "$tmp/m.json" &&
	grep -q '"request_goodput":[[:space:]]*null' "$tmp/m.json"
check "matrix: markdown table and JSON (exit $st)" $?

[ $fails -eq 0 ]
