#!/bin/sh
# Text from the network never drives the terminal (issue 23, item 7). A
# server (tests/echo_server.py --escapes) lists a model id holding ESC [2J,
# BEL and an 8-bit CSI, and answers every request with an error body
# holding them too. The headless output, the result file and the request
# log carry the text scrubbed (redact_controls: '?' for each control), not
# a raw control byte.
. "$(dirname "$0")/echo_lib.sh"

echo_start "$tmp/requests" --escapes
"$INFERTOP_BIN" --no-tui --interval 100ms -c 2 -n 6 --output-tokens 4 -o "$tmp/r.json" \
	--request-log "$tmp/req.jsonl" "http://127.0.0.1:$port/v1" >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 4 ] && [ -s "$tmp/r.json" ] && [ -s "$tmp/req.jsonl" ]
check "the run ended (every request refused: exit $st), result and log written" $?

# Any C0 control but newline and tab, or DEL; with --c1, also a C1
# control (raw, or U+0080-U+009F in UTF-8).
raw_controls() {
	$py - "$@" <<'PY'
import re, sys
c1 = sys.argv[1] == "--c1"
files = sys.argv[2:] if c1 else sys.argv[1:]
bad = rb"[\x00-\x08\x0b-\x1f\x7f]"
if c1:
    bad += rb"|\xc2[\x80-\x9f]|(?<![\xc0-\xff])[\x80-\x9f]"
found = [f for f in files if re.search(bad, open(f, "rb").read())]
print(" ".join(found))
sys.exit(1 if found else 0)
PY
}
dirty=$(raw_controls --c1 "$tmp/out" "$tmp/err" "$tmp/req.jsonl")
check "no raw control byte (C0, DEL, C1) in stdout, stderr or the request log ($dirty)" $?
# The result keeps the model id as listed, JSON-escaped (\u001b).
dirty=$(raw_controls "$tmp/r.json")
check "no raw C0 control or DEL in the result ($dirty)" $?
grep -q 'm\\u001b\[2J\\u0007' "$tmp/r.json"
check "the result records the model id as the server listed it" $?

# Scrubbed, not dropped: the model id on the banner, the server's message
# in the summary.
grep -q "model m?\[2J??31m," "$tmp/err"
check "the banner shows the model id with its escapes as '?'" $?
grep -q "last: HTTP 400: bad request POST /v1/chat/completions HTTP/1.1;.*2J.*31m Authorization" "$tmp/out"
check "the summary shows the server's error, scrubbed" $?

# The saved result, read back by report (every format) and compare:
# what was kept as listed is shown scrubbed.
for f in text markdown csv json; do
	"$INFERTOP_BIN" report --format "$f" "$tmp/r.json" >"$tmp/report.$f" 2>&1
done
"$INFERTOP_BIN" compare "$tmp/r.json" "$tmp/r.json" >"$tmp/compare.txt" 2>&1
dirty=$(raw_controls --c1 "$tmp/report.text" "$tmp/report.markdown" "$tmp/report.csv" "$tmp/report.json" \
	"$tmp/compare.txt")
check "report and compare of the result show no raw control byte ($dirty)" $?
grep -q "model m?\[2J??31m" "$tmp/report.text"
check "report shows the model id scrubbed" $?

echo "escapes: $fails failed"
exit "$fails"
