#!/bin/sh
# --listen as a user runs it: bad values exit 2 with a message, a demo run
# is steered and stopped over HTTP with curl, /v1/stop writes the -o
# result as Ctrl-C does, and the token shows up in no output. Without a
# token, what a web page could send is refused (a foreign Host or Origin,
# a change that is not application/json) and changes nothing;
# --listen-allow-host adds a name.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: no curl or jq"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT

for bad in "9464" "127.0.0.1:70000" "example.com:80" "[::1:80"; do
	"$INFERTOP_BIN" --listen "$bad" -n 1 http://127.0.0.1:1 >/dev/null 2>"$tmp/err"
	[ $? -eq 2 ] && grep -q -- "--listen" "$tmp/err"
	check "--listen $bad: exit 2 naming the option" $?
done

"$INFERTOP_BIN" --listen 0.0.0.0:0 -n 1 http://127.0.0.1:1 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q -- "--listen-token-env" "$tmp/err"
check "beyond loopback without a token: exit 2" $?

"$INFERTOP_BIN" --listen-metrics-open -n 1 http://127.0.0.1:1 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q -- "need --listen" "$tmp/err"
check "--listen-metrics-open without --listen: exit 2" $?

"$INFERTOP_BIN" --listen 127.0.0.1:0 --listen-token-env "not a name" -n 1 http://127.0.0.1:1 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q -- "--listen-token-env takes the NAME" "$tmp/err" && ! grep -q "not a name" "$tmp/err"
check "--listen-token-env with a bad name: exit 2, value not shown" $?

"$INFERTOP_BIN" --listen 127.0.0.1:0 --listen-allow-host 'a b' -n 1 http://127.0.0.1:1 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q -- "--listen-allow-host" "$tmp/err"
check "--listen-allow-host with a bad name: exit 2" $?

"$INFERTOP_BIN" --listen-allow-host gen.example -n 1 http://127.0.0.1:1 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q -- "need --listen" "$tmp/err"
check "--listen-allow-host without --listen: exit 2" $?

"$INFERTOP_BIN" --id 'a b' -n 1 http://127.0.0.1:1 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q -- "--id" "$tmp/err"
check "--id with a space: exit 2" $?

unset INFERTOP_CTL_UNSET
"$INFERTOP_BIN" --demo --listen 127.0.0.1:0 --listen-token-env INFERTOP_CTL_UNSET -n 1 -q >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'INFERTOP_CTL_UNSET is not set' "$tmp/err"
check "token variable unset: exit 2" $?

# A live run: load, stop, result. The token is required and never shown.
tok="ctl-token-7d41e0c2a9"
INFERTOP_CTL_TOKEN=$tok "$INFERTOP_BIN" --demo --sim-arg --timing --sim-arg fixed --sim-arg --itl --sim-arg 10ms \
	-c 2 -d 60s --output-tokens 20 --no-tui --interval 200ms -o "$tmp/r.json" \
	--listen 127.0.0.1:0 --listen-token-env INFERTOP_CTL_TOKEN --id gen-a >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0
while [ $i -lt 100 ] && ! grep -q "in-flight" "$tmp/err" 2>/dev/null; do
	i=$((i + 1)); sleep 0.1
done
url=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/err")
[ -n "$url" ]
check "the address is printed at the start" $?
json='Content-Type: application/json'
code=$(curl -s -o "$tmp/b1" -w '%{http_code}' -X POST -H "$json" -d '{"concurrency":5}' "$url/v1/load")
[ "$code" = 401 ]
check "POST without the token: 401" $?
code=$(curl -s -o "$tmp/b2" -w '%{http_code}' -H "Authorization: Bearer $tok" -X POST -d '{"rate":1e6}' "$url/v1/load")
[ "$code" = 415 ] && grep -q 'application/json' "$tmp/b2"
check "POST /v1/load as a form, with the token: 415" $?
code=$(curl -s -o "$tmp/b2" -w '%{http_code}' -H "Authorization: Bearer $tok" -X POST -H "$json" -d '{"concurrency":5}' "$url/v1/load")
[ "$code" = 200 ] && grep -q '"concurrency 5"' "$tmp/b2"
check "POST /v1/load with the token: 200" $?
code=$(curl -s -o "$tmp/b3" -w '%{http_code}' -H "Authorization: Bearer $tok" "$url/metrics")
[ "$code" = 200 ]
check "GET /metrics with the token: 200" $?
code=$(curl -s -o "$tmp/b4" -w '%{http_code}' -H "Authorization: Bearer $tok" -H 'Host: evil.example' -X POST -H "$json" "$url/v1/stop")
[ "$code" = 403 ] && grep -q -- '--listen-allow-host' "$tmp/b4"
check "a foreign Host, with the token: 403 naming --listen-allow-host" $?
code=$(curl -s -o "$tmp/b4" -w '%{http_code}' -H "Authorization: Bearer $tok" -X POST -H "$json" "$url/v1/stop")
[ "$code" = 200 ] && grep -q '"status":"ok"' "$tmp/b4"
check "POST /v1/stop: 200" $?
wait $pid
st=$?
pid=
[ $st -eq 0 ] && grep -q '"stop_reason":[[:space:]]*"stopped by the control API"' "$tmp/r.json" &&
	grep -q "Serving Benchmark Result" "$tmp/out" && grep -q '"concurrency":[[:space:]]*5' "$tmp/r.json"
check "/v1/stop: drains, writes the -o result, exit 0" $?
! grep -rq "$tok" "$tmp/out" "$tmp/err" "$tmp/r.json" "$tmp/b1" "$tmp/b2" "$tmp/b3" "$tmp/b4"
check "the token is in no output" $?
grep -q "refused for a missing or wrong bearer token" "$tmp/err"
check "the refusal is logged" $?

# No token (loopback's default): what a web page can send is refused.
# The first run's log is emptied here, not by the background start's
# redirection: wait_for could read its "control API on" line (a dead
# port) before the new process had truncated the file.
: >"$tmp/err"
"$INFERTOP_BIN" --demo --sim-arg --timing --sim-arg fixed --sim-arg --itl --sim-arg 10ms \
	-c 2 -d 60s --output-tokens 20 --no-tui -q --listen 127.0.0.1:0 --listen-allow-host gen-7.example \
	>"$tmp/out" 2>"$tmp/err" &
pid=$!
wait_for "$tmp/err" "control API on"
url=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/err")
port=${url##*:}
state() { curl -s -H "$json" "$url/v1/status" | jq -c '.infertop.state | [.status, .concurrency, .paused]'; }
before=$(state)
[ "$before" = '["running",2,false]' ]
check "a run without a token: running at -c 2 ($before)" $?
refused() { # want description curl-args...: the status code and a message
	want=$1 what=$2
	shift 2
	code=$(curl -s -o "$tmp/b" -w '%{http_code}' "$@")
	[ "$code" = "$want" ]
	check "$what: $want ($code $(head -c 160 "$tmp/b"))" $?
}
refused 415 "POST /v1/load as text/plain (a no-cors fetch)" -X POST -H 'Content-Type: text/plain' -d '{"concurrency":99}' "$url/v1/load"
refused 415 "POST /v1/load as a form" -X POST -d '{"concurrency":99}' "$url/v1/load"
refused 415 "POST /v1/pause without a type" -X POST "$url/v1/pause"
refused 403 "POST /v1/stop from a file:// page (Origin: null)" -X POST -H "$json" -H 'Origin: null' "$url/v1/stop"
refused 403 "POST /v1/stop from another site" -X POST -H "$json" -H 'Origin: http://evil.example' "$url/v1/stop"
refused 403 "POST /v1/stop from another loopback port" -X POST -H "$json" -H 'Origin: http://127.0.0.1:1' "$url/v1/stop"
refused 403 "GET /v1/status from a DNS-rebinding page (Host: evil.example)" -H "Host: evil.example:$port" "$url/v1/status"
grep -q -- '--listen-allow-host' "$tmp/b"
check "the Host refusal names --listen-allow-host" $?
after=$(state)
[ "$after" = "$before" ]
check "nothing changed ($after)" $?
refused 200 "GET /v1/status by a --listen-allow-host name" -H "Host: gen-7.example:$port" "$url/v1/status"
refused 200 "GET /healthz as localhost" -H "Host: localhost:$port" "$url/healthz"
refused 200 "POST /v1/load as JSON from the same origin" -X POST -H "$json" -H "Origin: http://127.0.0.1:$port" \
	-d '{"concurrency":3}' "$url/v1/load"
# A typo must not flood the target: a jump over --max-change (4x the
# current 3, or +256) is refused unless "force": true says it is meant.
refused 409 "POST /v1/load 300 from 3 without force" -X POST -H "$json" -d '{"concurrency":300}' "$url/v1/load"
grep -q -- '--max-change' "$tmp/b" && grep -q 'force' "$tmp/b"
check "the refusal names --max-change and force" $?
refused 400 "POST /v1/load with a force that is not a boolean" -X POST -H "$json" \
	-d '{"concurrency":300,"force":"yes"}' "$url/v1/load"
now=$(state)
[ "$now" = '["running",3,false]' ]
check "the load stays 3 ($now)" $?
refused 200 "POST /v1/load within --max-change" -X POST -H "$json" -d '{"concurrency":12}' "$url/v1/load"
refused 200 "POST /v1/load 300 with force" -X POST -H "$json" -d '{"concurrency":300,"force":true}' "$url/v1/load"
now=$(state)
[ "$now" = '["running",300,false]' ]
check "forced: the load is 300 ($now)" $?
refused 200 "POST /v1/stop as JSON" -X POST -H "$json" "$url/v1/stop"
wait $pid
pid=
grep -q "refused as cross-site" "$tmp/err"
check "the refusals are logged" $?

[ "$fails" -eq 0 ]
