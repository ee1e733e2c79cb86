#!/bin/sh
# Builds a real llama.cpp `llama-server` (CPU only) for tests/real/run.sh,
# from the llama.cpp source that the npm package node-llama-cpp carries
# (llama/gitRelease.bundle, a git bundle), and a tiny random GGUF model
# (tests/real/make_model.py). Everything lands in a cache outside the tree
# and is rebuilt only when missing, keyed by the bundle's commit, so CI pays
# the 5-10 minute build once per machine.
#   tests/real/build.sh         prints two lines: the server's path, the model's
# Cache: $INFERTOP_REAL_CACHE, else $XDG_CACHE_HOME/infertop-real, else
# ~/.cache/infertop-real. Progress goes to stderr.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
npm_version=3.22.1   # node-llama-cpp; its bundle pins the llama.cpp commit
cache=${INFERTOP_REAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/infertop-real}
jobs=${REAL_BUILD_JOBS:-$(nproc)}
say() { echo "real/build: $*" >&2; }
die() { say "$*"; exit 1; }
for tool in npm git cmake c++ python3; do
	command -v $tool >/dev/null 2>&1 || die "$tool is missing (./install-deps.sh installs it)"
done
mkdir -p "$cache"

bundle=$cache/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle
if [ ! -f "$bundle" ]; then
	say "fetching node-llama-cpp $npm_version from the npm registry"
	mkdir -p "$cache/npm"
	# --ignore-scripts: its install script would download prebuilt
	# binaries; only the source bundle is wanted here.
	(cd "$cache/npm" && npm install --no-audit --no-fund --ignore-scripts --omit=optional \
		"node-llama-cpp@$npm_version" >&2) || die "npm install node-llama-cpp failed"
	[ -f "$bundle" ] || die "node-llama-cpp $npm_version has no llama/gitRelease.bundle"
fi

commit=$(git bundle list-heads "$bundle" | awk 'NR == 1 {print $1}')
[ -n "$commit" ] || die "cannot read $bundle"
src=$cache/llama.cpp-$commit
server=$src/build/bin/llama-server
if [ ! -x "$server" ]; then
	if [ ! -d "$src/.git" ]; then
		say "unpacking llama.cpp $commit"
		rm -rf "$src.tmp"
		git clone -q "$bundle" "$src.tmp" >&2 || die "git clone of the bundle failed"
		git -C "$src.tmp" -c advice.detachedHead=false checkout -q "$commit" >&2
		mv "$src.tmp" "$src"
	fi
	say "building llama-server with $jobs jobs (5-10 minutes on 2 cores; once per cache)"
	start=$(date +%s)
	cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
		-DLLAMA_CURL=OFF -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
		-DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF >"$cache/cmake.log" 2>&1 ||
		die "cmake configure failed: see $cache/cmake.log"
	cmake --build "$src/build" --target llama-server -j "$jobs" >"$cache/build.log" 2>&1 ||
		die "llama-server build failed: see $cache/build.log"
	say "built in $(( $(date +%s) - start )) s"
fi

model=$cache/tiny-llama-v2.gguf
if [ ! -f "$model" ]; then
	say "writing the tiny random model"
	py=python3
	# gguf-py needs numpy; Debian's python3-numpy serves /usr/bin/python3.
	$py -c 'import numpy' 2>/dev/null || py=/usr/bin/python3
	PYTHONPATH=$src/gguf-py $py "$here/make_model.py" "$model.tmp" >&2 ||
		die "make_model.py failed (needs numpy: Debian python3-numpy)"
	mv "$model.tmp" "$model"
fi
echo "$server"
echo "$model"
