#!/usr/bin/env bash
# Cold start of one render (issue 10 §4): the first load+render in a fresh process against the
# warm median of the same process, for a random sample of corpus charts (keygen charts left
# out), with capstan's warm-up helper (src/warmup.rs) on and off. The two modes alternate
# chart by chart and round by round, so both see the same machine state; a run of
# scripts/bench-render.sh alone moves by ±0.4x between runs on a shared 2-core machine.
#
#   scripts/bench-cold.sh [--charts N] [--rounds N] [--seed N]
#
# Environment: CAPSTAN_SHARED as for scripts/bench-render.sh. See docs/benchmarks.md.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
CHARTS=25
ROUNDS=4
SEED=1
while [ $# -gt 0 ]; do
    case "$1" in
        --charts) CHARTS=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --seed) SEED=$2; shift 2 ;;
        *) echo "usage: $0 [--charts N] [--rounds N] [--seed N]" >&2; exit 2 ;;
    esac
done

. scripts/lib/shared-corpus.sh

echo "building release binaries…" >&2
cargo build --release --quiet --example render_corpus
echo "machine: $(uname -srm), $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)"

SHARED="$SHARED" CHARTS="$CHARTS" ROUNDS="$ROUNDS" SEED="$SEED" python3 - <<'PYEOF'
import os, random, statistics as st, subprocess

charts_dir = os.path.join(os.environ["SHARED"], "helm-corpus", "charts")
random.seed(int(os.environ["SEED"]))
sample = random.sample(sorted(os.listdir(charts_dir)), int(os.environ["CHARTS"]))
runs = {"on": {}, "off": {}}
for chart in sample:
    for round_ in range(int(os.environ["ROUNDS"])):
        for mode in (("on", "off") if round_ % 2 == 0 else ("off", "on")):
            env = dict(os.environ)
            if mode == "off":
                env["CAPSTAN_NO_WARMUP"] = "1"
            p = subprocess.run(["target/release/examples/render_corpus", "--tsv", "--reps", "5",
                                os.path.join(charts_dir, chart)], capture_output=True, text=True, env=env)
            rows = [l.split("\t") for l in p.stdout.splitlines()[1:] if l.strip()]
            # Failed renders and key generation (its time follows a random prime search) are left out.
            if not rows or rows[0][1] == "failed" or rows[0][4] == "1":
                continue
            runs[mode].setdefault(chart, []).append((float(rows[0][2]), float(rows[0][7])))
for mode, by_chart in runs.items():
    if not by_chart:
        continue
    warm = {c: st.median(w for w, _ in v) for c, v in by_chart.items()}
    first = {c: st.median(f for _, f in v) for c, v in by_chart.items()}
    print(f"warm-up helper {mode:>3}: {len(by_chart)} charts; median first/warm per chart "
          f"{st.median(first[c] / warm[c] for c in by_chart):.2f}x; medians {st.median(first.values()):.2f} ms first, "
          f"{st.median(warm.values()):.2f} ms warm")
PYEOF
