#!/bin/sh
# Arrival stamps on the direct path are the kernel's receive times: a client
# that is stopped (SIGSTOP) for less than a token's gap, as a busy or
# batching loop is, still measures the gaps the server made. (A read that
# holds several tokens stamps them all with its newest bytes' time: a stall
# longer than a gap still shows.) The same run with libcurl, whose stamps
# are taken when the bytes are handed over, is the control: there the
# stalls must show as long gaps, or they did not land while streaming.
# The direct path over TLS keeps the stamps too.
: "${INFERTOP_BIN:?}"
set -u
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -CONT $pid 2>/dev/null; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check_lib.sh"
sim="--sim-arg --timing --sim-arg fixed --sim-arg --ttft --sim-arg 20ms --sim-arg --itl --sim-arg 200ms"

# 4 streams, one request each of 28 tokens 200 ms apart: 5.4 s of
# streaming; the client is stopped for 150 ms eight times in it.
stalled_run() { # label, extra args
	# shellcheck disable=SC2086
	"$INFERTOP_BIN" --demo $sim --no-tui -q -c 4 -n 4 --output-tokens 28 --save-detailed \
		$2 -o "$tmp/$1.json" >/dev/null 2>"$tmp/$1.err" &
	pid=$!
	sleep 1
	for _ in 1 2 3 4 5 6 7 8; do
		kill -STOP $pid 2>/dev/null
		sleep 0.15
		kill -CONT $pid 2>/dev/null
		sleep 0.4
	done
	wait $pid
	rc=$?
	pid=
	return $rc
}

# Gaps over 260 ms (truth 200 ms: a token that came early in a stall is
# stamped up to 150 ms late by a client's own clock; a loaded simulator
# runs late by tens of ms at worst) among the requests' gaps.
long_gaps() {
	python3 - "$tmp/$1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["completed"] == 4, d["completed"]
print(sum(1 for g in d["itls"] for x in g if x > 0.260))
PY
}

stalled_run direct "--http-client direct"
check "direct run (exit $?)" $?
n=$(long_gaps direct)
check "direct: no gap over 260 ms though stopped 8 x 150 ms (found ${n:-?})" "$([ "${n:-1}" -eq 0 ]; echo $?)"

# Over TLS (the simulator with a certificate, the direct path's own TLS
# session): the ciphertext's reads keep their kernel stamps.
if command -v openssl >/dev/null 2>&1; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
		-keyout "$tmp/k.pem" -out "$tmp/c.pem" >/dev/null 2>&1
	stalled_run tls "-k --sim-arg --tls-cert --sim-arg $tmp/c.pem --sim-arg --tls-key --sim-arg $tmp/k.pem"
	check "direct over TLS run (exit $?)" $?
	grep -q '"transport":[[:space:]]*"direct+tls"' "$tmp/tls.json"
	check "the TLS run went over the direct path's TLS" $?
	n=$(long_gaps tls)
	check "direct+tls: no gap over 260 ms though stopped 8 x 150 ms (found ${n:-?})" "$([ "${n:-1}" -eq 0 ]; echo $?)"
else
	echo "note: no openssl command: the TLS run is left out"
fi

stalled_run curl "--http-client curl"
check "curl run (exit $?)" $?
n=$(long_gaps curl)
check "control, curl: the stalls show as gaps over 260 ms (found ${n:-?})" "$([ "${n:-0}" -ge 3 ]; echo $?)"

[ "$fails" -eq 0 ]
