#!/usr/bin/env bash
# Cold start of one render (issue 10 §4): the first load+render in a fresh process against the
# warm median of the same process (medians of the per-chart ratio; failed and key-generating
# charts left out), for two variants that take turns so both see the same machine state:
#
#   default              capstan's warm-up helper (src/warmup.rs) on and off (CAPSTAN_NO_WARMUP)
#   --binaries A B       two render_corpus builds, e.g. with and without the code order:
#                          cargo build --release --example render_corpus
#                          cp target/release/examples/render_corpus /tmp/ordered
#                          CAPSTAN_NO_CODE_ORDER=1 cargo build --release --example render_corpus
#                          cp target/release/examples/render_corpus /tmp/unordered
#                          scripts/bench-cold.sh --passes --binaries /tmp/unordered /tmp/ordered
#
# Sampling: by default --charts random charts, each run --rounds times per variant, variants
# alternating chart by chart (a chart's runs follow each other, so its data is still in the
# caches). --passes: every corpus chart once per pass, passes alternating between the
# variants, --rounds passes each (a chart is run after all the others, as
# scripts/bench-render.sh runs it). A bench-render.sh run alone moves by ±0.4x between runs
# on a shared 2-core machine.
#
#   scripts/bench-cold.sh [--charts N] [--rounds N] [--seed N] [--passes] [--binaries A B]
#
# Environment: CAPSTAN_SHARED as for scripts/bench-render.sh. See docs/benchmarks.md.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
CHARTS=25
ROUNDS=4
SEED=1
PASSES=0
BIN_A=""
BIN_B=""
usage="usage: $0 [--charts N] [--rounds N] [--seed N] [--passes] [--binaries A B]"
while [ $# -gt 0 ]; do
    case "$1" in
        --charts) CHARTS=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --seed) SEED=$2; shift 2 ;;
        --passes) PASSES=1; shift ;;
        --binaries) BIN_A=$2; BIN_B=$3; shift 3 ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
done

. scripts/lib/shared-corpus.sh

if [ -z "$BIN_A" ]; then
    echo "building release binaries…" >&2
    cargo build --release --quiet --example render_corpus
fi
echo "machine: $(uname -srm), $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)"

SHARED="$SHARED" CHARTS="$CHARTS" ROUNDS="$ROUNDS" SEED="$SEED" PASSES="$PASSES" BIN_A="$BIN_A" BIN_B="$BIN_B" \
python3 - <<'PYEOF'
import os, random, statistics as st, subprocess

env = os.environ
charts_dir = os.path.join(env["SHARED"], "helm-corpus", "charts")
charts = sorted(os.listdir(charts_dir))
rounds = int(env["ROUNDS"])
own = "target/release/examples/render_corpus"
if env["BIN_A"]:
    variants = {env["BIN_A"]: (env["BIN_A"], {}), env["BIN_B"]: (env["BIN_B"], {})}
else:
    variants = {"warm-up helper on": (own, {}), "warm-up helper off": (own, {"CAPSTAN_NO_WARMUP": "1"})}
names = list(variants)
runs = {name: {} for name in names}

def read_files(chart_dir):
    """The chart's files in the page cache, as in scripts/bench-render.sh: this machine drops
    its page cache now and then, and a chart read from disk would measure the disk."""
    for parent, _dirs, names in os.walk(chart_dir):
        for name in names:
            try:
                with open(os.path.join(parent, name), "rb") as f:
                    f.read()
            except OSError:
                pass

def run(name, chart):
    binary, extra = variants[name]
    read_files(os.path.join(charts_dir, chart))
    p = subprocess.run([binary, "--tsv", "--reps", "5", os.path.join(charts_dir, chart)],
                       capture_output=True, text=True, env=dict(env, **extra))
    rows = [l.split("\t") for l in p.stdout.splitlines()[1:] if l.strip()]
    # Failed renders and key generation (its time follows a random prime search) are left out.
    if rows and rows[0][1] != "failed" and rows[0][4] != "1":
        runs[name].setdefault(chart, []).append((float(rows[0][2]), float(rows[0][7])))

if env["PASSES"] == "1":
    for i in range(2 * rounds):
        name = names[(i + i // 2) % 2]  # A B B A A B …: neither variant always goes first
        for chart in (charts if i % 2 == 0 else charts[::-1]):
            run(name, chart)
else:
    random.seed(int(env["SEED"]))
    for chart in random.sample(charts, int(env["CHARTS"])):
        for round_ in range(rounds):
            for name in (names if round_ % 2 == 0 else names[::-1]):
                run(name, chart)
for name, by_chart in runs.items():
    if not by_chart:
        continue
    warm = {c: st.median(w for w, _ in v) for c, v in by_chart.items()}
    first = {c: st.median(f for _, f in v) for c, v in by_chart.items()}
    print(f"{name}: {len(by_chart)} charts; median first/warm per chart "
          f"{st.median(first[c] / warm[c] for c in by_chart):.2f}x; medians {st.median(first.values()):.2f} ms first, "
          f"{st.median(warm.values()):.2f} ms warm")
PYEOF
