"""Generates values-nulls.json: nulls between a parent's values, the user's values and subchart
defaults (issue 22). Every chart prints its whole `.Values` (and a few templates read a
nulled key), so each case shows which nulls deleted a default, which stayed, and which
failed (`type mismatch`, nil pointers).

Classes: a parent's null under a subchart scalar / map / list / deep key / key without a
default, crossed with the user's values (absent, `{}`, an unrelated key, the subchart's table
empty or with another key, the same key, a deep key, a null, globals only, `--set`), for a
subchart directory and a `.tgz`; aliases; two levels of nesting; nulls in the subchart's own
values; globals; `import-values`; conditions.

Run from this directory: python3 values-nulls.gen.py > values-nulls.json
"""
import json

cases = []
SHOW = "{{ toJson .Values }}"


def chart_yaml(name, deps=None):
    text = "apiVersion: v2\nname: %s\nversion: 0.1.0\n" % name
    if deps:
        text += "dependencies:\n"
        for d in deps:
            text += "- name: %s\n" % d["name"]
            for k in ("alias", "condition", "version"):
                if k in d:
                    text += "  %s: %s\n" % (k, json.dumps(d[k]))
            if "import-values" in d:
                text += "  import-values: %s\n" % json.dumps(d["import-values"])
    return text


def case(name, parent_values, subs, deps, user=None, sets=None, tgz=None, parent_template=SHOW):
    """subs: {path under the parent (e.g. "charts/sub"): (chart name, values.yaml, templates, deps)}."""
    files = {}
    if parent_values is not None:
        files["values.yaml"] = parent_values
    for path, (cname, values, templates, sdeps) in subs.items():
        files[path + "/Chart.yaml"] = chart_yaml(cname, sdeps)
        if values is not None:
            files[path + "/values.yaml"] = values
        for tname, text in templates.items():
            files[path + "/templates/" + tname] = text
    c = {"name": "values-nulls/" + name, "template": parent_template, "files": files,
         "chart": {"name": "p", "version": "0.1.0", "dependencies": deps}}
    if user is not None:
        c["values"] = user
    if sets:
        c["set"] = sets
    if tgz:
        c["tgz"] = tgz
    cases.append(c)


# ---- a parent's null under one subchart key, against the user's values ----
SUB_DEFAULTS = (
    "s: 1\n"
    "m:\n  a: 1\n  b: 2\n"
    "l:\n- 1\n- 2\n"
    "d:\n  e:\n    f: 1\n    g: 2\n"
    "keep: kept\n"
)
POSITIONS = {
    # name: (parent values.yaml under sub:, the key the user may set)
    "scalar": ("sub:\n  s: null\n", "s"),
    "map": ("sub:\n  m: null\n", "m"),
    "list": ("sub:\n  l: null\n", "l"),
    "deep": ("sub:\n  d:\n    e:\n      f: null\n", "d"),
    "no-default": ("sub:\n  nd: null\n", "nd"),
    "deep-no-default": ("sub:\n  d:\n    e:\n      z: null\n", "d"),
    "in-map": ("sub:\n  m:\n    a: null\n    c: null\n", "m"),
    "two": ("sub:\n  s: null\n  m: null\n", "s"),
}


def users(key):
    return {
        "absent": (None, None),
        "empty": ({}, None),
        "unrelated": ({"other": 1}, None),
        "sub-empty": ({"sub": {}}, None),
        "sub-unrelated": ({"sub": {"u": 1}}, None),
        "same-key": ({"sub": {key: 5}}, None),
        "same-key-map": ({"sub": {key: {"e": {"g": 9}}}}, None),
        "same-key-null": ({"sub": {key: None}}, None),
        "other-key-null": ({"sub": {"keep": None}}, None),
        "global-only": ({"global": {"g": 1}}, None),
        "sub-global-only": ({"sub": {"global": {"g": 1}}}, None),
        "set-unrelated": (None, ["sub.u=1"]),
        "set-same-null": (None, ["sub.%s=null" % key]),
        "set-other": (None, ["other=1"]),
        "sub-null": ({"sub": None}, None),
        "sub-scalar": ({"sub": "x"}, None),
    }


for layout in ("dir", "tgz"):
    for pos, (pvals, key) in POSITIONS.items():
        for uname, (user, sets) in users(key).items():
            case("%s/%s/%s" % (layout, pos, uname), pvals,
                 {"charts/sub": ("sub", SUB_DEFAULTS, {"s.yaml": SHOW}, None)},
                 [{"name": "sub"}], user=user, sets=sets,
                 tgz=["charts/sub"] if layout == "tgz" else None)

# ---- aliases: the parent's table and the user's under the alias count, not the name ----
ALIAS_USERS = {
    "absent": None,
    "alias-empty": {"al": {}},
    "alias-unrelated": {"al": {"u": 1}},
    "alias-same": {"al": {"s": 5}},
    "alias-null": {"al": {"m": None}},
    "name-empty": {"sub": {}},
    "name-unrelated": {"sub": {"u": 1}},
    "both": {"al": {}, "sub": {"s": 7}},
    "global-only": {"global": {"g": 1}},
}
for pos, pvals in {"scalar": "al:\n  s: null\n", "map": "al:\n  m: null\n",
                   "deep": "al:\n  d:\n    e:\n      f: null\n", "no-default": "al:\n  nd: null\n",
                   "by-name": "sub:\n  s: null\n"}.items():
    for uname, user in ALIAS_USERS.items():
        case("alias/%s/%s" % (pos, uname), pvals,
             {"charts/sub": ("sub", SUB_DEFAULTS, {"s.yaml": SHOW}, None)},
             [{"name": "sub", "alias": "al"}], user=user)
# Two aliases of one chart, nulls for one of them.
for uname, user in {"absent": None, "a-empty": {"a": {}}, "b-empty": {"b": {}},
                    "both-empty": {"a": {}, "b": {}}}.items():
    case("alias/two/%s" % uname, "a:\n  s: null\nb:\n  m: null\n",
         {"charts/sub": ("sub", SUB_DEFAULTS, {"s.yaml": SHOW}, None)},
         [{"name": "sub", "alias": "a"}, {"name": "sub", "alias": "b"}], user=user)

# ---- two levels: parent -> mid -> leaf ----
LEAF = ("leaf", "x: 1\nm:\n  a: 1\n  b: 2\nkeep: kept\n", {"l.yaml": SHOW}, None)
MID_VALUES = {
    "mid-null": "leaf:\n  x: null\nown: 1\n",
    "mid-map-null": "leaf:\n  m:\n    a: null\nown: 1\n",
    "mid-none": "own: 1\n",
}
PARENT_VALUES = {
    "parent-null": "mid:\n  leaf:\n    m: null\n",
    "parent-none": None,
    "parent-own-null": "mid:\n  own: null\n",
}
NESTED_USERS = {
    "absent": None,
    "mid-empty": {"mid": {}},
    "leaf-empty": {"mid": {"leaf": {}}},
    "leaf-unrelated": {"mid": {"leaf": {"u": 1}}},
    "mid-unrelated": {"mid": {"u": 1}},
    "leaf-null": {"mid": {"leaf": {"keep": None}}},
    "leaf-is-null": {"mid": {"leaf": None}},
}
for mname, mvals in MID_VALUES.items():
    for pname, pvals in PARENT_VALUES.items():
        for uname, user in NESTED_USERS.items():
            for layout in ("dir", "tgz"):
                subs = {
                    "charts/mid": ("mid", mvals, {"m.yaml": SHOW}, [{"name": "leaf"}]),
                    "charts/mid/charts/leaf": LEAF,
                }
                case("nested/%s/%s/%s/%s" % (layout, mname, pname, uname), pvals, subs,
                     [{"name": "mid"}], user=user,
                     tgz=["charts/mid/charts/leaf", "charts/mid"] if layout == "tgz" else None)

# ---- nulls in the subchart's own values ----
OWN = "nd: null\nm:\n  a: null\n  b: 1\nl:\n- null\n- 1\nkeep: kept\n"
OWN_USERS = {
    "absent": None,
    "sub-empty": {"sub": {}},
    "sub-unrelated": {"sub": {"u": 1}},
    "sub-m-empty": {"sub": {"m": {}}},
    "sub-m-other": {"sub": {"m": {"c": 2}}},
    "sub-nd-set": {"sub": {"nd": 3}},
    "sub-nd-map": {"sub": {"nd": {"x": 1}}},
    "unrelated": {"other": 1},
}
for pname, pvals in {"parent-none": None, "parent-empty-table": "sub: {}\n",
                     "parent-other": "sub:\n  keep: parent\n"}.items():
    for uname, user in OWN_USERS.items():
        case("own/%s/%s" % (pname, uname), pvals,
             {"charts/sub": ("sub", OWN, {"s.yaml": SHOW}, None)},
             [{"name": "sub"}], user=user)
# The root chart's own nulls.
for uname, user in {"absent": None, "m-empty": {"m": {}}, "m-other": {"m": {"c": 2}},
                    "nd-set": {"nd": 1}}.items():
    case("own/root/%s" % uname, OWN, {}, None, user=user)

# ---- templates that read a nulled key (nil pointers in Helm where the key stays null) ----
READ = ("{{ if hasKey .Values \"x\" }}has{{ end }} {{ .Values.x.enabled }}")
for pname, pvals in {"null": "sub:\n  x: null\n", "none": None}.items():
    for dname, dvals in {"default-map": "x:\n  enabled: true\n", "no-default": "y: 1\n"}.items():
        for uname, user in {"absent": None, "sub-empty": {"sub": {}}, "unrelated": {"u": 1}}.items():
            case("read/%s/%s/%s" % (pname, dname, uname), pvals,
                 {"charts/sub": ("sub", dvals, {"s.yaml": READ}, None)},
                 [{"name": "sub"}], user=user)

# ---- globals ----
GLOBAL_CASES = {
    "parent-null-over-sub": ("global:\n  g: null\n  h: 1\n", "global:\n  g: 1\n  k: 2\n"),
    "sub-null": ("global:\n  h: 1\n", "global:\n  g: null\n"),
    "deep": ("global:\n  t:\n    u:\n      v: 1\n", "global:\n  t:\n    u:\n      w: 2\n"),
    "parent-table-null": ("global:\n  t: null\n", "global:\n  t:\n    a: 1\n"),
}
for gname, (pvals, svals) in GLOBAL_CASES.items():
    for uname, user in {"absent": None, "global-empty": {"global": {}},
                        "global-g": {"global": {"g": 5}}, "global-null": {"global": {"g": None}},
                        "sub-global": {"sub": {"global": {"g": 6}}}}.items():
        case("global/%s/%s" % (gname, uname), pvals,
             {"charts/sub": ("sub", svals, {"s.yaml": SHOW}, None)},
             [{"name": "sub"}], user=user)

# ---- import-values ----
EXPORTS = "exports:\n  data:\n    a: 1\n    b: null\nchildtab:\n  c: 1\n  d: null\n"
IMPORT_FORMS = {
    "string": ["data"],
    "map": [{"child": "childtab", "parent": "imported"}],
    "map-root": [{"child": "childtab", "parent": "."}],
    "both": ["data", {"child": "childtab", "parent": "imported"}],
}
IMPORT_PARENTS = {
    "none": None,
    "nulls": "a: null\nimported:\n  c: null\n",
    "values": "a: 5\nimported:\n  d: 4\n",
    "sub-null": "sub:\n  childtab:\n    c: null\n",
}
for fname, form in IMPORT_FORMS.items():
    for pname, pvals in IMPORT_PARENTS.items():
        for uname, user in {"absent": None, "a-null": {"a": None}, "sub-empty": {"sub": {}},
                            "imported-empty": {"imported": {}}}.items():
            case("import/%s/%s/%s" % (fname, pname, uname), pvals,
                 {"charts/sub": ("sub", EXPORTS, {"s.yaml": SHOW}, None)},
                 [{"name": "sub", "import-values": form}], user=user)

# ---- conditions ----
for pname, pvals in {"parent-null": "sub:\n  enabled: null\n", "parent-false": "sub:\n  enabled: false\n",
                     "parent-none": None}.items():
    for sname, svals in {"sub-true": "enabled: true\nv: 1\n", "sub-false": "enabled: false\nv: 1\n",
                         "sub-none": "v: 1\n"}.items():
        for uname, user in {"absent": None, "sub-empty": {"sub": {}}, "sub-true": {"sub": {"enabled": True}},
                            "sub-null": {"sub": {"enabled": None}}, "unrelated": {"u": 1}}.items():
            case("condition/%s/%s/%s" % (pname, sname, uname), pvals,
                 {"charts/sub": ("sub", svals, {"s.yaml": SHOW}, None)},
                 [{"name": "sub", "condition": "sub.enabled"}], user=user)

# ---- subcharts the parent does not declare (Helm processes nothing below such a chart) ----
for mname, mdeps in {"mid-alias": [{"name": "leaf", "alias": "lf"}],
                     "mid-condition": [{"name": "leaf", "condition": "leaf.enabled"}],
                     "mid-none": None}.items():
    for uname, user in {"absent": None, "mid-empty": {"mid": {}}, "leaf-empty": {"mid": {"leaf": {}}},
                        "alias-empty": {"mid": {"lf": {}}}, "leaf-off": {"mid": {"leaf": {"enabled": False}}}}.items():
        subs = {
            "charts/mid": ("mid", "leaf:\n  x: null\n  enabled: true\nlf:\n  m: null\n", {"m.yaml": SHOW}, mdeps),
            "charts/mid/charts/leaf": LEAF,
        }
        case("undeclared/%s/%s" % (mname, uname), "mid:\n  leaf:\n    keep: null\n", subs, None, user=user,
             parent_template=SHOW + "{{ toJson .Chart.Dependencies }}")

json.dump(cases, __import__("sys").stdout, indent=1)
print()
