#!/bin/sh
# Tags on a run (--metadata KEY=VALUE, --metadata-json): two runs against
# the simulator, each tagged; the tags are in the result (scrubbed of the
# API key), shown by report in text, markdown and json, kept by merge when
# equal in every input and listed per input otherwise, listed by compare
# when they differ; a result without tags has no "metadata" key. Bad forms
# are refused with a message naming the problem.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
command -v jq >/dev/null || { echo "SKIP: no jq"; exit 77; }
tmp=$(mktemp -d)
simpid=
trap '[ -n "$simpid" ] && kill $simpid 2>/dev/null; rm -rf "$tmp"' EXIT

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 5ms --itl 1ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
simpid=$!
wait_for "$tmp/sim.out" "listening on"
simport=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
[ -n "$simport" ]
check "the simulator is up" $?
target="http://127.0.0.1:$simport"

export OPENAI_API_KEY=sk-metadatatest0123456789
run() { # name, then more options
	n=$1
	shift
	"$INFERTOP_BIN" --no-tui -q -n 6 -c 2 --no-config -o "$tmp/$n.json" "$@" "$target" >/dev/null 2>"$tmp/$n.err"
}
run a --metadata team=infra --metadata run=a --metadata-json '{"tp":2,"run":"overridden","note":"key sk-metadatatest0123456789 pasted"}' \
	--metadata run=a2
check "run a with tags" $?
run b --metadata-json '{"team":"infra","tp":2}' --metadata run=b
check "run b with tags" $?
run c
check "run c without tags" $?

[ "$(jq -c .infertop.metadata "$tmp/a.json")" = '{"team":"infra","tp":2,"note":"key *** pasted","run":"a2"}' ]
check "the tags are in the result, later ones winning, the key scrubbed ($(jq -c .infertop.metadata "$tmp/a.json"))" $?
! grep -q 'sk-metadatatest' "$tmp/a.json"
check "the API key is nowhere in the result" $?
[ "$(jq 'has("metadata")' "$tmp/c.json" | head -1)" = false ] && [ "$(jq '.infertop | has("metadata")' "$tmp/c.json")" = false ]
check "a run without tags has no metadata key" $?

"$INFERTOP_BIN" report "$tmp/a.json" >"$tmp/r.txt"
grep -q '^Metadata: team=infra, tp=2, note=key \*\*\* pasted, run=a2$' "$tmp/r.txt"
check "report shows the tags" $?
"$INFERTOP_BIN" report "$tmp/a.json" --format markdown >"$tmp/r.md"
grep -q '^## Metadata' "$tmp/r.md" && grep -q '^| team | infra |$' "$tmp/r.md" && grep -q '^| tp | 2 |$' "$tmp/r.md"
check "report --format markdown shows them" $?
"$INFERTOP_BIN" report "$tmp/a.json" --format json >"$tmp/r.json"
[ "$(jq -c .metadata "$tmp/r.json")" = "$(jq -c .infertop.metadata "$tmp/a.json")" ]
check "report --format json carries them" $?
! "$INFERTOP_BIN" report "$tmp/c.json" | grep -q '^Metadata'
check "report of an untagged run shows no tags" $?

"$INFERTOP_BIN" merge "$tmp/a.json" "$tmp/b.json" "$tmp/c.json" -o "$tmp/abc.json" >/dev/null 2>&1
"$INFERTOP_BIN" merge "$tmp/a.json" "$tmp/b.json" -o "$tmp/ab.json" >/dev/null 2>&1
[ "$(jq -c .infertop.metadata "$tmp/ab.json")" = '{"team":"infra","tp":2}' ] &&
	[ "$(jq -c '[.infertop.merged_from[].metadata]' "$tmp/ab.json")" = '[{"note":"key *** pasted","run":"a2"},{"run":"b"}]' ]
check "merge keeps the tags equal in all inputs, the others per input ($(jq -c '[.infertop.metadata, [.infertop.merged_from[].metadata]]' "$tmp/ab.json"))" $?
[ "$(jq -c .infertop.metadata "$tmp/abc.json")" = '{}' ] &&
	[ "$(jq -c '.infertop.merged_from[2] | has("metadata")' "$tmp/abc.json")" = false ]
check "merged with an untagged run: no tag is common" $?
"$INFERTOP_BIN" merge "$tmp/ab.json" "$tmp/c.json" -o "$tmp/abc2.json" >/dev/null 2>&1
"$INFERTOP_BIN" report "$tmp/ab.json" | grep -q '^Metadata: team=infra, tp=2$'
check "a merged result reads back, its tags shown" $?

"$INFERTOP_BIN" compare "$tmp/a.json" "$tmp/b.json" >"$tmp/cmp.txt"
grep -q '^Metadata that differ (A -> B):' "$tmp/cmp.txt" && grep -q '^  run: "a2" -> "b"$' "$tmp/cmp.txt" &&
	grep -q '^  note: "key \*\*\* pasted" -> null$' "$tmp/cmp.txt" && ! grep -q '^  team:' "$tmp/cmp.txt"
check "compare lists the tags that differ" $?
"$INFERTOP_BIN" compare "$tmp/a.json" "$tmp/b.json" --format json >"$tmp/cmp.json"
[ "$(jq -c '.metadata_differ.run' "$tmp/cmp.json")" = '{"a":"a2","b":"b"}' ]
check "compare --format json lists them ($(jq -c .metadata_differ "$tmp/cmp.json"))" $?
"$INFERTOP_BIN" compare "$tmp/a.json" "$tmp/b.json" --format markdown | grep -q '^- run: "a2" -> "b"$'
check "compare --format markdown lists them" $?
! "$INFERTOP_BIN" compare "$tmp/c.json" "$tmp/c.json" | grep -q 'Metadata'
check "compare without tags says nothing of them" $?

bad() { # message regex, then the options
	want=$1
	shift
	"$INFERTOP_BIN" --no-config "$@" "$target" >/dev/null 2>"$tmp/bad.err"
	rc=$?
	[ $rc -eq 2 ] && grep -q "$want" "$tmp/bad.err"
	check "refused: $* (rc $rc: $(head -c 160 "$tmp/bad.err"))" $?
}
bad "expected KEY=VALUE (no '=')" --metadata team
bad "the KEY is empty" --metadata =x
bad "expected a JSON object" --metadata-json '[1,2]'
bad "expected a JSON object" --metadata-json '"x"'
bad "expected a JSON object" --metadata-json '{"a":'
bad "the KEY is empty" --metadata-json '{"":1}'
bad "longer than 1024 bytes" --metadata "k=$(head -c 1100 /dev/zero | tr '\0' x)"
bad "longer than 64 bytes" --metadata "$(head -c 70 /dev/zero | tr '\0' k)=v"
big=$(head -c 1000 /dev/zero | tr '\0' v)
set --
i=0
while [ $i -lt 10 ]; do set -- "$@" --metadata "k$i=$big"; i=$((i + 1)); done
bad "over 8 KiB" "$@"
[ $fails -eq 0 ]
