#!/usr/bin/env python3
"""A server that answers every POST with the same raw bytes, whatever they
are (tests/paths_agree.sh, tests/early_answer.sh): argv[1] names the file
of the answer's bytes, argv[2] a log that gets one line per POST, argv[3]
the mode:
  read       read the whole request, answer, close
  early      read the head only, answer, close (the unread body makes the
             kernel reset the connection under a client still sending)
  noread     read the head only, answer, keep the connection open unread
Only completions requests see the mode; a GET of /v1/models gets a
one-model list. The port goes to stdout."""
import socket
import sys
import threading

ANSWER = open(sys.argv[1], "rb").read()
LOG = open(sys.argv[2], "a", buffering=1)
MODE = sys.argv[3] if len(sys.argv) > 3 else "read"
MODELS = b'{"object":"list","data":[{"id":"m","object":"model"}]}'
held = []


def read_head(conn):
    buf = b""
    while b"\r\n\r\n" not in buf:
        got = conn.recv(65536)
        if not got:
            return None, b""
        buf += got
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def serve(conn):
    try:
        head, rest = read_head(conn)
        if head is None:
            return
        line = head.split("\r\n", 1)[0]
        if line.startswith("GET"):
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(MODELS) + MODELS)
            return
        LOG.write(line + "\n")
        # Only a completions request sees the mode: a probe of another
        # path (/tokenize) is read whole, answered and closed.
        mode = MODE if "completions" in line else "read"
        if mode == "read":
            want = 0
            for h in head.split("\r\n")[1:]:
                name, _, value = h.partition(":")
                if name.strip().lower() == "content-length":
                    want = int(value.strip())
            while len(rest) < want:
                got = conn.recv(1 << 20)
                if not got:
                    break
                rest += got
        conn.sendall(ANSWER)
        if mode == "noread":
            held.append(conn)  # open, unread, until the client goes
            return
    except OSError:
        pass
    conn.close()


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(64)
print(srv.getsockname()[1], flush=True)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
