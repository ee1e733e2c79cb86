#!/usr/bin/env bash
# Builds infertop twice (ASan+UBSan, then optimised with -Werror), runs every
# test in both, replays the fuzz corpora, and ends with one line:
# "N passed, N failed". Usage: tests/suite.sh [--quick] (--quick: optimised
# build only, no distcheck, no libFuzzer runs). It also runs infertop against
# a real llama-server (tests/real/run.sh; REAL=0 leaves that out).
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
quick=0
[ "${1:-}" = "--quick" ] && quick=1
jobs=$(nproc 2>/dev/null || echo 2)
passed=0
failed=0
notes=()

step() { printf '\n==> %s\n' "$*"; }

# Counts test cases from one build tree's logs: cmocka's summary where the
# program is a cmocka suite, else the program's own pass/fail.
count_logs() {
	local dir=$1 trs log res n ok
	while IFS= read -r trs; do
		log=${trs%.trs}.log
		res=$(sed -n 's/^:test-result: //p' "$trs" | head -1)
		n=$(sed -n 's/^\[==========\] \([0-9]*\) test(s) run\./\1/p' "$log" 2>/dev/null | tail -1)
		if [ -n "$n" ]; then
			ok=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' "$log" | tail -1)
			ok=${ok:-0}
			passed=$((passed + ok))
			failed=$((failed + n - ok))
			if [ "$res" != PASS ] && [ "$ok" = "$n" ]; then
				failed=$((failed + 1)) # crashed or leaked after its cases passed
				notes+=("$log: exited with failure after its cases passed")
			fi
		elif [ "$res" = PASS ]; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
			notes+=("$log: $res")
		fi
	done < <(find "$dir" -name '*.trs' | sort)
}

build_and_check() { # name, configure args...
	local name=$1
	shift
	local dir=$src/build/$name
	step "$name build: configure $*"
	rm -rf "$dir"
	mkdir -p "$dir"
	if ! (cd "$dir" && "$src/configure" -q "$@" >configure.out 2>&1); then
		cat "$dir/configure.out"
		failed=$((failed + 1))
		notes+=("$name: configure failed")
		return
	fi
	step "$name build: make"
	if ! make -C "$dir" -j"$jobs" >"$dir/make.out" 2>&1; then
		tail -50 "$dir/make.out"
		failed=$((failed + 1))
		notes+=("$name: build failed")
		return
	fi
	step "$name build: make check"
	local rc=0
	make -C "$dir" -j"$jobs" check >"$dir/check.out" 2>&1 || rc=$?
	# make check also builds the test programs: when one does not compile
	# no test runs and no log says FAIL, so the failure is counted here.
	if [ $rc -ne 0 ] && ! grep -qE '^(FAIL|ERROR):' "$dir/check.out"; then
		grep -E 'error|Error' "$dir/check.out" | head -20
		failed=$((failed + 1))
		notes+=("$name: make check failed before its tests ran (see $dir/check.out)")
	fi
	grep -E '^(PASS|FAIL|ERROR|XPASS|SKIP):' "$dir/check.out"
	grep -E '^# (TOTAL|PASS|FAIL|ERROR)' "$dir/check.out"
	for log in $(grep -lE '^(FAIL|ERROR)' "$dir"/tests/*.trs "$dir"/tests/*/*.trs 2>/dev/null); do
		echo "---- ${log%.trs}.log"
		tail -40 "${log%.trs}.log"
	done
	count_logs "$dir"
}

cd "$src" || exit 1
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
	step "autoreconf"
	autoreconf -fi >/dev/null 2>&1 || { autoreconf -fi; echo "0 passed, 1 failed"; exit 1; }
fi

if [ $quick = 0 ]; then
	build_and_check asan --enable-werror --enable-sanitizers CFLAGS="-O1 -g"
fi
build_and_check release --enable-werror CFLAGS="-O2 -g"

# A real llama.cpp server (built once into a cache outside the tree): not
# part of `make check`, so distcheck needs no llama.cpp. REAL=0 leaves it
# out of a local run, and says so.
if [ "${REAL:-1}" = 0 ]; then
	notes+=("the real-server test was left out (REAL=0)")
elif [ -x "$src/build/release/infertop" ]; then
	step "real llama-server: tests/real/run.sh"
	INFERTOP_BIN=$src/build/release/infertop "$src/tests/real/run.sh" 2>&1 | tee "$src/build/release/real.out"
	passed=$((passed + $(grep -c '^PASS: real' "$src/build/release/real.out")))
	real_failed=$(grep -c '^FAIL: real' "$src/build/release/real.out")
	if [ "$real_failed" -eq 0 ] && ! grep -q '^real: [0-9]* passed, 0 failed' "$src/build/release/real.out"; then
		real_failed=1   # ended without its summary: it crashed
	fi
	failed=$((failed + real_failed))
	[ "$real_failed" -eq 0 ] || notes+=("the real-server test failed")
fi

if [ $quick = 0 ] && command -v clang >/dev/null; then
	step "libFuzzer: each target for ${FUZZ_SECONDS:-15}s"
	if make -C "$src/build/release" fuzz >"$src/build/release/fuzz.out" 2>&1; then
		for f in "$src"/build/release/fuzz/*; do
			t=$(basename "$f")
			corpus=$src/tests/fuzz/corpus/${t#fuzz_}
			work=$(mktemp -d)
			[ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
			if "$f" -max_total_time="${FUZZ_SECONDS:-15}" -rss_limit_mb=2048 "$work" >"$work.log" 2>&1; then
				passed=$((passed + 1))
				echo "fuzz $t: $(grep -Eo 'Done [0-9]+ runs' "$work.log" | tail -1)"
			else
				failed=$((failed + 1))
				notes+=("fuzz $t found a failure")
				tail -30 "$work.log"
			fi
			rm -rf "$work" "$work.log"
		done
	else
		tail -30 "$src/build/release/fuzz.out"
		failed=$((failed + 1))
		notes+=("make fuzz failed")
	fi
fi

if [ $quick = 0 ] && [ "${DISTCHECK:-1}" = 1 ]; then
	# What the tarball leaves out must be on this list: every other file
	# git tracks is in it (a test's data, a header, a script).
	step "the tarball holds every file git tracks"
	if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
		dd=$(mktemp -d)
		if make -s -C "$src/build/release" distdir distdir="$dd/t" >"$src/build/release/distdir.out" 2>&1; then
			missing=$(git -C "$src" ls-files | grep -vxF -e .ci/run -e .dockerignore -e .gitignore -e m4/.keep |
				while IFS= read -r f; do [ -e "$dd/t/$f" ] || echo "$f"; done)
		else
			missing="(make distdir failed: $(tail -1 "$src/build/release/distdir.out"))"
		fi
		rm -rf "$dd"
		if [ -z "$missing" ]; then
			passed=$((passed + 1))
			echo "dist: every tracked file is in the tarball"
		else
			echo "$missing" | sed 's/^/not in the tarball: /'
			failed=$((failed + 1))
			notes+=("files git tracks are missing from the tarball")
		fi
	else
		notes+=("not a git checkout: the tarball's completeness was not checked")
	fi
	step "make distcheck (the unit tests; every test ran in the release build)"
	unit=$(make -s -C "$src/build/release" print-unit-tests | tr ' ' '\n' | grep '^tests/' | tr '\n' ' ')
	if make -C "$src/build/release" -j"$jobs" distcheck TESTS="$unit" >"$src/build/release/distcheck.out" 2>&1; then
		passed=$((passed + 1))
		echo "distcheck: ok"
	else
		tail -40 "$src/build/release/distcheck.out"
		failed=$((failed + 1))
		notes+=("make distcheck failed")
	fi
fi

echo
for n in "${notes[@]+"${notes[@]}"}"; do echo "note: $n"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
