#!/usr/bin/env python3
"""A generator's control API that says what the test tells it to, for
infertop fleet's tests (tests/fleet_churn.sh, tests/fleet_lies.sh).

fake_generator.py TEMPLATE [options]

TEMPLATE is a real generator's GET /v1/status?lean=1 document (the tests
fetch one from `infertop --listen`). Every status answered is that
document with its wall-clock times renewed and:

  --churn         a new run id at every answer (GET /count says how many)
  --run-id HEX    this run id (default: a random one, kept)
  --set PATH=JSON a value put at PATH (dots: infertop.state.elapsed_s=1e300)
  --hist PATH=N   a histogram at PATH holding N samples of 1500 us (N up to
                  2^64-1: a valid encoding of an impossible count)
  --echo          its texts carry the Authorization header it got and
                  terminal escapes (ESC, BEL, a C1 CSI); every POST is
                  refused with 401 quoting them, raw ESC bytes included
  --hold FILE     answers 503 until FILE exists (others answer first)

POST /v1/runs (fleet --start) is accepted as its run (201), its result is
never ready (409); any other POST answers 200 {}.

Prints "listening on http://127.0.0.1:PORT" once ready. HTTP/1.1 keep-alive,
a thread a connection (the fleet keeps one; GET /count is the test's).
"""
import base64
import json
import os
import secrets
import struct
import sys
import time
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ESCAPES = "\x1b[2J\x1b]0;pwned\x07\u009b31m"


def leb128(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def hist_of(n, us=1500):
    """hist_encode()'s canonical form of n samples of us (< 2048: bucket us)."""
    sq = struct.unpack(">Q", struct.pack(">d", float(n) * us * us))[0]
    payload = base64.urlsafe_b64encode(leb128(us) + leb128(n)).decode().rstrip("=")
    total = (n * us) % (1 << 64)
    return "h1:%d,%d,%d,%d,%016x:%s" % (n, us, us, total, sq, payload)


def put(doc, path, value):
    keys = path.split(".")
    for k in keys[:-1]:
        doc = doc.setdefault(k, {})
    doc[keys[-1]] = value


def main():
    args = sys.argv[1:]
    doc = json.load(open(args.pop(0)))
    churn = echo = False
    hold = None
    run_id = secrets.token_hex(16)
    while args:
        a = args.pop(0)
        if a == "--churn":
            churn = True
        elif a == "--echo":
            echo = True
        elif a == "--run-id":
            run_id = args.pop(0)
        elif a == "--hold":
            hold = args.pop(0)
        elif a == "--set":
            k, v = args.pop(0).split("=", 1)
            put(doc, k, json.loads(v))
        elif a == "--hist":
            k, v = args.pop(0).split("=", 1)
            put(doc, k + ".hist", hist_of(int(v)))
        else:
            sys.exit("fake_generator.py: unknown option " + a)
    run = doc["infertop"]["run"]
    elapsed = doc["infertop"]["state"]["elapsed_s"]
    state = {"served": 0}
    lock = threading.Lock()
    prefix = secrets.token_hex(12)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK wait

        def log_message(self, *a):
            pass

        def answer(self, code, body):
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/count":
                self.answer(200, str(state["served"]).encode())
                return
            if self.path.startswith("/v1/runs/"):
                self.answer(409, b'{"error":{"message":"still running"}}')
                return
            if not self.path.startswith("/v1/status"):
                self.answer(404, b'{"error":{"message":"no such path"}}')
                return
            if hold and not os.path.exists(hold):
                self.answer(503, b'{"error":{"message":"held"}}')
                return
            with lock:
                state["served"] += 1
                n = state["served"]
                now = time.time()
                run["run_id"] = "%08x%s" % (n, prefix) if churn else run_id
                doc["infertop"]["snapshot"]["taken_unix"] = now
                if isinstance(elapsed, (int, float)) and elapsed < 1e9:
                    run["start_unix"] = now - elapsed
                if echo:
                    said = "bad token %s %s" % (self.headers.get("Authorization", ""), ESCAPES)
                    run["model"] = "model" + ESCAPES
                    run["host"] = "host" + ESCAPES
                    doc["infertop"]["state"]["stop_reason"] = said
                    doc["infertop"]["stop_reason"] = said
                body = json.dumps(doc).encode()
            self.answer(200, body)

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0") or 0)
            if n:
                self.rfile.read(n)
            if echo:
                said = "bad token %s %s" % (self.headers.get("Authorization", ""), ESCAPES)
                # The raw bytes, ESC unescaped: what a hostile peer sends.
                body = b'{"status":"refused","message":"' + said.encode() + b'"}'
                self.answer(401, body)
            elif self.path == "/v1/runs":
                # A --start's run: accepted, it is the run it reports.
                self.answer(201, json.dumps({"id": run_id}).encode())
            else:
                self.answer(200, b"{}")

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("listening on http://127.0.0.1:%d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
