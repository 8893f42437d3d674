#!/usr/bin/env bash
# Kills `capstan operator` (SIGKILL) at random points N times (default 20) in each of two runs:
# - operator_restart: while it subscribes to a stack, applies releases, picks up a new one and
#   prunes an old one; it must converge and never repeat a download, render or apply recorded
#   complete;
# - operator_addon_restart: while a Cluster's addons upgrade to a multi-stage release; a stage
#   recorded done must never run again, and the upgrade must converge.
# CI runs the same tests with 5 kills each (the tests' default, through scripts/test.sh).
# CAPSTAN_OPERATOR_SEED=S repeats a run's kill points (each run prints its seed).
# On a shared machine run it niced: `nice -n 19 scripts/fault-operator.sh 20`.
set -euo pipefail
cd "$(dirname "$0")/.."
deps="$(scripts/install-test-deps.sh)"
CAPSTAN_KUBE_APISERVER="$(sed -n 's/^KUBE_APISERVER=//p' <<<"$deps")"
CAPSTAN_ETCD="$(sed -n 's/^ETCD=//p' <<<"$deps")"
export CAPSTAN_KUBE_APISERVER CAPSTAN_ETCD
# The shared releases: without them the tests would skip; CI=true makes that a failure.
if [ -z "${CAPSTAN_SHARED:-}" ] && [ -d ../shared ]; then
  CAPSTAN_SHARED="$(cd ../shared && pwd)"
  export CAPSTAN_SHARED
fi
export CI="${CI:-true}"
export CAPSTAN_OPERATOR_KILLS="${1:-20}"
status=0
for test in operator_restart operator_addon_restart; do
  started=$SECONDS
  result=passed
  if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --test it --no-capture "$test::" || result=FAILED
  else
    cargo test --test it "$test::" -- --nocapture || result=FAILED
  fi
  [ "$result" = passed ] || status=1
  printf 'fault-operator.sh: %s with %s kills: %s after %ss\n' "$test" "$CAPSTAN_OPERATOR_KILLS" \
    "$result" "$((SECONDS - started))" >&2
done
exit $status
