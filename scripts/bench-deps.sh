#!/usr/bin/env bash
# Chart dependency resolution, capstan vs real Helm (v4.2.3 through the oracle's python), in one
# run: the four addon stages of openstack/scs2 (cilium pinned to 1.17.4, the version
# ../shared/chart-repos holds) resolved cold from Helm repositories served on loopback
# (`capstan dependency update` with --repository-mirror and an empty cache, one process per
# stage, against `helm_python.registry.dependency_update` of the same charts, in-process,
# interleaved rep by rep); then the request counts of a cold and a warm `capstan render` of the
# whole release. See docs/benchmarks.md.
#
#   scripts/bench-deps.sh [--reps N] [--bin PATH]
#
# Environment: CAPSTAN_SHARED (default: /work/shared or ../shared beside the checkout).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REPS=5
BIN="$ROOT/target/release/capstan"
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS=$2; shift 2 ;;
        --bin) BIN=$2; shift 2 ;;
        *) echo "usage: $0 [--reps N] [--bin PATH]" >&2; exit 2 ;;
    esac
done
SHARED=${CAPSTAN_SHARED:-}
for c in "$SHARED" "$ROOT/../shared" "$ROOT/../../shared" /work/shared; do
    if [ -n "$c" ] && [ -d "$c/chart-repos" ]; then SHARED=$c; break; fi
done
[ -x "$BIN" ] || { echo "no capstan binary at $BIN (cargo build --release, or --bin)" >&2; exit 1; }
PYTHON=$(CAPSTAN_SHARED=$SHARED scripts/oracle-env.sh)
exec "$PYTHON" - "$BIN" "$SHARED" "$REPS" "$ROOT" <<'PY'
import http.server, os, shutil, statistics, subprocess, sys, tempfile, threading, time
import helm_python.registry as registry

BIN, SHARED, REPS, ROOT = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
REPOS = os.path.join(SHARED, "chart-repos")
count = [0]

class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=REPOS, **k)
    def log_message(self, *a):
        pass
    def do_GET(self):
        count[0] += 1
        super().do_GET()

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
URL = "http://127.0.0.1:%d" % server.server_address[1]
UPSTREAM = {
    "https://helm.cilium.io": URL + "/cilium",
    "https://kubernetes.github.io/cloud-provider-openstack": URL + "/cloud-provider-openstack",
    "https://kubernetes-sigs.github.io/metrics-server": URL + "/metrics-server",
}
MIRRORS = sum((["--repository-mirror", f"{k}={v}"] for k, v in UPSTREAM.items()), [])

work = tempfile.mkdtemp(prefix="bench-deps-")
src = os.path.join(work, "scs2")
shutil.copytree(os.path.join(SHARED, "cluster-stacks-src/providers/openstack/scs2"), src)
cni = os.path.join(src, "cluster-addon/cni/Chart.yaml")
text = open(cni).read()
open(cni, "w").write(text.replace("version: 1.18.9", "version: 1.17.4"))
STAGES = ["cni", "metrics-server", "csi", "ccm"]

def fresh_stages(tag, rewrite):
    out = []
    for s in STAGES:
        d = os.path.join(work, tag, s)
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(os.path.join(src, "cluster-addon", s), d)
        if rewrite:
            p = os.path.join(d, "Chart.yaml")
            t = open(p).read()
            for k, v in UPSTREAM.items():
                t = t.replace(k, v)
            open(p, "w").write(t)
        out.append(d)
    return out

def capstan_cold():
    cache = os.path.join(work, "cache-cold")
    shutil.rmtree(cache, ignore_errors=True)
    dirs = fresh_stages("capstan", False)
    before, t = count[0], time.perf_counter()
    for d in dirs:
        subprocess.run([BIN, "dependency", "update", d, "--cache", cache] + MIRRORS,
                       check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t, count[0] - before

def capstan_cold_one_process():
    cache = os.path.join(work, "cache-cold")
    shutil.rmtree(cache, ignore_errors=True)
    dirs = fresh_stages("capstan", False)
    before, t = count[0], time.perf_counter()
    subprocess.run([BIN, "dependency", "update"] + dirs + ["--cache", cache] + MIRRORS,
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t, count[0] - before

def helm_cold():
    dirs = fresh_stages("helm", True)
    before, t = count[0], time.perf_counter()
    for d in dirs:
        registry.dependency_update(d)
    return time.perf_counter() - t, count[0] - before

KINDS = [("capstan, 4 processes", capstan_cold), ("capstan, 1 process", capstan_cold_one_process),
         ("helm, in-process", helm_cold)]
rows = {k: [] for k, _ in KINDS}
reqs = {}
for i in range(REPS):
    order = KINDS if i % 2 == 0 else list(reversed(KINDS))
    for name, f in order:
        secs, n = f()
        rows[name].append(secs)
        reqs[name] = n

print(f"cold resolution of scs2's 4 addon stages (cilium, metrics-server, cinder-csi, occm), {REPS} reps, median [min-max]:")
for name, _ in KINDS:
    v = rows[name]
    print(f"  {name:22} {statistics.median(v)*1000:8.1f} ms  [{min(v)*1000:.1f}-{max(v)*1000:.1f}]  requests: {reqs[name]}")

cache = os.path.join(work, "cache-render")
cluster = os.path.join(ROOT, "testdata/cluster.yaml")
render = [BIN, "render", src, "--cluster", cluster, "--cache", cache] + MIRRORS
for label in ("cold render (whole release)", "warm render (same inputs)", "warm render --offline"):
    args = render + (["--offline"] if "offline" in label else [])
    before, t = count[0], time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    print(f"{label:30} {(time.perf_counter()-t)*1000:8.1f} ms  requests: {count[0]-before}")
server.shutdown()
shutil.rmtree(work, ignore_errors=True)
PY
