#!/bin/sh
# Installs s3rver (a real S3 server in Node.js, from the npm registry) for
# tests/upload.sh, in a cache outside the tree, and prints its path. Only
# when missing: once per machine. install-deps.sh calls it too.
# Cache: $INFERTOP_S3RVER_CACHE, else $XDG_CACHE_HOME/infertop-s3rver, else
# ~/.cache/infertop-s3rver. Progress goes to stderr; a failure exits 1.
set -eu
version=3.7.1
cache=${INFERTOP_S3RVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/infertop-s3rver}
bin=$cache/node_modules/.bin/s3rver
say() { echo "s3rver.sh: $*" >&2; }
if [ ! -x "$bin" ] || ! grep -q "\"version\": \"$version\"" "$cache/node_modules/s3rver/package.json" 2>/dev/null; then
	command -v npm >/dev/null 2>&1 || { say "npm is missing (./install-deps.sh installs it)"; exit 1; }
	say "installing s3rver $version from the npm registry into $cache"
	mkdir -p "$cache"
	(cd "$cache" && npm install --no-audit --no-fund --omit=optional "s3rver@$version" >&2) ||
		{ say "npm install s3rver failed"; exit 1; }
	[ -x "$bin" ] || { say "s3rver $version installed no $bin"; exit 1; }
fi
echo "$bin"
