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
# mdBook for tests/it/book.rs (the book builds without a warning, its links resolve).
CAPSTAN_MDBOOK="$(sed -n 's/^MDBOOK=//p' <<<"$deps")"
export CAPSTAN_KUBE_APISERVER CAPSTAN_ETCD CAPSTAN_MDBOOK

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

# One API server the tests that may share it use, a namespace each (docs/testing.md, "Shared
# API servers"): nextest runs every test in a process of its own, so it lives outside them,
# until this script exits (its stdin, fd 3, closes then).
# Closing its stdin stops it; a process a test left behind could still hold the pipe (the
# test commands get it closed, `3>&-`), so after a grace period it is told by SIGTERM, which it
# also stops on: this script never waits for it without end.
stop_shared_server() {
  exec 3>&-
  local tries=0
  while kill -0 "$shared_pid" 2>/dev/null && [ "$tries" -lt 50 ]; do
    sleep 0.2
    tries=$((tries + 1))
  done
  kill "$shared_pid" 2>/dev/null || true
  wait "$shared_pid" 2>/dev/null || true
  rm -rf "$shared_work"
}

start_shared_server() {
  cargo build --quiet -p capstan-testenv --bin testenv-up
  local bin
  bin="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/debug/testenv-up"
  # Global: the EXIT trap removes it.
  shared_work="$(mktemp -d)"
  mkfifo "$shared_work/stdin"
  "$bin" management <"$shared_work/stdin" >"$shared_work/servers" 2>"$shared_work/log" &
  shared_pid=$!
  exec 3>"$shared_work/stdin"
  trap stop_shared_server EXIT
  while ! grep -q '^management=' "$shared_work/servers"; do
    kill -0 "$shared_pid" 2>/dev/null || { log "the shared API server did not start:"; cat "$shared_work/log" >&2; exit 1; }
    sleep 0.2
  done
  CAPSTAN_TEST_SHARED_KUBECONFIG="$(sed -n 's/^management=//p' "$shared_work/servers")"
  export CAPSTAN_TEST_SHARED_KUBECONFIG
  log "shared API server: $CAPSTAN_TEST_SHARED_KUBECONFIG"
}

if cargo nextest --version >/dev/null 2>&1; then
  start_shared_server
  log "cargo nextest run --workspace"
  cargo nextest run --workspace --no-fail-fast --success-output final --failure-output final 3>&-
  log "cargo test --workspace --doc"
  cargo test --workspace --doc --quiet 3>&-
else
  log "cargo test"
  cargo test --workspace --no-fail-fast
fi
