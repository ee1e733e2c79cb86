#!/bin/bash
# Instructions a token, counted: the figure of bench/token_cost.sh that a
# busy machine cannot blur. valgrind's callgrind counts the instructions a
# process runs, not seconds, so the same binary on the same input gives the
# same count whatever else the machine is doing (CPU figures of one run
# spread by 1.5x on a shared machine). bench/token_source serves STREAMS
# streams (10) of TOKENS tokens (100), one write a token; each client runs
# twice, with ROUNDS1 (2) and ROUNDS2 (6) requests a stream; what the
# second run adds, over the tokens it adds, is what a token costs, start-up,
# connecting, handshakes and the result file left out. The clients:
# bench/floor_reader (the floor; with TLS the bare OpenSSL reader) and
# infertop, over http and over https (a throwaway self-signed certificate,
# infertop -k).
#   bench/token_instr.sh [STREAMS]   (run from the build directory)
# Under valgrind a client runs ~50x slower: at 10 streams x 100 tokens/s
# it still keeps up (each read still one record). What it does not give:
# the kernel's share (sys time) and wake-ups, which bench/token_cost.sh
# measures in seconds.
set -eu
bin=${INFERTOP_BIN:-./infertop}
streams=${1:-10}
tokens=${TOKENS:-100}
r1=${ROUNDS1:-2}
r2=${ROUNDS2:-6}
case $streams in ''|*[!0-9]*|0) echo "token_instr.sh: STREAMS must be a whole number, 1 or more" >&2; exit 2 ;; esac
[ "$r2" -gt "$r1" ] 2>/dev/null || { echo "token_instr.sh: ROUNDS2 must be more than ROUNDS1" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "token_instr.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
command -v openssl >/dev/null || { echo "token_instr.sh: needs the openssl command" >&2; exit 2; }
for p in bench/token_source bench/floor_reader "$bin"; do
	[ -x "$p" ] || { echo "token_instr.sh: $p not built (run make in the build directory)" >&2; exit 2; }
done
if nm "$bin" 2>/dev/null | grep -q __asan_init; then
	echo "token_instr.sh: $bin is built with sanitizers, which valgrind cannot run" >&2
	exit 2
fi
out=$(mktemp -d)
pids=
trap '[ -n "$pids" ] && kill $pids 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
	-keyout "$out/key.pem" -out "$out/cert.pem" >/dev/null 2>&1 ||
	{ echo "token_instr.sh: openssl could not make a certificate" >&2; exit 2; }

# One source for http, one for https, for the whole run; each started in
# this shell (not in $(...), whose pids the trap would never see).
source_start() {  # NAME [ARGS...]: its port in $port
	local name=$1 i=0
	shift
	bench/token_source -t "$tokens" -f 10 -i 10 "$@" >"$out/$name.port" 2>/dev/null &
	pids="$pids $!"
	while ! grep -q port "$out/$name.port" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 100 ] || { echo "token_instr.sh: source did not start" >&2; exit 1; }
		sleep 0.05
	done
	port=$(awk '/^port/ {print $2}' "$out/$name.port")
}
source_start plain
plain=$port
source_start tls -c "$out/cert.pem" -k "$out/key.pem"
tls=$port

# instr CLIENT ARGS...: the instructions one run executes.
instr() {
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" >/dev/null 2>"$out/vg" ||
		{ echo "token_instr.sh: $* failed:" >&2; tail -5 "$out/vg" >&2; exit 1; }
	awk '/Collected :/ {print $NF}' "$out/vg"
}
floor() {  # ROUNDS [-s]: floor_reader, plain or TLS
	local n=$(($1 * streams))
	instr bench/floor_reader ${2:-} -p "$([ -n "${2:-}" ] && echo "$tls" || echo "$plain")" \
		-c "$streams" -n "$n" -t "$tokens" -f 10 -i 10
}
client() {  # ROUNDS URL [ARGS...]
	local n=$(($1 * streams)) url=$2
	shift 2
	instr "$bin" -q --no-tui --api completions -m bench -c "$streams" -n "$n" --output-tokens "$tokens" \
		--metrics-url none -o "$out/r.json" "$@" "$url"
}
added=$(((r2 - r1) * streams * tokens))
per() {  # A B: (B - A) / the tokens the second run adds
	awk -v a="$1" -v b="$2" -v t="$added" 'BEGIN { printf "%.0f", (b - a) / t }'
}
echo "instructions a token (callgrind): $streams streams x $tokens tokens, one write a token;"
echo "what $r2 requests a stream add over $r1 ($added tokens), start-up and handshakes left out"
fp=$(per "$(floor "$r1")" "$(floor "$r2")")
# The path the last run took, from its result.
transport() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["infertop"]["options"].get("transport","?"))' \
		"$out/r.json" 2>/dev/null || echo '?'
}
ip=$(per "$(client "$r1" "http://127.0.0.1:$plain")" "$(client "$r2" "http://127.0.0.1:$plain")")
tp=$(transport)
ft=$(per "$(floor "$r1" -s)" "$(floor "$r2" -s)")
it=$(per "$(client "$r1" "https://127.0.0.1:$tls" -k)" "$(client "$r2" "https://127.0.0.1:$tls" -k)")
tt=$(transport)
printf '  %-22s %10s %10s\n' '' http https
printf '  %-22s %10s %10s\n' floor "$fp" "$ft"
printf '  %-22s %10s %10s\n' infertop "$ip" "$it"
printf '  %-22s %10s %10s\n' "  its transport" "$tp" "$tt"
awk -v a="$ip" -v b="$fp" -v c="$it" -v d="$ft" \
	'BEGIN { printf "  infertop / floor        %9.2fx %9.2fx   (target over TLS: total <= 1.25x)\n", a / b, c / d
		 printf "  infertop above the floor %9d %10d   (instructions a token: our parsing, stamps, loop)\n", a - b, c - d }'
