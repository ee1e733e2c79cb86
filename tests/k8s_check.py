#!/usr/bin/env python3
"""The fields of deploy/ that matter, as Kubernetes and a container
runtime would read them (tests/k8s.sh renders the manifests, then runs
this). argv: rendered.yaml SRCDIR [infertop binary].
Prints "ok: ..." / "FAIL: ..." lines; exit 1 when anything failed."""
import json
import re
import shlex
import subprocess
import sys

import yaml

fails = 0


def check(what, cond):
    global fails
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        fails += 1


rendered, srcdir = sys.argv[1:3]
binary = sys.argv[3] if len(sys.argv) > 3 else None
containerfile = srcdir + "/deploy/Containerfile"

docs = [d for d in yaml.safe_load_all(open(rendered)) if d]
by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], []).append(d)
check("the manifests parse: %d objects" % len(docs), len(docs) >= 4)
for kind in ("ConfigMap", "Service", "Job", "Pod"):
    check("a %s is there" % kind, kind in by_kind)
if fails:
    sys.exit(1)

job = by_kind["Job"][0]
svc = by_kind["Service"][0]
fleet = by_kind["Pod"][0]
cm = by_kind["ConfigMap"][0]
js = job["spec"]
pod = js["template"]["spec"]
labels = js["template"]["metadata"]["labels"]
ann = js["template"]["metadata"].get("annotations", {})
gen = [c for c in pod["containers"] if c["name"] == "infertop"]
check("the Job has an infertop container", len(gen) == 1)
gen = gen[0]
env = {e["name"]: e for e in gen.get("env", [])}

# The Indexed Job and the slice count each pod needs.
check("completionMode: Indexed", js.get("completionMode") == "Indexed")
n = js.get("completions")
check("completions is a number > 0 (%r)" % n, isinstance(n, int) and n > 0)
check("parallelism == completions (all generators at once)", js.get("parallelism") == n)
cnt = env.get("INFERTOP_SLICE_COUNT", {}).get("value")
check("env INFERTOP_SLICE_COUNT == completions (%r, %r)" % (cnt, n), cnt == str(n))
check("the pods restart on failure, not Always (a Job)", pod.get("restartPolicy") in ("OnFailure", "Never"))

# Secrets: the token the entrypoint names, and the target's key.
def secret_ref(name):
    v = env.get(name, {}).get("valueFrom", {}).get("secretKeyRef")
    return v if v and v.get("name") and v.get("key") else None


check("INFERTOP_TOKEN comes from a Secret", secret_ref("INFERTOP_TOKEN") is not None)
check("OPENAI_API_KEY comes from a Secret", secret_ref("OPENAI_API_KEY") is not None)
check("no env value holds a literal token", all("value" not in env[k] for k in ("INFERTOP_TOKEN", "OPENAI_API_KEY")))

# The image's entrypoint is what the pod runs.
text = open(containerfile).read()
m = re.search(r"^ENTRYPOINT\s+(\[.*\])\s*$", text, re.M)
check("the Containerfile has an exec-form ENTRYPOINT", m is not None)
entry = json.loads(m.group(1)) if m else []
check("the entrypoint is infertop serve (%s)" % " ".join(entry), entry[:2] == ["infertop", "serve"])


def opt(argv, name):
    return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else None


listen = opt(entry, "--listen") or ""
port = int(listen.rsplit(":", 1)[1]) if ":" in listen else -1
check("it listens on all addresses, port 8080 (%s)" % listen, listen == "0.0.0.0:8080")
tok = opt(entry, "--listen-token-env")
check("with --listen-token-env (needed beyond loopback): %s" % tok, tok is not None)
check("the pod's token variable is the one the entrypoint reads", tok in env and secret_ref(tok) is not None)
check("the Job container keeps the entrypoint (no command)", "command" not in gen)
check("EXPOSE %d" % port, re.search(r"^EXPOSE\s+%d\s*$" % port, text, re.M) is not None)
check("HEALTHCHECK runs deploy/healthcheck.sh, which GETs /healthz",
      re.search(r"^HEALTHCHECK .*/usr/local/bin/infertop-healthcheck", text, re.M) is not None
      and re.search(r"^COPY deploy/healthcheck.sh /usr/local/bin/infertop-healthcheck$", text, re.M) is not None
      and "/healthz" in open(srcdir + "/deploy/healthcheck.sh").read())
check("a non-root USER", re.search(r"^USER\s+(?!0\b|root\b)\S+", text, re.M) is not None)
stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, re.M)
check("two stages, both Debian (%s)" % stages, len(stages) == 2 and all(s[0].startswith("debian:") for s in stages))
check("the build stage installs install-deps.sh --build (the list .ci/run installs)",
      re.search(r"^RUN \./install-deps\.sh --build", text, re.M) is not None)

ports = {p.get("name"): p["containerPort"] for p in gen.get("ports", [])}
check("containerPort %d named api" % port, ports.get("api") == port)
probes = [gen.get(k, {}).get("exec", {}).get("command") for k in ("readinessProbe", "livenessProbe")]
check("readiness and liveness probes run the image's health check",
      all(p == ["/usr/local/bin/infertop-healthcheck"] for p in probes))

# The headless Service finds exactly the generator pods.
ss = svc["spec"]
check("the Service is headless (clusterIP: None)", ss.get("clusterIP") == "None")
sel = ss.get("selector", {})
check("its selector matches the pod labels (%s)" % sel, sel and all(labels.get(k) == v for k, v in sel.items()))
fl = fleet["metadata"].get("labels", {})
check("its selector does not match the fleet pod", not all(fl.get(k) == v for k, v in sel.items()))
sp = ss["ports"][0]
check("the Service port is the container's", sp["port"] == port and sp.get("targetPort") in ("api", port))
check("the Job's subdomain is the Service (pod DNS names)", pod.get("subdomain") == svc["metadata"]["name"])

# Spread, resources, scrape annotations.
pref = pod.get("affinity", {}).get("podAntiAffinity", {}).get("preferredDuringSchedulingIgnoredDuringExecution", [])
terms = [t["podAffinityTerm"] for t in pref]
check("preferred pod anti-affinity over kubernetes.io/hostname on the generator labels",
      any(t["topologyKey"] == "kubernetes.io/hostname"
          and all(labels.get(k) == v for k, v in t["labelSelector"]["matchLabels"].items()) for t in terms))
res = gen.get("resources", {})
check("cpu and memory requests and limits",
      all(k in res.get(a, {}) for a in ("requests", "limits") for k in ("cpu", "memory")))
check("prometheus.io/scrape \"true\", path /metrics, port %d" % port,
      ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/path") == "/metrics"
      and ann.get("prometheus.io/port") == str(port))
args = gen.get("args", [])
check("GETs open for annotation scraping (--listen-metrics-open)", "--listen-metrics-open" in args)
sc = pod.get("securityContext", {})
check("the pods run as non-root", sc.get("runAsNonRoot") is True)

# The fleet pod discovers the Service and reads the ConfigMap.
fc = fleet["spec"]["containers"][0]
fargs = fc.get("args", [])
want = "dns:%s:%d" % (svc["metadata"]["name"], sp["port"])
check("the fleet pod discovers %s" % want, fargs[:1] == ["fleet"] and opt(fargs, "--discover") == want)
fenv = {e["name"]: e for e in fc.get("env", [])}
ftok = opt(fargs, "--token-env")
check("the fleet reads the generators' token from the same Secret (%s)" % ftok,
      ftok in fenv and fenv[ftok].get("valueFrom", {}).get("secretKeyRef") == secret_ref(tok))
start = fargs.index("--start") if "--start" in fargs else len(fargs)
check("the fleet's own options come before --start (after it: the run)",
      all(fargs.index(o) < start for o in ("--discover", "--token-env", "--output") if o in fargs))
# --expect: the fleet waits for every generator of the Job, the count
# being the Job's completions (the kustomization copies it).
exp = opt(fargs, "--expect") or ""
m = re.fullmatch(r"\$\((\w+)\)", exp)
ev = fenv.get(m.group(1), {}).get("value") if m else exp
check("the fleet waits for the Job's completions (--expect %s = %r, completions %r)" % (exp, ev, n),
      "--expect" in fargs[:start] and ev == str(n))
refs = {e["valueFrom"]["configMapKeyRef"]["key"] for e in fc.get("env", [])
        if "configMapKeyRef" in e.get("valueFrom", {})}
check("every ConfigMap key the fleet reads exists (%s)" % sorted(refs), refs and refs <= set(cm["data"]))
used = set(re.findall(r"\$\((\w+)\)", " ".join(fargs)))
check("every $(VAR) in its args is in its env", used <= {e["name"] for e in fc.get("env", [])})
spec = json.loads(cm["data"]["run.json"])
check("run.json is a JSON run spec with a url", isinstance(spec, dict) and spec.get("url", "").startswith("http"))

check("one image for generators and fleet", gen["image"] == fc["image"])

if binary:
    # run.json is accepted by this infertop's option table: every key a
    # long option (what serve checks before a run).
    helptext = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    unknown = [k for k in spec if k != "url" and "--" + k not in helptext]
    check("run.json's keys are infertop options (%s)" % (unknown or "all"), not unknown)
    # The fleet pod's options, where this build has `infertop fleet`: the
    # fleet's before --start, the run's after it.
    fl = subprocess.run([binary, "fleet", "--help"], capture_output=True, text=True)
    if fl.returncode == 0 and "--discover" in fl.stdout:
        fopts = [a for a in fargs[1:start] if a.startswith("--")]
        ropts = [a for a in fargs[start + 1:] if a.startswith("--")]
        bad = [a for a in fopts if a not in fl.stdout] + [a for a in ropts if a not in helptext]
        check("the fleet pod's options are this build's (%s)" % (bad or "all"), not bad)
    else:
        print("note: this build has no infertop fleet: its options in the fleet pod are not checked")
    # The runtime stage installs every package whose library the binary
    # loads directly (its DT_NEEDED), beyond the base image's own.
    out = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True).stdout
    needed = re.findall(r"\(NEEDED\).*\[(.+)\]", out)
    runtime = text.split("\nFROM ", 2)[-1]
    base = {"libc6", "libtinfo6"}
    missing = []
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    paths = dict(re.findall(r"^\s*(\S+) => (/\S+)", ldd, re.M))
    # A sanitizer build's runtimes are not the image's (it builds without).
    needed = [lib for lib in needed if not re.match(r"lib(asan|ubsan|lsan|tsan)\.", lib)]
    for lib in needed:
        pkg = ""
        path = paths.get(lib, "")
        for p in (path, path.replace("/usr/lib/", "/lib/", 1), path.replace("/lib/", "/usr/lib/", 1)):
            r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True) if p else None
            if r and r.returncode == 0:
                pkg = r.stdout.split(":", 1)[0].strip()
                break
        if not pkg:
            missing.append(lib + " (no package found)")
        elif pkg not in base and not re.search(r"\b%s\b" % re.escape(pkg), runtime):
            missing.append("%s (%s)" % (lib, pkg))
    check("the runtime stage installs the packages of every library the binary needs (%s)"
          % (", ".join(missing) or ", ".join(needed)), not missing)

sys.exit(1 if fails else 0)
