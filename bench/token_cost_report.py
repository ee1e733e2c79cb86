#!/usr/bin/env python3
"""The figures of one stream count of bench/token_cost.sh, from the files
its runs left in DIR:

  floor                 bench/floor_reader's line
  lag.floor             bench/token_source's own report for each run:
  lag.infertop            its lateness (p50, p99, max) and its last
  lag.one ...             token's
  r.json, time          infertop's result and `time` (user sys) for ROUNDS
  r1.json, time1          requests per stream, and for one (the steady
                          state is what the rounds after the first add)
  c.json, timec, ...    --tls: the same for the curl path (the control)

Every figure stands beside the lateness of the source that fed it, and is
marked INVALID when that source's lateness p99 passed LATE_P99_MS (a late
source bunches tokens into fewer reads, and every client looks cheaper) or
when it is negative (only noise gives that).

  token_cost_report.py DIR STREAMS TOKENS TTFT_MS ITL_MS TLS(0|1)
"""
import json
import os
import re
import sys

LATE_P99_MS = 10.0


def source_lateness(path):
    """(p50, p99, max, last-token p50) in ms, or None without a report."""
    try:
        text = open(path).read()
    except OSError:
        return None
    m = re.search(r"lateness p50 ([\d.]+) ms p99 ([\d.]+) ms p99\.9 [\d.]+ ms max ([\d.]+) ms", text)
    if not m:
        return None
    last = re.search(r"last token lateness p50 ([\d.]+) ms", text)
    return (float(m.group(1)), float(m.group(2)), float(m.group(3)), float(last.group(1)) if last else 0.0)


def late_why(lates):
    """Why figures fed by these sources are invalid, or ''."""
    if any(late is None for late in lates):
        return "INVALID: no lateness report from the source"
    worst = max(late[1] for late in lates)
    if worst > LATE_P99_MS:
        return f"INVALID: source late, p99 {worst:.1f} ms > {LATE_P99_MS:g} ms"
    return ""


def mark(lates, *figures):
    why = late_why(lates)
    if why:
        return why
    if any(f < 0 for f in figures):
        return "INVALID: negative, only noise gives that"
    return ""


def late_cols(lates):
    """The worst (by p99) of the sources' lateness, p50/p99/max."""
    known = [x for x in lates if x is not None]
    if not known:
        return f"{'-':>22}"
    w = max(known, key=lambda x: x[1])
    return f"{w[0]:6.2f}/{w[1]:6.2f}/{w[2]:7.2f}"


def cpu(path):
    return tuple(map(float, open(path).read().split()[-2:]))


def options(r):
    """The result's options block (where the transport is recorded)."""
    return (r.get("infertop") or {}).get("options") or {}


def transport(r, fallback):
    t = options(r).get("transport")
    return t if t else fallback


def main():
    d, streams, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ttft, itl, tls = float(sys.argv[4]), float(sys.argv[5]), sys.argv[6] == "1"
    e2e_truth = ttft + (tokens - 1) * itl
    p = lambda name: os.path.join(d, name)
    floor = dict(kv.split("=", 1) for kv in open(p("floor")).read().split()[1:])
    fu, fs = float(floor["user_us_per_token"]), float(floor["sys_us_per_token"])
    floor_late = source_lateness(p("lag.floor"))

    head = f"  {'':15} {'user us/tok':>11} {'sys us/tok':>10} {'TTFT p50 err':>12} {'E2E p50 err':>11} " \
           f"{'ITL p99':>8}  {'source late p50/p99/max ms':>22}"
    # (label, result file, time file, lag, one-round result, time, lag, fallback transport)
    clients = [("infertop -k" if tls else "infertop", "r.json", "time", "lag.infertop", "r1.json", "time1",
                "lag.one", "curl (no transport field)" if tls else "")]
    if tls:
        clients.append(("curl control", "c.json", "timec", "lag.curl", "c1.json", "timec1", "lag.curl1",
                        "curl (no transport field)"))
    r0 = json.load(open(p(clients[0][1])))
    print(f"{streams} streams, {r0['completed']} requests ({r0['failed']} failed), "
          f"{max(r0['total_output_tokens'], 1)} tokens"
          + (f"; TLS floor: {floor.get('tls', '?')}" if tls else ""))
    print(head)
    fm = mark([floor_late], fu, fs)
    print(f"  {'TLS floor' if tls else 'floor':15} {fu:11.3f} {fs:10.3f} {float(floor['ttft_p50_err_ms']):+10.2f}ms "
          f"{float(floor['e2e_p50_err_ms']):+9.2f}ms {float(floor['itl_p99_ms']):6.2f}ms  "
          f"{late_cols([floor_late])}  {fm}".rstrip())
    notes = []
    for label, rj, tf, lag, r1j, tf1, lag1, fallback in clients:
        r = json.load(open(p(rj)))
        user, sysc = cpu(p(tf))
        late = source_lateness(p(lag))
        tok = max(r["total_output_tokens"], 1)
        iu, isy = user * 1e6 / tok, sysc * 1e6 / tok
        print(f"  {label:15} {iu:11.3f} {isy:10.3f} {r['median_ttft_ms'] - ttft:+10.2f}ms "
              f"{r['median_e2el_ms'] - e2e_truth:+9.2f}ms {r['p99_itl_ms']:6.2f}ms  "
              f"{late_cols([late])}  {mark([late], iu, isy)}".rstrip())
        if os.path.exists(p(r1j)) and os.path.exists(p(tf1)):
            r1 = json.load(open(p(r1j)))
            u1, s1 = cpu(p(tf1))
            late1 = source_lateness(p(lag1))
            dt = r["total_output_tokens"] - r1["total_output_tokens"]
            if dt > 0:
                su, ss = (user - u1) * 1e6 / dt, (sysc - s1) * 1e6 / dt
                print(f"  {'  steady state':15} {su:11.3f} {ss:10.3f} {'':>12} {'':>11} {'':>8}  "
                      f"{late_cols([late, late1])}  {mark([late, late1], su, ss)}".rstrip())
        target = "user <= 1.5 us/token" if tls else "user <= 1 us/token"
        ratio_u = iu / fu if fu else float("inf")
        ratio_t = (iu + isy) / (fu + fs) if fu + fs else float("inf")
        notes.append(f"  {label}: ratio to the floor: user {ratio_u:.2f}x, total {ratio_t:.2f}x   "
                     f"(targets: {target}, total <= 1.25x)  {mark([floor_late, late], fu, fs, iu, isy)}".rstrip())
        if fallback or options(r).get("transport"):
            tls_facts = ", ".join(f"{k} {v}" for k, v in options(r).items()
                                  if k.startswith("tls") and isinstance(v, str))
            notes.append(f"  {label}: transport {transport(r, fallback)}" + (f" ({tls_facts})" if tls_facts else ""))
        last = late[3] if late else 0.0
        notes.append(f"  {label}: E2E p50 error less the source's last-token lateness p50 ({last:.3f} ms): "
                     f"{r['median_e2el_ms'] - e2e_truth - last:+.2f} ms   (target within 2 ms)  "
                     f"{late_why([late])}".rstrip())
    for n in notes:
        print(n)
    print(f"  (INVALID: the source's lateness p99 over {LATE_P99_MS:g} ms, or a negative figure)")


if __name__ == "__main__":
    main()
