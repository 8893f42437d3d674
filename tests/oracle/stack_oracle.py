#!/usr/bin/env python3
"""Real Helm's answers for the parts of cluster-stack releases (crates/capstan-stack/tests/it/stack_releases.rs).

Usage: stack_oracle.py SHARED_DIR REQUESTS.json > ANSWERS.json
REQUESTS.json maps an id to {"chart": path, "values": yaml path or null, "name": release name,
"namespace": ns, "kube_version": version or null, "stream": bool}. Each answer is
{"rendered": {template: text}} (Helm's engine output, with the kube version), or for
"stream": true {"manifest": text} (offline `install --dry-run=client`: Helm's default kube
version, no hooks, no CRDs), or {"error": text}. One process for all requests.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "tools"))
import helm_oracle  # noqa: E402


def main():
    requests = json.load(open(sys.argv[2]))
    out = {}
    for rid, r in requests.items():
        try:
            values = helm_oracle.load_values(r.get("values"))
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
