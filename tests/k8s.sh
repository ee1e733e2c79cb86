#!/bin/sh
# deploy/ as a cluster and a container runtime would read it, without
# either: the kustomization rendered (kubectl kustomize, offline; without
# kubectl the listed files as they are) and its fields checked
# (tests/k8s_check.py: the Indexed Job, the env each pod needs, the
# Service's selector and port, the image's entrypoint, non-root user,
# health check, the build stage's package list, the runtime libraries).
# Then the image's ENTRYPOINT and health check are run here as a pod
# would: only the address is loopback instead of 0.0.0.0.
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
set -u
. "$(dirname "$0")/check_lib.sh"
py=python3
command -v $py >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
$py -c 'import yaml' 2>/dev/null || { echo "SKIP: no python3-yaml (./install-deps.sh installs it)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
k8s=$INFERTOP_SRCDIR/deploy/k8s
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT

if command -v kubectl >/dev/null 2>&1; then
	kubectl kustomize "$k8s" >"$tmp/all.yaml" 2>"$tmp/kustomize.err"
	check "kubectl kustomize deploy/k8s renders ($(head -1 "$tmp/kustomize.err"))" $?
else
	echo "note: no kubectl: checking the listed files without kustomize"
	for f in $(sed -n 's/^  - \([a-z-]*\.yaml\)$/\1/p' "$k8s/kustomization.yaml"); do
		cat "$k8s/$f"
		echo "---"
	done >"$tmp/all.yaml"
fi
$py "$INFERTOP_SRCDIR/tests/k8s_check.py" "$tmp/all.yaml" "$INFERTOP_SRCDIR" "$INFERTOP_BIN"
check "the manifests' and the Containerfile's fields" $?

# The entrypoint (and the Job's args) run as the pod runs them.
$py -c '
import json, re, sys, yaml
text = open(sys.argv[1]).read()
entry = json.loads(re.search(r"^ENTRYPOINT\s+(\[.*\])\s*$", text, re.M).group(1))
job = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d and d["kind"] == "Job"][0]
args = job["spec"]["template"]["spec"]["containers"][0].get("args", [])
for a in entry[1:] + args:
    print(a)
' "$INFERTOP_SRCDIR/deploy/Containerfile" "$tmp/all.yaml" >"$tmp/argv"
check "the entrypoint and the pod's args read" $?
mkdir "$tmp/results"
# start_serve ARGV-FILE [VAR=VALUE...]: the argv of the file (one word a
# line, none with spaces), loopback for 0.0.0.0 and a temporary results
# directory, started in the background; its port in $port.
start_serve() {
	f=$1
	shift
	: >"$tmp/err"
	# shellcheck disable=SC2046 # one word a line
	env "$@" "$INFERTOP_BIN" $(sed -e 's/^0\.0\.0\.0:8080$/127.0.0.1:0/' \
		-e "s|^/var/lib/infertop/results$|$tmp/results|" "$f") >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	wait_for "$tmp/err" "control API on"
	port=$(sed -n 's/^infertop: control API on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$tmp/err")
	[ -n "$port" ]
}
token=k8s-test-token-$$
start_serve "$tmp/argv" INFERTOP_TOKEN=$token JOB_COMPLETION_INDEX=2 INFERTOP_SLICE_COUNT=3
check "infertop $(tr '\n' ' ' <"$tmp/argv")starts (port $port)" $?
grep -q "every run takes slice 2/3" "$tmp/err"
check "as pod 2 of an Indexed Job of 3, it takes slice 2/3" $?

INFERTOP_TOKEN=$token INFERTOP_PORT=$port sh "$INFERTOP_SRCDIR/deploy/healthcheck.sh" >"$tmp/hc" 2>&1
check "the health check passes with the Secret's token" $?
INFERTOP_TOKEN=wrong-$token INFERTOP_PORT=$port sh "$INFERTOP_SRCDIR/deploy/healthcheck.sh" >>"$tmp/hc" 2>&1
rc=$?
# The Job opens GETs (--listen-metrics-open), so /healthz answers anyway;
# without it a wrong token must fail the check.
if grep -q -- "--listen-metrics-open" "$tmp/argv"; then
	[ $rc -eq 0 ]
	check "with GETs open, /healthz answers a wrong token too" $?
fi
kill $pid
wait $pid 2>/dev/null
pid=
grep -v -- "--listen-metrics-open" "$tmp/argv" >"$tmp/argv2"
start_serve "$tmp/argv2" INFERTOP_TOKEN=$token
check "the image's own entrypoint starts (port $port)" $?
INFERTOP_TOKEN=$token INFERTOP_PORT=$port sh "$INFERTOP_SRCDIR/deploy/healthcheck.sh" >>"$tmp/hc" 2>&1
check "the image's own entrypoint (GETs closed): healthy with the token" $?
INFERTOP_TOKEN=wrong-$token INFERTOP_PORT=$port sh "$INFERTOP_SRCDIR/deploy/healthcheck.sh" >>"$tmp/hc" 2>&1
[ $? -ne 0 ]
check "... and unhealthy with a wrong one" $?
INFERTOP_PORT=$port sh "$INFERTOP_SRCDIR/deploy/healthcheck.sh" >>"$tmp/hc" 2>&1
[ $? -ne 0 ]
check "... and without one" $?
! grep -q "$token" "$tmp/hc" "$tmp/err" "$tmp/out"
check "the token is in no output" $?

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all deploy checks passed"
