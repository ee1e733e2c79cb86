#!/bin/sh
# A server that compresses the stream although the client asked for
# identity: the tokens still count (decoded, not "truncated"), and the
# request did ask for identity; on both clients.
. "$(dirname "$0")/echo_lib.sh"

for client in direct curl; do
	echo_start "$tmp/requests" --gzip
	"$INFERTOP_BIN" -q --no-tui -c 2 -n 6 --output-tokens 4 --metrics-url none -o "$tmp/r.json" \
		--http-client $client "http://127.0.0.1:$port" >/dev/null 2>"$tmp/err"
	st=$?
	[ $st -eq 0 ] && jq -e '.completed == 6 and .failed == 0 and .total_output_tokens == 24' "$tmp/r.json" >/dev/null
	check "$client: an unasked gzip stream is decoded: 6 requests, 24 tokens, no error (exit $st)" $?
	grep -qi '^Accept-Encoding: identity' "$tmp/requests"
	check "$client: requests ask for Accept-Encoding: identity" $?
done

# The direct path sends the request libcurl sends: the same request line and
# headers, -H ones included (one with no value is not sent and drops the
# client's own: Accept-Encoding here, the built-in "Expect:"), the port of
# each server aside.
for client in direct curl; do
	echo_start "$tmp/hdr.$client" --usage-lies
	"$INFERTOP_BIN" -q --no-tui -c 1 -n 1 --output-tokens 4 --metrics-url none -m m -o "$tmp/h.json" \
		--http-client $client -H 'X-Test: 1' -H 'Accept-Encoding:' "http://127.0.0.1:$port" >/dev/null 2>"$tmp/err"
	sed "s/127\.0\.0\.1:$port/HOST/" "$tmp/hdr.$client" | grep -v '^$' | sort >"$tmp/hdr.$client.sorted"
done
cmp -s "$tmp/hdr.direct.sorted" "$tmp/hdr.curl.sorted" && grep -qx 'X-Test: 1' "$tmp/hdr.direct.sorted" &&
	! grep -qi '^Accept-Encoding' "$tmp/hdr.direct.sorted" && ! grep -qi '^Expect' "$tmp/hdr.direct.sorted" &&
	grep -q '^POST /v1/chat/completions HTTP/1.1$' "$tmp/hdr.direct.sorted"
st=$?
[ $st -eq 0 ] || diff "$tmp/hdr.direct.sorted" "$tmp/hdr.curl.sorted" >&2
check "the direct path's request line and headers are libcurl's" $st
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
