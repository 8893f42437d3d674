#!/usr/bin/env python3
"""Real Helm's answers for the parts of cluster-stack releases (crates/capstan-stack/tests/it/stack_releases.rs).

Usage: stack_oracle.py SHARED_DIR REQUESTS.json > ANSWERS.json
REQUESTS.json maps an id to {"chart": path, "values": yaml path, a list of them or null, "name": release name,
"namespace": ns, "kube_version": version or null, "stream": bool}. Each answer is
{"rendered": {template: text}} (Helm's engine output, with the kube version), or for
"stream": true {"manifest": text} (offline `install --dry-run=client`: Helm's default kube
version, no hooks, no CRDs), or {"error": text}. One process for all requests.

A list of values files is read like `helm template -f a.yaml -f b.yaml`: each file by Helm's
own reader, then merged file over file with the rule of the Helm CLI's `-f` merge (later
files win; where both hold a map at a key, the maps merge; anything else replaces, a null
too, which Helm's coalescing then turns into a deleted default).
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "tools"))
import helm_oracle  # noqa: E402


def merge_files(files):
    """The Helm CLI's merge of its `-f` files (values.go mergeMaps), file over file."""
    def merge(a, b):
        out = dict(a)
        for k, v in b.items():
            if isinstance(v, dict) and isinstance(out.get(k), dict):
                out[k] = merge(out[k], v)
            else:
                out[k] = v
        return out
    merged = {}
    for f in files:
        merged = merge(merged, helm_oracle.load_values(f))
    return merged


def main():
    requests = json.load(open(sys.argv[2]))
    out = {}
    for rid, r in requests.items():
        try:
            given = r.get("values")
            values = merge_files(given) if isinstance(given, list) else helm_oracle.load_values(given)
            if r.get("stream"):
                out[rid] = {"manifest": helm_oracle.render_stream(
                    r["chart"], values, name=r["name"], namespace=r["namespace"])["manifest"]}
            else:
                out[rid] = {"rendered": helm_oracle.render(
                    r["chart"], values, name=r["name"], namespace=r["namespace"],
                    kube_version=r.get("kube_version"))}
        except Exception as e:  # the oracle's errors are answers too
            out[rid] = {"error": str(e)}
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
