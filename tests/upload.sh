#!/bin/sh
# --upload against a real S3 server on loopback (s3rver, installed into a
# cache by tests/s3rver.sh when missing; a failure to install fails the
# test). A --demo run with snapshots and a rotating request log uploads
# them; each object read back over S3 is byte for byte the local file.
# Then: a key the store refuses fails with its error code, no secret, the
# local file intact and exit 1; an endpoint that refuses connections is
# tried 4 times, then given up, in bounded time; Ctrl-C while the end of
# the run waits for a stuck upload abandons it, naming it. The fleet's
# merged result goes up too. A server that checks SigV4 takes the
# signatures and refuses a wrong secret.
: "${INFERTOP_BIN:?}"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/check_lib.sh"
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
unset AWS_SESSION_TOKEN AWS_REGION AWS_DEFAULT_REGION

s3rver=$("$here/s3rver.sh") || { echo "FAIL: cannot install s3rver"; exit 1; }
mkdir "$tmp/store"
"$s3rver" -d "$tmp/store" -a 127.0.0.1 -p 0 -s --configure-bucket bkt >"$tmp/s3rver.out" 2>&1 &
pids="$pids $!"
wait_for "$tmp/s3rver.out" "listening on" || { cat "$tmp/s3rver.out"; echo "FAIL: s3rver did not start"; exit 1; }
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/s3rver.out")
endpoint=http://127.0.0.1:$port

# GET an object back through the S3 API (signed, as any client would).
get() { # key file
	curl -sS -f --aws-sigv4 aws:amz:us-east-1:s3 --user S3RVER:S3RVER \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -o "$2" "$endpoint/bkt/$1"
}

# 1. A run uploads its result, its snapshots and its request logs.
mkdir "$tmp/run" "$tmp/snaps"
AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER "$INFERTOP_BIN" --demo -c 4 --output-tokens 16 --no-tui \
	-d 3s --snapshot-dir "$tmp/snaps" --snapshot-every 1s --request-log "$tmp/run/req.jsonl" \
	--request-log-max 6K -o "$tmp/run/res.json" --upload s3://bkt/runs/ --upload-endpoint "$endpoint" \
	>"$tmp/out1" 2>"$tmp/err1"
st=$?
[ $st -eq 0 ]
check "the run with --upload exits 0 (exit $st)" $?
get runs/res.json "$tmp/got.json" && cmp -s "$tmp/got.json" "$tmp/run/res.json"
check "the result object is byte for byte the local -o file" $?
n=0
ok=1
for f in "$tmp"/snaps/infertop-*.json; do
	[ -e "$f" ] || continue
	n=$((n + 1))
	get "runs/$(basename "$f")" "$tmp/got.snap" && cmp -s "$tmp/got.snap" "$f" || ok=0
done
[ $n -ge 2 ] && [ $ok -eq 1 ]
check "each of the $n snapshots is uploaded byte for byte" $?
get runs/req.jsonl "$tmp/got.log" && cmp -s "$tmp/got.log" "$tmp/run/req.jsonl"
check "the last request log is uploaded byte for byte" $?
# Rotated logs go up as req.jsonl.N, N counting rotations: the local
# req.jsonl.1 is the last rotated one, req.jsonl.2 the one before.
rot=$(sed -n 's/.*"rotations":[[:space:]]*\([0-9]*\).*/\1/p' "$tmp/run/res.json" | head -1)
[ -n "$rot" ] && [ "$rot" -ge 2 ] && get "runs/req.jsonl.$rot" "$tmp/got.r1" &&
	cmp -s "$tmp/got.r1" "$tmp/run/req.jsonl.1" && get "runs/req.jsonl.$((rot - 1))" "$tmp/got.r2" &&
	cmp -s "$tmp/got.r2" "$tmp/run/req.jsonl.2"
check "the rotated request logs ($rot rotations) are uploaded byte for byte" $?
grep -q "uploaded res.json to s3://bkt/runs/res.json" "$tmp/err1"
check "each upload is said on stderr" $?

# Without -o the result is written all the same (auto-named, in the
# current directory) and uploaded.
mkdir "$tmp/auto"
(cd "$tmp/auto" && AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER "$INFERTOP_BIN" --demo -c 2 \
	--output-tokens 8 --no-tui -d 1s --upload s3://bkt/auto/ --upload-endpoint "$endpoint" >"$tmp/out1b" 2>"$tmp/err1b")
st=$?
f=$(ls "$tmp/auto"/infertop-*.json 2>/dev/null | head -1)
[ $st -eq 0 ] && [ -n "$f" ] && get "auto/$(basename "$f")" "$tmp/got.auto" && cmp -s "$tmp/got.auto" "$f"
check "without -o the auto-named result is written and uploaded (exit $st)" $?

# 2. Keys the store refuses: its error code, no secret, no retry (it
#    would not pass), the local file kept, exit 1.
mkdir "$tmp/run2"
AWS_ACCESS_KEY_ID=NOSUCHKEY AWS_SECRET_ACCESS_KEY=UPLOADSECRET42xyz "$INFERTOP_BIN" --demo -c 2 --output-tokens 8 \
	--no-tui -d 1s -o "$tmp/run2/res.json" --upload s3://bkt/runs2/ --upload-endpoint "$endpoint" \
	>"$tmp/out2" 2>"$tmp/err2"
st=$?
[ $st -eq 1 ] && grep -q "upload of res.json to s3://bkt/runs2/res.json failed: HTTP 403 InvalidAccessKeyId; the local file is kept" "$tmp/err2" &&
	grep -q "1 upload to s3://bkt/runs2/ failed" "$tmp/err2" && ! grep -q "trying again" "$tmp/err2"
check "refused keys: exit 1 (exit $st), the store's error code named, not retried" $?
! grep -rq UPLOADSECRET "$tmp/out2" "$tmp/err2" "$tmp/run2"
check "the secret is in no output" $?
"$INFERTOP_BIN" report "$tmp/run2/res.json" >/dev/null && ! get runs2/res.json "$tmp/none" 2>/dev/null
check "the local result is intact, nothing in the store" $?

# 3. An endpoint that refuses connections: tried UPLOAD_TRIES (4) times,
#    1, 2 and 4 s apart, then given up: bounded time, exit 1.
t0=$(date +%s)
AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER "$INFERTOP_BIN" --demo -c 2 --output-tokens 8 --no-tui -d 1s \
	-o "$tmp/res3.json" --upload s3://bkt/runs3/ --upload-endpoint http://127.0.0.1:1 >"$tmp/out3" 2>"$tmp/err3"
st=$?
t=$(($(date +%s) - t0))
[ $st -eq 1 ] && [ "$(grep -c "trying again" "$tmp/err3")" -eq 3 ] && grep -q "(no try left)" "$tmp/err3" &&
	[ -s "$tmp/res3.json" ] && [ $t -lt 30 ]
check "a refused connection: 3 retries, then exit 1 ($st) after ${t}s" $?

# 4. Ctrl-C while the end of the run waits for a store that never answers.
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
' >"$tmp/mute.port" &
pids="$pids $!"
wait_for "$tmp/mute.port" "[0-9]"
AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER "$INFERTOP_BIN" --demo -c 2 --output-tokens 8 --no-tui -d 1s \
	-o "$tmp/res4.json" --upload s3://bkt/runs4/ --upload-endpoint "http://127.0.0.1:$(cat "$tmp/mute.port")" \
	>"$tmp/out4" 2>"$tmp/err4" &
run=$!
pids="$pids $run"
wait_for "$tmp/err4" "waiting for 1 upload"
check "the end of the run waits for the upload, with a progress line" $?
kill -INT $run
wait $run
st=$?
[ $st -eq 1 ] && grep -q "interrupted: res4.json not uploaded to s3://bkt/runs4/res4.json (the local file is kept)" "$tmp/err4" &&
	[ -s "$tmp/res4.json" ]
check "Ctrl-C abandons it, naming it, exit 1 ($st)" $?

# 5. The fleet's merged result (-o of `infertop fleet`) goes up too.
"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 20ms --itl 5ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
pids="$pids $!"
wait_for "$tmp/sim.out" "listening on"
simport=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
"$INFERTOP_BIN" --no-tui -q --listen 127.0.0.1:0 -c 2 -d 120s --output-tokens 20 --metrics-url none \
	"http://127.0.0.1:$simport" >"$tmp/gen.out" 2>"$tmp/gen.err" &
pids="$pids $!"
wait_for "$tmp/gen.err" "control API on"
gen=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/gen.err")
AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER "$INFERTOP_BIN" fleet --targets "$gen" --no-tui \
	--interval 100ms -o "$tmp/merged.json" --upload s3://bkt/fleet/ --upload-endpoint "$endpoint" \
	>"$tmp/out5" 2>"$tmp/err5" &
fl=$!
pids="$pids $fl"
wait_for "$tmp/err5" "(1 up"
kill -INT $fl
wait $fl
st=$?
[ $st -eq 0 ] && get fleet/merged.json "$tmp/got.merged" && cmp -s "$tmp/got.merged" "$tmp/merged.json"
check "the fleet's merged result is uploaded byte for byte (exit $st)" $?

# 6. infertop serve signs with its own keys: a run spec (a client) may not
#    say where they send the results.
mkdir "$tmp/results"
AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER "$INFERTOP_BIN" serve --listen 127.0.0.1:0 \
	--results-dir "$tmp/results" >"$tmp/out6" 2>"$tmp/err6" &
pids="$pids $!"
wait_for "$tmp/err6" "control API on"
api=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/err6")
ok=1
for spec in "\"upload\":\"s3://bkt/theirs/\",\"upload-endpoint\":\"$endpoint\"" "\"upload-endpoint\":\"$endpoint\"" \
	"\"upload-region\":\"auto\""; do
	code=$(curl -s -o "$tmp/b6" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data-binary "{\"url\":\"http://127.0.0.1:$simport\",\"duration\":\"1s\",$spec}" "$api/v1/runs")
	[ "$code" = 400 ] && grep -q '"field":"upload' "$tmp/b6" || { ok=0; echo "$code $(cat "$tmp/b6")"; }
done
[ $ok -eq 1 ]
check "a serve run spec may not set --upload, --upload-endpoint or --upload-region" $?

#    serve's own --upload takes every run's result up; serve ends after
#    the uploads, exit 0.
mkdir "$tmp/results6"
AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER "$INFERTOP_BIN" serve --listen 127.0.0.1:0 \
	--results-dir "$tmp/results6" --upload s3://bkt/served/ --upload-endpoint "$endpoint" \
	>"$tmp/out6b" 2>"$tmp/err6b" &
sv=$!
pids="$pids $sv"
wait_for "$tmp/err6b" "control API on"
api=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/err6b")
for i in 1 2; do
	curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
		--data-binary "{\"url\":\"http://127.0.0.1:$simport\",\"duration\":\"1s\",\"concurrency\":2}" "$api/v1/runs"
	# One run at a time: the next is asked for once this one is done.
	k=0
	while [ $k -lt 400 ] && [ "$(grep -c 'run .* done' "$tmp/err6b")" -lt $i ]; do k=$((k + 1)); sleep 0.05; done
done
kill -TERM $sv
wait $sv
st=$?
ok=1
n=0
for f in "$tmp"/results6/infertop-run-*.json; do
	[ -e "$f" ] || continue
	n=$((n + 1))
	get "served/$(basename "$f")" "$tmp/got6" && cmp -s "$tmp/got6" "$f" || ok=0
done
[ $st -eq 0 ] && [ $n -eq 2 ] && [ $ok -eq 1 ]
check "serve --upload puts each of its $n runs' results up byte for byte (exit $st)" $?

# 7. Signatures, checked: s3rver does not verify v4 signatures, so a
#    server that does (tests/sigv4_server.py, written from the SigV4
#    spec) takes the same uploads: a session token and a key that needs
#    percent-encoding pass, a wrong secret is refused and said as such; a
#    gs:// destination signs with the HMAC key's variables.
start_sigv4() { # name args...: its port in $sv
	n=$1
	shift
	python3 "$here/sigv4_server.py" "$tmp/$n" "$@" >"$tmp/$n.port" 2>"$tmp/$n.log" &
	pids="$pids $!"
	wait_for "$tmp/$n.port" "[0-9]"
	sv=$(cat "$tmp/$n.port")
}
start_sigv4 sv1 AKIDSIGV4 SIGV4SECRETxyz987 SIGV4TOKENabc123
mkdir "$tmp/run7"
AWS_ACCESS_KEY_ID=AKIDSIGV4 AWS_SECRET_ACCESS_KEY=SIGV4SECRETxyz987 AWS_SESSION_TOKEN=SIGV4TOKENabc123 \
	"$INFERTOP_BIN" --demo -c 2 --output-tokens 8 --no-tui -d 1s -o "$tmp/run7/r +é.json" \
	--upload "s3://bkt/odd dir+x/" --upload-endpoint "http://127.0.0.1:$sv" >"$tmp/out7" 2>"$tmp/err7"
st=$?
[ $st -eq 0 ] && grep -q "^PUT /bkt/odd%20dir%2Bx/r%20%2B%C3%A9.json OK" "$tmp/sv1.log" &&
	cmp -s "$tmp/sv1/bkt/odd dir+x/r +é.json" "$tmp/run7/r +é.json"
check "a SigV4-checking server takes the upload (token, encoded key), byte for byte (exit $st)" $?
AWS_ACCESS_KEY_ID=AKIDSIGV4 AWS_SECRET_ACCESS_KEY=WRONGsecret55 AWS_SESSION_TOKEN=SIGV4TOKENabc123 \
	"$INFERTOP_BIN" --demo -c 2 --output-tokens 8 --no-tui -d 1s -o "$tmp/run7/w.json" \
	--upload s3://bkt/w/ --upload-endpoint "http://127.0.0.1:$sv" >"$tmp/out7b" 2>"$tmp/err7b"
st=$?
[ $st -eq 1 ] && grep -q "upload of w.json to s3://bkt/w/w.json failed: HTTP 403 SignatureDoesNotMatch; the local file is kept" "$tmp/err7b" &&
	! grep -rq -e WRONGsecret -e SIGV4TOKEN "$tmp/out7b" "$tmp/err7b" && [ -s "$tmp/run7/w.json" ]
check "a wrong secret: 403 SignatureDoesNotMatch, exit 1 ($st), no secret shown, the file kept" $?
start_sigv4 sv2 GOOG1HMACID GOOGHMACsecret42
AWS_ACCESS_KEY_ID=AKIDSIGV4 AWS_SECRET_ACCESS_KEY=SIGV4SECRETxyz987 GOOGLE_HMAC_ACCESS_ID=GOOG1HMACID \
	GOOGLE_HMAC_SECRET=GOOGHMACsecret42 "$INFERTOP_BIN" --demo -c 2 --output-tokens 8 --no-tui -d 1s \
	-o "$tmp/run7/g.json" --upload gs://gke_bench/lpg/ --upload-endpoint "http://127.0.0.1:$sv" \
	>"$tmp/out7c" 2>"$tmp/err7c"
st=$?
[ $st -eq 0 ] && cmp -s "$tmp/sv2/gke_bench/lpg/g.json" "$tmp/run7/g.json" &&
	grep -q "^PUT /gke_bench/lpg/g.json OK" "$tmp/sv2.log"
check "gs:// signs with GOOGLE_HMAC_* (exit $st)" $?

[ $fails -eq 0 ] || { for f in "$tmp"/err*; do echo "== $f"; cat "$f"; done; exit 1; }
