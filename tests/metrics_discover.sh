#!/bin/sh
# --metrics-discover dns:NAME:PORT: every address of a name (a Kubernetes
# headless Service) is a server replica. Three simulators on 127.0.0.1,
# .2 and .3 with one port, and a name that resolves to the three through
# a hosts file bind-mounted over /etc/hosts in a private mount namespace
# (unshare -m, as tests/fleet_dns.sh does: root only, else skipped). The
# run's summed server block equals the sum of the three /metrics (read
# with curl before and after), a fourth address added mid-run becomes a
# replica at the next resolution (every 10 s), and an address removed
# from the answer is marked gone with its counted tokens kept in the sum.
: "${INFERTOP_BIN:?}"
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/check_lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT
printf '127.0.0.1 localhost\n' >"$tmp/hosts"
if ! unshare -m sh -c "mount --bind '$tmp/hosts' /etc/hosts" 2>/dev/null; then
	echo "SKIP: cannot make a private mount namespace (unshare -m needs root)"
	exit 77
fi
wait_long() { # file pattern seconds: a resolution comes every 10 s
	n=0
	while [ $n -lt $(($3 * 10)) ] && ! grep -q "$2" "$1" 2>/dev/null; do n=$((n + 1)); sleep 0.1; done
	grep -q "$2" "$1"
}
sim() { # n listen
	"$INFERTOP_BIN" sim --listen "$2" --timing fixed --ttft 1ms --itl 1ms >"$tmp/sim$1.out" 2>"$tmp/sim$1.err" &
	pids="$pids $!"
	wait_for "$tmp/sim$1.out" "listening on"
}
sim 0 127.0.0.1:0   # the run's own target, not a replica
tgt=http://$(sed -n 's/^listening on //p' "$tmp/sim0.out")
sim 1 127.0.0.1:0
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim1.out")
sim 2 "127.0.0.2:$port"
sim 3 "127.0.0.3:$port"
grep -q "listening on" "$tmp/sim2.out" && grep -q "listening on" "$tmp/sim3.out"
check "three simulators on 127.0.0.1-3, port $port" $?
printf '127.0.0.1 reps.test\n127.0.0.2 reps.test\n127.0.0.3 reps.test\n' >>"$tmp/hosts"

gen() { # addr: generation tokens on its /metrics
	curl -s "http://$1:$port/metrics" | awk '/^vllm:generation_tokens_total/ { g += $NF } END { printf "%d\n", g }'
}
load() { # addr requests output-tokens
	"$INFERTOP_BIN" "http://$1:$port" --no-tui -q -c 2 -n "$2" --output-tokens "$3" --metrics-url none \
		-o "$tmp/l.json" >/dev/null 2>&1
}
load 127.0.0.2 5 7   # totals that do not start at 0
for a in 1 2 3; do gen "127.0.0.$a"; done >"$tmp/before"

unshare -m sh -c "mount --bind '$tmp/hosts' /etc/hosts && exec '$INFERTOP_BIN' '$tgt' --no-tui -c 1 -d 60s \
	--interval 200ms --metrics-interval 200ms --metrics-discover dns:reps.test:$port -o '$tmp/r.json'" \
	>"$tmp/r.out" 2>&1 &
run=$!
pids="$pids $run"
wait_for "$tmp/r.out" "(3 of 3 replicas)"
check "three addresses: three replicas read" $?
load 127.0.0.1 10 8
load 127.0.0.2 20 16
load 127.0.0.3 30 4

# A pod comes: its address is a replica at the next resolution.
sim 4 "127.0.0.4:$port"
printf '127.0.0.4 reps.test\n' >>"$tmp/hosts"
wait_long "$tmp/r.out" "(4 of 4 replicas)" 15
check "an address added mid-run becomes a fourth replica" $?
load 127.0.0.4 6 10
# A pod goes: the name no longer has .3. Its last scrape must come after
# the loads: 1 s is five scrape periods (200 ms), as tests/prometheus.sh
# waits two scrapes after the counts stood still. The hosts file is
# rewritten in place: the bind mount keeps the inode.
sleep 1
for a in 1 2 3 4; do gen "127.0.0.$a"; done >"$tmp/after"
grep -v '^127.0.0.3 ' "$tmp/hosts" >"$tmp/hosts.new"
cat "$tmp/hosts.new" >"$tmp/hosts"
wait_long "$tmp/r.out" "(3 of 4 replicas)" 15
check "an address gone from the answer is no longer read" $?
kill -INT $run
wait $run
st=$?
check "the run ends on Ctrl-C: exit 0 ($st: $(tail -n 2 "$tmp/r.out"))" $st
$py - "$tmp/before" "$tmp/after" "$tmp/r.json" "$port" <<'PY'
import json, sys
b = [int(l) for l in open(sys.argv[1])] + [0]   # .4 started fresh mid-run
a = [int(l) for l in open(sys.argv[2])]
srv = json.load(open(sys.argv[3]))["infertop"]["server"]
gen = [a[i] - b[i] for i in range(4)]
ok = True
def want(what, got, exp):
    global ok
    print(("ok: " if got == exp else "FAIL: ") + "%s: %r, /metrics says %r" % (what, got, exp))
    ok = ok and got == exp
want("loads differ (generated per replica)", len(set(gen)), 4)
want("summed generation tokens", srv["run_totals"]["generation_tokens"], sum(gen))
want("per-replica generation tokens", [r["generation_tokens"] for r in srv["replicas"]], gen)
want("replica URLs", [r["url"] for r in srv["replicas"]],
     ["http://127.0.0.%d:%s/metrics" % (i, sys.argv[4]) for i in (1, 2, 3, 4)])
want("per-replica status", [r["status"] for r in srv["replicas"]], ["up", "up", "down", "up"])
want("the gone one says so", "gone" in (srv["replicas"][2]["error"] or ""), True)
sys.exit(0 if ok else 1)
PY
check "the server block is the exact sum of the four /metrics, the gone one's share kept" $?

# An unresolvable name: no replica, the resolver's error shown, the run
# goes on (a Service with no ready pod yet does not resolve either).
"$INFERTOP_BIN" "$tgt" --no-tui -c 1 -d 1s --interval 200ms --metrics-discover dns:nothing.invalid:80 \
	-o "$tmp/n.json" >"$tmp/n.out" 2>&1
st=$?
[ $st -eq 0 ] && grep -q "server metrics: down (dns:nothing.invalid: " "$tmp/n.out"
check "an unresolvable name: 0 replicas, the resolver's error, exit 0 ($st)" $?
# Bad specs and conflicts are refused at start.
for bad in dns:reps.test dns:reps.test:0 dns:reps.test:65536 reps.test:80 dns::80; do
	"$INFERTOP_BIN" --metrics-discover "$bad" "$tgt" -d 1s >/dev/null 2>"$tmp/err"
	[ $? -eq 2 ] && grep -q "expected dns:NAME:PORT" "$tmp/err"
	check "--metrics-discover $bad: exit 2, says the expected form" $?
done
"$INFERTOP_BIN" --metrics-discover "dns:reps.test:$port" --metrics-url "$tgt/metrics" "$tgt" -d 1s \
	>/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "cannot be combined with --metrics-url" "$tmp/err"
check "--metrics-discover with --metrics-url: refused, naming the conflict" $?
[ "$fails" -eq 0 ]
