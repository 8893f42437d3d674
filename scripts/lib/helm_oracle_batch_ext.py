#!/usr/bin/env python3
"""The shared batch oracle (../shared/tools/helm_oracle_batch.py) with two more case fields.

Usage:  helm_oracle_batch_ext.py SHARED_DIR CASES.json > ANSWERS.json

  "tgz": ["charts/sub", ...]   # after writing the files, each listed directory is packed
                               # into <dir>-<version>.tgz beside it (as `helm package` lays it
                               # out: entries under "<name>/") and the directory removed;
                               # listed deepest first when nested
  "set": ["sub.k=null", ...]   # `--set` expressions applied after the values (Helm's own
                               # strvals parser; each result merged in like ParseInto)

Cases without them are answered by the shared oracle unchanged.
"""
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.join(sys.argv[1], "tools"))
import helm_oracle_batch as base  # noqa: E402
import helm_python as helm  # noqa: E402
from helm_python import _native  # noqa: E402


def pack(root, rel):
    """charts/sub → charts/sub-<version>.tgz with entries under sub/."""
    src = os.path.join(root, rel)
    version = "0.1.0"
    name = os.path.basename(rel)
    with open(os.path.join(src, "Chart.yaml")) as f:
        for line in f:
            if line.startswith("version:"):
                version = line.split(":", 1)[1].strip().strip('"')
            if line.startswith("name:"):
                name = line.split(":", 1)[1].strip().strip('"')
    out = os.path.join(os.path.dirname(src), "%s-%s.tgz" % (os.path.basename(rel), version))
    with tarfile.open(out, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for dirpath, _, files in sorted(os.walk(src)):
            for fname in sorted(files):
                full = os.path.join(dirpath, fname)
                arc = os.path.join(name, os.path.relpath(full, src))
                data = open(full, "rb").read()
                info = tarfile.TarInfo(arc)
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    shutil.rmtree(src)


def merge_into(base_map, extra):
    """strvals.ParseInto for one parsed expression: tables merge, everything else replaces."""
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(base_map.get(k), dict):
            merge_into(base_map[k], v)
        else:
            base_map[k] = v


def answer(case):
    if not case.get("tgz") and not case.get("set"):
        return base.answer(case)
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, (case.get("chart") or {}).get("name", "t"))
        vals = base.build_chart(root, case)
        for rel in case.get("tgz") or []:
            pack(root, rel)
        for expr in case.get("set") or []:
            merge_into(vals, helm.parse_set_string(expr))
        rel = case.get("release") or {}
        opts = {"name": rel.get("name", "release-name"),
                "namespace": rel.get("namespace", "default"),
                "revision": 1, "is_install": True, "is_upgrade": False}
        try:
            with helm.Chart.load(root) as chart:
                out = _native.call_string("helm_render", chart._raw(), json.dumps(vals), json.dumps(opts))
            return {"output": json.loads(out)}
        except helm.HelmError as e:
            return {"error": str(e)}


def main():
    cases = json.load(open(sys.argv[2]))
    names = set()
    result = {}
    for case in cases:
        name = case["name"]
        if name in names:
            sys.exit("duplicate case name: %s" % name)
        names.add(name)
        result[name] = answer(case)
    json.dump(result, sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
