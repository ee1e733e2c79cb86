#!/bin/sh
# The binary as a user runs it: headless run against a simulator child,
# the summary and -o file, exit codes for bad options and a dead server,
# and a clean stop on SIGINT with the result still written.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$INFERTOP_BIN" --version | grep -q '^infertop [0-9]'
check "--version" $?

"$INFERTOP_BIN" --concurrency 0 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q -- "--concurrency" "$tmp/err"
check "bad option: exit 2 naming the option" $?

"$INFERTOP_BIN" -q -n 1 http://127.0.0.1:1 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "cannot reach http://127.0.0.1:1" "$tmp/err"
check "unreachable server: exit 2 with a message" $?

"$INFERTOP_BIN" --demo --sim-arg --timing --sim-arg fixed --sim-arg --itl --sim-arg 2ms \
	-c 4 -n 20 --output-tokens 8 --no-tui -o "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 0 ] && grep -q "Serving Benchmark Result" "$tmp/out" &&
	grep -Eq '^Successful requests: +20 *$' "$tmp/out" &&
	grep -q '"completed":[[:space:]]*20' "$tmp/r.json" && grep -q '"total_output_tokens":[[:space:]]*160' "$tmp/r.json" &&
	grep -q '"infertop_schema":[[:space:]]*1' "$tmp/r.json"
check "--demo headless run: summary and -o result" $?
[ -z "$(ls "$tmp" | grep '\.tmp\.')" ]
check "no temporary file left behind" $?

# SIGINT mid-run: in-flight requests finish within the grace, result saved.
"$INFERTOP_BIN" --demo --sim-arg --timing --sim-arg fixed --sim-arg --itl --sim-arg 20ms \
	-c 4 --output-tokens 10 --no-tui --interval 200ms -o "$tmp/int.json" >"$tmp/out2" 2>"$tmp/err2" &
pid=$!
# A progress line means the loop runs with its signal watchers (and
# requests are in flight): poll for it, bounded to 10 s.
i=0
while [ $i -lt 100 ] && ! grep -q "in-flight" "$tmp/err2" 2>/dev/null; do
	i=$((i + 1)); sleep 0.1
done
kill -INT $pid
wait $pid
st=$?
[ $st -eq 0 ] && grep -q '"stop_reason":[[:space:]]*"interrupted (SIGINT)"' "$tmp/int.json" &&
	! grep -q '"aborted"' "$tmp/int.json" && grep -q "Serving Benchmark Result" "$tmp/out2"
check "SIGINT: drains in-flight, writes the result, exit 0" $?

# Writing the result into a directory that does not exist: found at start
# (tests/result_dir.sh has the rest).
"$INFERTOP_BIN" --demo -c 1 -n 1 --output-tokens 2 -q -o "$tmp/no/such/dir/r.json" >/dev/null 2>"$tmp/err3"
[ $? -eq 2 ] && grep -q "^infertop: -o .*No such file" "$tmp/err3"
check "unwritable -o path: exit 2 at start with a message" $?

# A header that frames the body is refused by name, in every spelling
# (an empty value and a blank before the colon included): each body has
# its own length.
for h in 'Content-Length: 5' 'content-length:' 'Transfer-Encoding : chunked'; do
	"$INFERTOP_BIN" -q -n 1 -H "$h" http://127.0.0.1:1 >/dev/null 2>"$tmp/errh"
	[ $? -eq 2 ] && grep -qiE "^infertop: --header (content-length|transfer-encoding): the request body's framing" "$tmp/errh"
	check "-H '$h': refused by name" $?
done

# More streams than file descriptors: refused up front, naming the limit.
(ulimit -n 256 && "$INFERTOP_BIN" -q -c 1000 http://127.0.0.1:1) >/dev/null 2>"$tmp/err4"
[ $? -eq 2 ] && grep -q "1000 concurrent streams need about" "$tmp/err4" && grep -q "ulimit -n" "$tmp/err4"
check "concurrency beyond the fd limit: exit 2 with the limit named" $?

# A second SIGINT aborts the in-flight requests at once (the stall fault
# keeps them from ever finishing, and the grace is far longer than the
# test): they are counted as incomplete (not failed) and the result is
# still written.
"$INFERTOP_BIN" --demo --sim-arg --fail-rate --sim-arg 1 --sim-arg --fail-kinds --sim-arg stall \
	-c 3 --grace 10m --no-tui --interval 200ms -o "$tmp/abort.json" >"$tmp/out5" 2>"$tmp/err5" &
pid=$!
i=0
while [ $i -lt 100 ] && ! grep -q "in-flight 3" "$tmp/err5" 2>/dev/null; do
	i=$((i + 1)); sleep 0.1
done
kill -INT $pid
i=0
while [ $i -lt 100 ] && ! grep -q "press Ctrl-C again" "$tmp/err5" 2>/dev/null; do
	i=$((i + 1)); sleep 0.1
done
kill -INT $pid
wait $pid
st=$?
# Nothing ever succeeded there, so the exit status says so (4).
[ $st -eq 4 ] && grep -q '"stop_reason":[[:space:]]*"interrupted (SIGINT)"' "$tmp/abort.json" &&
	grep -Eq '^[[:space:]]"incomplete":[[:space:]]*3,' "$tmp/abort.json" &&
	grep -Eq '^[[:space:]]"failed":[[:space:]]*0,' "$tmp/abort.json"
check "second SIGINT: in-flight requests cut (incomplete), result written, exit 4" $?

# --max-error-rate: a broken server fails the run with exit 3 (CI gates).
"$INFERTOP_BIN" --demo --sim-arg --fail-rate --sim-arg 0.5 --sim-arg --fail-kinds --sim-arg 500 \
	-c 4 -n 40 --output-tokens 4 -q --max-error-rate 0.1 >/dev/null 2>"$tmp/err6"
[ $? -eq 3 ] && grep -q "above --max-error-rate 0.1" "$tmp/err6"
check "--max-error-rate exceeded: exit 3" $?
"$INFERTOP_BIN" --demo -c 4 -n 20 --output-tokens 4 -q --max-error-rate 0.1 >/dev/null 2>&1
check "--max-error-rate not exceeded: exit 0" $?

# No request succeeded: its own exit status, the result still written.
"$INFERTOP_BIN" --demo --sim-arg --fail-rate --sim-arg 1 --sim-arg --fail-kinds --sim-arg 500 \
	-c 2 -n 10 --output-tokens 4 -q -o "$tmp/none.json" >/dev/null 2>"$tmp/err7"
[ $? -eq 4 ] && grep -q "no request succeeded (10 failed)" "$tmp/err7" && [ -s "$tmp/none.json" ]
check "nothing succeeded: exit 4, result written" $?

# A missing --snapshot-dir is found at start, like --request-log.
"$INFERTOP_BIN" --demo -q --no-tui -n 2 --snapshot-dir "$tmp/no/such/dir" >/dev/null 2>"$tmp/err8"
[ $? -eq 2 ] && grep -q -- "--snapshot-dir .*No such file" "$tmp/err8"
check "missing --snapshot-dir: exit 2 at start" $?

# A full disk under --request-log: one warning, not one per flush, and the
# loss counted in the summary.
"$INFERTOP_BIN" --demo --no-tui -c 2 -d 3s --output-tokens 4 --request-log /dev/full \
	>"$tmp/out9" 2>"$tmp/err9"
[ "$(grep -c 'request log: cannot write' "$tmp/err9")" -eq 1 ] &&
	grep -Eq "^Request log: [1-9][0-9]* lines dropped \(cannot write /dev/full" "$tmp/out9"
check "request log on a full disk: warned once, the loss in the summary" $?

# Snapshots failing every second (their directory removed mid-run): said
# once, not at every interval.
mkdir "$tmp/snaps"
"$INFERTOP_BIN" --demo --no-tui -c 2 -d 4s --output-tokens 4 --snapshot-dir "$tmp/snaps" \
	--snapshot-every 1s --interval 200ms >/dev/null 2>"$tmp/err10" &
pid=$!
i=0
while [ $i -lt 100 ] && ! grep -q "in-flight" "$tmp/err10" 2>/dev/null; do i=$((i + 1)); sleep 0.1; done
rm -rf "$tmp/snaps"
wait $pid
[ "$(grep -c 'snapshot failed' "$tmp/err10")" -eq 1 ] && ! grep -q "snapshots still failing" "$tmp/err10"
check "failing snapshots: said once ($(grep -c 'snapshot failed' "$tmp/err10") lines)" $?

echo "cli: $fails failed"
exit "$fails"
