#!/bin/sh
# --sessions through the binary, against a simulator that logs each
# request's prompt tokens (--verbose): the banner describes the sessions;
# one 3-turn session of 16-token turns with 4-token recorded answers sends
# prompts of exactly 16, 36 and 56 tokens (each turn resends the whole
# conversation); -n counts sessions in the -o result; file sessions run
# every turn of the JSONL fixture; a session file without a user turn and
# --sessions file without a file dataset stop the run before anything is
# sent, with the file and line.
: "${INFERTOP_BIN:?}" "${INFERTOP_FIXTURES:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT
ds="$INFERTOP_FIXTURES/datasets"

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 1ms --itl 1ms --verbose \
	>"$tmp/sim.out" 2>"$tmp/sim.err" &
pids="$pids $!"
wait_for "$tmp/sim.out" "listening on"
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")
url="http://127.0.0.1:$port"
requests() { grep -c 'chat prompt=' "$tmp/sim.err"; }

"$INFERTOP_BIN" --no-tui -c 1 -n 1 --sessions turns=3,think=10ms,user=16 --output-tokens 4 \
	--session-answers recorded "$url" >"$tmp/r1.out" 2>"$tmp/r1.err"
check "a recorded-answer session runs" $?
grep -q "sessions: 3 turns, think 10ms, user 16 tok, out 4 tok, recorded answers" "$tmp/r1.err"
check "the banner describes the sessions" $?
prompts=$(sed -n 's/.*chat prompt=\([0-9]*\) .*/\1/p' "$tmp/sim.err" | tr '\n' ' ')
[ "$prompts" = "16 36 56 " ]
check "each turn resends the conversation: prompts 16 36 56 (got: $prompts)" $?

"$INFERTOP_BIN" --no-tui -q -c 2 -n 3 --sessions turns=2,user=8,system=16 --output-tokens 2 \
	-o "$tmp/r2.json" "$url" >/dev/null 2>"$tmp/r2.err"
check "synthetic sessions at c=2 run" $?
grep -Eq '"completed":[[:space:]]*6[^0-9]' "$tmp/r2.json"
check "-n 3 sessions of 2 turns: 6 requests in the result" $?

"$INFERTOP_BIN" --no-tui -q -c 1 -n 3 --sessions file --dataset "jsonl:$ds/sessions.jsonl" --output-tokens 2 \
	-o "$tmp/r3.json" "$url" >/dev/null 2>"$tmp/r3.err"
check "file sessions run" $?
grep -Eq '"completed":[[:space:]]*5[^0-9]' "$tmp/r3.json"
check "the file's three conversations: 5 turns" $?

before=$(requests)
"$INFERTOP_BIN" --no-tui -q --sessions file --dataset "sharegpt:$ds/sessions_sharegpt_no_user.json" \
	"$url" >/dev/null 2>"$tmp/r4.err"
[ $? -eq 2 ]
check "a conversation without a user turn stops the run (exit 2)" $?
grep -q "sessions_sharegpt_no_user.json:6: conversation 2: no user turn" "$tmp/r4.err"
check "... naming its file and line" $?
[ "$(requests)" = "$before" ]
check "... before anything is sent" $?

"$INFERTOP_BIN" --no-tui -q --sessions file "$url" >/dev/null 2>"$tmp/r5.err"
[ $? -eq 2 ] && grep -q -- "--sessions file needs --dataset sharegpt:FILE or jsonl:FILE" "$tmp/r5.err"
check "--sessions file without a file dataset is refused" $?

exit $fails
