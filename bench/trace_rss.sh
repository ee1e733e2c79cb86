#!/bin/sh
# --trace streams: the peak RSS of replaying a generated Mooncake trace of
# LINES lines (1 ms apart, four hash ids and a session each, about 150 MB
# for a million) against the built-in simulator stays under 64 MB. The
# whole file is read once before the run (to refuse a bad line before
# anything is sent) and again, a chunk at a time, during it; -d cuts the
# replay after DURATION seconds (0: the whole trace, 1000 s for a million
# lines at 1x; SPEED scales it).
#
#   bench/trace_rss.sh [INFERTOP] [LINES] [DURATION_S] [SPEED]
#                      (defaults: ./infertop 1000000 20 1)
#
# Exit 1 when the peak RSS is 64 MB or more, or the replay went wrong.
bin=${1:-./infertop}
n=${2:-1000000}
dur=${3:-20}
speed=${4:-1}
command -v /usr/bin/time >/dev/null 2>&1 || { echo "needs GNU time (/usr/bin/time)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp/trace.jsonl" "$n" <<'PY' || exit 1
import sys
n = int(sys.argv[2])
with open(sys.argv[1], "w") as f:
    for i in range(n):
        g = i % 97
        f.write('{"timestamp": %d, "input_length": %d, "output_length": 4, "hash_ids": [%d, %d, %d, %d], '
                '"session_id": "s%d"}\n' % (i, 1800 + i % 300, g, 1000 + g, 100000 + i, 200000 + i, g))
PY
dflag=
[ "$dur" != 0 ] && dflag="-d ${dur}s"
# shellcheck disable=SC2086
/usr/bin/time -f "%M %e" -o "$tmp/rss" "$bin" --demo --sim-arg --timing --sim-arg fixed --sim-arg --ttft \
	--sim-arg 1ms --sim-arg --itl --sim-arg 1ms --sim-arg --max-running --sim-arg 256 --no-tui -q \
	--trace "mooncake:$tmp/trace.jsonl" --trace-speed "$speed" --trace-block-tokens 512 $dflag \
	-o "$tmp/r.json" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
read -r kb secs <"$tmp/rss"
python3 - "$tmp/r.json" "$(wc -c <"$tmp/trace.jsonl")" "$kb" "$secs" "$n" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
size, kb, secs, n = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
print("trace: %d lines, %.1f MB; replayed %d requests (%d failed) in %.1f s wall; stop: %s"
      % (n, size / 1e6, d["completed"], d["failed"], secs, d["infertop"]["stop_reason"]))
q = d["infertop"]["metrics"]["queue"]
print("lateness (client queue time): p50 %.3f ms, p99 %.3f ms, max %.3f ms" % (q["p50_ms"], q["p99_ms"], q["max_ms"]))
print("peak RSS: %.1f MB" % (kb / 1024))
assert d["completed"] > 0 and kb < 64 * 1024
PY
