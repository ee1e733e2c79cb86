#!/bin/sh
# Prometheus' own linter on the exposition of a synthetic run (a model name
# needing every escape included): `promtool check metrics` must accept it
# without a complaint. Skips (77) when promtool is not installed (Debian:
# prometheus, in install-deps.sh).
command -v promtool >/dev/null 2>&1 || { echo "SKIP: promtool not installed"; exit 77; }
print=${EXPORTER_PRINT:-./tests/exporter_print}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {
	if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}

"$print" >"$tmp/metrics"
check "exporter_print ran" $?
promtool check metrics <"$tmp/metrics" >"$tmp/lint" 2>&1
st=$?
cat "$tmp/lint"
# promtool exits 0 with lint warnings printed: any output is a finding.
[ $st -eq 0 ] && [ ! -s "$tmp/lint" ]
check "promtool check metrics: no error, no lint" $?
grep -q '^infertop_ttft_seconds_bucket{.*le="+Inf"} 10$' "$tmp/metrics"
check "+Inf bucket holds every TTFT" $?

# A plain model name too (labels with nothing to escape).
"$print" "llama-3.1-8b" | promtool check metrics >"$tmp/lint2" 2>&1 && [ ! -s "$tmp/lint2" ]
check "promtool on a plain model name" $?
cat "$tmp/lint2"

[ "$fails" -eq 0 ]
