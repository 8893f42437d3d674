#!/usr/bin/env bash
# Regenerates testdata/checks/vectors.json with real Helm v4.2.3 (the oracle): release names,
# `--kube-version` texts and the order of `helm template`'s refusals, each answered through
# Helm's install action in client-only dry-run mode (what `helm template` runs).
# `cargo nextest run --test it helm_checks` then needs no Python.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${CAPSTAN_SHARED:-$root/../shared}"
[ -d "$shared/helm-corpus" ] || { echo "gen-check-vectors: $shared/helm-corpus not found (set CAPSTAN_SHARED)" >&2; exit 1; }
py="$("$root/scripts/oracle-env.sh")"
out="$root/testdata/checks/vectors.json"
"$py" "$root/testdata/checks/gen_vectors.py" "$shared" > "$out.tmp"
mv "$out.tmp" "$out"
echo "gen-check-vectors: $out: $(grep -c '"name":' "$out") vectors"
