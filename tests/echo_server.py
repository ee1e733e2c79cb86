#!/usr/bin/env python3
"""A hostile little server for the tests: it lists one model, then answers
every other request with an error body that echoes the request line and its
Authorization header back, as some gateways do (tests/secrets.sh). With
--gzip it streams completions instead, gzip-compressed whatever the client
asked for (tests/hostile.sh). Every request line and header is appended to
the file named by argv[1]; the port goes to stdout."""
import gzip
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = open(sys.argv[1], "a", buffering=1)
GZIP = "--gzip" in sys.argv[2:]
# --usage-lies: plain streams whose usage claims ten times the chunks sent.
LIES = "--usage-lies" in sys.argv[2:]
# --escapes: terminal escapes in the model id and the error bodies (ESC [2J
# clears a screen, BEL rings, U+009B is the 8-bit CSI) (tests/escapes.sh).
ESC = "\x1b[2J\x07\u009b31m" if "--escapes" in sys.argv[2:] else ""
# --capture: every POST body is logged as one JSON line {"t": arrival
# (monotonic s), "path", "body"} instead of the headers (GETs are not
# logged), and completions are answered
# with a plain stream (tests/trace.sh).
CAPTURE = "--capture" in sys.argv[2:]


class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        t = time.monotonic()
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if CAPTURE:
            if self.command == "POST":
                LOG.write(json.dumps({"t": t, "path": self.path, "body": body.decode()}) + "\n")
        else:
            LOG.write(self.requestline + "\n" + str(self.headers) + "\n")
        if self.command == "GET" and self.path.startswith("/v1/models"):
            self.reply(200, {"object": "list", "data": [{"id": "m" + ESC, "object": "model"}]})
            return
        if (GZIP or LIES or CAPTURE) and self.command == "POST" and "completions" in self.path:
            chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m",
                     "choices": [{"index": 0, "delta": {"content": " tok"}}]}
            usage = {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [],
                     "usage": {"prompt_tokens": 5, "completion_tokens": 40 if LIES else 4,
                               "total_tokens": 45 if LIES else 9}}
            sse = "".join("data: %s\n\n" % json.dumps(chunk) for _ in range(4))
            sse += "data: %s\n\ndata: [DONE]\n\n" % json.dumps(usage)
            body = gzip.compress(sse.encode()) if GZIP else sse.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            if GZIP:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        echo = "bad request %s;%s Authorization: %s" % (
            self.requestline, ESC, self.headers.get("Authorization"))
        # An object store's PUT (--upload): its session token echoed too.
        if self.headers.get("x-amz-security-token"):
            echo = "token: %s; %s" % (self.headers.get("x-amz-security-token"), echo)
        self.reply(400, {"error": {"message": echo, "type": "invalid_request_error"}})

    do_GET = handle_any
    do_POST = handle_any
    do_PUT = handle_any


srv = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
print(srv.server_address[1], flush=True)
srv.serve_forever()
