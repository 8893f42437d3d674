#!/usr/bin/env python3
"""Helm's answers for chart-loading cases (crates/capstan-chart/tests/it/chart_load.rs): CASES.json maps a name to
{relative path: file text}; each chart is built in a temp dir, loaded and rendered by real
Helm. Prints {name: {template: output} | {"error": text, "type": class}}.

Usage: $(scripts/oracle-env.sh) tests/oracle/chart_load_oracle.py testdata/chart-load/cases.json \
         > testdata/chart-load/expected.json
"""
import json, os, sys, tempfile
import helm_python as helm
from helm_python import _native
# cases: name -> {files: {path: text}}; prints {name: output|error}
cases = json.load(open(sys.argv[1]))
res = {}
for name, files in cases.items():
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "c")
        for rel, text in files.items():
            p = os.path.join(root, rel); os.makedirs(os.path.dirname(p), exist_ok=True)
            open(p, "w").write(text)
        try:
            with helm.Chart.load(root) as c:
                out = _native.call_string("helm_render", c._raw(), "{}", json.dumps({"name":"release-name","namespace":"default","revision":1,"is_install":True,"is_upgrade":False}))
            res[name] = json.loads(out)
        except helm.HelmError as e:
            res[name] = {"error": str(e), "type": type(e).__name__}
print(json.dumps(res, indent=1))
