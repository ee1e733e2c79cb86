#!/bin/bash
# The cost of one token, against the floor. bench/token_source sends every
# token in its own write (as a loaded server does), on CPU 1; the client runs
# pinned to CPU 0: first bench/floor_reader (a bare epoll reader that only
# counts `data:` lines: the kernel's floor), then infertop on the same load.
# For each stream count it prints CPU per token (user, sys), infertop's
# ratio to the floor, and TTFT/E2E/ITL against the source's schedule, next
# to the source's own lateness so a late source is not blamed on a client;
# the E2E error is also given less the source's last-token lateness.
#   bench/token_cost.sh [STREAMS ...]     (run from the build directory;
#                                          default 100 500 1000)
# With ROUNDS > 1 infertop also runs one round alone, and what the other
# rounds add is printed as its steady-state cost per token.
# TOKENS (100), ITL_MS (10), TTFT_MS (10), ROUNDS (3 requests per stream)
# and INFERTOP_ARGS may be set in the environment.
set -eu
bin=${INFERTOP_BIN:-./infertop}
tokens=${TOKENS:-100}
itl=${ITL_MS:-10}
ttft=${TTFT_MS:-10}
rounds=${ROUNDS:-3}
[ $# -gt 0 ] || set -- 100 500 1000
for p in bench/token_source bench/floor_reader "$bin"; do
	[ -x "$p" ] || { echo "token_cost.sh: $p not built (run make in the build directory)" >&2; exit 2; }
done
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
out=$(mktemp -d)
srcpid=
trap '[ -n "$srcpid" ] && kill $srcpid 2>/dev/null; rm -rf "$out"' EXIT

# The two CPUs: the client on the first, the source on the second.
cpus=$(taskset -pc $$ | sed 's/.*: //')
cpu_client=$(echo "$cpus" | cut -d, -f1 | cut -d- -f1)
cpu_source=$(echo "$cpus" | awk -F'[,-]' '{print $2 != "" ? $2 : $1}')

source_start() {
	taskset -c "$cpu_source" bench/token_source -t "$tokens" -f "$ttft" -i "$itl" \
		-l "$out/lag" >"$out/port" 2>/dev/null &
	srcpid=$!
	local i=0
	while ! grep -q port "$out/port" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 100 ] || { echo "token_cost.sh: source did not start" >&2; exit 1; }
		sleep 0.05
	done
	port=$(awk '{print $2}' "$out/port")
}
source_stop() {   # not in $(...): a subshell cannot wait for the source
	kill -TERM "$srcpid"; wait "$srcpid" || true; srcpid=
	sed 's/^source: //' "$out/lag" >"$out/lag.$1"
}

printf 'per-token cost: %s tokens per request, first after %s ms, then every %s ms, one write each\n' \
	"$tokens" "$ttft" "$itl"
printf 'client on CPU %s, source on CPU %s\n\n' "$cpu_client" "$cpu_source"
for streams in "$@"; do
	requests=$((streams * rounds))
	source_start
	taskset -c "$cpu_client" bench/floor_reader -p "$port" -c "$streams" -n "$requests" \
		-t "$tokens" -f "$ttft" -i "$itl" >"$out/floor"
	source_stop floor

	source_start
	TIMEFORMAT='%3U %3S'
	{ time taskset -c "$cpu_client" "$bin" -q --no-tui --api completions -m bench \
		-c "$streams" -n "$requests" --output-tokens "$tokens" --metrics-url none \
		${INFERTOP_ARGS:-} -o "$out/r.json" "http://127.0.0.1:$port" >/dev/null 2>"$out/err"; } 2>"$out/time"
	source_stop infertop

	# The same with one round: what the rounds after the first add is the
	# steady state's cost per token (start-up, connecting and the result
	# file left out, as over a long run).
	if [ "$rounds" -gt 1 ]; then
		source_start
		{ time taskset -c "$cpu_client" "$bin" -q --no-tui --api completions -m bench \
			-c "$streams" -n "$streams" --output-tokens "$tokens" --metrics-url none \
			${INFERTOP_ARGS:-} -o "$out/r1.json" "http://127.0.0.1:$port" >/dev/null 2>>"$out/err"; } 2>"$out/time1"
		source_stop one
	fi

	python3 - "$out/floor" "$out/r.json" "$out/time" "$streams" "$tokens" "$ttft" "$itl" \
		"$(cat "$out/lag.floor")" "$(cat "$out/lag.infertop")" "$out/r1.json" "$out/time1" <<'PY'
import json, os, sys
floor = dict(kv.split("=") for kv in open(sys.argv[1]).read().split()[1:])
r = json.load(open(sys.argv[2]))
user, sysc = map(float, open(sys.argv[3]).read().split()[-2:])
streams, tokens = int(sys.argv[4]), int(sys.argv[5])
ttft, itl = float(sys.argv[6]), float(sys.argv[7])
e2e_truth = ttft + (tokens - 1) * itl
tok = max(r["total_output_tokens"], 1)
fu, fs = float(floor["user_us_per_token"]), float(floor["sys_us_per_token"])
iu, isy = user * 1e6 / tok, sysc * 1e6 / tok
print(f"{streams} streams, {r['completed']} requests ({r['failed']} failed), {tok} tokens")
print(f"  {'':10} {'user us/tok':>11} {'sys us/tok':>10} {'TTFT p50 err':>12} {'E2E p50 err':>11} {'ITL p99':>8}")
print(f"  {'floor':10} {fu:11.3f} {fs:10.3f} {float(floor['ttft_p50_err_ms']):+10.2f}ms "
      f"{float(floor['e2e_p50_err_ms']):+9.2f}ms {float(floor['itl_p99_ms']):6.2f}ms")
print(f"  {'infertop':10} {iu:11.3f} {isy:10.3f} {r['median_ttft_ms'] - ttft:+10.2f}ms "
      f"{r['median_e2el_ms'] - e2e_truth:+9.2f}ms {r['p99_itl_ms']:6.2f}ms")
print(f"  ratio to the floor: user {iu / fu if fu else float('inf'):.2f}x, "
      f"total {(iu + isy) / (fu + fs) if fu + fs else float('inf'):.2f}x   (targets: user <= 1 us/token, total <= 1.25x)")
src_f, src_i = sys.argv[8].splitlines(), sys.argv[9].splitlines()
print(f"  source lateness with floor:    {src_f[0]}")
print(f"  source lateness with infertop: {src_i[0]}")
# The source's own share of infertop's E2E: its last token's lateness.
last = [float(x) for x in src_i[1].split("p50 ")[1].split(" ms")[:1]] if len(src_i) > 1 else [0.0]
if os.path.exists(sys.argv[10]) and os.path.exists(sys.argv[11]):
    r1 = json.load(open(sys.argv[10]))
    u1, s1 = map(float, open(sys.argv[11]).read().split()[-2:])
    dt = r["total_output_tokens"] - r1["total_output_tokens"]
    if dt > 0:
        print(f"  infertop steady state (what the rounds after the first add): user {(user - u1) * 1e6 / dt:.3f} "
              f"sys {(sysc - s1) * 1e6 / dt:.3f} us/token")
print(f"  infertop's E2E p50 error less the source's last-token lateness p50 ({last[0]:.3f} ms): "
      f"{r['median_e2el_ms'] - e2e_truth - last[0]:+.2f} ms   (target within 2 ms)")
PY
	echo
done
