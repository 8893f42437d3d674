#!/usr/bin/env bash
# The one test command (README, CI): installs test dependencies (cached), checks formatting
# and lints, then runs every test. Safe to run repeatedly; the second run skips all installs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
log() { printf 'test.sh: %s\n' "$*" >&2; }

# Real kube-apiserver + etcd for the Kubernetes tests (built once, cached).
deps="$(scripts/install-test-deps.sh)" || { log "installing test dependencies failed"; exit 1; }
CAPSTAN_KUBE_APISERVER="$(sed -n 's/^KUBE_APISERVER=//p' <<<"$deps")"
CAPSTAN_ETCD="$(sed -n 's/^ETCD=//p' <<<"$deps")"
export CAPSTAN_KUBE_APISERVER CAPSTAN_ETCD

# Real Helm (the oracle) for differential tests that compare against the shared corpus;
# only useful, and only installed, where ../shared exists.
shared="${CAPSTAN_SHARED:-$root/../shared}"
if [ -d "$shared" ]; then
  export CAPSTAN_SHARED="$shared"
  CAPSTAN_HELM_PYTHON="$(scripts/oracle-env.sh)"
  export CAPSTAN_HELM_PYTHON
else
  log "no shared corpus at $shared: tests that need it will say they are skipped"
fi

log "cargo fmt --check"
cargo fmt --all -- --check
log "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings
if cargo nextest --version >/dev/null 2>&1; then
  log "cargo nextest run --workspace"
  cargo nextest run --workspace --no-fail-fast --success-output final --failure-output final
  log "cargo test --workspace --doc"
  cargo test --workspace --doc --quiet
else
  log "cargo test"
  cargo test --workspace --no-fail-fast
fi
