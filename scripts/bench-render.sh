#!/usr/bin/env bash
# Renders the Helm corpus with capstan and with real Helm (v4.2.3, in-process through the
# oracle) in one run, chart by chart interleaved so both see the same machine load, and prints
# per-chart times, Helm/capstan ratios, their median, the corpus total without RSA key
# generation (keygen charts are reported separately) and the peak RSS of `capstan render` on
# the largest chart. See docs/benchmarks.md.
#
#   scripts/bench-render.sh [--reps N] [--keygen-reps N] [--filter SUBSTR] [--no-helm] [--disk-cold] [--out FILE.tsv]
#
# Cold columns: the first render in a fresh process (capstan's `render_corpus`, Helm's
# `helm_oracle.py --timing`). The chart's files are read just before, so they are in the page
# cache as for a chart one has just written or unpacked, and the numbers do not depend on what
# the machine evicted since the last run (a VM that drops its page cache moved the ratio
# between 1.4x and 2.7x from run to run). --disk-cold evicts them instead
# (posix_fadvise DONTNEED), so both tools read the chart from disk.
#   scripts/bench-render.sh --compiled [...]   compiled renders vs Helm: scripts/bench-compiled.sh
#
# Environment: CAPSTAN_SHARED (default: ../shared or ../../shared beside the checkout, else
# /work/shared) holds helm-corpus/ and tools/.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
REPS=5
KEYGEN_REPS=1
FILTER=""
HELM=1
DISK_COLD=0
OUT="$ROOT/target/bench-render.tsv"
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS=$2; shift 2 ;;
        --keygen-reps) KEYGEN_REPS=$2; shift 2 ;;
        --filter) FILTER=$2; shift 2 ;;
        --no-helm) HELM=0; shift ;;
        --disk-cold) DISK_COLD=1; shift ;;
        --out) OUT=$2; shift 2 ;;
        --compiled) shift; exec "$ROOT/scripts/bench-compiled.sh" "$@" ;;
        *) echo "usage: $0 [--reps N] [--keygen-reps N] [--filter SUBSTR] [--no-helm] [--disk-cold] [--out FILE.tsv] | --compiled [...]" >&2; exit 2 ;;
    esac
done

. "$ROOT/scripts/lib/shared-corpus.sh"

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

SHARED="$SHARED" BIN="$BIN" REPS="$REPS" KEYGEN_REPS="$KEYGEN_REPS" FILTER="$FILTER" HELM="$HELM" DISK_COLD="$DISK_COLD" OUT="$OUT" "$PY" - <<'PYEOF'
import json, os, statistics, subprocess, sys, time

shared, bin_dir = os.environ["SHARED"], os.environ["BIN"]
keygen_reps = int(os.environ["KEYGEN_REPS"])
reps, filt, helm_on, out_path = int(os.environ["REPS"]), os.environ["FILTER"], os.environ["HELM"] == "1", os.environ["OUT"]
disk_cold = os.environ["DISK_COLD"] == "1"
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

def page_cache(chart_dir):
    """Puts the chart's files in the page cache (read them) or, with --disk-cold, evicts them."""
    for parent, _dirs, names in os.walk(chart_dir):
        for name in names:
            try:
                with open(os.path.join(parent, name), "rb") as f:
                    if disk_cold:
                        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                    else:
                        f.read()
            except OSError:
                pass

def capstan_ms(chart_dir, n):
    """In-process load+render medians (wall, cpu) from examples/render_corpus.rs."""
    p = subprocess.run([os.path.join(bin_dir, "examples", "render_corpus"), "--tsv", "--reps", str(n), chart_dir],
                       capture_output=True, text=True)
    rows = [l.split("\t") for l in p.stdout.splitlines()[1:] if l.strip()]
    if not rows:
        return None, "failed", p.stderr.strip()[:160]
    _id, status, wall, cpu, _rsa, _n, detail, first_wall = (rows[0] + [""] * 8)[:8]
    if status == "failed":
        return None, status, detail
    return (float(wall), float(cpu), float(first_wall)), status, detail

def helm_cold_ms(chart_dir):
    """What the issue names: `helm_oracle.py CHART --timing`, a fresh process rendering once."""
    page_cache(chart_dir)
    p = subprocess.run([sys.executable, os.path.join(shared, "tools", "helm_oracle.py"), chart_dir, "--timing"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for l in p.stderr.splitlines():
        if l.startswith("render: "):
            return float(l.split()[1])
    return None

def helm_ms(chart_dir, n):
    """Helm's in-process load+render medians (wall, process cpu: Go's GC threads included)."""
    walls, cpus = [], []
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            helm_oracle.render(chart_dir, {})
        except Exception:  # Helm refuses the chart
            return None
        walls.append((time.perf_counter() - t0) * 1000)
        cpus.append((time.process_time() - c0) * 1000)
    return statistics.median(walls), statistics.median(cpus)

if helm_on and corpus:
    # The first render in a process pays the Go runtime's start-up; keep it out of the numbers.
    helm_oracle.render(os.path.join(corpus_dir, "charts", corpus[0]["id"]), {})

def fmt(x, w, p):
    return f"{x:>{w}.{p}f}" if x is not None else f"{'-':>{w}}"

def div(a, b):
    return a / b if (a is not None and b) else None

HEADER = (f"{'capstan ms':>10} {'(cpu)':>8} {'helm ms':>9} {'(cpu)':>8} {'ratio':>6} {'(cpu)':>6} "
          f"{'cold: capstan':>13} {'helm':>8} {'ratio':>6}  status     chart")
def line(c, h, hcold, status, label):
    cw, cc, cfirst = c if c else (None, None, None)
    hw, hc = h if h else (None, None)
    return (f"{fmt(cw, 10, 2)} {fmt(cc, 8, 2)} {fmt(hw, 9, 1)} {fmt(hc, 8, 1)} {fmt(div(hw, cw), 6, 1)} "
            f"{fmt(div(hc, cc), 6, 1)} {fmt(cfirst, 13, 2)} {fmt(hcold, 8, 1)} {fmt(div(hcold, cfirst), 6, 1)}  {status:<10} {label}")

rows = []
print(HEADER)
# The example cluster-stack chart first (not part of the corpus statistics).
example = os.path.join(os.getcwd(), "stacks", "example", "cluster-class")
if os.path.isdir(example) and not filt:
    page_cache(example)
    c, status, _ = capstan_ms(example, reps)
    h = helm_ms(example, reps) if helm_on else None
    hcold = helm_cold_ms(example) if helm_on else None
    print(line(c, h, hcold, status, "stacks/example/cluster-class (not in the statistics)"), flush=True)
for e in corpus:
    d = os.path.join(corpus_dir, "charts", e["id"])
    # Before the golden output is parsed (as much Python work as before), not right before the run.
    page_cache(d)
    rsa = keygen(e)
    # Key generation takes seconds and varies with the random prime search: once by default,
    # --keygen-reps N for medians of N.
    n = keygen_reps if rsa else reps
    c, status, detail = capstan_ms(d, n)
    h = helm_ms(d, n) if helm_on else None
    hcold = helm_cold_ms(d) if helm_on else None
    rows.append(dict(id=e["id"], wall=c and c[0], cpu=c and c[1], helm_wall=h and h[0], helm_cpu=h and h[1],
                     ratio=div(h and h[0], c and c[0]), ratio_cpu=div(h and h[1], c and c[1]),
                     cold=c and c[2], helm_cold=hcold, ratio_cold=div(hcold, c and c[2]),
                     status=status, rsa=rsa, detail=detail))
    print(line(c, h, hcold, status, ("[rsa] " if rsa else "") + e["id"]), flush=True)

cols = ("id", "wall", "cpu", "helm_wall", "helm_cpu", "ratio", "ratio_cpu", "cold", "helm_cold", "ratio_cold",
        "status", "rsa", "detail")
with open(out_path, "w") as f:
    f.write("\t".join(cols) + "\n")
    for r in rows:
        f.write("\t".join("" if r[k] is None else (f"{r[k]:.3f}" if isinstance(r[k], float) else str(r[k])) for k in cols) + "\n")

med = statistics.median
ok = [r for r in rows if r["wall"] is not None]
plain = [r for r in ok if not r["rsa"]]
rsa = [r for r in ok if r["rsa"]]
print()
print(f"charts: {len(rows)}; rendered by capstan: {len(ok)} (identical to Helm: {sum(r['status'] == 'identical' for r in ok)}); "
      f"failed: {len(rows) - len(ok)}; keygen charts among the rendered: {len(rsa)}")
both = [r for r in ok if r["ratio"] is not None]
if both:
    print(f"median Helm/capstan ratio over {len(both)} charts rendered by both: wall {med([r['ratio'] for r in both]):.1f}x, "
          f"cpu {med([r['ratio_cpu'] for r in both]):.1f}x (target >= 10x)")
    print(f"median per-chart time of those charts: capstan {med([r['wall'] for r in both]):.2f} ms wall / "
          f"{med([r['cpu'] for r in both]):.2f} ms cpu; Helm {med([r['helm_wall'] for r in both]):.1f} ms wall / "
          f"{med([r['helm_cpu'] for r in both]):.1f} ms cpu")
    cold = [r for r in both if r["ratio_cold"] is not None]
    if cold:
        print(f"cold (first render in a fresh process; Helm = `helm_oracle.py --timing`) over {len(cold)} charts: "
              f"median ratio {med([r['ratio_cold'] for r in cold]):.1f}x; median capstan {med([r['cold'] for r in cold]):.2f} ms, "
              f"Helm {med([r['helm_cold'] for r in cold]):.1f} ms")
firsts = [r for r in ok if r["cold"] is not None and r["wall"]]
if firsts:
    print(f"capstan first render in a fresh process ({'chart files evicted' if disk_cold else 'chart files in the page cache'}) vs warm, over {len(firsts)} charts: median ratio per chart "
          f"{med([r['cold'] / r['wall'] for r in firsts]):.2f}x; medians {med([r['cold'] for r in firsts]):.2f} ms first, "
          f"{med([r['wall'] for r in firsts]):.2f} ms warm ")
print(f"capstan corpus total without keygen charts ({len(plain)} charts, sum of medians): "
      f"{sum(r['wall'] for r in plain):.1f} ms wall, {sum(r['cpu'] for r in plain):.1f} ms cpu (target < 1000 ms)")
print(f"capstan keygen charts ({len(rsa)}): {sum(r['wall'] for r in rsa):.1f} ms wall, {sum(r['cpu'] for r in rsa):.1f} ms cpu"
      + (f"; Helm on the same charts: {sum(r['helm_wall'] or 0 for r in rsa):.1f} ms wall" if helm_on else ""))
if helm_on:
    print(f"Helm on the same non-keygen charts: {sum(r['helm_wall'] or 0 for r in plain):.1f} ms wall, "
          f"{sum(r['helm_cpu'] or 0 for r in plain):.1f} ms cpu")

# One sequential pass over the whole corpus in one process (no repeats), keygen charts skipped.
p = subprocess.run([os.path.join(bin_dir, "examples", "render_corpus"), "--tsv", "--reps", "1", "--skip-rsa", "--filter", filt],
                   capture_output=True, text=True, env=dict(os.environ, CAPSTAN_SHARED=shared))
wall = [l for l in p.stderr.splitlines() if l.startswith("this run")]
print("single-threaded pass over the corpus without keygen charts, one process: " + (wall[0] if wall else "?"))

# Peak RSS of `capstan render` on the largest chart (by Helm's output size) that it renders.
def out_size(e):
    return os.path.getsize(os.path.join(corpus_dir, "golden", e["id"] + ".json"))
for e in sorted(corpus, key=out_size, reverse=True)[:5]:
    d = os.path.join(corpus_dir, "charts", e["id"])
    # Through /usr/bin/time: Linux carries a process's peak RSS across exec, so a child forked
    # straight from this Python (which holds Helm's Go runtime) would report Python's peak.
    p = subprocess.run(["/usr/bin/time", "-f", "maxrss_kib=%M", os.path.join(bin_dir, "capstan"), "render", d],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rss = [l for l in p.stderr.splitlines() if l.startswith("maxrss_kib=")]
    if p.returncode == 0 and rss:
        kib = int(rss[-1].split("=")[1])
        print(f"peak RSS of `capstan render` on the largest chart it renders ({e['id']}, "
              f"{out_size(e) // 1024} KiB of Helm output): {kib / 1024:.1f} MiB (target < 64 MiB)")
        break
    print(f"(largest chart {e['id']} does not render with `capstan render` yet; trying the next)")
print(f"per-chart table written to {out_path}")
PYEOF
