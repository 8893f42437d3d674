"""Generates random-lang.json: random but well-formed templates (nested if/with/range,
variables declared and reassigned, define/template/include/block, pipelines through a few
functions, comparisons, trim markers) over typed values, compared with real Helm.

Run: python3 testdata/template/cases/random-lang.gen.py [SEED] [COUNT], then
scripts/gen-template-vectors.sh random-lang. The seed is fixed so the file is reproducible.
"""
import json, os, random, sys

OUT = os.path.dirname(os.path.abspath(__file__))
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 20261124
count = int(sys.argv[2]) if len(sys.argv) > 2 else 1500
rng = random.Random(seed)

VALUES = {
    "s": "hello", "n": 3, "i": 42, "f": 2.5, "b": True, "z": 0, "es": "",
    "l": [1, "a", None, 2.5, True], "strs": ["b", "a", "c"], "e": [], "em": {},
    "m": {"a": 1, "b": "x", "c": {"d": [1, 2]}, "k-1": "dash"},
    "items": [{"name": "x", "port": 80, "on": True}, {"name": "y", "port": 443, "on": False}],
    "nul": None, "big": 1e6, "neg": -7,
}
ATOMS = [".Values.s", ".Values.n", ".Values.i", ".Values.f", ".Values.b", ".Values.z", ".Values.es",
         ".Values.l", ".Values.strs", ".Values.e", ".Values.em", ".Values.m", ".Values.m.c",
         ".Values.items", ".Values.nul", ".Values.missing", ".Values.big", ".Values.neg",
         ".", "$", ".Release.Name", ".Chart.Name", "1", "0", "-1", "2.5", '"x"', '""', "true",
         "false", "nil", "0x10", "1e3", "'a'", "$v", "$i", "$k", ".name", ".port", ".a", "$.Values.s"]
SCALAR_FUNCS = ["quote", "upper", "toString", "toJson", "typeOf", "len", "default \"d\"", "not",
                "print", "printf \"%v\"", "printf \"%T\"", "printf \"%d\"", "printf \"%s\"", "html",
                "js", "urlquery", "empty", "kindOf", "toYaml", "b64enc", "trim", "int64", "float64"]
CMP = ["eq", "ne", "lt", "le", "gt", "ge", "and", "or"]

def atom():
    return rng.choice(ATOMS)

def expr(depth=0):
    r = rng.random()
    if depth < 2 and r < 0.25:
        return "(%s %s %s)" % (rng.choice(CMP), expr(depth + 1), expr(depth + 1))
    if depth < 2 and r < 0.45:
        return "(%s %s)" % (rng.choice(SCALAR_FUNCS), expr(depth + 1))
    if depth < 2 and r < 0.5:
        return "(index %s %s)" % (atom(), rng.choice(['"a"', "0", "1", '"c"', "$k", "$i"]))
    return atom()

def pipeline():
    p = expr()
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        p += " | " + rng.choice(SCALAR_FUNCS)
    return p

def trim(s):
    return rng.choice(["{{", "{{", "{{- "]) + " " + s + " " + rng.choice(["}}", "}}", " -}}"])

def body(depth):
    parts = []
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        if depth < 3 and r < 0.15:
            parts.append(trim("if " + pipeline()) + body(depth + 1) +
                         (trim("else if " + pipeline()) + body(depth + 1) if rng.random() < 0.3 else "") +
                         (trim("else") + body(depth + 1) if rng.random() < 0.5 else "") + trim("end"))
        elif depth < 3 and r < 0.27:
            head = rng.choice(["range ", "range $v := ", "range $i, $v := ", "range $k, $v := "])
            coll = rng.choice([".Values.l", ".Values.strs", ".Values.items", ".Values.m", ".Values.e",
                               ".Values.em", ".Values.nul", "3", "(until 3)", ".Values.m.c", "(list)",
                               ".Values.s"])
            inner = body(depth + 1)
            if rng.random() < 0.2:
                inner += trim(rng.choice(["break", "continue"]))
            parts.append(trim(head + coll) + inner +
                         (trim("else") + body(depth + 1) if rng.random() < 0.3 else "") + trim("end"))
        elif depth < 3 and r < 0.37:
            head = rng.choice(["with ", "with $v := "])
            parts.append(trim(head + pipeline()) + body(depth + 1) +
                         (trim("else with " + pipeline()) + body(depth + 1) if rng.random() < 0.2 else "") +
                         (trim("else") + body(depth + 1) if rng.random() < 0.4 else "") + trim("end"))
        elif r < 0.47:
            parts.append(trim(rng.choice(["$v", "$i", "$k"]) + rng.choice([" := ", " = "]) + pipeline()))
        elif r < 0.55:
            parts.append(trim(rng.choice(['template "t1" ', 'include "t1" ', 'template "t2" ',
                                          'include "t2" ']) + expr()))
        elif r < 0.6:
            parts.append(trim("/* c */") if rng.random() < 0.5 else "{{- /* c */ -}}")
        elif r < 0.7:
            parts.append(rng.choice(["a", " ", "\n", "x\n  ", "-", ": "]))
        else:
            parts.append(trim(pipeline()))
    return "".join(parts)

cases = []
while len(cases) < count:
    prelude = '{{ $v := 1 }}{{ $i := 0 }}{{ $k := "a" }}'
    helpers = ('{{ define "t1" }}[{{ . }}]{{ end }}'
               '{{ define "t2" }}{{ if . }}{{ typeOf . }}{{ else }}none{{ end }}{{ end }}')
    text = prelude + body(0)
    if rng.random() < 0.1:
        text += '{{ block "b1" . }}B{{ .Values.s }}{{ end }}'
    cases.append({"name": "random-lang/r%04d" % len(cases),
                  "templates": {"t.yaml": text, "_h.tpl": helpers}, "values": VALUES})
with open(os.path.join(OUT, "random-lang.json"), "w") as f:
    json.dump(cases, f, indent=1, ensure_ascii=False)
    f.write("\n")
print("random-lang.json: %d cases" % len(cases))
