#!/bin/sh
# A server that compresses the stream although the client asked for
# identity: the tokens still count (decoded, not "truncated"), and the
# request did ask for identity.
. "$(dirname "$0")/echo_lib.sh"

echo_start "$tmp/requests" --gzip
"$INFERTOP_BIN" -q --no-tui -c 2 -n 6 --output-tokens 4 --metrics-url none -o "$tmp/r.json" \
	"http://127.0.0.1:$port" >/dev/null 2>"$tmp/err"
st=$?
[ $st -eq 0 ] && jq -e '.completed == 6 and .failed == 0 and .total_output_tokens == 24' "$tmp/r.json" >/dev/null
check "an unasked gzip stream is decoded: 6 requests, 24 tokens, no error (exit $st)" $?
grep -qi '^Accept-Encoding: identity' "$tmp/requests"
check "requests ask for Accept-Encoding: identity" $?
# A server whose usage claims ten times the tokens its stream carried: the
# requests succeed, the mismatch is a warning, both counts are kept.
echo_start "$tmp/requests2" --usage-lies
"$INFERTOP_BIN" --no-tui -c 2 -n 6 --output-tokens 4 --metrics-url none -o "$tmp/lies.json" \
	"http://127.0.0.1:$port" >"$tmp/lies.out" 2>"$tmp/err"
st=$?
[ $st -eq 0 ] && jq -e '.completed == 6 and .total_output_tokens == 240 and .infertop.output_chunks == 24 and
	.infertop.warnings.usage_vs_chunks.count == 6' "$tmp/lies.json" >/dev/null &&
	grep -q "usage and chunk counts differ over 2x" "$tmp/lies.out"
check "usage far from the chunk count: a warning, both counts kept (exit $st)" $?

[ $fails -eq 0 ] || { cat "$tmp/err"; exit 1; }
