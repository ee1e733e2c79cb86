#!/bin/sh
# The shape of src/: folders as layers, no include circles between modules, no widget that
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
	sed -n 's/^#include "\(infertop\/\)\{0,1\}\([a-z0-9_/]*\)\.h".*/\2/p' "$f" | sed 's#.*/##' | sed 's/_internal$//' |
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

# Folders are layers. A folder may include its own headers and those of the
# folders listed before it, never one after it: the lowest first. A header
# belongs to the folder of its .c (include/infertop/ headers with no .c, such
# as clock.h and options.h, are the base everyone may use).
layers="util wire stats net metrics engine result run sim cli service ui fleet top"
# Known upward edges, each with its reason; a new one fails until it is
# written here (or, better, removed).
allowed_up="
engine result snapshot  engine.c writes periodic snapshots through result/snapshot.c
engine result detail    reqlog.c writes each logged request in result/detail.c's format
cli service control_req  cli.c checks --listen-allow-host with the control API's own Host rules
"
rank() { # folder -> position in $layers
	i=0
	for l in $layers; do
		[ "$l" = "$1" ] && { echo $i; return; }
		i=$((i + 1))
	done
	echo -1
}
folder_of() { # a source path -> its layer folder (top for src/*.c)
	d=$(dirname "$1")
	d=${d#src}
	d=${d#/}
	echo "${d:-top}"
}
owner_of() { # a header's module name -> the folder of its .c or .h, or base
	f=$(find src -name "$1.c" -o -name "$1.h" | head -1)
	if [ -z "$f" ]; then echo base; else folder_of "$f"; fi
}
unknown=""
upward=""
for f in $(find src -name '*.[ch]' | sort); do
	from=$(folder_of "$f")
	rf=$(rank "$from")
	[ "$rf" -ge 0 ] || { unknown="$unknown $from"; continue; }
	for h in $(sed -n 's/^#include "\(infertop\/\)\{0,1\}\([a-z0-9_/]*\)\.h".*/\2/p' "$f" | sed 's#.*/##'); do
		to=$(owner_of "$h")
		[ "$to" = base ] && continue
		rt=$(rank "$to")
		[ "$rt" -ge 0 ] || { unknown="$unknown $to"; continue; }
		if [ "$rt" -gt "$rf" ] &&
			! echo "$allowed_up" | grep -q "^$from $to $h "; then
			upward="$upward $f->$to/$h"
		fi
	done
done
verdict "every folder is a layer of: $layers" "$(for u in $unknown; do echo "$u"; done | sort -u)"
verdict "no folder includes a folder above it (but the edges written down)" "$upward"

# Widgets draw a view; they never see the engine.
verdict "no widget includes engine.h" \
	"$(grep -l '#include "infertop/engine\(_internal\)\?\.h"' src/ui/w_*.c src/ui/widget.c include/infertop/widget.h)"

# The engine's fields are its own: only the engine's files (and tests and
# benches, which build runs by hand) include engine_internal.h.
verdict "only the engine reads its own state" \
	"$(grep -l '#include "\(engine/\)\{0,1\}engine_internal\.h"' $(find src include -name '*.[ch]') |
		grep -v -e '^src/engine/engine\.c$' -e '^src/engine/engine_cmd\.c$')"

# Every function a file exports is declared in a header under include/:
# nothing is exported unannounced (static otherwise). A function named in
# a column of an X-macro table (include/infertop/*.def) is declared by it.
missing=""
for f in $(find src -name '*.c' | sort); do
	for fn in $(grep -v '^static' "$f" | sed -n 's/^[a-z][a-z_0-9 *]*[ *]\([a-z_][a-z_0-9]*\)(.*/\1/p' | sort -u); do
		[ "$fn" = main ] && continue
		grep -q "[ *]$fn(" include/infertop/*.h $(find src -name '*.h') ||
			grep -q "^[A-Z_]*(.*, $fn," include/infertop/*.def || missing="$missing $f:$fn"
	done
done
verdict "every exported function is declared in a header" "$missing"

# Every header is named in the build (a _SOURCES or _HEADERS list), or
# `make dist` leaves it out and the tarball does not build (distcheck
# found include/infertop/transport.h so).
missing=""
for h in include/infertop/*.h include/infertop/*.def; do
	grep -q "$h" Makefile.am mk/*.am || missing="$missing $h"
done
verdict "every header is in the build's lists (and so in the tarball)" "$missing"

echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
