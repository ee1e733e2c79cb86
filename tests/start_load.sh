#!/bin/sh
# vLLM's benchmark arguments, as a user of its helm chart brings them: the
# chart's /start-load payload with the keys beyond its example, posted to
# a real `infertop serve` against the simulator: each mapped key lands in
# the result's options, the ignored ones are named in the 201 and in the
# result's warnings, an unknown key gets 400 naming it and the accepted
# list. Then the same arguments as a command line, through the binary
# (--from-vllm-args, both spellings), and unknown ones refused.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: no curl or jq"; exit 77; }
tmp=$(mktemp -d)
simpid=
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; [ -n "$simpid" ] && kill $simpid 2>/dev/null; rm -rf "$tmp"' EXIT

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 5ms --itl 1ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
simpid=$!
wait_for "$tmp/sim.out" "listening on"
simport=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
mkdir "$tmp/results"
"$INFERTOP_BIN" serve --listen 127.0.0.1:0 --results-dir "$tmp/results" >"$tmp/out" 2>"$tmp/err" &
pid=$!
wait_for "$tmp/err" "control API on"
url=$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' "$tmp/err")
[ -n "$simport" ] && [ -n "$url" ]
check "the simulator and serve are up" $?

post() { # path body: the status on stdout, the body in $tmp/b
	curl -s -o "$tmp/b" -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data-binary "$2" "$url$1"
}

# The chart's keys and the ones users add.
code=$(post /start-load "{\"host\":\"127.0.0.1\",\"port\":$simport,\"num_prompts\":20,\"request_rate\":100,
	\"model\":\"infertop-sim\",\"backend\":\"openai-chat\",\"endpoint\":\"/v1/chat/completions\",
	\"dataset_name\":\"random\",\"random_input_len\":64,\"random_output_len\":8,\"random_range_ratio\":0.5,
	\"max_concurrency\":4,\"burstiness\":0.5,\"goodput\":[\"ttft:500\",\"e2el:3000\"],
	\"percentile_metrics\":\"ttft,tpot,itl,e2el\",\"metric_percentiles\":\"50,99\",\"ignore_eos\":false,
	\"temperature\":0.5,\"top_k\":5,\"seed\":9,\"tokenizer\":\"meta-llama/x\",\"save_result\":true,
	\"result_dir\":\"/tmp\",\"disable_tqdm\":true,\"sonnet_input_len\":300,
	\"metadata\":[\"tp=8\",\"version=0.6\"],\"label\":\"chart\"}")
id=$(jq -r .id "$tmp/b")
[ "$code" = 201 ] && [ -n "$id" ]
check "POST /start-load with vLLM's extra keys: 201 ($code $(cat "$tmp/b"))" $?
[ "$(jq -r '.ignored | keys | sort | join(",")' "$tmp/b")" = \
	"disable_tqdm,metric_percentiles,percentile_metrics,result_dir,save_result,sonnet_input_len,tokenizer" ] &&
	jq -e '.ignored.tokenizer | test("tokenizer")' "$tmp/b" >/dev/null
check "the 201 names the ignored keys with a reason" $?

i=0
while [ $i -lt 200 ]; do
	curl -s "$url/v1/runs/$id" | grep -q '"state":"done"' && break
	i=$((i + 1)); sleep 0.05
done
code=$(curl -s -o "$tmp/r.json" -w '%{http_code}' "$url/v1/runs/$id/result")
[ "$code" = 200 ]
check "the run ends and its result downloads" $?
opt() { jq -c ".infertop.options.$1" "$tmp/r.json"; }
[ "$(opt requests)" = 20 ] && [ "$(opt rate)" = 100 ] && [ "$(opt max_concurrency)" = 4 ] &&
	[ "$(opt burstiness)" = 0.5 ] && [ "$(opt api)" = '"chat"' ] && [ "$(opt model)" = '"infertop-sim"' ] &&
	[ "$(opt seed)" = 9 ] && [ "$(opt ignore_eos)" = false ] && [ "$(opt temperature)" = 0.5 ] &&
	[ "$(opt slo)" = '"ttft=500ms,e2e=3000ms"' ] && [ "$(opt extra_body)" = '{"top_k":5}' ]
check "each mapped key is in the result's options ($(jq -c '.infertop.options | {requests,rate,max_concurrency,burstiness,api,model,seed,ignore_eos,temperature,slo,extra_body}' "$tmp/r.json"))" $?
[ "$(jq -c '.infertop.metadata' "$tmp/r.json")" = '{"tp":"8","version":"0.6","label":"chart"}' ]
check "metadata and label are the result's tags" $?
[ "$(jq -r '.infertop.warnings.vllm_ignored | keys | length' "$tmp/r.json")" = 7 ] &&
	jq -e '.infertop.warnings.vllm_ignored.percentile_metrics | length > 0' "$tmp/r.json" >/dev/null
check "the result's warnings list the ignored keys" $?
jq -e '.infertop.goodput.requests_ended == 20' "$tmp/r.json" >/dev/null
check "goodput was counted over the 20 requests" $?
"$INFERTOP_BIN" report "$tmp/r.json" >"$tmp/report.txt"
grep -q '^Metadata: tp=8, version=0.6, label=chart$' "$tmp/report.txt" &&
	grep -q '^Ignored vLLM argument tokenizer: ' "$tmp/report.txt"
check "infertop report shows the tags and the ignored arguments" $?

# Unknown keys: 400, every one named, the accepted list.
code=$(post /start-load "{\"host\":\"127.0.0.1\",\"port\":$simport,\"num_prompt\":5,\"frobnicate\":1}")
[ "$code" = 400 ] && [ "$(jq -r .field "$tmp/b")" = num_prompt ] &&
	jq -e '.message | test("unknown fields num_prompt, frobnicate") and test("accepted: .*max_concurrency")' \
		"$tmp/b" >/dev/null
check "unknown keys: 400 naming them and the accepted ones ($code $(head -c 200 "$tmp/b"))" $?
code=$(post /start-load "{\"host\":\"127.0.0.1\",\"goodput\":\"itl:5\"}")
[ "$code" = 400 ] && [ "$(jq -r .field "$tmp/b")" = goodput ]
check "a bad value of a new key: 400 naming it" $?

# The same through the command line, both spellings.
"$INFERTOP_BIN" --from-vllm-args "--backend openai-chat --host 127.0.0.1 --port $simport --model infertop-sim
	--request_rate 200 --num-prompts 10 --max-concurrency 3 --random-input-len 32 --random_output_len 4
	--tokenizer t --save-result --metadata a=1" --no-tui -q -o "$tmp/cli.json" >/dev/null 2>"$tmp/cli.err"
rc=$?
[ $rc -eq 0 ] && [ "$(jq -c '.infertop.options | [.rate, .requests, .max_concurrency, .input_tokens, .output_tokens]' \
	"$tmp/cli.json")" = '[200,10,3,32,4]' ] && [ "$(jq -c .completed "$tmp/cli.json")" = 10 ] &&
	[ "$(jq -c .infertop.metadata "$tmp/cli.json")" = '{"a":"1"}' ] &&
	[ "$(jq -r '.infertop.warnings.vllm_ignored | keys | join(",")' "$tmp/cli.json")" = save_result,tokenizer ] &&
	grep -q 'tokenizer ignored' "$tmp/cli.err"
check "--from-vllm-args runs the vLLM command line (rc $rc, $(head -c 300 "$tmp/cli.err"))" $?
# An option after it wins.
"$INFERTOP_BIN" --from-vllm-args "--host 127.0.0.1 --port $simport --num-prompts 3" -n 2 -c 1 --no-tui -q \
	-o "$tmp/cli2.json" >/dev/null 2>&1
[ "$(jq -c .completed "$tmp/cli2.json")" = 2 ]
check "an option written after --from-vllm-args wins" $?
# A URL written out wins over vLLM's host and port.
"$INFERTOP_BIN" --from-vllm-args "--host 10.255.255.1 --port 1 --num-prompts 2" -c 1 --no-tui -q \
	-o "$tmp/cli3.json" "http://127.0.0.1:$simport" >/dev/null 2>&1
[ "$(jq -c .completed "$tmp/cli3.json")" = 2 ]
check "a URL on the command line wins over vLLM's host and port" $?
"$INFERTOP_BIN" --from-vllm-args "--model m --frobnicate 1 --request-rate 2 --num_promts 5" --no-tui \
	>/dev/null 2>"$tmp/bad.err"
rc=$?
[ $rc -eq 2 ] && grep -q 'unknown fields frobnicate, num_promts' "$tmp/bad.err" && grep -q 'accepted: ' "$tmp/bad.err"
check "unknown vLLM arguments: exit 2 naming them ($rc $(head -c 200 "$tmp/bad.err"))" $?

kill -0 $pid
check "serve is still alive" $?
[ $fails -eq 0 ]
