#!/usr/bin/env bash
# Render time of `capstan render` vs real Helm (the oracle's in-process render) for the
# example chart and a few corpus charts, measured in this run on this machine.
#
# Usage: scripts/bench-render.sh [RUNS] [CHART_DIR...]
#   RUNS: renders per chart (default 5; the median is reported).
#   Without chart dirs: stacks/example/cluster-class and ../shared/helm-corpus charts
#   (metrics-server, ingress-style and cilium when present).
# capstan's time includes process start-up and chart loading (wall clock per CLI call);
# Helm's is its own in-process render time (`helm_oracle.py --timing`), so the ratio
# favours Helm slightly. Needs the oracle venv (scripts/oracle-env.sh) for Helm's column.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
shift || true

charts=("$@")
if [ ${#charts[@]} -eq 0 ]; then
  charts=(stacks/example/cluster-class)
  corpus=../shared/helm-corpus/charts
  [ -d "$corpus" ] || corpus=../../shared/helm-corpus/charts
  for pattern in '*docker_scs_cluster-addon_metrics-server' '*charts_kube-state-metrics' '*charts_ingress-nginx' '*cni_charts_cilium-1.17.4.tgz_cilium'; do
    for dir in $corpus/$pattern; do
      [ -d "$dir" ] && charts+=("$dir")
    done
  done
fi

cargo build --release --quiet
bin=target/release/capstan
py=""
venv="${XDG_CACHE_HOME:-$HOME/.cache}/capstan/helm-venv/bin/python"
[ -x "$venv" ] && py="$venv"
oracle=../shared/tools/helm_oracle.py
[ -f "$oracle" ] || oracle=../../shared/tools/helm_oracle.py

median() { sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "n/a")}'; }

printf '%-60s %12s %12s %8s\n' chart "capstan ms" "helm ms" ratio
for chart in "${charts[@]}"; do
  ours=$(for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    if ! "$bin" render -o templates-json "$chart" >/dev/null 2>&1; then echo fail; continue; fi
    echo $(( ($(date +%s%N) - start) / 1000 ))
  done | { grep -v fail || true; } | median)
  [ "$ours" != "n/a" ] && ours=$(awk "BEGIN {printf \"%.1f\", $ours / 1000}")
  helm="n/a"
  if [ -n "$py" ] && [ -f "$oracle" ]; then
    helm=$(for _ in $(seq "$runs"); do
      "$py" "$oracle" "$chart" --timing 2>&1 >/dev/null | sed -n 's/^render: \([0-9.]*\) ms.*/\1/p'
    done | median)
  fi
  ratio="n/a"
  if [ "$ours" != "n/a" ] && [ "$helm" != "n/a" ]; then
    ratio=$(awk "BEGIN {printf \"%.2f\", $ours / $helm}")
  fi
  printf '%-60s %12s %12s %8s\n' "$(basename "$chart" | cut -c1-60)" "$ours" "$helm" "$ratio"
done
