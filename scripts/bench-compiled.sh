#!/usr/bin/env bash
# Compiled renders against Helm (issue 10): each chart is compiled once by capstan
# (examples/render_many.rs), then capstan and Helm v4.2.3 (in-process through the oracle's
# library, loading the chart per render as Helm must) render the same N value sets — one per
# simulated cluster — in one process each, chart by chart. Prints per-render times and the Helm/capstan ratio,
# and checks that the first renders of both are identical (charts without key generation).
#
#   scripts/bench-compiled.sh [--count N] [--keygen-count N] [--filter SUBSTR]
#
# Also reachable as `scripts/bench-render.sh --compiled …`. Results: docs/benchmarks.md.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
COUNT=1000
KEYGEN_COUNT=100
FILTER=""
while [ $# -gt 0 ]; do
    case "$1" in
        --count) COUNT=$2; shift 2 ;;
        --keygen-count) KEYGEN_COUNT=$2; shift 2 ;;
        --filter) FILTER=$2; shift 2 ;;
        *) echo "usage: $0 [--count N] [--keygen-count N] [--filter SUBSTR]" >&2; exit 2 ;;
    esac
done

. "$ROOT/scripts/lib/shared-corpus.sh"

echo "building release binaries…" >&2
cargo build --release --quiet --example render_many
PY=$("$ROOT/scripts/oracle-env.sh")

echo "machine: $(uname -srm), $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)"

SHARED="$SHARED" ROOT="$ROOT" COUNT="$COUNT" KEYGEN_COUNT="$KEYGEN_COUNT" FILTER="$FILTER" "$PY" - <<'PYEOF'
import json, os, subprocess, sys, time

shared, root = os.environ["SHARED"], os.environ["ROOT"]
count, keygen_count, filt = int(os.environ["COUNT"]), int(os.environ["KEYGEN_COUNT"]), os.environ["FILTER"]
sys.path.insert(0, os.path.join(shared, "tools"))
import helm_oracle

corpus = os.path.join(shared, "helm-corpus", "charts")
def name(i):
    return {"nameOverride": f"n{i}", "fullnameOverride": f"full-{i}"}

# (label, chart dir, generates keys, value set i)
CHARTS = [
    ("example cluster-class", os.path.join(root, "stacks/example/cluster-class"), False,
     lambda i: {**name(i), "controlPlane": {"replicas": 1 + 2 * (i % 3)}, "network": {"podCIDR": f"10.{i % 250}.0.0/16"}}),
    ("example addon: cni", os.path.join(root, "stacks/example/cluster-addon/cni"), False,
     lambda i: {"podCIDR": f"10.{i % 250}.0.0/16", "mtu": 1400 + i % 100}),
    ("example addon: cluster-info", os.path.join(root, "stacks/example/cluster-addon/cluster-info"), False,
     lambda i: {"cluster": {"name": f"cluster-{i}", "namespace": f"tenant-{i % 7}", "endpoint": f"10.0.{i % 250}.1:6443"},
                "controlPlane": {"replicas": 1 + 2 * (i % 3), "version": "v1.30.4"}}),
    ("metrics-server 3.12.2", os.path.join(corpus, "SovereignCloudStack_cluster-stacks__providers_docker_scs_cluster-addon_metrics-server_charts_metrics-server-3.12.2.tgz_metrics-server"), False,
     lambda i: {**name(i), "replicas": 1 + i % 3, "podLabels": {"cluster": f"c{i}"}}),
    ("bitnami mastodon", os.path.join(corpus, "bitnami_charts__bitnami_mastodon"), False,
     lambda i: {**name(i), "commonLabels": {"cluster": f"c{i}"}, "minio": {"enabled": i % 10 != 0}}),
    ("cilium 1.17.4 (generates keys)", os.path.join(corpus, "SovereignCloudStack_cluster-stacks__providers_openstack_scs_cluster-addon_cni_charts_cilium-1.17.4.tgz_cilium"), True,
     lambda i: {"cluster": {"name": f"c{i}", "id": 1 + i % 200}}),
]

out_dir = os.path.join(root, "target", "bench-compiled")
os.makedirs(out_dir, exist_ok=True)
print(f"{'chart':<32} {'renders':>7} {'capstan ms':>11} {'helm ms':>9} {'ratio':>7} {'compile ms':>10}  first renders")
for label, chart, keygen, gen in CHARTS:
    if filt not in label:
        continue
    n = keygen_count if keygen else count
    sets = [gen(i) for i in range(n)]
    slug = "".join(c if c.isalnum() else "-" for c in label)
    values_file = os.path.join(out_dir, slug + ".jsonl")
    with open(values_file, "w") as f:
        for s in sets:
            f.write(json.dumps(s) + "\n")
    dump = os.path.join(out_dir, slug)
    p = subprocess.run([os.path.join(root, "target/release/examples/render_many"), chart, values_file, "--dump", "3", dump],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(f"{label:<32} capstan failed: {p.stderr.strip()[:200]}")
        continue
    renders, compile_ms, total_ms, per_render, _median = p.stdout.split("\t")

    # Helm loads the chart for every render, as `helm template` (and the reference operator)
    # does: reusing one loaded chart is not safe in Helm, whose dependency processing
    # changes the loaded chart (a subchart disabled by one value set stays gone for the next).
    helm_render = lambda s: helm_oracle.render(chart, s)
    helm_render(sets[0])  # Go runtime warm-up
    firsts = []
    t0 = time.perf_counter()
    for i, s in enumerate(sets):
        out = helm_render(s)
        if i < 3:
            firsts.append(out)
    helm_total = (time.perf_counter() - t0) * 1000
    helm_per = helm_total / n
    # Templates that differ between two Helm renders of the same values (random passwords)
    # are left out of the check.
    random = set()
    for i in range(min(3, n)):
        again = helm_render(sets[i])
        random |= {t for t, text in firsts[i].items() if again.get(t) != text}
    same = "-"
    if not keygen:
        def strip(out):
            return {t: v for t, v in out.items() if t not in random}
        equal = all(strip(json.load(open(os.path.join(dump, f"{i}.json")))) == strip(firsts[i]) for i in range(min(3, n)))
        same = ("identical" if equal else "DIFFER") + (f" ({len(random)} random templates not compared)" if random else "")
    print(f"{label:<32} {n:>7} {float(per_render):>11.3f} {helm_per:>9.2f} {helm_per / float(per_render):>6.1f}x {float(compile_ms):>10.1f}  {same}", flush=True)
PYEOF
