#!/bin/sh
# https on the direct path (direct.h, tls.h) against tests/tls_server.py,
# with self-signed certificates made here: the same tokens as over plain
# http with -k, the transport recorded as direct+tls; a certificate that
# is not trusted or names another host, and every broken stream (a bare
# close, close_notify, a corrupt record, half a record, an alert, a silent
# server), each a named error as libcurl names it, within --timeout. The
# server serves its first connection well (the /v1/models probe, libcurl's)
# and breaks those after it (the requests', the direct path's).
: "${INFERTOP_BIN:?}"
set -u
fails=0
check() { if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
here=$(cd "$(dirname "$0")" && pwd)
py=python3
command -v $py >/dev/null 2>&1 || py=/usr/bin/python3
if ! command -v openssl >/dev/null 2>&1 || ! $py -c 'import ssl' >/dev/null 2>&1; then
	echo "SKIP: no openssl command or python3 ssl module"
	exit 77
fi
tmp=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT

# Throwaway keys, made for this run only.
mkcert() { # NAME SAN
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
		-keyout "$tmp/$1.key" -out "$tmp/$1.pem" -subj "/CN=$1" -addext "subjectAltName=$2" 2>/dev/null
}
mkcert good "IP:127.0.0.1,DNS:localhost" && mkcert other "DNS:other.example" ||
	{ echo "FAIL: cannot make certificates"; exit 1; }
cat "$tmp/good.pem" "$tmp/other.pem" >"$tmp/both.pem"

# start [SERVER ARGS]: the server (the last one stopped); its port in $port.
start() {
	[ -n "$srv" ] && kill $srv 2>/dev/null
	: >"$tmp/port"
	$py "$here/tls_server.py" "$@" >"$tmp/port" 2>>"$tmp/server.err" &
	srv=$!
	i=0
	while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
	port=$(cat "$tmp/port")
}
run() { # OUT URL [ARGS]: a small run, the result in $tmp/OUT.json
	out=$1 url=$2
	shift 2
	"$INFERTOP_BIN" -q --no-tui -m m --metrics-url none -o "$tmp/$out.json" "$@" "$url" \
		>"$tmp/$out.out" 2>"$tmp/$out.err"
}
# tokens FILE: the run's counts, for comparing two runs.
tokens() { jq -c '[.completed, .failed, .total_output_tokens, .infertop.output_chunks]' "$1"; }

# The same stream over http and over https with -k.
start
run plain "http://127.0.0.1:$port" -c 2 -n 6
start --cert "$tmp/good.pem" --key "$tmp/good.key"
run tls "https://127.0.0.1:$port" -c 2 -n 6 -k
st=$?
[ $st -eq 0 ] && jq -e '.completed == 6 and .failed == 0 and .infertop.options.transport == "direct+tls" and
	(.infertop.options.tls_version | startswith("TLSv1.")) and (.infertop.options.tls_cipher | length > 0)' \
	"$tmp/tls.json" >/dev/null && [ "$(tokens "$tmp/tls.json")" = "$(tokens "$tmp/plain.json")" ]
check "https -k: 6 requests, 0 failed, the tokens of plain http, transport direct+tls (exit $st)" $?
jq -e '.infertop.options.transport == "direct"' "$tmp/plain.json" >/dev/null
check "plain http: transport direct" $?
grep -q 'warning: -k' "$tmp/tls.err" || "$INFERTOP_BIN" --no-tui -m m --metrics-url none -n 1 -k \
	-o "$tmp/w.json" "https://127.0.0.1:$port" 2>&1 | grep -q 'warning: -k'
check "-k prints its warning" $?
SSLKEYLOGFILE="$tmp/keys.log" run curl "https://127.0.0.1:$port" -c 2 -n 6 -k --http-client curl
SSLKEYLOGFILE="$tmp/keys.log" run keylog "https://127.0.0.1:$port" -c 1 -n 2 -k
[ ! -e "$tmp/keys.log" ]
check "SSLKEYLOGFILE set: no session key written, on either client" $?
jq -e '.infertop.options.transport == "curl" and .completed == 6' "$tmp/curl.json" >/dev/null &&
	[ "$(tokens "$tmp/curl.json")" = "$(tokens "$tmp/tls.json")" ]
check "--http-client curl over https: transport curl, the same tokens" $?
# One kept connection carries every request, or new ones resume.
run cacert "https://127.0.0.1:$port" -c 1 -n 4 --cacert "$tmp/good.pem"
jq -e '.completed == 4 and .failed == 0' "$tmp/cacert.json" >/dev/null
check "--cacert with the server's CA: verified, 4 requests ok" $?
start --cert "$tmp/good.pem" --key "$tmp/good.key" --log "$tmp/sessions"
run fresh "https://localhost:$port" -c 1 -n 4 --cacert "$tmp/good.pem" --new-connection
# The probe's connection is libcurl's; of the four after it the first
# makes the session, the other three resume it.
jq -e '.completed == 4 and .failed == 0' "$tmp/fresh.json" >/dev/null &&
	[ "$(grep -c resumed "$tmp/sessions")" -ge 3 ]
check "--cacert by name, a new connection per request: 4 ok, sessions resumed ($(grep -c resumed "$tmp/sessions") of $(wc -l <"$tmp/sessions"))" $?
"$INFERTOP_BIN" -q --no-tui --cacert "$tmp/nowhere.pem" "https://127.0.0.1:$port" >/dev/null 2>"$tmp/nofile.err"
st=$?
[ $st -eq 2 ] && grep -q 'cacert.*cannot read it' "$tmp/nofile.err"
check "--cacert with no such file: refused before the run (exit $st)" $?

# Certificates: the requests' connections show "other".
bad() { # NAME CAFILE WANT: one request, failed as a connect error saying WANT
	start --cert "$tmp/good.pem" --key "$tmp/good.key" --later-cert "$tmp/other.pem" \
		--later-key "$tmp/other.key" --good-first 1
	run "$1" "https://127.0.0.1:$port" -c 1 -n 1 --cacert "$2"
	jq -e --arg w "$3" '.failed == 1 and .infertop.errors.connect.count == 1 and
		(.infertop.errors.connect.last_message | startswith($w))' "$tmp/$1.json" >/dev/null
}
bad untrusted "$tmp/good.pem" "SSL certificate problem: self-signed certificate"
check "an untrusted certificate: connect error, curl's 'SSL certificate problem'" $?
bad name "$tmp/both.pem" "SSL: no alternative certificate subject name matches target host name '127.0.0.1'"
check "a trusted certificate for another name: connect error, curl's wording" $?
# libcurl on a connection of its own (not the probe's) says the same.
for c in untrusted name; do
	ca="$tmp/good.pem"
	[ $c = name ] && ca="$tmp/both.pem"
	start --cert "$tmp/good.pem" --key "$tmp/good.key" --later-cert "$tmp/other.pem" \
		--later-key "$tmp/other.key" --good-first 1
	run "$c.curl" "https://127.0.0.1:$port" -c 1 -n 1 --cacert "$ca" --http-client curl --new-connection
	[ "$(jq -c .infertop.errors "$tmp/$c.curl.json")" = "$(jq -c .infertop.errors "$tmp/$c.json")" ]
	check "$c: libcurl's error kind and message are the direct path's" $?
done
# Handshakes that fail: a server that hangs up, an http port.
shake() { # FAULT WANT (a regular expression)
	start --cert "$tmp/good.pem" --key "$tmp/good.key" --fault "$1" --good-first 1
	run "$1" "https://127.0.0.1:$port" -c 1 -n 1 -k
	jq -e --arg w "$2" '.failed == 1 and .infertop.errors.connect.count == 1 and
		(.infertop.errors.connect.last_message | test($w))' "$tmp/$1.json" >/dev/null
}
# The close comes as a FIN or, the hello unread, a reset: curl's words for each.
shake hangup "^(OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:[0-9]+ |Recv failure: Connection reset by peer)$"
check "a server that hangs up in the handshake: connect error, curl's wording" $?
shake plain "wrong version number"
check "https to a plain http port: connect error, OpenSSL's reason" $?

# Broken streams, each within --timeout 3s (the run would take 3 s only
# if a fault were waited out).
fault() { # KIND ERRKIND WANT
	start --cert "$tmp/good.pem" --key "$tmp/good.key" --fault "$1" --good-first 1
	t0=$(date +%s)
	run "$1" "https://127.0.0.1:$port" -c 1 -n 1 -k --timeout 3s
	t1=$(date +%s)
	[ $((t1 - t0)) -le 8 ] && jq -e --arg k "$2" --arg w "$3" '.failed == 1 and .infertop.errors[$k].count == 1 and
		(.infertop.errors[$k].last_message | contains($w))' "$tmp/$1.json" >/dev/null
}
fault bare-close truncated "the connection closed inside the body"
check "a bare TCP close inside the body: truncated" $?
fault close-notify truncated "the connection closed inside the body"
check "close_notify inside the body: an end, so truncated" $?
fault truncate truncated "the connection closed inside the body"
check "half a record, then a close: truncated" $?
fault corrupt truncated "OpenSSL SSL_read: "
check "a record that fails its check: curl's SSL_read error (truncated)" $?
fault client-cert truncated "alert certificate required"
check "an alert after the handshake: curl's SSL_read error naming it" $?
fault silent timeout "Operation timed out after 3000 milliseconds"
check "a server that never shakes hands: timeout at --timeout" $?

if [ $fails -ne 0 ]; then
	for f in "$tmp"/*.err; do echo "== $f"; cat "$f"; done
	exit 1
fi
