#!/bin/bash
# The cost of one token, against the floor. bench/token_source sends every
# token in its own write (as a loaded server does), on CPU 1; the client runs
# pinned to CPU 0: first bench/floor_reader (a bare epoll reader that only
# counts `data:` lines: the kernel's floor), then infertop on the same load.
# For each stream count it prints CPU per token (user, sys), infertop's
# ratio to the floor, and TTFT/E2E/ITL against the source's schedule, each
# beside the lateness (p50/p99/max) of the source that fed it: a figure
# whose source was more than 10 ms late at p99 (late sources bunch tokens
# into fewer reads, and every client looks cheaper), or that is negative
# (only noise gives that), is marked INVALID. The E2E error is also given
# less the source's last-token lateness (bench/token_cost_report.py).
#   bench/token_cost.sh [--tls] [STREAMS ...]   (run from the build directory;
#                                                default 100 500 1000)
# --tls (or TLS=1): a throwaway self-signed certificate (openssl), the source
# serves https, the floor is the TLS floor (a bare OpenSSL epoll reader,
# its streams started spread over one ITL as a client's one-by-one
# handshakes spread them: floor_reader -S),
# infertop runs with -k as it would on https (the result's `transport`
# says which path it took), and infertop --http-client curl beside it as
# the control.
# With ROUNDS > 1 infertop also runs one round alone, and what the other
# rounds add is printed as its steady-state cost per token.
# REPEAT=N runs the whole set N times in turn (floor, infertop, ...; again)
# and prints each figure's median, each ratio the median of the runs' own
# (the floor's clock starts after its handshakes: the whole run is held
# against its whole process, the steady state against its clock). One
# run's CPU figures on a shared machine spread by 1.5x; quote REPEAT=5.
# TOKENS (100), ITL_MS (10), TTFT_MS (10), ROUNDS (3 requests per stream),
# REPEAT (1) and INFERTOP_ARGS may be set in the environment. STOP_SOURCE_MS=N stops
# the source (SIGSTOP) for N ms a quarter into each run's first stream: the
# self-check that a late source is caught (every figure must then read
# INVALID).
set -eu
bin=${INFERTOP_BIN:-./infertop}
here=$(dirname "$0")
tokens=${TOKENS:-100}
itl=${ITL_MS:-10}
ttft=${TTFT_MS:-10}
rounds=${ROUNDS:-3}
repeat=${REPEAT:-1}
case $repeat in ''|*[!0-9]*|0) echo "token_cost.sh: REPEAT must be a whole number of runs, 1 or more" >&2; exit 2 ;; esac
tls=${TLS:-0}
[ "${1:-}" = --tls ] && { tls=1; shift; }
[ $# -gt 0 ] || set -- 100 500 1000
for p in bench/token_source bench/floor_reader "$bin"; do
	[ -x "$p" ] || { echo "token_cost.sh: $p not built (run make in the build directory)" >&2; exit 2; }
done
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
out=$(mktemp -d)
srcpid=
stoppid=
# The source writes its report as it ends: wait for it before removing $out.
trap '[ -n "$stoppid" ] && kill $stoppid 2>/dev/null
[ -n "$srcpid" ] && { kill -CONT $srcpid; kill $srcpid; wait $srcpid; } 2>/dev/null
rm -rf "$out"' EXIT

scheme=http
src_tls=
floor_tls=
client_tls=
if [ "$tls" = 1 ]; then
	command -v openssl >/dev/null || { echo "token_cost.sh: --tls needs the openssl command" >&2; exit 2; }
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
		-keyout "$out/key.pem" -out "$out/cert.pem" >/dev/null 2>&1 ||
		{ echo "token_cost.sh: openssl could not make a certificate" >&2; exit 2; }
	scheme=https
	src_tls="-c $out/cert.pem -k $out/key.pem"
	floor_tls="-s -S"
	client_tls=-k
fi

# The two CPUs: the client on the first, the source on the second.
cpus=$(taskset -pc $$ | sed 's/.*: //')
cpu_client=$(echo "$cpus" | cut -d, -f1 | cut -d- -f1)
cpu_source=$(echo "$cpus" | awk -F'[,-]' '{print $2 != "" ? $2 : $1}')

source_start() {
	# Gone first: the last source's port must not be read before the new
	# one has truncated the file.
	rm -f "$out/lag" "$out/port"
	# shellcheck disable=SC2086
	taskset -c "$cpu_source" bench/token_source -t "$tokens" -f "$ttft" -i "$itl" $src_tls \
		-l "$out/lag" >"$out/port" 2>/dev/null &
	srcpid=$!
	local i=0
	while ! grep -q port "$out/port" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 100 ] || { echo "token_cost.sh: source did not start" >&2; exit 1; }
		sleep 0.05
	done
	port=$(awk '/^port/ {print $2}' "$out/port")
	# The self-check: a source stopped mid-run (a quarter into the first
	# stream, once the source says one has started) is late by the stop.
	if [ -n "${STOP_SOURCE_MS:-}" ]; then
		(i=0
		 while ! grep -q streaming "$out/port" && [ $i -lt 400 ]; do i=$((i + 1)); sleep 0.05; done
		 sleep "$(awk -v t="$ttft" -v i="$itl" -v n="$tokens" 'BEGIN { print (t + n * i) / 4000 }')"
		 kill -STOP "$srcpid"; sleep "$(awk -v s="$STOP_SOURCE_MS" 'BEGIN { print s / 1000 }')"
		 kill -CONT "$srcpid") &
		stoppid=$!
	fi
}
source_stop() {   # not in $(...): a subshell cannot wait for the source
	[ -n "$stoppid" ] && { wait "$stoppid" || true; stoppid=; }
	kill -TERM "$srcpid"; wait "$srcpid" || true; srcpid=
	sed 's/^source: //' "$out/lag" >"$run/lag.$1" 2>/dev/null || : >"$run/lag.$1"
}
# client RESULT TIMEFILE REQUESTS [ARGS...]: one infertop run, timed.
client() {
	local res=$1 tf=$2 n=$3
	shift 3
	TIMEFORMAT='%3U %3S'
	# shellcheck disable=SC2086
	{ time taskset -c "$cpu_client" "$bin" -q --no-tui --api completions -m bench \
		-c "$streams" -n "$n" --output-tokens "$tokens" --metrics-url none $client_tls \
		${INFERTOP_ARGS:-} "$@" -o "$run/$res" "$scheme://127.0.0.1:$port" >/dev/null 2>"$out/err"; } 2>"$run/$tf" ||
		{ local rc=$?; echo "token_cost.sh: infertop $* ended with status $rc:" >&2; tail -5 "$out/err" >&2; exit 1; }
}

printf 'per-token cost: %s tokens per request, first after %s ms, then every %s ms, one write each%s\n' \
	"$tokens" "$ttft" "$itl" "$([ "$tls" = 1 ] && echo ', over TLS (self-signed, -k)')"
printf 'client on CPU %s, source on CPU %s\n\n' "$cpu_client" "$cpu_source"
for streams in "$@"; do
	requests=$((streams * rounds))
	rm -rf "$out"/rep*
	for rep in $(seq 1 "$repeat"); do
		run=$out/rep$rep
		mkdir -p "$run"
		[ "$repeat" -gt 1 ] && printf '%s streams: run %s of %s\n' "$streams" "$rep" "$repeat" >&2
		source_start
		# shellcheck disable=SC2086
		taskset -c "$cpu_client" bench/floor_reader $floor_tls -p "$port" -c "$streams" -n "$requests" \
			-t "$tokens" -f "$ttft" -i "$itl" >"$run/floor" ||
			{ echo "token_cost.sh: bench/floor_reader failed" >&2; exit 1; }
		source_stop floor

		source_start
		client r.json time "$requests"
		source_stop infertop
		# The same with one round: what the rounds after the first add is the
		# steady state's cost per token (start-up, connecting, handshakes and
		# the result file left out, as over a long run).
		if [ "$rounds" -gt 1 ]; then
			source_start
			client r1.json time1 "$streams"
			source_stop one
		fi
		# https: the curl path beside it, the control.
		if [ "$tls" = 1 ]; then
			source_start
			client c.json timec "$requests" --http-client curl
			source_stop curl
			if [ "$rounds" -gt 1 ]; then
				source_start
				client c1.json timec1 "$streams" --http-client curl
				source_stop curl1
			fi
		fi
	done
	python3 "$here/token_cost_report.py" "$out" "$streams" "$tokens" "$ttft" "$itl" "$tls"
	echo
done
