#!/usr/bin/env python3
"""An OpenAI-shaped server over TLS for tests/tls.sh: it lists one model and
answers every completions request with the recorded llama.cpp stream
(tests/fixtures/llamacpp/chat_stream.txt), one write per event, so the
client reads it in many TLS records. Without --cert it speaks plain http
(the same bytes, for comparison).

  tls_server.py [--cert PEM --key PEM] [--fault KIND] [--later-cert PEM
                --later-key PEM] [--good-first N]

The first N connections (--good-first, default 0) are served well (the
client's probe of /v1/models is one); those after it show the certificate
of --later-cert, or meet the fault. --fault breaks every answer halfway
through its body:
  bare-close   the TCP connection closed without close_notify
  close-notify close_notify, then the close
  corrupt      a record that fails its integrity check, then silence
  truncate     half a record, then a bare close
--fault silent never answers (the TCP connection is accepted, no TLS);
--fault hangup closes the TCP connection at once; --fault plain answers in
plain http (an https URL to an http port);
--fault client-cert asks for a client certificate the client does not
have: in TLS 1.3 the client's handshake is done before the server says so,
with an alert, where the answer was to come.
--log FILE appends a line per TLS connection: "resumed" when the client
resumed a session, else "full". The port goes to stdout."""
import os
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

args = sys.argv[1:]


def opt(name):
    return args[args.index(name) + 1] if name in args else None


CERT, KEY, FAULT = opt("--cert"), opt("--key"), opt("--fault")
GOOD_FIRST = int(opt("--good-first") or 0)
LOG = open(opt("--log"), "a", buffering=1) if opt("--log") else None
conns = 0
conns_lock = threading.Lock()
LOCAL = threading.local()
HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "llamacpp", "chat_stream.txt"), "rb") as f:
    EVENTS = [e + b"\n\n" for e in f.read().split(b"\n\n") if e.strip()]
with open(os.path.join(HERE, "fixtures", "llamacpp", "models.json"), "rb") as f:
    MODELS = f.read()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(MODELS)))
        self.end_headers()
        self.wfile.write(MODELS)

    def fault(self):
        s = self.connection
        if FAULT == "bare-close":
            socket.socket.shutdown(s, socket.SHUT_RDWR)  # under the TLS layer
        elif FAULT == "close-notify":
            try:  # unwrap waits for the client's own, which may not come
                s.unwrap()
            except (ssl.SSLError, OSError):
                pass
            s.shutdown(socket.SHUT_RDWR)
        elif FAULT == "corrupt":
            os.write(s.fileno(), b"\x17\x03\x03\x00\x40" + b"\x5a" * 64)
            time.sleep(30)
        elif FAULT == "truncate":
            os.write(s.fileno(), b"\x17\x03\x03\x01\x00" + b"\x5a" * 40)
            socket.socket.shutdown(s, socket.SHUT_RDWR)
        self.close_connection = True

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(sum(len(e) for e in EVENTS)))
        self.end_headers()
        self.wfile.flush()
        for i, e in enumerate(EVENTS):
            if FAULT and LOCAL.later and i == len(EVENTS) // 2:
                self.fault()
                return
            self.wfile.write(e)
            self.wfile.flush()


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def finish_request(self, request, client_address):
        global conns
        with conns_lock:
            conns += 1
            later = conns > GOOD_FIRST
        if later and FAULT == "silent":
            time.sleep(60)
            return
        if later and FAULT == "hangup":
            request.close()
            return
        ctx = CTX_LATER if later and CTX_LATER else CTX
        if later and FAULT == "plain":
            ctx = None
        if ctx:
            try:  # the handshake in the connection's thread, not the accept loop
                request = ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
            if LOG:
                LOG.write("resumed\n" if request.session_reused else "full\n")
        LOCAL.later = later  # this connection's thread serves it
        super().finish_request(request, client_address)


def context(cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx


CTX = context(CERT, KEY) if CERT else None
CTX_LATER = None
if opt("--later-cert"):
    CTX_LATER = context(opt("--later-cert"), opt("--later-key"))
elif FAULT == "client-cert":
    CTX_LATER = context(CERT, KEY)
    CTX_LATER.minimum_version = ssl.TLSVersion.TLSv1_3
    CTX_LATER.verify_mode = ssl.CERT_REQUIRED
    CTX_LATER.load_verify_locations(CERT)

srv = Server(("127.0.0.1", 0), Handler)
print(srv.server_address[1], flush=True)
threading.Thread(target=srv.serve_forever, daemon=True).start()
threading.Event().wait()
