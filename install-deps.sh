#!/bin/sh
# Installs every Debian package infertop needs to build and to run its whole
# test suite (the real-server test and the Prometheus test included). Works
# as root and as a user with sudo. .ci/run and the README both call it, so
# the list lives here once.
set -eu
if [ "$(id -u)" -eq 0 ]; then
	as_root=
elif command -v sudo >/dev/null 2>&1; then
	as_root=sudo
else
	echo "install-deps.sh: run as root or install sudo" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# What building infertop needs; `install-deps.sh --build` installs only
# these (deploy/Containerfile's build stage does), so the image is built
# from the same list as CI.
build_pkgs="build-essential autoconf automake pkg-config \
	libev-dev libcurl4-openssl-dev libncurses-dev libcjson-dev libmicrohttpd-dev zlib1g-dev libssl-dev"
$as_root apt-get update -qq
if [ "${1:-}" = "--build" ]; then
	# shellcheck disable=SC2086 # a list of names
	$as_root apt-get install -y -qq --no-install-recommends $build_pkgs >/dev/null
	exit 0
fi
# chromium: tests/browser_csrf.sh drives a headless browser against the
# control API as a web page would.
# shellcheck disable=SC2086 # a list of names
$as_root apt-get install -y -qq --no-install-recommends \
	$build_pkgs clang \
	libcmocka-dev tmux jq procps ca-certificates curl \
	cmake g++ git python3 python3-numpy python3-yaml prometheus zsh fish chromium >/dev/null
# The real-server test fetches llama.cpp's source with npm (node-llama-cpp
# carries it). A Node.js that is already there (often not Debian's) is kept:
# Debian's npm would conflict with it.
if ! command -v npm >/dev/null 2>&1; then
	$as_root apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
# tests/upload.sh runs a real S3 server on loopback: s3rver, from the npm
# registry, into a cache outside the tree (the test installs it too when
# it is missing).
"$(dirname "$0")/tests/s3rver.sh" >/dev/null
