# Sourced by the tests that talk to tests/echo_server.py (secrets.sh,
# hostile.sh): the check counter, a temporary directory, and one server at
# a time, stopped on exit.
: "${INFERTOP_BIN:?}"
set -u
fails=0
check() { if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT
py=python3
command -v $py >/dev/null 2>&1 || py=/usr/bin/python3

# echo_start LOG [MODE]: starts the server (after stopping the last one),
# logging requests to LOG; its port is then in $port.
echo_start() {
	[ -n "$srv" ] && kill $srv 2>/dev/null
	: >"$tmp/port"
	$py "$here/echo_server.py" "$@" >"$tmp/port" 2>>"$tmp/server.err" &
	srv=$!
	i=0
	while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
	port=$(cat "$tmp/port")
}
