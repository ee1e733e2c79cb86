#!/bin/sh
# Runs a built image as a pod of the Indexed Job would, on this machine's
# loopback only: its entrypoint with the Job's environment (index 1 of 3),
# the image's own HEALTHCHECK (healthy with the token, not with a wrong
# one), the user it runs as, and one run against a simulator on the host.
# Not part of `make check`: it needs a container runtime and a built image.
#
#   podman build --format docker -f deploy/Containerfile -t localhost/infertop .
#   deploy/image_check.sh localhost/infertop build/infertop
#
# RUNTIME (default podman) and RUNTIME_ARGS (e.g. "--runtime runc" where
# crun cannot run, such as a hybrid-cgroup host) choose how it is run.
#
# Where no image registry is reachable, the Debian base can be made from
# Debian's packages and named as the Containerfile's FROM:
#   debootstrap --variant=minbase bookworm /tmp/rootfs http://deb.debian.org/debian
#   tar -C /tmp/rootfs -c . | podman import - docker.io/library/debian:bookworm-slim
#   podman build --pull=never --network=host --isolation=chroot --format docker \
#       -f deploy/Containerfile -t localhost/infertop .
#   RUNTIME_ARGS="--runtime runc" deploy/image_check.sh localhost/infertop build/infertop
set -u
image=${1:?usage: image_check.sh IMAGE INFERTOP-BINARY}
bin=${2:?usage: image_check.sh IMAGE INFERTOP-BINARY}
rt=${RUNTIME:-podman}
rtargs=${RUNTIME_ARGS:-}
. "$(dirname "$0")/../tests/check_lib.sh"
tmp=$(mktemp -d)
name=infertop-image-check-$$
port=18080
simpid=
# shellcheck disable=SC2086 # words of options
trap '$rt $rtargs rm -f $name >/dev/null 2>&1; [ -n "$simpid" ] && kill $simpid; rm -rf "$tmp"' EXIT
token=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
export INFERTOP_TOKEN=$token

# shellcheck disable=SC2086
$rt $rtargs run -d --name $name --network host --ulimit nofile=4096:4096 --ulimit nproc=1000:1000 \
	-e INFERTOP_TOKEN -e INFERTOP_PORT=$port -e JOB_COMPLETION_INDEX=1 -e INFERTOP_SLICE_COUNT=3 \
	"$image" --listen 127.0.0.1:$port >"$tmp/run" 2>&1
check "the container starts ($(tail -1 "$tmp/run"))" $?
i=0
# shellcheck disable=SC2086
while [ $i -lt 100 ] && ! $rt $rtargs logs $name 2>&1 | grep -q "control API on"; do i=$((i + 1)); sleep 0.1; done
# shellcheck disable=SC2086
$rt $rtargs logs $name >"$tmp/logs" 2>&1
grep -q "every run takes slice 1/3" "$tmp/logs"
check "pod 1 of 3 takes slice 1/3" $?
# shellcheck disable=SC2086
[ "$($rt $rtargs exec $name id -u)" = 10001 ]
check "it runs as uid 10001, not root" $?
# shellcheck disable=SC2086
$rt $rtargs healthcheck run $name >/dev/null 2>&1
check "the image's HEALTHCHECK: healthy" $?
# shellcheck disable=SC2086
$rt $rtargs exec -e INFERTOP_TOKEN=wrong $name /usr/local/bin/infertop-healthcheck >/dev/null 2>&1
[ $? -ne 0 ]
check "the health check with a wrong token: unhealthy" $?

"$bin" sim --listen 127.0.0.1:0 --timing fixed --ttft 5ms --itl 2ms >"$tmp/sim" 2>&1 &
simpid=$!
wait_for "$tmp/sim" "listening on"
sp=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/sim")
printf 'Authorization: Bearer %s\n' "$token" | curl -s -H @- -H "Content-Type: application/json" -X POST \
	-d "{\"url\":\"http://127.0.0.1:$sp\",\"concurrency\":4,\"requests\":40,\"metrics-url\":\"none\"}" \
	"http://127.0.0.1:$port/v1/runs" >"$tmp/post"
id=$(sed -n 's/.*"id":"\([0-9a-f]*\)".*/\1/p' "$tmp/post")
[ -n "$id" ]
check "a run is accepted ($(cat "$tmp/post"))" $?
i=0
while [ $i -lt 200 ]; do
	printf 'Authorization: Bearer %s\n' "$token" | curl -s -H @- "http://127.0.0.1:$port/v1/runs/$id" >"$tmp/state"
	grep -q '"state":"done"' "$tmp/state" && break
	i=$((i + 1)); sleep 0.1
done
grep -q '"completed":[[:space:]]*40' "$tmp/state"
check "it completes its 40 requests, result in the results directory" $?
! grep -q "$token" "$tmp/logs" "$tmp/state"
check "the token is in no log or answer" $?
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all image checks passed"
