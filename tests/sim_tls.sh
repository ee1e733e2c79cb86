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
servepid=""
cleanup() {
	[ -n "$simpid" ] && kill "$simpid" 2>/dev/null
	[ -n "$servepid" ] && kill "$servepid" 2>/dev/null
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

# --cacert instead of -k: every fetch of the run trusts that certificate
# and checks the name, the calibration's /tokenize too (it once kept the
# system's CAs, failed the check, and fell back to an estimate).
"$INFERTOP_BIN" --cacert "$tmp/a.crt" -q --no-tui -c 2 -n 10 --output-tokens 10 \
	-o "$tmp/ca.json" "https://localhost:$port" >"$tmp/ca.out" 2>"$tmp/ca.err"
check "infertop --cacert runs against the https simulator ($(tail -1 "$tmp/ca.err"))" $?
python3 - "$tmp/ca.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["completed"] == 10 and d["failed"] == 0, (d["completed"], d["failed"])
assert d["infertop"]["options"]["transport"] == "direct+tls", d["infertop"]["options"]["transport"]
src = d["infertop"].get("input_length_source")
assert src == "tokenize", "prompt lengths: %s" % src
print("10 completed, lengths from /tokenize")
PY
check "--cacert: 10 completed, direct+tls, prompt lengths calibrated by /tokenize over https" $?
"$INFERTOP_BIN" --cacert "$tmp/b.crt" -q --no-tui -c 2 -n 4 --output-tokens 10 --metrics-url none \
	-o "$tmp/cb.json" "https://localhost:$port" >"$tmp/cb.out" 2>"$tmp/cb.err"
[ $? -ne 0 ] && grep -q "certificate" "$tmp/cb.err"
check "--cacert of another certificate: refused, the certificate named ($(grep -m1 certificate "$tmp/cb.err"))" $?

# infertop serve --cacert: its runs trust that certificate (a run spec
# may not name a file of its own: 400, "serve sets it").
mkdir -p "$tmp/results"
"$INFERTOP_BIN" serve --listen 127.0.0.1:0 --cacert "$tmp/a.crt" --results-dir "$tmp/results" \
	>"$tmp/serve.out" 2>"$tmp/serve.err" &
servepid=$!
wait_for "$tmp/serve.err" "control API on"
api=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/serve.err")
post() { curl -s -o "$tmp/b" -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data-binary "$1" "$api/v1/runs"; }
code=$(post "{\"url\":\"https://localhost:$port\",\"cacert\":\"/etc/passwd\"}")
[ "$code" = 400 ] && grep -q '"field":"cacert"' "$tmp/b" && grep -q 'serve sets it' "$tmp/b"
check "a run spec naming cacert: 400 ($code $(cat "$tmp/b"))" $?
code=$(post "{\"url\":\"https://localhost:$port\",\"requests\":6,\"concurrency\":2,\"output-tokens\":5}")
id=$(sed -n 's/.*"id":"\([0-9a-f]\{32\}\)".*/\1/p' "$tmp/b")
i=0
while [ $i -lt 200 ]; do
	curl -s -o "$tmp/b" "$api/v1/runs/$id"
	grep -Eq '"state":"(done|failed)"' "$tmp/b" && break
	i=$((i + 1)); sleep 0.05
done
[ "$code" = 201 ] || [ "$code" = 202 ] || [ "$code" = 200 ]
check "serve --cacert: the run starts ($code)" $?
res=$(ls "$tmp/results"/*.json 2>/dev/null | head -1)
[ -n "$res" ] && python3 - "$res" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["completed"] == 6 and d["failed"] == 0, (d["completed"], d["failed"])
assert d["infertop"]["options"]["transport"] == "direct+tls"
PY
check "serve --cacert: its run completed 6 of 6 over https, certificates checked ($(grep -o '"state":"[a-z]*"' "$tmp/b"))" $?
kill "$servepid"
wait "$servepid" 2>/dev/null

kill "$simpid"
wait "$simpid"
check "the simulator stops cleanly" $?
simpid=""
[ ! -s "$tmp/sim.err" ]
check "the simulator said nothing on stderr" $?
echo "$fails failed"
[ "$fails" -eq 0 ]
