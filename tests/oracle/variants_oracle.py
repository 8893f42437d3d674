#!/usr/bin/env python3
"""Helm's engine output for many (chart, values file) pairs in one process (crates/capstan-chart/tests/it/values_variants.rs).

Usage: variants_oracle.py SHARED_DIR REQUEST.json > ANSWERS.json
REQUEST.json is {key: [chart_path, values_path]}; the answer maps each key to
{"output": {template_path: text}} or {"error": text}. Values files are read by Helm's own YAML
reader, as `helm template -f` does.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "tools"))
import helm_oracle  # noqa: E402


def main():
    request = json.load(open(sys.argv[2]))
    out = {}
    for key, (chart, values_path) in request.items():
        try:
            values = helm_oracle.load_values(values_path)
            out[key] = {"output": helm_oracle.render(chart, values)}
        except Exception as e:  # the oracle's errors are answers too
            out[key] = {"error": str(e)}
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
