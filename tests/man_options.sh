#!/bin/sh
# Every long option that `infertop --help` and `infertop sim --help` print
# must be documented in the man page (roff escapes hyphens as \-).
: "${INFERTOP_BIN:?}" "${INFERTOP_SRCDIR:?}"
man="$INFERTOP_SRCDIR/man/infertop.1.in"
missing=0
for cmd in "" sim; do
	opts=$("$INFERTOP_BIN" $cmd --help | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u)
	[ -n "$opts" ] || { echo "no options found in 'infertop $cmd --help'"; exit 1; }
	for o in $opts; do
		roff=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
		if ! grep -q -- "$roff" "$man"; then
			echo "missing from man page: $o (infertop $cmd)"
			missing=$((missing + 1))
		fi
	done
done
[ "$missing" -eq 0 ] && echo "all options documented"
exit "$missing"
