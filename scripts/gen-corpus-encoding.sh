#!/usr/bin/env bash
# Asks real Helm v4.2.3 (the oracle) how it encodes each corpus chart's default values:
# `toYaml .Values`, `toJson .Values` and `toPrettyJson .Values`, with the chart's own
# values.yaml as the only values. Writes the answers to a cache file that
# crates/capstan-chart/tests/it/corpus_encoding.rs reads, so the test itself needs no Python.
#   scripts/gen-corpus-encoding.sh [output]   (default: target/corpus-encoding.json)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${CAPSTAN_SHARED:-$root/../shared}"
oracle="$shared/tools/helm_oracle_batch.py"
charts="$shared/helm-corpus/charts"
out="${1:-$root/target/corpus-encoding.json}"
[ -f "$oracle" ] || { echo "gen-corpus-encoding: $oracle not found (set CAPSTAN_SHARED)" >&2; exit 1; }
[ -d "$charts" ] || { echo "gen-corpus-encoding: $charts not found" >&2; exit 1; }
py="$("$root/scripts/oracle-env.sh")"
mkdir -p "$(dirname "$out")"
cases="$(mktemp)"
answers="$(mktemp)"
trap 'rm -f "$cases" "$answers"' EXIT
"$py" - "$charts" "$cases" <<'PY'
import json, os, sys
charts, out = sys.argv[1], sys.argv[2]
cases = []
for name in sorted(os.listdir(charts)):
    path = os.path.join(charts, name, "values.yaml")
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    cases.append({"name": name, "values": text, "templates": {
        "yaml.yaml": "{{ toYaml .Values }}",
        "json.yaml": "{{ toJson .Values }}",
        "pretty.yaml": "{{ toPrettyJson .Values }}"}})
json.dump(cases, open(out, "w"))
PY
"$py" "$oracle" "$cases" > "$answers"
"$py" - "$cases" "$answers" "$out" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))
answers = json.load(open(sys.argv[2]))
result = {c["name"]: {"values": c["values"], "expect": answers[c["name"]]} for c in cases}
with open(sys.argv[3], "w") as f:
    json.dump(result, f, indent=1, ensure_ascii=False, sort_keys=True)
print("gen-corpus-encoding: %s: %d charts" % (sys.argv[3], len(result)))
PY
