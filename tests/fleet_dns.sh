#!/bin/sh
# --discover dns:NAME:PORT as a Kubernetes headless Service looks to the
# fleet: one name, one address per generator. The name comes from a hosts
# file bind-mounted over /etc/hosts in a private mount namespace (unshare
# -m: root only, else skipped), so nothing outside the test changes. Three
# loopback addresses give three generators; a fourth address added while
# the fleet runs is picked up by the next resolution. --expect waits for
# a generator whose address comes later.
: "${INFERTOP_BIN:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill -9 $p 2>/dev/null; done; rm -rf "$tmp"' EXIT
printf '127.0.0.1 localhost\n' >"$tmp/hosts"
if ! unshare -m sh -c "mount --bind '$tmp/hosts' /etc/hosts" 2>/dev/null; then
	echo "SKIP: cannot make a private mount namespace (unshare -m needs root)"
	exit 77
fi
wait_for() { # FILE PATTERN [TRIES of 0.1 s]
	i=0
	while [ $i -lt "${3:-100}" ] && ! grep -q -- "$2" "$1" 2>/dev/null; do i=$((i + 1)); sleep 0.1; done
	grep -q -- "$2" "$1" 2>/dev/null
}

"$INFERTOP_BIN" sim --listen 127.0.0.1:0 --timing fixed --ttft 20ms --itl 5ms >"$tmp/sim.out" 2>"$tmp/sim.err" &
pids="$pids $!"
wait_for "$tmp/sim.out" "listening on"
simport=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim.out")

# gen N ADDR:PORT: a generator listening there.
gen() {
	"$INFERTOP_BIN" --no-tui -q --listen "$2" -c 1 -d 120s --output-tokens 10 --metrics-url none \
		"http://127.0.0.1:$simport" >"$tmp/g$1.out" 2>"$tmp/g$1.err" &
	pids="$pids $!"
	wait_for "$tmp/g$1.err" "control API on"
}
gen 2 127.0.0.2:0
port=$(sed -n 's/^infertop: control API on http:[^ ]*:\([0-9]*\).*/\1/p' "$tmp/g2.err")
[ -n "$port" ]
check "a generator on 127.0.0.2 (port $port)" $?
gen 3 "127.0.0.3:$port"
gen 4 "127.0.0.4:$port"
grep -q "control API on" "$tmp/g3.err" && grep -q "control API on" "$tmp/g4.err"
check "two more on 127.0.0.3 and 127.0.0.4, the same port" $?
printf '127.0.0.2 gens.test\n127.0.0.3 gens.test\n127.0.0.4 gens.test\n' >>"$tmp/hosts"

unshare -m sh -c "mount --bind '$tmp/hosts' /etc/hosts && exec '$INFERTOP_BIN' fleet --discover dns:gens.test:$port \
	--no-tui --interval 200ms" >"$tmp/f.out" 2>"$tmp/f.err" &
fpid=$!
pids="$pids $fpid"
wait_for "$tmp/f.err" "(3 up"
check "three addresses: three generators" $?
n=$(grep -c "infertop fleet: 127.0.0.[234]:$port: run " "$tmp/f.err")
[ "$n" -eq 3 ]
check "one row per address ($n)" $?

# A pod comes: its address is in the next answer (within 5 s).
gen 5 "127.0.0.5:$port"
printf '127.0.0.5 gens.test\n' >>"$tmp/hosts"
wait_for "$tmp/f.err" "(4 up" 150
check "an address added later is picked up by the next resolution" $?

kill -INT "$fpid"
wait "$fpid"
check "Ctrl-C ends the fleet with status 0" $?

# A fleet pod that starts before its generators' pods: --expect 2 waits
# while the Service has one address, and the run starts on both once the
# second pod's address is in a resolution.
"$INFERTOP_BIN" serve --listen 127.0.0.6:0 --results-dir "$tmp" >"$tmp/s6.out" 2>"$tmp/s6.err" &
pids="$pids $!"
wait_for "$tmp/s6.err" "control API on"
sport=$(sed -n 's/^infertop: control API on http:[^ ]*:\([0-9]*\).*/\1/p' "$tmp/s6.err")
printf '127.0.0.6 late.test\n' >>"$tmp/hosts"
unshare -m sh -c "mount --bind '$tmp/hosts' /etc/hosts && exec '$INFERTOP_BIN' fleet --discover dns:late.test:$sport \
	--expect 2 --expect-timeout 60s --no-tui --interval 200ms -o '$tmp/late.json' --start -c 4 -d 2s --output-tokens 8 --metrics-url none \
	http://127.0.0.1:$simport" >"$tmp/l.out" 2>"$tmp/l.err" &
lpid=$!
pids="$pids $lpid"
wait_for "$tmp/l.err" "waiting for 2 generators"
check "--expect 2 over a Service with one address: the fleet waits" $?
"$INFERTOP_BIN" serve --listen "127.0.0.7:$sport" --results-dir "$tmp" >"$tmp/s7.out" 2>"$tmp/s7.err" &
pids="$pids $!"
wait_for "$tmp/s7.err" "control API on"
printf '127.0.0.7 late.test\n' >>"$tmp/hosts"
wait "$lpid"
st=$?
[ $st -eq 0 ] && [ "$(grep -c ": run [0-9a-f]\{32\}$" "$tmp/l.err")" -eq 2 ] &&
	grep -q '"generators_planned":[[:space:]]*2' "$tmp/late.json"
check "the second pod's address comes: the run starts on both, exit 0 ($st)" $?
[ "$fails" -eq 0 ]
