#!/bin/sh
# An answer that comes before the request is all sent is the request's
# outcome, on both paths: a server that refuses a 2 M-token prompt with 413
# after reading only its head, then closes (the unread body resets the
# connection under the client) or keeps the connection open unread. The
# 413 is reported as an http error with its status, at once (not at
# --timeout), and the request reaches the server once (not resent).
. "$(dirname "$0")/echo_lib.sh"

mkdir "$tmp/ans"
$py "$here/raw_answers.py" "$tmp/ans" || exit 99

for mode in early noread; do
	for client in direct curl; do
		[ -n "$srv" ] && kill $srv 2>/dev/null
		: >"$tmp/port"
		: >"$tmp/posts"
		$py "$here/raw_server.py" "$tmp/ans/status_413" "$tmp/posts" $mode >"$tmp/port" 2>>"$tmp/server.err" &
		srv=$!
		i=0
		while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
		rm -f "$tmp/r.json"
		t0=$(date +%s)
		"$INFERTOP_BIN" -q --no-tui -c 1 -n 1 --input-tokens 2000000 --output-tokens 4 --metrics-url none \
			-m m --timeout 30 -o "$tmp/r.json" --http-client $client "http://127.0.0.1:$(cat "$tmp/port")" \
			>/dev/null 2>>"$tmp/err"
		t=$(($(date +%s) - t0))
		posts=$(grep -c 'completions' "$tmp/posts")
		msg=$(jq -r '.infertop.errors.http.last_message // (.infertop.errors | tostring)' "$tmp/r.json" 2>/dev/null)
		[ "$posts" -eq 1 ] && [ $t -lt 15 ] && jq -e '.failed == 1 and .infertop.errors.http.count == 1' \
			"$tmp/r.json" >/dev/null && case $msg in "HTTP 413: prompt is way too long") true ;; *) false ;; esac
		check "$mode: $client: the 413 is the outcome ($msg), sent $posts time(s), in ${t}s" $?
	done
done
[ $fails -eq 0 ] || { cat "$tmp/err"; exit 1; }
