#!/bin/sh
# A request still streaming when the grace period ends is incomplete, not
# failed: against a slow simulator (200 ms between tokens, 4 tokens a
# request: 0.8 s) a 1.5 s run with a 0.2 s grace completes each user's
# first request and cuts the second in mid-stream. The run counts them apart ("incomplete" in -o, the summary
# line), keeps their tokens, and neither the failed count, the errors nor
# --max-error-rate 0 see them.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sim="--sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg 20ms --sim-arg --itl --sim-arg 200ms"
# shellcheck disable=SC2086
"$INFERTOP_BIN" --demo $sim --no-tui -q --output-tokens 4 -c 4 -d 1.5s --grace 0.2s --max-error-rate 0 \
	--request-log "$tmp/req.jsonl" -o "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 0 ]
check "incomplete requests do not fail the run (exit $st: $(head -c 200 "$tmp/err"))" $?
python3 - "$tmp/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
run = d["infertop"]["counters"]["run"]
assert d["failed"] == 0, d["failed"]
assert d["incomplete"] >= 4, d["incomplete"]
assert run["incomplete"] == d["incomplete"] and run["failed"] == 0, run
assert not d["infertop"].get("errors"), d["infertop"].get("errors")
# Each cut request streamed a token or more: kept in the total.
assert d["completed"] >= 4, d["completed"]
assert d["total_output_tokens"] >= 4 * d["completed"] + d["incomplete"], d
PY
check "result: incomplete counted, not failed, no errors, tokens kept" $?
grep -Eq '^Incomplete requests: +[4-9]' "$tmp/out" && grep -Eq '^Failed requests: +0 ' "$tmp/out" &&
	! grep -q "aborted" "$tmp/out"
check "summary: the Incomplete requests line, no failure" $?
"$INFERTOP_BIN" report "$tmp/r.json" >"$tmp/rep" 2>&1 && grep -Eq '^Incomplete requests: +[4-9]' "$tmp/rep"
check "report reads the incomplete count back" $?
python3 - "$tmp/req.jsonl" "$tmp/r.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
d = json.load(open(sys.argv[2]))
cut = [r for r in rows if r["outcome"] == "incomplete"]
assert len(cut) == d["incomplete"] and not [r for r in rows if r["outcome"] == "error"], rows
assert all(r["output_tokens"] >= 1 for r in cut), cut
PY
check "request log: the cut requests' outcome is incomplete, with their tokens" $?

[ $fails -eq 0 ]
