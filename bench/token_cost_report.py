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

DIR holds those files, or one directory a repetition (rep1, rep2, ...:
REPEAT=N): then each figure is the runs' median.

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


def floor_figures(p):
    """bench/floor_reader's line: its clocked figures (after the
    handshakes) and, when it gives them, its whole process's."""
    f = dict(kv.split("=", 1) for kv in open(p("floor")).read().split()[1:])
    tok = max(int(f.get("tokens", "0")), 1)
    whole = None
    if "whole_user_s" in f:
        whole = (float(f["whole_user_s"]) * 1e6 / tok, float(f["whole_sys_s"]) * 1e6 / tok)
    return {"raw": f, "user": float(f["user_us_per_token"]), "sys": float(f["sys_us_per_token"]),
            "whole": whole, "late": source_lateness(p("lag.floor"))}


def client_figures(p, rj, tf, lag, r1j, tf1, lag1):
    """One client's figures in one run: CPU a token over the whole run,
    and the steady state (what the rounds after the first add)."""
    r = json.load(open(p(rj)))
    user, sysc = cpu(p(tf))
    tok = max(r["total_output_tokens"], 1)
    out = {"r": r, "user": user * 1e6 / tok, "sys": sysc * 1e6 / tok, "late": source_lateness(p(lag)),
           "steady": None, "late1": None}
    if os.path.exists(p(r1j)) and os.path.exists(p(tf1)):
        r1 = json.load(open(p(r1j)))
        u1, s1 = cpu(p(tf1))
        dt = r["total_output_tokens"] - r1["total_output_tokens"]
        if dt > 0:
            out["steady"] = ((user - u1) * 1e6 / dt, (sysc - s1) * 1e6 / dt)
            out["late1"] = source_lateness(p(lag1))
    return out


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def worst(lates):
    """The latest (by p99) of the runs' sources, None if any gave none."""
    if any(x is None for x in lates):
        return None
    return max(lates, key=lambda x: x[1])


def spread(xs):
    return f"{min(xs):.3f}-{max(xs):.3f}"


def main():
    d, streams, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ttft, itl, tls = float(sys.argv[4]), float(sys.argv[5]), sys.argv[6] == "1"
    e2e_truth = ttft + (tokens - 1) * itl
    # One run's files in DIR, or one directory a repetition (REPEAT=N):
    # every figure is then the median of the runs', each ratio the median
    # of the runs' own ratios (each run pairs a client with the floor just
    # before it, so a machine whose speed drifts still compares like with
    # like), and a figure is held against the latest of the runs' sources.
    reps = sorted((x for x in os.listdir(d) if re.fullmatch(r"rep\d+", x)), key=lambda x: int(x[3:]))
    dirs = [os.path.join(d, x) for x in reps] or [d]
    paths = [lambda name, base=base: os.path.join(base, name) for base in dirs]
    n = len(dirs)

    floors = [floor_figures(p) for p in paths]
    fu, fs = median([f["user"] for f in floors]), median([f["sys"] for f in floors])
    floor_late = worst([f["late"] for f in floors])
    raw = floors[0]["raw"]
    head = f"  {'':15} {'user us/tok':>11} {'sys us/tok':>10} {'TTFT p50 err':>12} {'E2E p50 err':>11} " \
           f"{'ITL p99':>8}  {'source late p50/p99/max ms':>22}"
    # (label, result file, time file, lag, one-round result, time, lag, fallback transport)
    clients = [("infertop -k" if tls else "infertop", "r.json", "time", "lag.infertop", "r1.json", "time1",
                "lag.one", "curl (no transport field)" if tls else "")]
    if tls:
        clients.append(("curl control", "c.json", "timec", "lag.curl", "c1.json", "timec1", "lag.curl1",
                        "curl (no transport field)"))
    r0 = json.load(open(paths[0](clients[0][1])))
    print(f"{streams} streams, {r0['completed']} requests ({r0['failed']} failed), "
          f"{max(r0['total_output_tokens'], 1)} tokens"
          + (f"; TLS floor: {raw.get('tls', '?')}" if tls else "")
          + (f"; the median of {n} runs, each floor then clients" if n > 1 else ""))
    print(head)
    fm = mark([floor_late], fu, fs)
    med = lambda key: median([float(f["raw"][key]) for f in floors])
    print(f"  {'TLS floor' if tls else 'floor':15} {fu:11.3f} {fs:10.3f} {med('ttft_p50_err_ms'):+10.2f}ms "
          f"{med('e2e_p50_err_ms'):+9.2f}ms {med('itl_p99_ms'):6.2f}ms  "
          f"{late_cols([floor_late])}  {fm}".rstrip())
    have_whole = all(f["whole"] for f in floors)
    if have_whole:
        # The floor's clock starts after its handshakes; its whole process
        # (start-up and handshakes in) is what a client's whole run is
        # held against.
        fwu, fws = median([f["whole"][0] for f in floors]), median([f["whole"][1] for f in floors])
        print(f"  {'  whole run':15} {fwu:11.3f} {fws:10.3f} {'':>12} {'':>11} {'':>8}  "
              f"{late_cols([floor_late])}  {mark([floor_late], fwu, fws)}".rstrip())
    notes = []
    for label, rj, tf, lag, r1j, tf1, lag1, fallback in clients:
        runs = [client_figures(p, rj, tf, lag, r1j, tf1, lag1) for p in paths]
        r = runs[0]["r"]
        iu, isy = median([x["user"] for x in runs]), median([x["sys"] for x in runs])
        late = worst([x["late"] for x in runs])
        rmed = lambda key: median([x["r"][key] for x in runs])
        print(f"  {label:15} {iu:11.3f} {isy:10.3f} {rmed('median_ttft_ms') - ttft:+10.2f}ms "
              f"{rmed('median_e2el_ms') - e2e_truth:+9.2f}ms {rmed('p99_itl_ms'):6.2f}ms  "
              f"{late_cols([late])}  {mark([late], iu, isy)}".rstrip())
        steady = all(x["steady"] for x in runs)
        if steady:
            su, ss = median([x["steady"][0] for x in runs]), median([x["steady"][1] for x in runs])
            late1 = worst([x["late1"] for x in runs])
            print(f"  {'  steady state':15} {su:11.3f} {ss:10.3f} {'':>12} {'':>11} {'':>8}  "
                  f"{late_cols([late, late1])}  {mark([late, late1], su, ss)}".rstrip())
        if n > 1:
            notes.append(f"  {label}: {n} runs, user us/tok {spread([x['user'] for x in runs])}, "
                         f"sys {spread([x['sys'] for x in runs])}; "
                         f"the {'TLS ' if tls else ''}floor's user {spread([f['user'] for f in floors])}")
        target = "user <= 1.5 us/token" if tls else "user <= 1 us/token"
        # Like with like: the whole run against the floor's whole process,
        # the steady state against the floor's clock (both after the
        # handshakes). Without the floor's whole figures (an older
        # floor_reader), the whole run against its clock, as before.
        pairs = []
        for x, f in zip(runs, floors):
            fw = f["whole"] if have_whole else (f["user"], f["sys"])
            pairs.append((x["user"] / fw[0] if fw[0] else float("inf"),
                          (x["user"] + x["sys"]) / (fw[0] + fw[1]) if fw[0] + fw[1] else float("inf")))
        ratio_u, ratio_t = median([q[0] for q in pairs]), median([q[1] for q in pairs])
        what = "whole run" if have_whole else "whole run against its clock"
        line = f"  {label}: ratio to the floor: {what} user {ratio_u:.2f}x, total {ratio_t:.2f}x"
        if steady:
            sp = [((x["steady"][0] / f["user"]) if f["user"] else float("inf"),
                   (sum(x["steady"]) / (f["user"] + f["sys"])) if f["user"] + f["sys"] else float("inf"))
                  for x, f in zip(runs, floors)]
            line += f"; steady user {median([q[0] for q in sp]):.2f}x, total {median([q[1] for q in sp]):.2f}x"
        notes.append(f"{line}   (targets: {target}, total <= 1.25x)  "
                     f"{mark([floor_late, late], fu, fs, iu, isy)}".rstrip())
        if fallback or options(r).get("transport"):
            tls_facts = ", ".join(f"{k} {v}" for k, v in options(r).items()
                                  if k.startswith("tls") and isinstance(v, str))
            notes.append(f"  {label}: transport {transport(r, fallback)}" + (f" ({tls_facts})" if tls_facts else ""))
        last = median([x["late"][3] for x in runs]) if late else 0.0
        notes.append(f"  {label}: E2E p50 error less the source's last-token lateness p50 ({last:.3f} ms): "
                     f"{rmed('median_e2el_ms') - e2e_truth - last:+.2f} ms   (target within 2 ms)  "
                     f"{late_why([late])}".rstrip())
    for line in notes:
        print(line)
    print(f"  (INVALID: the source's lateness p99 over {LATE_P99_MS:g} ms, or a negative figure)")


if __name__ == "__main__":
    main()
