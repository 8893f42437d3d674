#!/usr/bin/env python3
"""Helm's `helm template`-like stream for many charts in one process (for crates/capstan-chart/tests/it/render_stream.rs).

Usage: stream_oracle.py SHARED_DIR CHARTS.json > STREAMS.json
CHARTS.json is {id: chart_path}; the answer maps each id to {"manifest": text} or {"error": text}.
Uses ../shared/tools/helm_oracle.py's render_stream (offline install --dry-run=client).
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "tools"))
import helm_oracle  # noqa: E402


def main():
    charts = json.load(open(sys.argv[2]))
    out = {}
    for cid, path in charts.items():
        try:
            out[cid] = {"manifest": helm_oracle.render_stream(path)["manifest"]}
        except Exception as e:  # the oracle's errors are answers too
            out[cid] = {"error": str(e)}
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
