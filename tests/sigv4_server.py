#!/usr/bin/env python3
"""An S3 PUT endpoint that checks AWS Signature Version 4 as S3 does
(s3rver 3.7 does not check v4 signatures at all), for tests/upload.sh.

  sigv4_server.py DIR ACCESS_KEY_ID SECRET [SESSION_TOKEN]

Each PUT /BUCKET/KEY is verified from the request as received: the
canonical request (method, the path as sent, the query, the signed
headers, the payload hash of x-amz-content-sha256), the string to sign
over its scope, and the signing key derived from SECRET. A good one is
stored as DIR/BUCKET/KEY (the key percent-decoded) and answered 200; a bad
one gets 403 with S3's error code (InvalidAccessKeyId,
SignatureDoesNotMatch, InvalidToken) or 400 (a missing header). The port
goes to stdout; one line per request (method, path, verdict) to stderr."""
import hashlib
import hmac
import os
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR, KEY_ID, SECRET = sys.argv[1], sys.argv[2], sys.argv[3]
TOKEN = sys.argv[4] if len(sys.argv) > 4 else None


def hmac256(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


class S3(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, code):
        body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code></Error>" % code).encode()
        if status == 200:
            body = b""
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        sys.stderr.write("%s %s %s\n" % (self.command, self.path, code))
        sys.stderr.flush()

    def verdict(self, body):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            return 400, "MissingSecurityHeader"
        parts = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
        cred = parts["Credential"].split("/")
        key_id, date, region, service = cred[0], cred[1], cred[2], cred[3]
        if key_id != KEY_ID:
            return 403, "InvalidAccessKeyId"
        payload = self.headers.get("x-amz-content-sha256")
        if payload is None:
            return 400, "InvalidRequest"
        if payload != "UNSIGNED-PAYLOAD" and payload != hashlib.sha256(body).hexdigest():
            return 400, "XAmzContentSHA256Mismatch"
        signed = parts["SignedHeaders"].split(";")
        for must in ("host", "x-amz-date", "x-amz-content-sha256"):
            if must not in signed:
                return 403, "SignatureDoesNotMatch"
        if TOKEN is not None and (self.headers.get("x-amz-security-token") != TOKEN or
                                  "x-amz-security-token" not in signed):
            return 403, "InvalidToken"
        if service != "s3":
            return 403, "SignatureDoesNotMatch"
        path, _, query = self.path.partition("?")
        # S3's canonical URI: each segment of the decoded path encoded
        # again (RFC 3986 unreserved kept), so a key sent unencoded where
        # it must be ("+", a space) does not match.
        path = "/".join(urllib.parse.quote(urllib.parse.unquote(seg), safe="-_.~") for seg in path.split("/"))
        canon_query = "&".join(sorted(query.split("&"))) if query else ""
        canon_headers = "".join("%s:%s\n" % (h, " ".join((self.headers.get(h) or "").split()))
                                for h in signed)
        creq = "\n".join([self.command, path, canon_query, canon_headers, ";".join(signed), payload])
        amz_date = self.headers.get("x-amz-date", "")
        scope = "/".join([date, region, service, "aws4_request"])
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(creq.encode()).hexdigest()])
        k = hmac256(("AWS4" + SECRET).encode(), date)
        for part in (region, service, "aws4_request"):
            k = hmac256(k, part)
        want = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, parts["Signature"]):
            return 403, "SignatureDoesNotMatch"
        return 200, "OK"

    def do_PUT(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        status, code = self.verdict(body)
        if status == 200:
            dest = os.path.join(DIR, urllib.parse.unquote(self.path.partition("?")[0]).lstrip("/"))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as f:
                f.write(body)
        self.answer(status, code)


srv = ThreadingHTTPServer(("127.0.0.1", 0), S3)
print(srv.server_address[1], flush=True)
srv.serve_forever()
