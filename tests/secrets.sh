#!/bin/sh
# Secrets never reach a screen, a file or a log, and a URL's query reaches
# every request. A loopback server (tests/echo_server.py) echoes the
# Authorization header and the request line back in its error bodies, as
# some gateways do; infertop runs against it with a key in the environment
# and a URL carrying a password and an Azure-style query with a signature.
# Afterwards, no byte of the key, the password or the query's values may be
# in stdout, stderr, -o, the snapshots or the request log.
. "$(dirname "$0")/echo_lib.sh"

echo_start "$tmp/requests"

key=sk-test-KEYSECRET0123456789abcdef
url="http://alice:PWSECRET42@127.0.0.1:$port/v1?api-version=2024-06-01&sig=QSECRET77"
mkdir "$tmp/snaps"
OPENAI_API_KEY=$key "$INFERTOP_BIN" --no-tui --interval 100ms -c 2 --output-tokens 4 \
	--snapshot-dir "$tmp/snaps" --snapshot-every 1s -d 2500ms --request-log "$tmp/reqlog.jsonl" \
	-o "$tmp/r.json" "$url" >"$tmp/out" 2>"$tmp/err"
echo "exit $?" >>"$tmp/out"

[ -s "$tmp/r.json" ] && [ -s "$tmp/reqlog.jsonl" ] && ls "$tmp/snaps" | grep -q json
check "the run wrote -o, snapshots and a request log" $?
# The server did see the secrets (so the test can fail)...
grep -q KEYSECRET "$tmp/requests" && grep -q QSECRET77 "$tmp/requests"
check "the server received the key and the query" $?
# ...and nothing of them came back out.
leaks=$(grep -rl -e KEYSECRET -e PWSECRET42 -e QSECRET77 "$tmp/out" "$tmp/err" "$tmp/r.json" \
	"$tmp/reqlog.jsonl" "$tmp/snaps" 2>/dev/null)
[ -z "$leaks" ]
check "no key, password or query value in any output ($leaks)" $?
grep -q "Authorization" "$tmp/r.json"
check "the echoed error is recorded (scrubbed, not dropped)" $?

# Azure-style: the query is on every request, after the path.
n=$(grep -c '^POST /v1/chat/completions?api-version=2024-06-01&sig=QSECRET77 ' "$tmp/requests")
[ "$n" -ge 2 ] && ! grep -q '^POST /v1?' "$tmp/requests"
check "the URL's query is kept on each of the $n requests" $?
grep -q '^GET /v1/models?api-version=2024-06-01' "$tmp/requests"
check "the query is kept on GET /v1/models" $?

# The command line: no --api-key, no abbreviations, no key echoed.
"$INFERTOP_BIN" --api-key "$key" http://127.0.0.1:1 >"$tmp/o1" 2>&1
[ $? -eq 2 ] && grep -q "no --api-key option" "$tmp/o1" && ! grep -q KEYSECRET "$tmp/o1"
check "--api-key is refused with a hint, the key not echoed" $?
"$INFERTOP_BIN" --api-key-env "$key" http://127.0.0.1:1 >"$tmp/o2" 2>&1
[ $? -eq 2 ] && ! grep -q KEYSECRET "$tmp/o2"
check "--api-key-env refuses a value that is not a variable name, without echoing it" $?
"$INFERTOP_BIN" --concurrency "$key" http://127.0.0.1:1 >"$tmp/o3" 2>&1
[ $? -eq 2 ] && ! grep -q KEYSECRET "$tmp/o3" && grep -q -- "--concurrency" "$tmp/o3"
check "a key-like bad value is not echoed" $?
"$INFERTOP_BIN" --concurency 4 http://127.0.0.1:1 >"$tmp/o4" 2>&1
[ $? -eq 2 ] && grep -q "did you mean --concurrency" "$tmp/o4"
check "a misspelt long option gets 'did you mean'" $?
"$INFERTOP_BIN" --max-con 4 http://127.0.0.1:1 >"$tmp/o5" 2>&1
[ $? -eq 2 ] && grep -q "did you mean --max-concurrency" "$tmp/o5"
check "an abbreviated long option is not taken as the option" $?
"$INFERTOP_BIN" -H "$(printf 'X-A: 1\r\nX-Injected: 2')" http://127.0.0.1:1 >"$tmp/o6" 2>&1
[ $? -eq 2 ] && grep -q "control characters" "$tmp/o6" && ! grep -q "X-Injected" "$tmp/o6"
check "-H refuses CR/LF" $?

# --upload's keys: from the environment, sent (the token as
# x-amz-security-token, which this server echoes back in its refusal), and
# never shown, saved or logged.
mkdir "$tmp/usnaps"
AWS_ACCESS_KEY_ID=AKIDUPLOAD AWS_SECRET_ACCESS_KEY=UPSECRET0123456789abcdef AWS_SESSION_TOKEN=UPTOKEN987654321zyx \
	"$INFERTOP_BIN" --no-tui --interval 100ms -c 2 --output-tokens 4 -d 1500ms --snapshot-dir "$tmp/usnaps" \
	--snapshot-every 1s --request-log "$tmp/ureqlog.jsonl" -o "$tmp/u.json" --upload s3://bkt/runs/ \
	--upload-endpoint "http://127.0.0.1:$port" "http://127.0.0.1:$port" >"$tmp/uout" 2>"$tmp/uerr"
st=$?
[ $st -eq 1 ] && grep -q "upload of u.json to s3://bkt/runs/u.json failed: HTTP 400" "$tmp/uerr"
check "a refused upload exits 1 and says so (exit $st)" $?
grep -q "^PUT /bkt/runs/u.json " "$tmp/requests" && grep -q "x-amz-security-token: UPTOKEN987654321zyx" "$tmp/requests"
check "the store received the upload and its session token" $?
leaks=$(grep -rl -e UPSECRET -e UPTOKEN "$tmp/uout" "$tmp/uerr" "$tmp/u.json" "$tmp/ureqlog.jsonl" "$tmp/usnaps" \
	2>/dev/null)
[ -z "$leaks" ]
check "no upload secret or token in any output ($leaks)" $?
"$INFERTOP_BIN" --upload s3://bkt/ http://127.0.0.1:1 >"$tmp/o7" 2>&1
[ $? -eq 2 ] && grep -q "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" "$tmp/o7"
check "--upload without keys is refused before anything is sent" $?

[ $fails -eq 0 ] || { cat "$tmp/err"; exit 1; }
