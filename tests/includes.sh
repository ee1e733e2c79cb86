#!/bin/sh
# The shape of src/: no include circles between modules, no widget that
# sees the engine, and the engine's state read only by the engine's files.
# A module is a file's base name (foo.c, foo.h and foo_internal.h are one
# module); an edge is an #include "infertop/bar.h" in any of its files.
# Fails, naming the circle or the file, when the tree breaks a rule.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 1
fail=0
n=0

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
for f in $(find src include/infertop -name '*.[ch]' | sort); do
	m=$(basename "$f" | sed 's/\.[ch]$//; s/_internal$//')
	sed -n 's/^#include "infertop\/\([a-z0-9_]*\)\.h".*/\1/p' "$f" | sed 's/_internal$//' |
		while read -r d; do
			[ "$d" = "$m" ] || echo "$m $d"
		done
done | sort -u >"$edges"

# tsort names the modules of a circle when there is one.
n=$((n + 1))
if out=$(tsort "$edges" 2>&1 >/dev/null) && [ -z "$out" ]; then
	echo "ok: no include circle among $(cut -d' ' -f1 "$edges" | sort -u | wc -l) modules"
else
	echo "FAIL: include circle:"
	echo "$out" | sed 's/^tsort: /  /'
	fail=$((fail + 1))
fi

# verdict WHAT OFFENDERS: one check's line; OFFENDERS empty means it holds.
verdict() {
	n=$((n + 1))
	if [ -z "$2" ]; then
		echo "ok: $1"
	else
		echo "FAIL: $1; not so for:" $2
		fail=$((fail + 1))
	fi
}

# Widgets draw a view; they never see the engine.
verdict "no widget includes engine.h" \
	"$(grep -l '#include "infertop/engine\(_internal\)\?\.h"' src/ui/w_*.c src/ui/widget.c include/infertop/widget.h)"

# The engine's fields are its own: only the engine's files (and tests and
# benches, which build runs by hand) include engine_internal.h.
verdict "only the engine reads its own state" \
	"$(grep -l '#include "infertop/engine_internal\.h"' $(find src include -name '*.[ch]') |
		grep -v -e '^src/engine\.c$' -e '^src/engine_cmd\.c$')"

# Every function a file exports is declared in a header under include/:
# nothing is exported unannounced (static otherwise).
missing=""
for f in $(find src -name '*.c' | sort); do
	for fn in $(grep -v '^static' "$f" | sed -n 's/^[a-z][a-z_0-9 *]*[ *]\([a-z_][a-z_0-9]*\)(.*/\1/p' | sort -u); do
		[ "$fn" = main ] && continue
		grep -q "[ *]$fn(" include/infertop/*.h || missing="$missing $f:$fn"
	done
done
verdict "every exported function is declared in a header" "$missing"

echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
