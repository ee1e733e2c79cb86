#!/usr/bin/env python3
"""Writes the raw answers of tests/paths_agree.sh into the directory argv[1],
one file per case name: a stream of two tokens and [DONE], framed or
encoded in the way the case names."""
import gzip
import os
import sys
import zlib

out = sys.argv[1]
CHUNK = b'data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":" tok"}}]}\n\n'
SSE = CHUNK * 2 + b"data: [DONE]\n\n"
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"


def cl(body, extra=b""):
    return HEAD + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body


def chunked(body, extra=b"", size_fmt="%x"):
    mid = len(body) // 2
    parts = b"".join((size_fmt % len(p)).encode() + b"\r\n" + p + b"\r\n" for p in (body[:mid], body[mid:]))
    return HEAD + extra + b"Transfer-Encoding: chunked\r\n\r\n" + parts + b"0\r\n\r\n"


def raw_deflate(b):
    c = zlib.compressobj(wbits=-15)
    return c.compress(b) + c.flush()


cases = {
    "plain": cl(SSE),
    "chunked": chunked(SSE),
    "chunked_bad_size": HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n" + SSE,
    "chunked_zero_padded": chunked(SSE, size_fmt="%016x"),
    "cl_repeated_same": cl(SSE, b"Content-Length: %d\r\n" % len(SSE)).replace(
        b"Content-Length: %d\r\nContent-Length" % len(SSE), b"Content-Length: %d, %d\r\nX-Dup" % (len(SSE), len(SSE)), 1),
    "status_101": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    "nul_in_header": cl(SSE, b"X-Bad: a\x00b\r\n"),
    "te_gzip": HEAD + b"Transfer-Encoding: gzip\r\nConnection: close\r\n\r\n" + gzip.compress(SSE),
    "ce_gzip": cl(gzip.compress(SSE), b"Content-Encoding: gzip\r\n"),
    "ce_gzip_two_members": cl(gzip.compress(CHUNK * 2) + gzip.compress(b"data: [DONE]\n\n"), b"Content-Encoding: gzip\r\n"),
    "ce_deflate_zlib": cl(zlib.compress(SSE), b"Content-Encoding: deflate\r\n"),
    "ce_deflate_raw": cl(raw_deflate(SSE), b"Content-Encoding: deflate\r\n"),
    # 128 MiB of comment lines decoded from 128 KiB: over the limit of
    # a compressed answer's decoded size (REQUEST_MAX_DECODED, 64 MiB).
    "ce_gzip_bomb": cl(gzip.compress(CHUNK * 2 + (b":" + b" " * 1022 + b"\n") * (128 << 10) + b"data: [DONE]\n\n", 9),
                       b"Content-Encoding: gzip\r\n"),
    "status_413": b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nContent-Length: 46\r\n\r\n"
                  b'{"error":{"message":"prompt is way too long"}}',
}
for name, data in cases.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
