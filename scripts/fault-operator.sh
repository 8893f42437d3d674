#!/usr/bin/env bash
# Kills `capstan operator` (SIGKILL) at random points N times (default 20) while it subscribes
# to a stack, applies releases, picks up a new one and prunes an old one; checks that it
# converges and never repeats a download, render or apply recorded complete.
# CI runs the same test with 5 kills. CAPSTAN_OPERATOR_SEED=S repeats a run's kill points.
set -euo pipefail
cd "$(dirname "$0")/.."
deps="$(scripts/install-test-deps.sh)"
CAPSTAN_KUBE_APISERVER="$(sed -n 's/^KUBE_APISERVER=//p' <<<"$deps")"
CAPSTAN_ETCD="$(sed -n 's/^ETCD=//p' <<<"$deps")"
export CAPSTAN_KUBE_APISERVER CAPSTAN_ETCD
export CAPSTAN_OPERATOR_KILLS="${1:-20}"
exec cargo test --test operator_restart -- --nocapture
