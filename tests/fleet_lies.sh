#!/bin/sh
# infertop fleet against generators that lie (tests/fake_generator.py
# serving a real generator's status, altered):
#  * impossible statuses (elapsed_s 1e300, a histogram of ~2^64 samples, a
#    counter of 2^53, a server block number of 1e300) are refused with
#    why, shown, and left out: the totals are the honest generator's, the
#    saved merge reads back with `infertop report` (run it in the ASan/UBSan
#    build: before the fix 1e300 was a signed overflow, the histogram
#    wrapped and the saved merge did not decode);
#  * a liar answering first does not set the reference: the majority does
#    (it was refused the honest two before), and --start's own target
#    beats even a first answer in a tie;
#  * a generator echoing the fleet's token and terminal escapes, in its
#    statuses and in a refusal of --start: none of it reaches stdout,
#    stderr or the result file.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill -9 $p 2>/dev/null; done; [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
. "$(dirname "$0")/fleet_fake_lib.sh"
tok="fleet-TOKEN-5b1e0c7a93d2"
export INFERTOP_FLEET_TEST_TOKEN="$tok"

fleet_template "$tmp/t.json"
check "a real generator's running status is the template ($template_completed completed)" $?
c=$template_completed

# fleet_ok FILE: the number of requests the latest line counts as ok.
fleet_ok() { grep '^fleet: .* ok,' "$1" | tail -1 | sed 's/.*: \([0-9]*\) ok,.*/\1/'; }
# has_bytes FILE...: any ESC, BEL or C1 CSI (UTF-8 c2 9b) byte in them.
has_bytes() { cat "$@" | python3 -c 'import sys; b = sys.stdin.buffer.read(); sys.exit(0 if any(x in b for x in (b"\x1b", b"\x07", b"\xc2\x9b")) else 1)'; }

# ---- impossible statuses ----
fake honest "$tmp/t.json"; h1=$fake_url
fake elapsed "$tmp/t.json" --set infertop.state.elapsed_s=1e300; l1=$fake_url
fake hist "$tmp/t.json" --hist infertop.metrics.ttft=18446744073709551000; l2=$fake_url
fake count "$tmp/t.json" --set infertop.counters.run.completed=9007199254740992; l3=$fake_url
fake server "$tmp/t.json" --set 'infertop.server={"scrapes":1e300}'; l4=$fake_url
"$INFERTOP_BIN" fleet --targets "$l1,$l2,$l3,$l4,$h1" --no-tui --interval 100ms -o "$tmp/a.json" \
	>"$tmp/a.out" 2>"$tmp/a.err" &
fa=$!
pids="$pids $fa"
wait_for "$tmp/a.err" "(1 up, 0 done, 0 lost, 4 refused): $c ok"
check "four impossible statuses refused, the totals the honest one's ($(fleet_ok "$tmp/a.err") ok)" $?
for u in $l1 $l2 $l3 $l4; do
	grep -q "${u#http://}: refused: impossible status" "$tmp/a.err" || echo "no refusal for $u"
done >"$tmp/a.missing"
[ ! -s "$tmp/a.missing" ]
check "each says why it is refused ($(grep -c 'refused: impossible' "$tmp/a.err") lines)" $?
kill -INT "$fa"
wait "$fa"
check "the fleet ends with 0 (no sanitizer report)" $?
"$INFERTOP_BIN" report "$tmp/a.json" >"$tmp/a.report" 2>&1
check "its saved merge reads back with infertop report" $?
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["completed"] == int(sys.argv[2]) and d["infertop"]["run"]["runs"] == 1 else 1)' "$tmp/a.json" "$c"
check "the saved merge is the honest run's alone ($c completed)" $?

# ---- the reference: the majority, not the first answer ----
# The liar answers first (the honest ones are held until it has been
# heard), its target URL carrying an escape.
fake liar "$tmp/t.json" --set 'infertop.run.target_url="http://evil.example\u001b[31m:1"'; fl=$fake_url
fake h2 "$tmp/t.json" --hold "$tmp/go"; fh2=$fake_url
fake h3 "$tmp/t.json" --hold "$tmp/go"; fh3=$fake_url
"$INFERTOP_BIN" fleet --targets "$fl,$fh2,$fh3" --no-tui --interval 100ms >"$tmp/b.out" 2>"$tmp/b.err" &
fb=$!
pids="$pids $fb"
wait_for "$tmp/b.err" "(1 up"
check "the liar is heard first" $?
touch "$tmp/go"
wait_for "$tmp/b.err" "(2 up, 0 done, 0 lost, 1 refused): $((2 * c)) ok"
check "the two honest generators are counted, the liar refused ($(fleet_ok "$tmp/b.err") ok)" $?
grep -q "${fl#http://}: refused: it loads http://evil.example?\[31m:1, the fleet http://127.0.0.1" "$tmp/b.err"
check "the liar's refusal names its target, its escape scrubbed" $?
kill -INT "$fb"
wait "$fb"

# --start: the spec's target is the reference, even in a tie where the
# liar answered first.
target=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["infertop"]["run"]["target_url"])' "$tmp/t.json")
rm -f "$tmp/go"
fake h4 "$tmp/t.json" --hold "$tmp/go"; fh4=$fake_url
"$INFERTOP_BIN" fleet --targets "$fl,$fh4" --no-tui --interval 100ms --start -c 4 -d 60s "$target" \
	>"$tmp/s.out" 2>"$tmp/s.err" &
fs=$!
pids="$pids $fs"
wait_for "$tmp/s.err" "${fl#http://}: refused: it loads http://evil"
check "--start: the liar answering first is refused against the spec's target" $?
touch "$tmp/go"
wait_for "$tmp/s.err" "(1 up, 0 done, 0 lost, 1 refused): $c ok"
check "--start: the honest generator is counted" $?
kill -INT "$fs"
wait_for "$tmp/s.err" "Ctrl-C again"
kill -INT "$fs"
wait "$fs"
! has_bytes "$tmp"/b.* "$tmp"/s.*
check "no terminal escape reached the fleets' outputs" $?

# ---- a generator that echoes the token and escapes ----
fake echo "$tmp/t.json" --echo; fe=$fake_url
"$INFERTOP_BIN" fleet --targets "$fe" --token-env INFERTOP_FLEET_TEST_TOKEN --no-tui --interval 100ms \
	-o "$tmp/e.json" >"$tmp/e.out" 2>"$tmp/e.err" &
fe_pid=$!
pids="$pids $fe_pid"
wait_for "$tmp/e.err" "(1 up"
check "the echoing generator is counted" $?
kill -INT "$fe_pid"
wait "$fe_pid"
check "the fleet ends with 0" $?
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["infertop"]["run"]["model"] == "model?[2J?]0;pwned??31m" else 1)' "$tmp/e.json"
check "its model is in the result file, scrubbed" $?
"$INFERTOP_BIN" fleet --targets "$fe" --token-env INFERTOP_FLEET_TEST_TOKEN --no-tui --start -c 2 -d 5s "$target" \
	>"$tmp/e2.out" 2>"$tmp/e2.err"
[ $? -eq 1 ] && grep -q "the run was not started: HTTP 401: bad token Bearer \*\*\* ?\[2J" "$tmp/e2.err"
check "--start: its refusal is shown, scrubbed" $?
# What it echoed did reach the fleet: the fake's statuses carried it.
curl -s -H "Authorization: Bearer $tok" "$fe/v1/status" | grep -q "$tok"
check "(the fake does echo the token)" $?
! grep -q "$tok" "$tmp"/e.* "$tmp"/e2.*
check "the token is in no output and not in the result file" $?
! has_bytes "$tmp"/e.* "$tmp"/e2.*
check "no terminal escape in any output nor the result file" $?

[ "$fails" -eq 0 ]
