#!/bin/sh
# Prometheus' own linter on the exposition of a synthetic run (a model name
# needing every escape included): `promtool check metrics` must accept it
# without a complaint. Skips (77) when promtool is not installed (Debian:
# prometheus, in install-deps.sh).
command -v promtool >/dev/null 2>&1 || { echo "SKIP: promtool not installed"; exit 77; }
print=${EXPORTER_PRINT:-./tests/exporter_print}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check_lib.sh"

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

# A run with prefix-cache reports and sessions of 20 turns: still clean,
# the turn label bounded ("1".."7", "8+"), the cache counters there.
"$print" "m" sessions >"$tmp/sess"
check "exporter_print sessions ran" $?
promtool check metrics <"$tmp/sess" >"$tmp/lint3" 2>&1 && [ ! -s "$tmp/lint3" ]
check "promtool on a run with sessions and cache reports" $?
cat "$tmp/lint3"
turns=$(grep -o 'turn="[^"]*"' "$tmp/sess" | sort -u | tr '\n' ' ')
[ "$turns" = 'turn="1" turn="2" turn="3" turn="4" turn="5" turn="6" turn="7" turn="8+" ' ]
check "turn labels are 1..7 and 8+ (got: $turns)" $?
grep -q '^infertop_ttft_by_turn_seconds_count{model="m",generator="host:4242",turn="8+"} 13$' "$tmp/sess"
check "turns 8..20 counted under 8+" $?
grep -q '^infertop_prompt_cached_tokens_total{model="m",generator="host:4242"} 17100$' "$tmp/sess"
check "cached tokens total" $?
grep -q '^infertop_sessions_ended_total{model="m",generator="host:4242"} 1$' "$tmp/sess"
check "sessions ended" $?
if grep -q 'by_turn\|infertop_prompt_cache\|infertop_session' "$tmp/metrics"; then false; else true; fi
check "no cache or session family in a run without them" $?

# A plain model name too (labels with nothing to escape).
"$print" "llama-3.1-8b" | promtool check metrics >"$tmp/lint2" 2>&1 && [ ! -s "$tmp/lint2" ]
check "promtool on a plain model name" $?
cat "$tmp/lint2"

# The examples under deploy/ follow the exposition: every infertop_* series
# the Grafana board queries is one the exporter writes, every query parses
# as PromQL, and the scrape config is valid.
src=${INFERTOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
board="$src/deploy/grafana/infertop.json"
if command -v jq >/dev/null 2>&1; then
	jq -r '.panels[].targets[]?.expr' "$board" >"$tmp/exprs"
	check "dashboard JSON parses and has queries" $(test -s "$tmp/exprs"; echo $?)
	missing=""
	for m in $(grep -oE 'infertop_[a-z0-9_]+' "$tmp/exprs" | sort -u); do
		grep -q "^$m[{ ]" "$tmp/metrics" || missing="$missing $m"
	done
	[ -z "$missing" ]
	check "every infertop series the dashboard reads is exported${missing:+ (missing:$missing)}" $?
	{
		echo "groups:"
		echo "- name: dashboard"
		echo "  rules:"
		i=0
		sed -e 's/\$model/.*/g; s/\$generator/.*/g; s/\$replica/instance/g; s/\$__rate_interval/1m/g' "$tmp/exprs" |
			while IFS= read -r e; do
				i=$((i + 1))
				printf '  - record: q%d\n    expr: %s\n' "$i" "$(printf '%s' "$e" | jq -Rs .)"
			done
	} >"$tmp/rules.yml"
	promtool check rules "$tmp/rules.yml" >"$tmp/rules.out" 2>&1
	check "every dashboard query is valid PromQL" $?
	grep -v -e SUCCESS -e '^Checking' -e '^$' "$tmp/rules.out" || :
else
	echo "SKIP: jq not installed, dashboard not checked"
fi
promtool check config "$src/deploy/prometheus/prometheus.yml" >/dev/null 2>&1
check "deploy/prometheus/prometheus.yml is a valid config" $?

[ "$fails" -eq 0 ]
