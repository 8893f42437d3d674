#!/usr/bin/env bash
# Kills `capstan operator` (SIGKILL) at random points N times (default 20) in each of two runs:
# - operator_restart: while it subscribes to a stack, applies releases, picks up a new one and
#   prunes an old one; it must converge and never repeat a download, render or apply recorded
#   complete;
# - operator_addon_restart: while a Cluster's addons upgrade to a multi-stage release; a stage
#   recorded done must never run again, and the upgrade must converge.
# CI runs the same tests with 5 kills each. CAPSTAN_OPERATOR_SEED=S repeats a run's kill points.
set -euo pipefail
cd "$(dirname "$0")/.."
deps="$(scripts/install-test-deps.sh)"
CAPSTAN_KUBE_APISERVER="$(sed -n 's/^KUBE_APISERVER=//p' <<<"$deps")"
CAPSTAN_ETCD="$(sed -n 's/^ETCD=//p' <<<"$deps")"
export CAPSTAN_KUBE_APISERVER CAPSTAN_ETCD
export CAPSTAN_OPERATOR_KILLS="${1:-20}"
cargo test --test it operator_restart:: -- --nocapture
exec cargo test --test it operator_addon_restart:: -- --nocapture
