#!/usr/bin/env python3
"""Opens HTML reports in headless Chromium under a strict CSP and checks them.

Usage: html_check.py CHROMIUM OUTDIR PAGE.html[=RESULT.json[,B.json]] ...

Each page is served from a loopback HTTP server that sends
  Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; img-src data:
and opened at 1280x800 and at 390x844 (mobile) through the DevTools
protocol over a pipe (--remote-debugging-pipe: no port, and the page runs
no script of ours: Runtime.evaluate works whatever the CSP). A page fails
on: a console error or exception, a log entry of level error (CSP
violations land there), any request but the page itself, a document wider
than the viewport or an element sticking out of it (but inside a table's
own horizontal scroller), an SVG chart with no data path or a data path
with no point, a <script> element. With RESULT.json, every distribution's
p50/p90/p99 marker must carry the result's figure (data-value); with
A.json,B.json (a comparison) the "A p99" and "B p99" markers. A
screenshot of each viewport goes to OUTDIR/NAME-WIDTHxHEIGHT.png. Prints
one "ok:"/"FAIL:" line per check, and per page one "lines: PAGE: {...}"
line (each chart's aria-label: the lines it draws, for tests that count
them); exits 1 when any failed.
"""

import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import base64

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
VIEWPORTS = [(1280, 800, False), (390, 844, True)]
# The distribution charts (data-metric) and vLLM's keys for their figures.
VLLM = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2el"}
MARKS = {"p50": "median_{}_ms", "p90": "p90_{}_ms", "p99": "p99_{}_ms"}

PROBE = r"""(() => {
  const W = innerWidth, out = {scrollWidth: document.documentElement.scrollWidth, innerWidth: W,
    wide: [], empty: [], scripts: document.querySelectorAll('script').length, charts: 0, marks: {},
    lines: {}, title: document.title};
  for (const e of document.body.querySelectorAll('*')) {
    if (e.parentElement && e.parentElement.closest('.tw')) continue;
    const b = e.getBoundingClientRect();
    if (b.width && (b.right > W + 1 || b.left < -1))
      out.wide.push(e.tagName + ' ' + Math.round(b.left) + '..' + Math.round(b.right));
  }
  for (const s of document.querySelectorAll('svg')) {
    out.charts++;
    const name = s.getAttribute('aria-label');
    const ps = s.querySelectorAll('path.data');
    out.lines[name] = ps.length;
    if (!ps.length) out.empty.push(name + ': no data path');
    for (const p of ps) {
      const d = p.getAttribute('d') || '';
      if (!/[ML]\s*-?[0-9]/.test(d) || p.getAttribute('data-n') === '0') out.empty.push(name + ': a path with no point');
    }
  }
  for (const div of document.querySelectorAll('[data-metric]')) {
    const m = {};
    for (const l of div.querySelectorAll('line.mk')) m[l.getAttribute('data-label')] = l.getAttribute('data-value');
    out.marks[div.getAttribute('data-metric')] = m;
  }
  return JSON.stringify(out);
})()"""


class Handler(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        self.send_header("Content-Security-Policy", CSP)
        super().end_headers()

    def log_message(self, *args):
        pass


class Browser:
    """Chromium driven over --remote-debugging-pipe (fd 3 in, fd 4 out)."""

    def __init__(self, chromium, profile):
        cmd_r, self.cmd_w = os.pipe()
        self.ev_r, ev_w = os.pipe()
        args = [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--hide-scrollbars", "--user-data-dir=" + profile,
                "--remote-debugging-pipe", "about:blank"]
        shell = 'exec "$@" 3<&%d 4>&%d' % (cmd_r, ev_w)
        self.proc = subprocess.Popen(["sh", "-c", shell, "sh"] + args, pass_fds=(cmd_r, ev_w),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env=dict(os.environ, HOME=profile))
        os.close(cmd_r)
        os.close(ev_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.ev_r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, session=None, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name, session):
        for i, m in enumerate(self.events):
            if m.get("method") == name and m.get("sessionId") == session:
                del self.events[i]
                return m
        while True:
            m = self._read()
            if m.get("method") == name and m.get("sessionId") == session:
                return m
            self.events.append(m)

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def problems_of(events, session, page_url):
    """Console errors, error log entries, requests other than the page."""
    bad = []
    for m in events:
        if m.get("sessionId") != session:
            continue
        meth, p = m.get("method"), m.get("params", {})
        if meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            bad.append("console error: %s" % [a.get("value") for a in p.get("args", [])])
        elif meth == "Runtime.exceptionThrown":
            bad.append("exception: %s" % p.get("exceptionDetails", {}).get("text"))
        elif meth == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            bad.append("log error: %s" % p["entry"].get("text"))
        elif meth == "Network.requestWillBeSent" and p.get("request", {}).get("url") != page_url:
            bad.append("request: %s" % p["request"].get("url"))
        elif meth == "Network.loadingFailed" and p.get("blockedReason"):
            bad.append("blocked: %s" % p.get("blockedReason"))
    return bad


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    chromium, outdir = sys.argv[1], sys.argv[2]
    pages = []
    for a in sys.argv[3:]:
        page, _, result = a.partition("=")
        pages.append((os.path.abspath(page), result or None))
    root = os.path.commonpath([os.path.dirname(p) for p, _ in pages])
    os.makedirs(outdir, exist_ok=True)
    srv = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a, **k: Handler(*a, directory=root, **k))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    fails = 0

    def check(what, ok, detail=""):
        nonlocal fails
        print("%s: %s%s" % ("ok" if ok else "FAIL", what, "" if ok else " (%s)" % detail))
        fails += 0 if ok else 1

    with tempfile.TemporaryDirectory() as profile:
        br = Browser(chromium, profile)
        try:
            for page, result in pages:
                rel = os.path.relpath(page, root)
                name = os.path.splitext(os.path.basename(page))[0]
                url = "http://127.0.0.1:%d/%s" % (port, rel)
                for w, h, mobile in VIEWPORTS:
                    tid = br.call("Target.createTarget", url="about:blank")["targetId"]
                    sid = br.call("Target.attachToTarget", targetId=tid, flatten=True)["sessionId"]
                    for dom in ("Runtime", "Log", "Network", "Page"):
                        br.call(dom + ".enable", session=sid)
                    br.call("Emulation.setDeviceMetricsOverride", session=sid, width=w, height=h,
                            deviceScaleFactor=1, mobile=mobile)
                    br.call("Page.navigate", session=sid, url=url)
                    br.wait_event("Page.loadEventFired", sid)
                    r = json.loads(br.call("Runtime.evaluate", session=sid, expression=PROBE,
                                           returnByValue=True)["result"]["value"])
                    shot = br.call("Page.captureScreenshot", session=sid, format="png")["data"]
                    with open(os.path.join(outdir, "%s-%dx%d.png" % (name, w, h)), "wb") as f:
                        f.write(base64.b64decode(shot))
                    # Events that came with the calls above, then this tab's.
                    bad = problems_of(br.events, sid, url)
                    br.events = [m for m in br.events if m.get("sessionId") != sid]
                    tag = "%s at %dx%d" % (rel, w, h)
                    check(tag + ": no console error, no request but the page", not bad, "; ".join(bad[:5]))
                    check(tag + ": nothing wider than the viewport",
                          r["scrollWidth"] <= r["innerWidth"] and not r["wide"],
                          "scrollWidth %d > %d; %s" % (r["scrollWidth"], r["innerWidth"], r["wide"][:5]))
                    check(tag + ": %d charts, each draws data" % r["charts"], r["charts"] > 0 and not r["empty"],
                          "; ".join(r["empty"][:5]))
                    check(tag + ": no script element", r["scripts"] == 0, "%d" % r["scripts"])
                    br.call("Target.closeTarget", targetId=tid)
                print("lines: %s: %s" % (rel, json.dumps(r["lines"], sort_keys=True)))
                if result and "," in result:
                    # A comparison: each distribution's A p99 and B p99.
                    res = []
                    for fn in result.split(","):
                        with open(fn) as f:
                            res.append(json.load(f))
                    ok, why = True, []
                    for metric, key in VLLM.items():
                        m = r["marks"].get(metric, {})
                        for i, side in enumerate("AB"):
                            want = res[i].get("p99_{}_ms".format(key))
                            got = float(m.get(side + " p99", "nan"))
                            if want is None or abs(got - want) > 1e-9 * max(1.0, abs(want)):
                                ok = False
                                why.append("%s %s p99: page %s, result %s" % (metric, side, m.get(side + " p99"), want))
                    check(rel + ": the A and B p99 markers are the results' figures", ok, "; ".join(why[:4]))
                elif result:
                    with open(result) as f:
                        res = json.load(f)
                    ok, why = True, []
                    for metric, key in VLLM.items():
                        m = r["marks"].get(metric)
                        if m is None:
                            ok = False
                            why.append("no %s chart" % metric)
                            continue
                        for lab, fmt in MARKS.items():
                            want = res.get(fmt.format(key))
                            got = float(m.get(lab, "nan"))
                            if want is None or abs(got - want) > 1e-9 * max(1.0, abs(want)):
                                ok = False
                                why.append("%s %s: page %s, result %s" % (metric, lab, m.get(lab), want))
                    check(rel + ": the p50/p90/p99 markers are the result's figures", ok, "; ".join(why[:4]))
        finally:
            br.close()
            srv.shutdown()
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
