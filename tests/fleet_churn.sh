#!/bin/sh
# infertop fleet over a generator that reports a new run id at every poll
# (tests/fake_generator.py --churn, polled every 2 ms): memory stays flat
# and the totals hold only the current run. The fleet's RSS is read after
# 1,000 and after $FLEET_CHURN_IDS (10,000) run ids and may not grow by
# more than 4 MB; the totals stay one run's (its completed, c=2), and the
# runs listed stay bounded (the current one and the newest 32 finished).
# Before the fix every run id stayed a row in the totals: the RSS grew by
# hundreds of KB a run and the line said "N runs, c=2N".
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
[ -r /proc/self/status ] || { echo "SKIP: no /proc"; exit 77; }
ids=${FLEET_CHURN_IDS:-10000}
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill -9 $p 2>/dev/null; done; [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
here=$(dirname "$0")

. "$here/fleet_fake_lib.sh"
fleet_template "$tmp/t.json"
check "a real generator's running status is the template ($template_completed completed)" $?
completed=$template_completed
fake churn "$tmp/t.json" --churn
fake=$fake_url
# In an ASan build freed memory waits in a quarantine (256 MB by default)
# before reuse: kept small, so RSS shows what the fleet holds.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4" \
INFERTOP_FLEET_POLL_MS=2 "$INFERTOP_BIN" fleet --targets "$fake" --no-tui --interval 200ms \
	>"$tmp/f.out" 2>"$tmp/f.err" &
fpid=$!
pids="$pids $fpid"

served() { curl -s "$fake/count"; }
rss_kb() { sed -n 's/^VmRSS:[^0-9]*\([0-9]*\) kB/\1/p' "/proc/$fpid/status"; }
# wait_served N: until the fake has answered N statuses (bounded: 120 s).
wait_served() {
	i=0
	while [ $i -lt 1200 ] && [ "$(served)" -lt "$1" ] 2>/dev/null; do i=$((i + 1)); sleep 0.1; done
	[ "$(served)" -ge "$1" ]
}
wait_served 1000
check "1,000 run ids served ($(served))" $?
rss1=$(rss_kb)
wait_served "$ids"
check "$ids run ids served ($(served))" $?
rss2=$(rss_kb)
kill -0 "$fpid" 2>/dev/null
check "the fleet is still running" $?
growth=$((rss2 - rss1))
echo "fleet RSS: ${rss1} kB at 1,000 run ids, ${rss2} kB at $ids (+${growth} kB)"
[ "$growth" -lt 4096 ]
check "RSS flat from 1,000 to $ids run ids (+${growth} kB, bound 4096)" $?

# The latest line: the totals are one run's, the list is bounded.
line=$(grep '^fleet: ' "$tmp/f.err" | tail -1)
echo "last line: $line"
runs=$(echo "$line" | sed -n 's/^fleet: \([0-9]*\) runs.*/\1/p')
ok=$(echo "$line" | sed -n 's/.*: \([0-9]*\) ok,.*/\1/p')
echo "$line" | grep -q ", c=2, "
check "the totals' concurrency is the current run's (c=2)" $?
[ "$ok" = "$completed" ]
check "the totals' completed are the current run's ($ok = $completed)" $?
[ -n "$runs" ] && [ "$runs" -le 33 ]
check "the runs listed are bounded ($runs <= 33)" $?
kill -INT "$fpid"
wait "$fpid"
check "Ctrl-C ends the fleet with 0" $?

[ "$fails" -eq 0 ]
