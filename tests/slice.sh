#!/bin/sh
# A fleet's slices over loopback, as the pods of a Kubernetes Indexed Job
# see them: three `infertop serve` started with JOB_COMPLETION_INDEX 0..2
# and INFERTOP_SLICE_COUNT=3, each against a simulator of its own that logs
# every prompt's length (--verbose). The dataset's prompt k is k+1 words,
# so a length names the record that was sent. Checked: each generator sent
# its own slice (records k with k mod 3 = index) once each, the three are
# disjoint and together the file; with the synthetic dataset the three
# length sequences differ, and each ran with its own seed (1, 2, 3); a
# spec's "slice" beats the environment; a bad environment stops serve
# before it listens.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT

# 30 records: record k is "w" k+1 times, so k+1 prompt tokens (the
# simulator counts one per run of non-space bytes).
n=30
k=0
while [ $k -lt $n ]; do
	words=w
	j=0
	while [ $j -lt $k ]; do words="$words w"; j=$((j + 1)); done
	printf '{"prompt": "%s"}\n' "$words"
	k=$((k + 1))
done >"$tmp/p.jsonl"

for g in 0 1 2; do
	"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 1ms --itl 1ms --verbose \
		>"$tmp/sim$g.out" 2>"$tmp/sim$g.err" &
	pids="$pids $!"
	wait_for "$tmp/sim$g.out" "listening on"
	eval "simport$g=\$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' \"$tmp/sim$g.out\")"
	mkdir "$tmp/res$g"
	JOB_COMPLETION_INDEX=$g INFERTOP_SLICE_COUNT=3 "$INFERTOP_BIN" serve --listen 127.0.0.1:0 \
		--results-dir "$tmp/res$g" --data-dir "$tmp" >"$tmp/serve$g.out" 2>"$tmp/serve$g.err" &
	pids="$pids $!"
	wait_for "$tmp/serve$g.err" "control API on"
	eval "url$g=\$(sed -n 's/^infertop: control API on \(http:[^ ]*\).*/\1/p' \"$tmp/serve$g.err\")"
	grep -q "every run takes slice $g/3 of the dataset (JOB_COMPLETION_INDEX, INFERTOP_SLICE_COUNT)" \
		"$tmp/serve$g.err"
	check "serve $g says it takes slice $g/3 from the Job's environment" $?
done

post() { # generator body: the run's id on stdout
	eval "u=\$url$1"
	curl -s -X POST -H 'Content-Type: application/json' --data-binary "$2" "$u/v1/runs" |
		sed -n 's/.*"id":"\([0-9a-f]\{32\}\)".*/\1/p'
}
wait_done() { # generator id
	eval "u=\$url$1"
	i=0
	while [ $i -lt 400 ]; do
		curl -s "$u/v1/runs/$2" | grep -Eq '"state":"(done|failed)"' && return 0
		i=$((i + 1)); sleep 0.05
	done
	return 1
}
# The prompt lengths a simulator logged, one a line, after line $2.
lengths() { # generator from-line
	tail -n +"$2" "$tmp/sim$1.err" | sed -n 's/.* prompt=\([0-9]*\) .*/\1/p'
}

# File dataset: 10 requests each, one per record of a 10-record slice.
for g in 0 1 2; do
	eval "sp=\$simport$g"
	id=$(post $g "{\"url\":\"http://127.0.0.1:$sp\",\"dataset\":\"jsonl:$tmp/p.jsonl\",\"api\":\"completions\",\"requests\":10,\"concurrency\":2,\"output-tokens\":2,\"metrics-url\":\"none\"}")
	[ -n "$id" ]
	check "generator $g: run accepted" $?
	eval "id$g=$id"
done
for g in 0 1 2; do
	eval "id=\$id$g"
	wait_done $g "$id" && grep -q '"completed":[[:space:]]*10' "$tmp/res$g/infertop-run-$id.json"
	check "generator $g: 10 requests completed" $?
	lengths $g 1 >"$tmp/file$g"
	[ "$(wc -l <"$tmp/file$g")" -eq 10 ] && [ "$(sort -u "$tmp/file$g" | wc -l)" -eq 10 ]
	check "generator $g: 10 prompts, no repeat" $?
	# Record k (length k+1) belongs to slice k mod 3.
	bad=$(awk -v g=$g '($1 - 1) % 3 != g' "$tmp/file$g" | wc -l)
	[ "$bad" -eq 0 ]
	check "generator $g sent only slice $g's records (every 3rd from $g)" $?
done
cat "$tmp/file0" "$tmp/file1" "$tmp/file2" | sort -n >"$tmp/all"
seq 1 $n >"$tmp/want"
cmp -s "$tmp/all" "$tmp/want"
check "the three slices are disjoint and together the whole file" $?

# Synthetic: different lengths drawn per slice; each its own seed.
for g in 0 1 2; do
	eval "sp=\$simport$g"
	eval "start$g=\$((\$(wc -l <\"$tmp/sim$g.err\") + 1))"
	id=$(post $g "{\"url\":\"http://127.0.0.1:$sp\",\"input-tokens\":\"20:2000\",\"api\":\"completions\",\"requests\":12,\"concurrency\":1,\"output-tokens\":2,\"metrics-url\":\"none\"}")
	eval "id$g=$id"
done
for g in 0 1 2; do
	eval "id=\$id$g"
	eval "from=\$start$g"
	wait_done $g "$id"
	check "generator $g: synthetic run done" $?
	lengths $g "$from" >"$tmp/syn$g"
	[ "$(wc -l <"$tmp/syn$g")" -eq 12 ]
	check "generator $g: 12 synthetic prompts logged" $?
	grep -Eq "\"seed\":[[:space:]]*$((g + 1))[,}]" "$tmp/res$g/infertop-run-$id.json"
	check "generator $g ran with seed $((g + 1)) (none given)" $?
done
! cmp -s "$tmp/syn0" "$tmp/syn1" && ! cmp -s "$tmp/syn1" "$tmp/syn2" && ! cmp -s "$tmp/syn0" "$tmp/syn2"
check "the synthetic prompt sequences of the three differ" $?

# A spec's slice beats the environment: "0/1" is the whole file.
start=$(($(wc -l <"$tmp/sim1.err") + 1))
id=$(post 1 "{\"url\":\"http://127.0.0.1:$simport1\",\"dataset\":\"jsonl:$tmp/p.jsonl\",\"slice\":\"0/1\",\"api\":\"completions\",\"requests\":$n,\"concurrency\":2,\"output-tokens\":2,\"metrics-url\":\"none\"}")
wait_done 1 "$id"
lengths 1 "$start" | sort -n | cmp -s - "$tmp/want"
check "a spec's \"slice\":\"0/1\" beats the environment: the whole file" $?
code=$(curl -s -o "$tmp/b" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	--data-binary '{"url":"http://127.0.0.1:1","slice":"3/3"}' "$url1/v1/runs")
[ "$code" = 400 ] && grep -q '"field":"slice"' "$tmp/b"
check "a bad slice in a spec: 400 naming it ($code $(cat "$tmp/b"))" $?

# A pod's environment half set or wrong: serve stops with the reason.
bad_env() { # description, env assignments...
	d=$1
	shift
	env "$@" "$INFERTOP_BIN" serve --listen 127.0.0.1:0 >"$tmp/bad.out" 2>"$tmp/bad.err" </dev/null
	rc=$?
	[ $rc -eq 2 ] && grep -q "$d" "$tmp/bad.err" && ! grep -q "control API on" "$tmp/bad.err"
	check "serve refuses: $d (exit $rc: $(head -1 "$tmp/bad.err"))" $?
}
bad_env "INFERTOP_SLICE_COUNT is not" JOB_COMPLETION_INDEX=1
bad_env "JOB_COMPLETION_INDEX is not" INFERTOP_SLICE_COUNT=3
bad_env "expected an index" JOB_COMPLETION_INDEX=3 INFERTOP_SLICE_COUNT=3
bad_env "expected an index" JOB_COMPLETION_INDEX=x INFERTOP_SLICE_COUNT=3

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all slice checks passed"
