#!/bin/sh
# `compare` of two runs of one command says "same", every time: against a
# fixed-timing simulator the runs differ only by the machine's drift (a
# stall, a busier core), which each run's own interval does not hold.
# Three identical pairs must each end "no significant difference" (in
# the headline figures: throughput, errors, TTFT, ITL, E2E); a
# simulator 50 % slower (TTFT and ITL) must be "worse" one way and
# "better" the other; INFERTOP_COMPARE_MIN_CHANGE=0 takes the floor
# away, a bad value is said and the default kept.
: "${INFERTOP_BIN:?}"
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check_lib.sh"

# run FILE SIM-OPTIONS...: the one command every run of the test is, each
# against a simulator of its own (--demo: a second run against one
# simulator would find its prompts in its prefix cache) that answers in
# fixed time: 96 requests, 8 users, 12 rounds of about 235 ms.
run() {
	out=$1
	shift
	"$INFERTOP_BIN" --demo --sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg "$1" --sim-arg --itl \
		--sim-arg "$2" -c 8 -n 96 --output-tokens 8 -q -o "$out" >/dev/null 2>"$out.err"
}

run "$tmp/a.json" 200ms 5ms && run "$tmp/b1.json" 200ms 5ms && run "$tmp/b2.json" 200ms 5ms &&
	run "$tmp/b3.json" 200ms 5ms && run "$tmp/s.json" 300ms 7.5ms
check "five runs saved" $? || exit 1

for k in 1 2 3; do
	"$INFERTOP_BIN" compare "$tmp/a.json" "$tmp/b$k.json" >"$tmp/c$k.txt" 2>&1
	tail -1 "$tmp/c$k.txt" | grep -q '^Verdict: no significant difference'
	check "identical pair $k: no significant difference ($(tail -1 "$tmp/c$k.txt"))" $? ||
		grep -E ' (worse|better) ' "$tmp/c$k.txt"
done
"$INFERTOP_BIN" compare "$tmp/a.json" "$tmp/s.json" >"$tmp/w.txt" 2>&1
tail -1 "$tmp/w.txt" | grep -Eq '^Verdict: B is worse: .*(ttft|itl|e2el) p50 \+[0-9.]+%' &&
	grep -Eq '^ttft p50 .* worse +median_ttft_ms$' "$tmp/w.txt" && grep -Eq '^itl p50 .* worse +median_itl_ms$' "$tmp/w.txt"
check "50 % slower: worse ($(tail -1 "$tmp/w.txt"))" $?
"$INFERTOP_BIN" compare "$tmp/s.json" "$tmp/a.json" >"$tmp/r.txt" 2>&1
tail -1 "$tmp/r.txt" | grep -Eq '^Verdict: B is better: ' && grep -Eq '^output_throughput .* better +output_throughput$' "$tmp/r.txt"
check "50 % faster: better ($(tail -1 "$tmp/r.txt"))" $?

# The floor is the variable's: 0 says so in the verdict; a bad value is
# said on stderr and the default kept.
INFERTOP_COMPARE_MIN_CHANGE=0 "$INFERTOP_BIN" compare "$tmp/a.json" "$tmp/b1.json" >"$tmp/z.txt" 2>&1
! grep -q 'or under' "$tmp/z.txt"
check "INFERTOP_COMPARE_MIN_CHANGE=0: no floor" $?
INFERTOP_COMPARE_MIN_CHANGE=20% "$INFERTOP_BIN" compare "$tmp/a.json" "$tmp/s.json" >"$tmp/t.txt" 2>&1
grep -Eq '^ttft p50 .* worse +median_ttft_ms$' "$tmp/t.txt" && grep -q '^Verdict: B is worse' "$tmp/t.txt"
check "INFERTOP_COMPARE_MIN_CHANGE=20%: a 50 % change is still worse" $?
INFERTOP_COMPARE_MIN_CHANGE=1000% "$INFERTOP_BIN" compare "$tmp/a.json" "$tmp/s.json" >"$tmp/u.txt" 2>&1
grep -q '^Verdict: no significant difference.* or under 1000%)$' "$tmp/u.txt"
check "INFERTOP_COMPARE_MIN_CHANGE=1000%: a 50 % change is same" $?
INFERTOP_COMPARE_MIN_CHANGE=fast "$INFERTOP_BIN" compare "$tmp/a.json" "$tmp/b1.json" >"$tmp/x.txt" 2>"$tmp/x.err"
st=$?
[ $st -eq 0 ] && grep -q 'INFERTOP_COMPARE_MIN_CHANGE=fast: expected' "$tmp/x.err" && grep -q '^Verdict: no significant difference' "$tmp/x.txt"
check "a bad INFERTOP_COMPARE_MIN_CHANGE is said, the default kept (exit $st)" $?
[ "$fails" -eq 0 ]
