#!/usr/bin/env bash
# Scale run of the operator (examples/operator_scale.rs): N Clusters (default 50) over three
# workload API servers; prints the times to converge and the operator's peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
deps="$(scripts/install-test-deps.sh)"
CAPSTAN_KUBE_APISERVER="$(sed -n 's/^KUBE_APISERVER=//p' <<<"$deps")"
CAPSTAN_ETCD="$(sed -n 's/^ETCD=//p' <<<"$deps")"
export CAPSTAN_KUBE_APISERVER CAPSTAN_ETCD
cargo build --release --bin capstan --example operator_scale
CAPSTAN_BIN="$PWD/target/release/capstan" exec target/release/examples/operator_scale "${1:-50}"
