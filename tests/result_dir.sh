#!/bin/sh
# Where the result goes (issue 23, item 6). A -o that cannot take a file is
# refused at start, exit 2, before a single request reaches the server
# (tests/echo_server.py logs every request it gets). A -o directory that
# goes away during the run does not lose the run: the result is saved in
# $TMPDIR under the same name (never over a file there), stderr says where,
# and the exit status is still 1 (-o itself was not written).
. "$(dirname "$0")/echo_lib.sh"
. "$(dirname "$0")/check_lib.sh"

echo_start "$tmp/requests"
url="http://127.0.0.1:$port/v1"

# -o in a missing directory, under a plain file, or naming a directory.
: >"$tmp/plainfile"
mkdir "$tmp/isdir"
for out in "$tmp/no/such/dir/r.json" "$tmp/plainfile/r.json" "$tmp/isdir"; do
	"$INFERTOP_BIN" --no-tui -q -c 2 -n 4 --output-tokens 4 -o "$out" "$url" >/dev/null 2>"$tmp/err"
	st=$?
	[ $st -eq 2 ] && grep -q -- "^infertop: -o $out" "$tmp/err"
	check "-o $out: exit 2 at start, naming -o (exit $st: $(head -c 200 "$tmp/err"))" $?
done
[ ! -s "$tmp/requests" ]
check "the server received no request at all ($(grep -c HTTP "$tmp/requests") lines)" $?
[ -z "$(ls -A "$tmp/isdir")" ]
check "the start check leaves nothing behind" $?

# --snapshot-every without --snapshot-dir writes into the current
# directory: checked at start too.
mkdir "$tmp/gone"
(
	cd "$tmp/gone" && rmdir "$tmp/gone" &&
		"$INFERTOP_BIN" --no-tui -q -c 2 -n 4 --snapshot-every 1s "$url" >/dev/null 2>"$tmp/err"
	[ $? -eq 2 ] && grep -q "snapshot-every writes into the current directory" "$tmp/err"
)
check "--snapshot-every in a directory that is gone: exit 2 at start" $?
[ ! -s "$tmp/requests" ]
check "still no request at the server" $?

# The -o directory removed mid-run: as root too (chmod would not stop
# root), the result has nowhere to go but the fallback.
mkdir "$tmp/out" "$tmp/fallback"
echo keep >"$tmp/fallback/r.json"
TMPDIR="$tmp/fallback" "$INFERTOP_BIN" --demo --no-tui -c 2 -d 3s --output-tokens 4 --interval 200ms \
	-o "$tmp/out/r.json" >"$tmp/out9" 2>"$tmp/err9" &
pid=$!
wait_for "$tmp/err9" "in-flight"
rm -rf "$tmp/out"
wait $pid
st=$?
[ $st -eq 1 ]
check "-o directory removed mid-run: exit 1 (exit $st)" $?
grep -q "the result is saved in $tmp/fallback/r-2.json instead ($tmp/out/r.json could not be written)" "$tmp/err9"
check "stderr names the fallback file" $?
[ "$(cat "$tmp/fallback/r.json")" = keep ] &&
	$py -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["completed"] > 0 else 1)' \
		"$tmp/fallback/r-2.json"
check "the fallback holds the whole result; the file already there is untouched" $?
grep -q "Serving Benchmark Result" "$tmp/out9"
check "the summary is printed all the same" $?

# The same with --save-detailed: the arrays' temporary files went with the
# directory, yet they are open, so the fallback has them.
mkdir "$tmp/out" "$tmp/fb2"
TMPDIR="$tmp/fb2" "$INFERTOP_BIN" --demo --no-tui -c 2 -d 2s --output-tokens 4 --interval 200ms \
	--save-detailed -o "$tmp/out/d.json" >/dev/null 2>"$tmp/err10" &
pid=$!
wait_for "$tmp/err10" "in-flight"
rm -rf "$tmp/out"
wait $pid
st=$?
[ $st -eq 1 ] && grep -q "saved in $tmp/fb2/d.json instead" "$tmp/err10" &&
	$py -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if len(d["ttfts"]) == d["completed"] + d["failed"] > 0 else 1)' \
		"$tmp/fb2/d.json"
check "--save-detailed: the fallback keeps the arrays (exit $st)" $?

echo "result_dir: $fails failed"
exit "$fails"
