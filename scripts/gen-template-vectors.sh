#!/usr/bin/env bash
# Regenerates template test vectors with real Helm v4.2.3 (the oracle).
#   scripts/gen-template-vectors.sh            # every testdata/template/cases/*.json
#   scripts/gen-template-vectors.sh lang-exec  # only the named areas
# Each cases file (a list of oracle cases, see ../shared/tools/helm_oracle_batch.py, with the
# `tgz` and `set` fields of scripts/lib/helm_oracle_batch_ext.py) becomes
# testdata/template/vectors/<area>.json: the same cases, each with Helm's answer under "expect".
# `cargo nextest run -p capstan-chart --test it template_vectors` then needs no Python.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${CAPSTAN_SHARED:-$root/../shared}"
oracle="$root/scripts/lib/helm_oracle_batch_ext.py"
[ -f "$shared/tools/helm_oracle_batch.py" ] || { echo "gen-template-vectors: $shared/tools/helm_oracle_batch.py not found (set CAPSTAN_SHARED)" >&2; exit 1; }
py="$("$root/scripts/oracle-env.sh")"
cd "$root/testdata/template"
areas=("$@")
if [ ${#areas[@]} -eq 0 ]; then
  for f in cases/*.json; do areas+=("$(basename "$f" .json)"); done
fi
for area in "${areas[@]}"; do
  cases="cases/$area.json"
  [ -f "$cases" ] || { echo "gen-template-vectors: no $cases" >&2; exit 1; }
  answers="$(mktemp)"
  "$py" "$oracle" "$shared" "$cases" > "$answers"
  "$py" - "$cases" "$answers" "vectors/$area.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))
answers = json.load(open(sys.argv[2]))
for case in cases:
    case["expect"] = answers[case["name"]]
with open(sys.argv[3], "w") as f:
    json.dump(cases, f, indent=1, ensure_ascii=False, sort_keys=True)
    f.write("\n")
print("gen-template-vectors: %s: %d vectors" % (sys.argv[3], len(cases)))
PY
  rm -f "$answers"
done
