#!/bin/sh
# The config file ($XDG_CONFIG_HOME/infertop/config, else
# ~/.config/infertop/config): its options apply, the command line wins
# (repeatable options too), --no-config skips it, and a bad line stops the
# run with FILE:LINE and exit 2, never echoing what looks like a key.
# The options a run took are read back from its -o result.
: "${INFERTOP_BIN:?}"
set -u
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check_lib.sh"
# opt FILE KEY: an option of a result, as JSON.
opt() {
	python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["infertop"]["options"][sys.argv[2]]))' "$1" "$2"
}
mkdir -p "$tmp/xdg/infertop" "$tmp/home/.config/infertop"
cfg="$tmp/xdg/infertop/config"
cat >"$cfg" <<'CFG'
# a comment, then a blank line

concurrency = 3
requests = 6
output-tokens = "4"
no-tui = yes
quiet = true
header = X-From-File: 1
CFG
run() {
	XDG_CONFIG_HOME="$tmp/xdg" HOME="$tmp/home" "$INFERTOP_BIN" --demo "$@" >"$tmp/out" 2>"$tmp/err"
}

run -o "$tmp/a.json"
[ $? -eq 0 ] && [ "$(opt "$tmp/a.json" concurrency)" = 3 ] && [ "$(opt "$tmp/a.json" requests)" = 6 ] &&
	[ "$(opt "$tmp/a.json" output_tokens)" = 4 ] && [ "$(opt "$tmp/a.json" no_tui)" = true ] &&
	[ "$(opt "$tmp/a.json" header_names)" = '["X-From-File"]' ]
check "the file's options apply" $?

run -c 2 -H 'X-From-Cli: 1' --requests=4 -o "$tmp/b.json"
[ $? -eq 0 ] && [ "$(opt "$tmp/b.json" concurrency)" = 2 ] && [ "$(opt "$tmp/b.json" requests)" = 4 ] &&
	[ "$(opt "$tmp/b.json" output_tokens)" = 4 ] && [ "$(opt "$tmp/b.json" header_names)" = '["X-From-Cli"]' ]
check "the command line wins (short, long and repeatable options), the rest of the file still applies" $?

run --no-config --no-tui -q -n 2 --output-tokens 2 -o "$tmp/c.json"
[ $? -eq 0 ] && [ "$(opt "$tmp/c.json" concurrency)" = 8 ] && [ "$(opt "$tmp/c.json" header_names)" = '[]' ]
check "--no-config: the file is not read" $?

# Without XDG_CONFIG_HOME: ~/.config/infertop/config.
printf 'concurrency = 5\nrequests = 2\noutput-tokens = 2\nno-tui = true\nquiet = true\n' >"$tmp/home/.config/infertop/config"
HOME="$tmp/home" XDG_CONFIG_HOME= "$INFERTOP_BIN" --demo -o "$tmp/d.json" >/dev/null 2>&1
[ $? -eq 0 ] && [ "$(opt "$tmp/d.json" concurrency)" = 5 ]
check "without \$XDG_CONFIG_HOME: ~/.config/infertop/config" $?

# bad LINE-TEXT MESSAGE: the file with that line third stops the run:
# exit 2, FILE:3 and the message on stderr, nothing run.
bad() {
	printf 'concurrency = 3\n# fine so far\n%s\nrequests = 2\n' "$1" >"$cfg"
	run -o "$tmp/bad.json"
	st=$?
	[ $st -eq 2 ] && grep -qF "$cfg:3: " "$tmp/err" && grep -qF -- "$2" "$tmp/err" && [ ! -e "$tmp/bad.json" ]
	check "bad line '$1': exit 2 with FILE:3 and '$2' (exit $st)" $?
}
bad 'concurrency' "expected 'key = value'"
bad 'concurency = 4' "unknown option 'concurency'"
bad 'concurrency = lots' "invalid value 'lots' for --concurrency"
bad 'no-tui = maybe' "no-tui is a flag"
bad 'help = true' "unknown option 'help'"
bad 'api-key = sk-live-abcdefghijklmnopqrstuvwx' "there is no api-key option"
! grep -q "sk-live" "$tmp/err"
check "a key in the file is not echoed" $?
bad 'timeout = sk-live-abcdefghijklmnopqrstuvwx' "not shown"
! grep -q "sk-live" "$tmp/err"
check "a secret-looking bad value is not echoed" $?

# An unreadable file (a directory in its place) is an error too, and
# --no-config gets past it.
rm -f "$cfg" && mkdir "$cfg"
run --no-tui -q -n 1 --output-tokens 2 -o "$tmp/e.json"
st=$?
[ $st -eq 2 ] && grep -q "cannot read" "$tmp/err"
check "an unreadable config file: exit 2 (exit $st)" $?
run --no-config --no-tui -q -n 1 --output-tokens 2 -o "$tmp/e.json"
check "--no-config gets past it (exit $?)" $?

# Only runs read it: the tools and the simulator's own options do not.
rmdir "$cfg" && printf 'concurrency = lots\n' >"$cfg"
XDG_CONFIG_HOME="$tmp/xdg" "$INFERTOP_BIN" report --help >/dev/null 2>&1
check "report does not read the config file (exit $?)" $?

[ "$fails" -eq 0 ]
