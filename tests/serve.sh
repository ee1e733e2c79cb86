#!/bin/sh
# infertop serve as a service is used: a simulator and `infertop serve`
# started here; two runs one after the other over HTTP (one with the helm
# chart's /start-load payload, with a sonnet:FILE dataset), each result
# downloaded and byte-equal to its file in --results-dir; a second POST
# during a run gets 409; bad specs get 400 naming the field; DELETE stops a
# run; the section-1 endpoints act on the run and answer 409 between runs;
# the server is alive at the end. Dataset files are read under --data-dir
# only (none without it, token or not), and what a web page could send is
# refused.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
tmp=$(mktemp -d)
simpid=
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; [ -n "$simpid" ] && kill $simpid 2>/dev/null; rm -rf "$tmp"' EXIT

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 20ms --itl 5ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
simpid=$!
wait_for "$tmp/sim.out" "listening on"
simport=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
[ -n "$simport" ]
check "the simulator is up" $?

mkdir "$tmp/results" "$tmp/data"
"$INFERTOP_BIN" serve --listen 127.0.0.1:0 --data-dir "$tmp/nowhere" >/dev/null 2>"$tmp/err0"
[ $? -eq 2 ] && grep -q -- '--data-dir' "$tmp/err0"
check "--data-dir that is not a directory: exit 2" $?
"$INFERTOP_BIN" serve --listen 127.0.0.1:0 --results-dir "$tmp/none" >/dev/null 2>"$tmp/err0"
[ $? -eq 2 ] && grep -q -- "--results-dir $tmp/none: No such file" "$tmp/err0" && ! grep -q -- --snapshot-dir "$tmp/err0"
check "--results-dir that does not exist: exit 2, named as --results-dir ($(cat "$tmp/err0"))" $?
"$INFERTOP_BIN" serve --listen 127.0.0.1:0 --results-dir "$tmp/results" --data-dir "$tmp/data" >"$tmp/out" 2>"$tmp/err" &
pid=$!
wait_for "$tmp/err" "control API on"
url=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/err")
[ -n "$url" ]
check "serve prints its address" $?

req() { # method path [body]: the status on stdout, the body in $tmp/b
	if [ $# -ge 3 ]; then
		curl -s -o "$tmp/b" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' --data-binary "$3" "$url$2"
	else
		curl -s -o "$tmp/b" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' "$url$2"
	fi
}
json_id() { sed -n 's/.*"id":"\([0-9a-f]\{32\}\)".*/\1/p' "$tmp/b"; }
# Polls GET /v1/runs/ID until its state is one of the given (10 s).
wait_state() { # id regex
	i=0
	while [ $i -lt 200 ]; do
		req GET "/v1/runs/$1" >/dev/null
		grep -Eq "\"state\":\"($2)\"" "$tmp/b" && return 0
		i=$((i + 1)); sleep 0.05
	done
	return 1
}

code=$(req GET /healthz)
[ "$code" = 200 ]
check "GET /healthz between runs: 200" $?
code=$(req GET /v1/status)
[ "$code" = 409 ] && grep -q '"message":"no run"' "$tmp/b"
check "GET /v1/status with no run: 409 no run" $?
# /metrics answers between runs (a scraper sees the generator up, and the
# counters of the runs so far: none yet).
code=$(req GET /metrics)
[ "$code" = 200 ] && grep -q '^# TYPE infertop_requests_total counter' "$tmp/b" && ! grep -q '^infertop_requests_total' "$tmp/b"
check "GET /metrics with no run: 200, the families without samples" $?
code=$(req POST /v1/load '{"concurrency":3}')
[ "$code" = 409 ] && grep -q '"status":"refused"' "$tmp/b"
check "POST /v1/load with no run: 409" $?

# Bad specs: 400 naming the field, nothing started.
bad_spec() { # body field
	code=$(req POST /v1/runs "$1")
	[ "$code" = 400 ] && grep -q "\"field\":\"$2\"" "$tmp/b"
	check "bad spec $1: 400 naming '$2' ($code $(cat "$tmp/b"))" $?
}
bad_spec '{"concurency":4}' concurency
bad_spec '{"concurrency":"lots"}' concurrency
bad_spec '{"concurrency":0}' concurrency
bad_spec '{"duration":"soon"}' duration
bad_spec '{"no-tui":"yes"}' no-tui
bad_spec '{"output":"/tmp/x.json"}' output
bad_spec '{"url":"ftp://x"}' url
bad_spec "{\"url\":\"http://127.0.0.1:$simport\",\"dataset\":\"sonnet:$tmp/data/none.txt\"}" dataset

# Dataset files: under --data-dir only, whatever the path says.
echo "SECRET-LINE" >"$tmp/secret.txt"
ln -s "$tmp/secret.txt" "$tmp/data/link.txt"
mkdir "$tmp/data/sub"
echo "a prompt" >"$tmp/data/sub/ok.txt"
outside() { # body field what
	code=$(req POST "$1" "$2")
	[ "$code" = 400 ] && grep -q "\"field\":\"$3\"" "$tmp/b" && grep -q -- '--data-dir' "$tmp/b"
	check "$4: 400 naming $3 and --data-dir ($code $(cat "$tmp/b"))" $?
}
outside /v1/runs "{\"url\":\"http://127.0.0.1:$simport\",\"dataset\":\"text:$tmp/secret.txt\"}" dataset \
	"a file outside --data-dir"
outside /v1/runs "{\"url\":\"http://127.0.0.1:$simport\",\"dataset\":\"text:../secret.txt\"}" dataset \
	"a relative path out of --data-dir (..)"
outside /v1/runs "{\"url\":\"http://127.0.0.1:$simport\",\"dataset\":\"text:$tmp/data/sub/../../secret.txt\"}" dataset \
	"an absolute path out of --data-dir (..)"
outside /v1/runs "{\"url\":\"http://127.0.0.1:$simport\",\"dataset\":\"jsonl:link.txt\"}" dataset \
	"a symbolic link out of --data-dir"
outside /v1/runs "{\"url\":\"http://127.0.0.1:$simport\",\"dataset\":\"sharegpt:/etc/passwd\"}" dataset "/etc/passwd"
outside /start-load "{\"host\":\"127.0.0.1\",\"port\":$simport,\"dataset_name\":\"sonnet\",\"dataset_path\":\"$tmp/secret.txt\"}" \
	dataset_path "/start-load with a file outside --data-dir"
# Trace files likewise.
outside /v1/runs "{\"url\":\"http://127.0.0.1:$simport\",\"trace\":\"mooncake:$tmp/secret.txt\"}" trace \
	"a trace outside --data-dir"
outside /v1/runs "{\"url\":\"http://127.0.0.1:$simport\",\"trace\":\"azure:../secret.txt\"}" trace \
	"a trace path out of --data-dir (..)"
echo '{"timestamp": 0, "input_length": 1, "output_length": 1}' >"$tmp/data/sub/t.jsonl"
code=$(req POST /v1/runs '{"url":"http://127.0.0.1:1","trace":"mooncake:sub/t.jsonl"}')
[ "$code" = 502 ] && grep -q '"field":"url"' "$tmp/b"
check "a trace under --data-dir, relative: accepted ($code $(cat "$tmp/b"))" $?
# A file inside, by a relative name: past the check (the run then fails
# on its unreachable target, after the file was read).
code=$(req POST /v1/runs '{"url":"http://127.0.0.1:1","dataset":"text:sub/ok.txt","requests":1}')
[ "$code" = 502 ] && grep -q '"field":"url"' "$tmp/b"
check "a file under --data-dir, relative: accepted ($code $(cat "$tmp/b"))" $?

# What a web page can send: refused, nothing started.
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -X POST -H 'Content-Type: text/plain' \
	--data-binary "{\"url\":\"http://127.0.0.1:$simport\"}" "$url/v1/runs")
[ "$code" = 415 ]
check "POST /v1/runs as text/plain: 415" $?
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -X POST -d "{\"host\":\"127.0.0.1\",\"port\":$simport}" "$url/start-load")
[ "$code" = 415 ]
check "POST /start-load as a form: 415" $?
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -X POST -H 'Content-Type: application/json' -H 'Origin: null' \
	--data-binary "{\"url\":\"http://127.0.0.1:$simport\"}" "$url/v1/runs")
[ "$code" = 403 ]
check "POST /v1/runs from a file:// page: 403" $?
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -H 'Host: evil.example' "$url/v1/runs")
[ "$code" = 403 ]
check "GET /v1/runs with a foreign Host: 403" $?
code=$(req GET /v1/runs)
[ "$code" = 200 ] && grep -q '"runs":\[\]' "$tmp/b"
check "no run was started ($(cat "$tmp/b"))" $?
bad_spec '{"host":"127.0.0.1","port":99999}' port
bad_spec '{"backend":"tgi","host":"h"}' backend
code=$(req POST /v1/runs '{"concurrency":')
[ "$code" = 400 ]
check "malformed JSON: 400" $?
code=$(req POST /v1/runs "{\"url\":\"http://127.0.0.1:1\",\"requests\":1}")
[ "$code" = 502 ] && grep -q '"field":"url"' "$tmp/b"
check "unreachable target: 502 naming url" $?

# A target that accepts connections and never answers: the POST waits out
# the probe's 10 s, and meanwhile serve answers everyone else at once.
python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept()[0]); print("accepted", flush=True)
' >"$tmp/hole" &
holepid=$!
wait_for "$tmp/hole" '^[0-9]'
hport=$(head -1 "$tmp/hole")
curl -s -o "$tmp/hole.b" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	--data-binary "{\"url\":\"http://127.0.0.1:$hport\",\"requests\":1}" "$url/v1/runs" >"$tmp/hole.code" &
holecurl=$!
wait_for "$tmp/hole" accepted
code=$(curl -s -m 2 -o "$tmp/b" -w '%{http_code}' "$url/healthz")
[ "$code" = 200 ]
check "GET /healthz while a target is being checked: answered at once" $?
code=$(req POST /v1/runs "{\"url\":\"http://127.0.0.1:$simport\"}")
[ "$code" = 409 ] && grep -q 'a run is starting' "$tmp/b"
check "POST /v1/runs while another's target is being checked: 409" $?
wait $holecurl
[ "$(cat "$tmp/hole.code")" = 502 ] && grep -q '"field":"url"' "$tmp/hole.b"
check "a target that never answers: 502 naming url ($(cat "$tmp/hole.code") $(cat "$tmp/hole.b"))" $?
kill $holepid 2>/dev/null

# Run 1: infertop's own spec, a fixed number of requests.
code=$(req POST /v1/runs "{\"url\":\"http://127.0.0.1:$simport\",\"concurrency\":4,\"requests\":40,\"output-tokens\":30,\"metrics-url\":\"none\"}")
id1=$(json_id)
[ "$code" = 201 ] && [ -n "$id1" ]
check "POST /v1/runs: 201 with an id" $?
code=$(req POST /v1/runs "{\"url\":\"http://127.0.0.1:$simport\"}")
[ "$code" = 409 ] && grep -q "\"id\":\"$id1\"" "$tmp/b"
check "a second POST /v1/runs during a run: 409" $?
code=$(req GET "/v1/runs/$id1/result")
[ "$code" = 409 ] || grep -q '"state":"done"' "$tmp/b"
check "GET result while running: 409" $?
wait_state "$id1" done
check "run 1 ends (done)" $?
grep -q '"result":{' "$tmp/b"
check "GET /v1/runs/ID after: the result in the answer" $?
code=$(req GET "/v1/runs/$id1/result")
[ "$code" = 200 ] && cmp -s "$tmp/b" "$tmp/results/infertop-run-$id1.json"
check "run 1's result downloads byte-equal to its file in --results-dir" $?
grep -q '"completed":[[:space:]]*40' "$tmp/b" || grep -q '"successful_requests":[[:space:]]*40\|"completed": 40' "$tmp/b"
check "run 1 made its 40 requests" $?

# Run 2: the helm chart's /start-load payload, with a sonnet file.
i=0
while [ $i -lt 200 ]; do echo "Shall I compare thee to a summer's day? Thou art more lovely and more temperate:"; i=$((i + 1)); done >"$tmp/data/sonnet.txt"
code=$(req POST /start-load "{\"host\":\"127.0.0.1\",\"port\":$simport,\"num_prompts\":30,\"request_rate\":200,
	\"model\":\"infertop-sim\",\"backend\":\"openai-chat\",\"endpoint\":\"/v1/chat/completions\",
	\"dataset_path\":\"$tmp/data/sonnet.txt\",\"dataset_name\":\"sonnet\",\"sonnet_input_len\":200,
	\"sonnet_prefix_len\":50,\"sonnet_output_len\":4}")
id2=$(json_id)
[ "$code" = 201 ] && [ -n "$id2" ] && [ "$id2" != "$id1" ]
check "POST /start-load (the chart's payload): 201 with a new id ($code $(cat "$tmp/b"))" $?
wait_state "$id2" done
check "run 2 ends (done)" $?
code=$(req GET "/v1/runs/$id2/result")
[ "$code" = 200 ] && cmp -s "$tmp/b" "$tmp/results/infertop-run-$id2.json"
check "run 2's result downloads byte-equal to its file" $?
grep -Eq '"request_rate":[[:space:]]*200' "$tmp/b" && grep -Eq '"completed":[[:space:]]*30' "$tmp/b"
check "run 2 ran its 30 prompts at rate 200" $?
# Each run's summary block on serve's stdout (kubectl logs), once each.
[ "$(grep -c '^============ Serving Benchmark Result' "$tmp/out")" -eq 2 ] &&
	grep -A1 "^infertop serve: run $id1\$" "$tmp/out" | grep -q 'Serving Benchmark Result' &&
	grep -Eq '^Successful requests: +40 *$' "$tmp/out" && grep -Eq '^Successful requests: +30 *$' "$tmp/out"
check "serve printed each run's summary block to stdout (40, then 30 requests)" $?

# Run 3: long, steered through the section-1 endpoints, then DELETE.
code=$(req POST /v1/runs "{\"url\":\"http://127.0.0.1:$simport\",\"concurrency\":2,\"duration\":\"60s\",\"grace\":\"5s\",\"metrics-url\":\"none\"}")
id3=$(json_id)
[ "$code" = 201 ]
check "run 3 starts" $?
code=$(req POST /v1/load '{"concurrency":6}')
[ "$code" = 200 ]
check "POST /v1/load acts on the running run" $?
code=$(req GET /v1/status)
[ "$code" = 200 ] && grep -q "\"run_id\":[[:space:]]*\"$id3\"" "$tmp/b"
check "GET /v1/status is the running run" $?
code=$(req GET /metrics)
[ "$code" = 200 ] && grep -q '^infertop_requests_total' "$tmp/b"
check "GET /metrics during a run: 200" $?
code=$(req GET "/v1/runs/$id3")
[ "$code" = 200 ] && grep -q '"state":"running"' "$tmp/b" && grep -q '"summary":{' "$tmp/b"
check "GET /v1/runs/ID while running: state and live summary" $?
code=$(req DELETE "/v1/runs/$id3")
[ "$code" = 202 ]
check "DELETE /v1/runs/ID: 202 ($code $(cat "$tmp/b"))" $?
wait_state "$id3" done
check "run 3 stops and its result is written" $?
grep -q 'stopped by the control API' "$tmp/results/infertop-run-$id3.json"
check "run 3's stop reason is the API's" $?
code=$(req DELETE "/v1/runs/$id3")
[ "$code" = 409 ]
check "DELETE of a finished run: 409" $?
code=$(req GET /v1/runs/0123456789abcdef0123456789abcdef)
[ "$code" = 404 ]
check "an unknown run: 404" $?
code=$(req GET /v1/runs)
[ "$code" = 200 ] && grep -q "$id1" "$tmp/b" && grep -q "$id2" "$tmp/b" && grep -q "$id3" "$tmp/b"
check "GET /v1/runs lists the three runs" $?

# A client that starts a run and disconnects at once: the run goes on.
curl -s -m 30 -o /dev/null -X POST -H 'Content-Type: application/json' --data-binary "{\"url\":\"http://127.0.0.1:$simport\",\"requests\":20,\"metrics-url\":\"none\"}" "$url/v1/runs"
code=$(req GET /v1/runs)
id4=$(sed -n 's/.*"id":"\([0-9a-f]\{32\}\)","state":"[a-z]*"[^]]*]}$/\1/p' "$tmp/b")
[ -n "$id4" ] && wait_state "$id4" done
check "a run outlives the client that started it" $?

kill -0 $pid 2>/dev/null && [ "$(req GET /healthz)" = 200 ]
check "serve is still up" $?
ls "$tmp/results" | grep -c '^infertop-run-[0-9a-f]*\.json$' | grep -qx 4
check "four result files, named by run id" $?
# SIGTERM during a run: the run stops, its result is written, serve ends.
code=$(req POST /v1/runs "{\"url\":\"http://127.0.0.1:$simport\",\"duration\":\"60s\",\"grace\":\"5s\",\"metrics-url\":\"none\"}")
id5=$(json_id)
[ "$code" = 201 ]
check "run 5 starts" $?
kill -TERM $pid
wait $pid
st=$?
pid=
[ $st -eq 0 ] && grep -q 'SIGTERM' "$tmp/results/infertop-run-$id5.json"
check "SIGTERM during a run: its result is written, serve exits 0" $?

# A second serve with a token: no token, no run; SIGTERM between runs.
tok="serve-token-5b1e77c0"
INFERTOP_SERVE_TOKEN=$tok "$INFERTOP_BIN" serve --listen 127.0.0.1:0 --listen-token-env INFERTOP_SERVE_TOKEN \
	--listen-allow-host gen-s.example --results-dir "$tmp/results" >"$tmp/out2" 2>"$tmp/err2" &
pid=$!
wait_for "$tmp/err2" "control API on"
url=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/err2")
code=$(req POST /v1/runs "{\"url\":\"http://127.0.0.1:$simport\"}")
[ "$code" = 401 ]
check "POST /v1/runs without the token: 401" $?
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -H "Authorization: Bearer $tok" "$url/v1/runs")
[ "$code" = 200 ]
check "GET /v1/runs with the token: 200" $?
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -H "Authorization: Bearer $tok" -H "Host: gen-s.example:${url##*:}" "$url/v1/runs")
[ "$code" = 200 ]
check "GET /v1/runs by its --listen-allow-host name: 200" $?
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -H "Authorization: Bearer $tok" -H "Host: gen-t.example:${url##*:}" "$url/v1/runs")
[ "$code" = 403 ] && grep -q -- '--listen-allow-host' "$tmp/b"
check "GET /v1/runs by another name: 403 naming --listen-allow-host" $?
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -H "Authorization: Bearer $tok" -X POST -H 'Content-Type: application/json' \
	--data-binary "{\"url\":\"http://127.0.0.1:$simport\",\"dataset\":\"text:$tmp/data/sonnet.txt\"}" "$url/v1/runs")
[ "$code" = 400 ] && grep -q '"field":"dataset"' "$tmp/b" && grep -q -- '--data-dir' "$tmp/b"
check "with the token but no --data-dir, no dataset file at all: 400 naming --data-dir ($code $(cat "$tmp/b"))" $?
kill -TERM $pid
wait $pid
st=$?
pid=
[ $st -eq 0 ]
check "SIGTERM between runs: serve exits 0" $?
! grep -q "$tok" "$tmp/out2" "$tmp/err2" "$tmp/b"
check "the token is in no output" $?
! grep -qi "sanitizer\|runtime error" "$tmp/err" "$tmp/err2"
check "no sanitizer report" $?
[ "$fails" -eq 0 ]
