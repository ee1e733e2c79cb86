#!/bin/sh
# The simulator over https (infertop sim --tls-cert FILE --tls-key FILE):
# a throwaway self-signed certificate, a streamed completion and /metrics
# read by curl trusting only that certificate, infertop -k completing every
# request, and each kind of bad input refused with a message and status 2.
: "${INFERTOP_BIN:?}"
set -u
for t in curl openssl; do
	command -v $t >/dev/null 2>&1 || { echo "$t not installed: skipped"; exit 77; }
done
tmp=$(mktemp -d)
simpid=""
cleanup() {
	[ -n "$simpid" ] && kill "$simpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/check_lib.sh"

# selfsigned NAME: NAME.crt and NAME.key, for localhost, valid one day.
selfsigned() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
		-addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
		-keyout "$tmp/$1.key" -out "$tmp/$1.crt" >/dev/null 2>&1
}
selfsigned a && selfsigned b
check "openssl made two self-signed certificates" $? || exit 1

# refused DESCRIPTION PATTERN ARGS...: the sim exits 2 at once, saying PATTERN.
refused() {
	d=$1 pat=$2
	shift 2
	"$INFERTOP_BIN" sim --listen 127.0.0.1:0 "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
	rc=$?
	[ "$rc" -eq 2 ] && grep -q -- "$pat" "$tmp/bad.err" && ! grep -q listening "$tmp/bad.out"
	check "$d: exit 2 and '$pat' (rc $rc: $(head -1 "$tmp/bad.err"))" $?
}
refused "--tls-cert alone" "without --tls-key" --tls-cert "$tmp/a.crt"
refused "--tls-key alone" "without --tls-cert" --tls-key "$tmp/a.key"
refused "a missing certificate" "cannot read --tls-cert $tmp/none.crt: No such file" \
	--tls-cert "$tmp/none.crt" --tls-key "$tmp/a.key"
cp "$tmp/a.key" "$tmp/locked.key" && chmod 000 "$tmp/locked.key"
if [ "$(id -u)" -ne 0 ]; then
	refused "an unreadable key" "cannot read --tls-key $tmp/locked.key: Permission denied" \
		--tls-cert "$tmp/a.crt" --tls-key "$tmp/locked.key"
fi
refused "a key for another certificate" "do not match" --tls-cert "$tmp/a.crt" --tls-key "$tmp/b.key"
refused "the two swapped" "no PEM CERTIFICATE" --tls-cert "$tmp/a.key" --tls-key "$tmp/a.crt"
echo "not pem" >"$tmp/junk"
refused "a key that is not PEM" "no PEM PRIVATE KEY" --tls-cert "$tmp/a.crt" --tls-key "$tmp/junk"

# Fixed timing: 20 tokens, the first after 20 ms, then one every 10 ms.
"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --tls-cert "$tmp/a.crt" --tls-key "$tmp/a.key" \
	--timing fixed --ttft 20ms --itl 10ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
simpid=$!
wait_for "$tmp/sim.out" "listening on"
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
[ -n "$port" ]
check "the simulator listens with a certificate" $? || exit 1
url=https://localhost:$port

curl -sS -N --max-time 10 --cacert "$tmp/a.crt" -H 'Content-Type: application/json' \
	-d '{"model":"infertop-sim","prompt":"hello","max_tokens":20,"ignore_eos":true,"stream":true}' \
	-w 'total=%{time_total}\n' "$url/v1/completions" >"$tmp/stream" 2>"$tmp/curl.err"
check "curl --cacert: a streamed completion over https ($(head -1 "$tmp/curl.err"))" $?
[ "$(grep -c '^data: {' "$tmp/stream")" -eq 20 ] && grep -q '^data: \[DONE\]' "$tmp/stream"
check "20 token chunks and [DONE]" $?
# 20 ms + 19 x 10 ms: the tokens came on their schedule, not in one piece.
awk -F= '/^total=/ { exit !($2 >= 0.2) }' "$tmp/stream"
check "the stream took its schedule ($(sed -n 's/^total=//p' "$tmp/stream") s >= 0.2 s)" $?

curl -sS --max-time 10 --cacert "$tmp/a.crt" "$url/metrics" >"$tmp/metrics" 2>"$tmp/curl.err"
check "curl --cacert: /metrics over https" $?
grep -q '^vllm:request_success_total{.*} 1$' "$tmp/metrics"
check "/metrics counts the completion" $?

curl -sS --max-time 10 --cacert "$tmp/b.crt" "$url/health" >/dev/null 2>"$tmp/curl.err"
[ $? -eq 60 ]
check "curl trusting another certificate is refused (curl: $(head -1 "$tmp/curl.err"))" $?
curl -sS --max-time 10 "http://localhost:$port/health" >/dev/null 2>&1
[ $? -ne 0 ]
check "plain http on the https port gets no answer" $?

"$INFERTOP_BIN" -k -q --no-tui -c 4 -n 40 --output-tokens 10 --metrics-url none \
	-o "$tmp/r.json" "https://127.0.0.1:$port" >"$tmp/run.out" 2>"$tmp/run.err"
check "infertop -k runs against the https simulator ($(tail -1 "$tmp/run.err"))" $?
grep -Eq '"completed":[[:space:]]*40,' "$tmp/r.json" && grep -Eq '"failed":[[:space:]]*0,' "$tmp/r.json"
check "infertop -k: 40 completed, 0 failed" $?
# The direct path's own TLS, exact to the simulator's fixed 20 ms TTFT.
python3 - "$tmp/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
o = d["infertop"]["options"]
assert o["transport"] == "direct+tls", o["transport"]
assert 20.0 <= d["median_ttft_ms"] <= 22.0, d["median_ttft_ms"]
print("transport %s %s, TTFT median %.2f ms" % (o["transport"], o.get("tls_version"), d["median_ttft_ms"]))
PY
check "infertop -k: direct+tls, TTFT median within 2 ms of the simulator's 20 ms" $?

kill "$simpid"
wait "$simpid"
check "the simulator stops cleanly" $?
simpid=""
[ ! -s "$tmp/sim.err" ]
check "the simulator said nothing on stderr" $?
echo "$fails failed"
[ "$fails" -eq 0 ]
