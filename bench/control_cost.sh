#!/bin/bash
# What the control API costs a measuring run: the fidelity shape (STREAMS
# streams, TTFT 50 ms, ITL 10 ms, 64 tokens, from bench/token_source, an
# exact-timing source that sends every token in its own write and logs its
# own lateness, alone on the second CPU; the client pinned to the first) run
# ROUNDS times each without --listen and with it while /metrics is scraped
# every second and /v1/status polled four times a second. The run without
# the API is polled just as often, but a static file server answers, so the
# pollers' own CPU weighs on both runs alike and the difference is
# infertop's. Prints ITL p99
# and the client's CPU (user + sys seconds over the run) for each, medians
# over the rounds, and the differences (targets: ITL p99 moves by <= 0.5 ms,
# CPU by <= 1% of a core). The difference of two runs can be noisier than
# the cost (with the simulator as source, its lateness moved ITL p99 by
# milliseconds: hence the exact-timing source on a CPU of its own), so the
# API's own account is printed too: the CPU its turns on the loop took
# (thread CPU time around every libmicrohttpd pass) and its longest turn,
# the most a token waited for it (the status document itself is encoded
# on a thread of its own since; the loop only copies the figures).
#   bench/control_cost.sh [STREAMS] [REQUESTS] [ROUNDS]   (from the build directory)
set -eu
bin=${INFERTOP_BIN:-./infertop}
streams=${1:-500}
requests=${2:-$((streams * 5))}
rounds=${3:-3}
out=$(mktemp -d)
srcpid=
wwwpid=
trap '[ -n "$srcpid" ] && kill $srcpid 2>/dev/null; [ -n "$wwwpid" ] && kill $wwwpid 2>/dev/null; rm -rf "$out"' EXIT
[ -x bench/token_source ] || { echo "control_cost.sh: bench/token_source not built (run make in the build directory)" >&2; exit 2; }
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
# The client, its pollers and the stand-in server on the first CPU; the
# source alone on the second, so what the API costs lands on the client
# and not on the source's timing.
cpus=$(taskset -pc $$ | sed 's/.*: //')
cpu_client=$(echo "$cpus" | cut -d, -f1 | cut -d- -f1)
cpu_source=$(echo "$cpus" | awk -F'[,-]' '{print $2 != "" ? $2 : $1}')
# An exact-timing source (bench/token_source: every token in its own write
# at its scheduled time, its own lateness logged), started for each run.
source_start() {
	# Gone first: the last source's port must not be read before the new
	# one has truncated the file.
	rm -f "$out/port"
	taskset -c "$cpu_source" bench/token_source -t 64 -f 50 -i 10 -l "$out/lag" >"$out/port" 2>/dev/null &
	srcpid=$!
	for _ in $(seq 100); do grep -q port "$out/port" 2>/dev/null && break; sleep 0.05; done
	sim=127.0.0.1:$(awk '/^port/ {print $2}' "$out/port")
}
source_stop() {
	kill -TERM "$srcpid"; wait "$srcpid" || true; srcpid=
	sed 's/^source: //' "$out/lag" >>"$out/lags.$1"
}
# The stand-in the run without the API is polled on: files of a status
# document's and an exposition's size.
mkdir -p "$out/www/v1"
head -c 30000 /dev/zero | tr '\0' x >"$out/www/v1/status"
head -c 25000 /dev/zero | tr '\0' x >"$out/www/metrics"
(cd "$out/www" && exec taskset -c "$cpu_client" python3 -u -m http.server 0 --bind 127.0.0.1) >"$out/www.log" 2>&1 &
wwwpid=$!
for _ in $(seq 100); do grep -q "Serving HTTP" "$out/www.log" && break; sleep 0.1; done
www=http://127.0.0.1:$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$out/www.log" | head -1)

cat >"$out/poll.py" <<'PY'
import http.client, os, sys, time, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
pid = int(sys.argv[2])
conns = {}
def get(path):
    for _ in range(2):
        c = conns.get(path) or http.client.HTTPConnection(u.hostname, u.port, timeout=5)
        conns[path] = c
        try:
            c.request("GET", path)
            c.getresponse().read()
            return
        except Exception:
            c.close()
            conns.pop(path, None)
n = 0
while True:
    try:
        os.kill(pid, 0)
    except OSError:
        break
    get("/v1/status")
    if n % 4 == 0:
        get("/metrics")
    n += 1
    time.sleep(0.25)
PY

# one MODE ROUND: a run; prints "itl_p99_ms cpu_s wall_s".
one() {
	local mode=$1 r=$2 args=() poller=
	[ "$mode" = api ] && args=(--listen 127.0.0.1:0)
	source_start
	/usr/bin/time -f "%U %S %e" -o "$out/time.$mode.$r" taskset -c "$cpu_client" \
		"$bin" --no-tui --api completions -m bench -c "$streams" -n "$requests" --output-tokens 64 \
		--metrics-url none "${args[@]}" -o "$out/r.$mode.$r.json" "http://$sim" >/dev/null 2>"$out/err.$mode.$r" &
	local pid=$!
	local api=$www
	if [ "$mode" = api ]; then
		for _ in $(seq 200); do
			api=$(sed -n 's/.*control API on \(http:[^ ]*\).*/\1/p' "$out/err.$mode.$r" | head -1)
			[ -n "$api" ] && break
			sleep 0.01
		done
	fi
	# The pollers, as Prometheus and a dashboard poll: one connection each,
	# kept alive (no process started per poll, which was most of their CPU).
	taskset -c "$cpu_client" python3 "$out/poll.py" "$api" "$pid" &
	poller=$!
	wait $pid
	[ -n "$poller" ] && wait $poller
	source_stop "$mode" >/dev/null
	local itl cpu wall
	[ "$mode" = api ] && sed -n 's/^infertop: control API: \([0-9]*\) requests answered, \([0-9.]*\) ms of CPU.*longest turn \([0-9.]*\) ms.*/\1 \2 \3/p' \
		"$out/err.$mode.$r" >>"$out/own"
	itl=$(jq '.p99_itl_ms' "$out/r.$mode.$r.json")
	read -r u s wall <"$out/time.$mode.$r"
	cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
	echo "$itl $cpu $wall"
}

for r in $(seq "$rounds"); do
	one plain "$r" >>"$out/plain"
	one api "$r" >>"$out/api"
done
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
pi=$(cut -d' ' -f1 "$out/plain" | median)
ai=$(cut -d' ' -f1 "$out/api" | median)
pc=$(cut -d' ' -f2 "$out/plain" | median)
ac=$(cut -d' ' -f2 "$out/api" | median)
pw=$(cut -d' ' -f3 "$out/plain" | median)
printf 'control API cost at %d streams, %d requests, median of %d rounds\n' "$streams" "$requests" "$rounds"
printf '  ITL p99   without %.2f ms  with %.2f ms  change %+.2f ms   (target <= 0.5 ms)\n' "$pi" "$ai" \
	"$(awk -v a="$ai" -v b="$pi" 'BEGIN { print a - b }')"
printf '  CPU       without %.2f s   with %.2f s   change %+.2f s over %.1f s = %+.2f%% of a core   (target <= 1%%)\n' \
	"$pc" "$ac" "$(awk -v a="$ac" -v b="$pc" 'BEGIN { print a - b }')" "$pw" \
	"$(awk -v a="$ac" -v b="$pc" -v w="$pw" 'BEGIN { print 100 * (a - b) / w }')"
# Each round's pair (with minus without, run back to back) cancels the
# machine's drift between rounds: their median, and their spread.
paste -d' ' "$out/api" "$out/plain" | awk '{ print $1 - $4 }' >"$out/diff"
printf '  ITL p99 change per round (with - without, run back to back): median %+.2f ms, from %+.2f to %+.2f ms\n' \
	"$(median <"$out/diff")" "$(sort -n "$out/diff" | head -1)" "$(sort -n "$out/diff" | tail -1)"
# The last run's two lines: every write's lateness, then the last tokens'.
printf '  the source (its own lateness, every run): without API: %s\n' "$(tail -2 "$out/lags.plain" | paste -sd';')"
printf '                                                 with API: %s\n' "$(tail -2 "$out/lags.api" | paste -sd';')"
# The API's own account, per round: requests, CPU ms, longest turn ms.
ocpu=$(cut -d' ' -f2 "$out/own" | median)
oreq=$(cut -d' ' -f1 "$out/own" | median)
oturn=$(sort -n -k3 "$out/own" | tail -1 | cut -d' ' -f3)
printf '  the API on the loop: %s requests, %.1f ms of CPU over %.1f s = %.2f%% of a core (median); longest turn %.2f ms of CPU (worst round)\n' \
	"$oreq" "$ocpu" "$pw" "$(awk -v c="$ocpu" -v w="$pw" 'BEGIN { print c / 10 / w }')" "$oturn"
