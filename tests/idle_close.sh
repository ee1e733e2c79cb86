#!/bin/sh
# Lowering the load closes the connections it no longer needs: 300
# streams lowered to 2 by a plan kept 298 idle connections open to the
# end of the run (301 sockets 15 s after). Once idle past the reuse limit
# (4 s against the simulator, which sends no Keep-Alive) they are closed,
# on both clients: the client's connections are counted 2 s into the
# 300-stream stage (most of 300 open) and 10 s into the 2-stream one:
# the last of the 300 streams' requests end about 0.5 s after the drop,
# curl's age check and the sweep each run once a second, and an ASan
# build closed them 7-9 s after it (at 7 s, up to 66 were still open).
# The demo's scrapes of the simulator's /metrics and its DCGM exporter
# stay on: a scrape each second reusing a connection the load had left
# kept 64 of them open (http.c's sweep).
: "${INFERTOP_BIN:?}"
set -u
fails=0
check() { if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
command -v ss >/dev/null 2>&1 || { echo "no ss"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT

# conns PID: its established TCP connections.
conns() { ss -tnpH state established 2>/dev/null | grep -c "pid=$1,"; }

for client in direct curl; do
	"$INFERTOP_BIN" --demo --sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg 5ms \
		--sim-arg --itl --sim-arg 100ms --no-tui -q --output-tokens 5 \
		--stages '3s@c=300, 12s@c=2' --http-client $client -o "$tmp/r.json" >/dev/null 2>"$tmp/err" &
	pid=$!
	sleep 2
	high=$(conns $pid)
	sleep 11
	low=$(conns $pid)
	wait $pid
	st=$?
	pid=
	[ $st -eq 0 ] && [ "$high" -ge 100 ] && [ "$low" -le 8 ]
	check "$client: $high connections at c=300, $low 10 s after c=2 (exit $st)" $?
done
[ $fails -eq 0 ] || { cat "$tmp/err"; exit 1; }
