#!/usr/bin/env bash
# Renders the Helm corpus with capstan and with real Helm (v4.2.3, in-process through the
# oracle) in one run, chart by chart interleaved so both see the same machine load, and prints
# per-chart times, Helm/capstan ratios, their median, the corpus total without RSA key
# generation (keygen charts are reported separately) and the peak RSS of `capstan render` on
# the largest chart. See docs/benchmarks.md.
#
#   scripts/bench-render.sh [--reps N] [--filter SUBSTR] [--no-helm] [--out FILE.tsv]
#
# Environment: CAPSTAN_SHARED (default: ../shared or ../../shared beside the checkout, else
# /work/shared) holds helm-corpus/ and tools/.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
REPS=5
FILTER=""
HELM=1
OUT="$ROOT/target/bench-render.tsv"
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS=$2; shift 2 ;;
        --filter) FILTER=$2; shift 2 ;;
        --no-helm) HELM=0; shift ;;
        --out) OUT=$2; shift 2 ;;
        *) echo "usage: $0 [--reps N] [--filter SUBSTR] [--no-helm] [--out FILE.tsv]" >&2; exit 2 ;;
    esac
done

SHARED=${CAPSTAN_SHARED:-}
if [ -z "$SHARED" ]; then
    for c in "$ROOT/../shared" "$ROOT/../../shared" /work/shared; do
        if [ -d "$c/helm-corpus" ]; then SHARED=$(cd "$c" && pwd); break; fi
    done
fi
if [ -z "$SHARED" ] || [ ! -d "$SHARED/helm-corpus" ]; then
    echo "bench-render: no shared Helm corpus (set CAPSTAN_SHARED)" >&2
    exit 2
fi

echo "building release binaries…" >&2
cargo build --release --quiet --bin capstan --example render_corpus
BIN="$ROOT/target/release"

PY=python3
if [ "$HELM" = 1 ]; then
    PY=$("$ROOT/scripts/oracle-env.sh")
fi

echo "machine: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)"

SHARED="$SHARED" BIN="$BIN" REPS="$REPS" FILTER="$FILTER" HELM="$HELM" OUT="$OUT" "$PY" - <<'PYEOF'
import json, os, statistics, subprocess, sys, time

shared, bin_dir = os.environ["SHARED"], os.environ["BIN"]
reps, filt, helm_on, out_path = int(os.environ["REPS"]), os.environ["FILTER"], os.environ["HELM"] == "1", os.environ["OUT"]
corpus_dir = os.path.join(shared, "helm-corpus")
corpus = [e for e in json.load(open(os.path.join(corpus_dir, "corpus.json"))) if filt in e["id"]]

if helm_on:
    sys.path.insert(0, os.path.join(shared, "tools"))
    import helm_oracle

def keygen(e):
    """Helm generated keys/certificates for this chart (same rule as examples/render_corpus.rs)."""
    golden = json.load(open(os.path.join(corpus_dir, "golden", e["id"] + ".json")))
    return any(("-----BEGIN" in golden.get(t, "") or "LS0tLS1CRUdJTi" in golden.get(t, ""))
               for t in e.get("nondeterministic_templates", []))

def capstan_ms(chart_dir, n):
    """In-process load+render median from examples/render_corpus.rs."""
    p = subprocess.run([os.path.join(bin_dir, "examples", "render_corpus"), "--tsv", "--reps", str(n), chart_dir],
                       capture_output=True, text=True)
    rows = [l.split("\t") for l in p.stdout.splitlines()[1:] if l.strip()]
    if not rows:
        return None, "failed", p.stderr.strip()[:160]
    _id, status, ms, _rsa, _n, detail = (rows[0] + [""] * 6)[:6]
    return float(ms), status, detail

def helm_ms(chart_dir, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        try:
            helm_oracle.render(chart_dir, {})
        except Exception as ex:  # Helm refuses the chart
            return None
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)

if helm_on and corpus:
    # The first render in a process pays the Go runtime's start-up; keep it out of the numbers.
    helm_oracle.render(os.path.join(corpus_dir, "charts", corpus[0]["id"]), {})

rows = []
fmt = lambda x, w, p: f"{x:>{w}.{p}f}" if x is not None else f"{'-':>{w}}"
print(f"{'capstan ms':>10} {'helm ms':>9} {'ratio':>7}  status     chart")
# The example cluster-stack chart first (not part of the corpus statistics).
example = os.path.join(os.getcwd(), "stacks", "example", "cluster-class")
if os.path.isdir(example) and not filt:
    c, status, _ = capstan_ms(example, reps)
    h = helm_ms(example, reps) if helm_on else None
    print(f"{fmt(c, 10, 3)} {fmt(h, 9, 1)} {fmt(h / c if c and h else None, 7, 1)}  {status:<10} stacks/example/cluster-class (not in the statistics)", flush=True)
for e in corpus:
    d = os.path.join(corpus_dir, "charts", e["id"])
    rsa = keygen(e)
    n = 1 if rsa else reps  # key generation takes seconds in Helm; once is enough
    c, status, detail = capstan_ms(d, n)
    h = helm_ms(d, n) if helm_on else None
    ratio = h / c if (c and h and status != "failed") else None
    rows.append(dict(id=e["id"], capstan=c if status != "failed" else None, helm=h, ratio=ratio, status=status, rsa=rsa, detail=detail))
    print(f"{fmt(c if status != 'failed' else None, 10, 3)} {fmt(h, 9, 1)} {fmt(ratio, 7, 1)}  {status:<10} {'[rsa] ' if rsa else ''}{e['id']}", flush=True)

with open(out_path, "w") as f:
    f.write("id\tcapstan_ms\thelm_ms\tratio\tstatus\trsa\tdetail\n")
    for r in rows:
        f.write("\t".join(str(r[k]) if r[k] is not None else "" for k in ("id", "capstan", "helm", "ratio", "status", "rsa", "detail")) + "\n")

ok = [r for r in rows if r["capstan"] is not None]
plain = [r for r in ok if not r["rsa"]]
rsa = [r for r in ok if r["rsa"]]
print()
print(f"charts: {len(rows)}; rendered by capstan: {len(ok)} (identical to Helm: {sum(r['status'] == 'identical' for r in ok)}); failed: {len(rows) - len(ok)}")
ratios = [r["ratio"] for r in ok if r["ratio"] is not None]
if ratios:
    print(f"median Helm/capstan ratio over {len(ratios)} charts rendered by both: {statistics.median(ratios):.1f}x "
          f"(min {min(ratios):.1f}x, max {max(ratios):.1f}x; target >= 10x)")
    pr = [r["ratio"] for r in plain if r["ratio"] is not None]
    if pr:
        print(f"median ratio without keygen charts ({len(pr)}): {statistics.median(pr):.1f}x")
if ok:
    print(f"median per-chart capstan time: {statistics.median(r['capstan'] for r in ok):.3f} ms"
          + (f"; Helm: {statistics.median(r['helm'] for r in ok if r['helm'] is not None):.1f} ms" if helm_on else ""))
print(f"capstan corpus total without keygen charts ({len(plain)}): {sum(r['capstan'] for r in plain):.1f} ms (target < 1000 ms)")
print(f"capstan keygen charts ({len(rsa)}): {sum(r['capstan'] for r in rsa):.1f} ms"
      + (f"; Helm: {sum(r['helm'] for r in rsa if r['helm'] is not None):.1f} ms" if helm_on else ""))
if helm_on:
    hp = [r["helm"] for r in plain if r["helm"] is not None]
    print(f"Helm corpus total without keygen charts: {sum(hp):.1f} ms")

# One sequential pass over the whole corpus in one process (no repeats), keygen charts skipped.
p = subprocess.run([os.path.join(bin_dir, "examples", "render_corpus"), "--tsv", "--reps", "1", "--skip-rsa", "--filter", filt],
                   capture_output=True, text=True, env=dict(os.environ, CAPSTAN_SHARED=shared))
wall = [l for l in p.stderr.splitlines() if l.startswith("wall time")]
print("single-threaded pass over the corpus without keygen charts, one process: " + (wall[0] if wall else "?"))

# Peak RSS of `capstan render` on the largest chart (by Helm's output size) that it renders.
def out_size(e):
    return os.path.getsize(os.path.join(corpus_dir, "golden", e["id"] + ".json"))
for e in sorted(corpus, key=out_size, reverse=True)[:5]:
    d = os.path.join(corpus_dir, "charts", e["id"])
    proc = subprocess.Popen([os.path.join(bin_dir, "capstan"), "render", d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, ru = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) == 0:
        print(f"peak RSS of `capstan render` on the largest chart it renders ({e['id']}, "
              f"{out_size(e) // 1024} KiB of Helm output): {ru.ru_maxrss / 1024:.1f} MiB (target < 64 MiB)")
        break
    print(f"(largest chart {e['id']} does not render with `capstan render` yet; trying the next)")
print(f"per-chart table written to {out_path}")
PYEOF
