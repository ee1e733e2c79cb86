#!/bin/sh
# --save-detailed keeps memory flat: the peak RSS of a long headless run
# against the built-in simulator with --save-detailed stays within 10% of
# the same run without it, and its arrays hold one entry per request.
#
#   bench/detail_rss.sh [INFERTOP] [REQUESTS]     (defaults: ./infertop 1000000)
#
# A million requests take about 10 minutes each way on a 2-core machine.
# Exit 1 when the arrays are short or RSS grew by more than 10%.
bin=${1:-./infertop}
n=${2:-1000000}
command -v /usr/bin/time >/dev/null 2>&1 || { echo "needs GNU time (/usr/bin/time)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run="--demo --sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg 1ms --sim-arg --itl --sim-arg 1ms
	--sim-arg --max-running --sim-arg 256 --no-tui -q -c 64 -n $n --output-tokens 4"
# shellcheck disable=SC2086
/usr/bin/time -f "%M" -o "$tmp/plain.rss" "$bin" $run -o "$tmp/plain.json" >/dev/null 2>&1 || exit 1
# shellcheck disable=SC2086
/usr/bin/time -f "%M" -o "$tmp/det.rss" "$bin" $run --save-detailed -o "$tmp/det.json" >/dev/null 2>&1 || exit 1
plain=$(tail -1 "$tmp/plain.rss")
det=$(tail -1 "$tmp/det.rss")
echo "requests $n: peak RSS $plain KB without --save-detailed, $det KB with ($(wc -c <"$tmp/det.json") bytes of result)"
python3 - "$tmp/det.json" "$n" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
lens = [len(d[k]) for k in ("input_lens", "output_lens", "ttfts", "itls", "errors")]
print("arrays:", lens, "completed", d["completed"], "failed", d["failed"])
assert d["completed"] + d["failed"] == n and all(x == n for x in lens)
PY
[ "$det" -le $((plain * 110 / 100)) ] || { echo "FAIL: RSS grew by more than 10%"; exit 1; }
echo "ok: within 10%"
