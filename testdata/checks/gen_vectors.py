#!/usr/bin/env python3
"""Differential vectors for what `helm template` checks before it renders: the release name,
the `--kube-version` flag (short, malformed, edge cases), and the order of Helm's refusals
(missing dependencies, release name, values.schema.json, the chart's kubeVersion), and how
values.schema.json refusals with nested errors (allOf, anyOf, $ref) are printed.

Usage (scripts/gen-check-vectors.sh runs it):  python gen_vectors.py SHARED_DIR > vectors.json

Every case is answered by real Helm v4.2.3 (helm-python-sdk 0.2.2) through the path
`helm template` takes: an offline `install --dry-run=client` (action.Install: release name,
dependency processing, schema validation, kubeVersion, render) with the kube version parsed
by Helm's own ParseKubeVersion. The answer is {"manifest": text} or {"error": text}; the
error is the action's own text (the `helm template` CLI adds `invalid kube version 'V': ` in
front of a version parse error; tests/helm_checks.rs knows that).

A case: {"name", "chart": {Chart.yaml fields}, "templates": {file: text}, "files": {path:
text}, "values": {...}, "release": name, "kube_version": text} or {"name", "corpus": id,
...} for a chart of the shared corpus.
"""
import json
import os
import sys
import tempfile

import helm_python as helm
from helm_python import _native

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
"""

# What a template sees of the release and the cluster version.
PROBE = """apiVersion: v1
kind: ConfigMap
metadata:
  name: probe
data:
  release: {{ .Release.Name | quote }}
  printed: "{{ .Capabilities.KubeVersion }}"
  fields: {{ printf "%s" .Capabilities.KubeVersion | quote }}
  version: {{ .Capabilities.KubeVersion.Version | quote }}
  gitVersion: {{ .Capabilities.KubeVersion.GitVersion | quote }}
  major: {{ .Capabilities.KubeVersion.Major | quote }}
  minor: {{ .Capabilities.KubeVersion.Minor | quote }}
"""

SCHEMA = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"replicas": {"type": "integer"}},
})


def probe_case(name, **kw):
    case = {"name": name, "templates": {"probe.yaml": PROBE}}
    case.update(kw)
    return case


def release_name_cases():
    names = {
        "plain": "cluster-addon",
        "default": "release-name",
        "digits": "0",
        "one-letter": "a",
        "dots": "a.b.c",
        "dash-dot": "a-1.b-2",
        "53": "a" * 53,
        "53-mixed": ("x-" * 26) + "y",
        "54": "a" * 54,
        "54-mixed": ("x-" * 26) + "yz",
        "60": "b" * 60,
        "uppercase": "Cluster-Addon",
        "all-uppercase": "CLUSTERADDON",
        "underscore": "cluster_addon",
        "double-dot": "a..b",
        "dot-dash": "a.-b",
        "dash-dot-2": "a-.b",
        "leading-dash": "-a",
        "leading-dot": ".a",
        "trailing-dash": "a-",
        "trailing-dot": "a.",
        "space-inside": "a b",
        "space-leading": " a",
        "space-trailing": "a ",
        "tab": "a\tb",
        "newline-trailing": "a\n",
        "non-ascii": "caf\u00e9",
        "non-ascii-only": "\u00e4",
        "slash": "a/b",
        "colon": "a:b",
        "plus": "a+b",
        "empty": "",
        # ClusterClass release names `<provider>-<name>-<major>-<minor>` of
        # tests/helm_checks.rs's long-named stacks.
        "cluster-class-53": "docker-" + "a" * 41 + "-1-30",
        "cluster-class-54": "docker-" + "a" * 42 + "-1-30",
    }
    return [probe_case("release-" + k, release=v) for k, v in names.items()]


def kube_version_cases():
    versions = {
        "full": "v1.30.0",
        "full-no-v": "1.30.0",
        "two-part": "1.30",
        "two-part-v": "v1.30",
        "one-part": "1",
        "one-part-v": "v1",
        "four-part": "1.2.3.4",
        "five-part": "1.30.5.6.7",
        "word": "abc",
        "empty": "",
        "v-only": "v",
        "capital-v": "V1.30",
        "double-v": "vv1.30",
        "space-leading": " 1.30.0",
        "space-trailing": "1.30.0 ",
        "tab-leading": "\t1.30",
        "newline-trailing": "1.30.0\n",
        "pre-release": "v1.30.0-rc.1",
        "pre-release-two-part": "1.30-x",
        "build": "1.30.0+build",
        "pre-and-build": "1.30.0-rc.1+b",
        "gke": "v1.29.3-gke.100",
        "suffix-letters": "1.30.0foo",
        "dash-only": "1.30.0-",
        "zero-major": "01.2.3",
        "zero-major-two": "00.1",
        "zero-minor": "1.02.3",
        "zeros": "0.0",
        "trailing-dot": "1.",
        "leading-dot": ".1",
        "double-dot": "1..2",
        "negative": "-1.2",
        "huge-major": "99999999999999999999.1",
        "huge-minor": "1.99999999999999999999",
        "u64-max": "18446744073709551615.1",
        "big": "4294967296.4294967297",
    }
    return [probe_case("kube-" + k, kube_version=v) for k, v in versions.items()]


def kube_constraint_cases():
    """The chart's kubeVersion range against short and odd versions: Helm's refusal text."""
    cases = []
    for key, version in {
        "two-part": "1.27",
        "two-part-v": "v1.27",
        "full": "v1.27.3",
        "four-part": "1.27.3.4",
        "pre-release": "v1.27.0-rc.1",
        "space-leading": " 1.27.0",
        "zero-minor": "1.027",
        # Helm 4.1 and later show the version as given (a `v` added), pre-release and build
        # included; Helm 3 and 4.0 showed `v1.28.3`.
        "alpha": "v1.35.0-alpha.1",
        "k3s-build": "v1.28.3+k3s1",
        "k3s-build-no-v": "1.28.3+k3s1",
        "gke": "v1.29.3-gke.100",
        "eks": "v1.30.4-eks-a737599",
    }.items():
        for rkey, rng in {"ge-1-28": ">=1.28.0", "ge-1-20": ">=1.20.0-0", "caret-1-27": "^1.27",
                          "lt-1-20": "<1.20.0"}.items():
            cases.append(probe_case("constraint-%s-%s" % (rkey, key), kube_version=version,
                                    chart={"kubeVersion": rng}))
    return cases


def order_cases():
    schema_chart = {"kubeVersion": ">=1.28.0"}
    bad_values = {"replicas": "three"}
    dep = {"dependencies": [{"name": "missing", "version": "1.0.0"}]}
    base = {"files": {"values.schema.json": SCHEMA}}
    cases = [
        probe_case("order-schema-and-kube", chart=schema_chart, values=bad_values,
                   kube_version="v1.20.0", **base),
        probe_case("order-schema-only", chart=schema_chart, values=bad_values,
                   kube_version="v1.30.0", **base),
        probe_case("order-kube-only", chart=schema_chart, values={"replicas": 3},
                   kube_version="v1.20.0", **base),
        probe_case("order-name-schema-kube", chart=schema_chart, values=bad_values,
                   kube_version="v1.20.0", release="Bad_Name", **base),
        probe_case("order-name-and-kube", chart=schema_chart, kube_version="1.20",
                   release="a" * 54),
        probe_case("order-deps-and-name", chart=dict(schema_chart, **dep),
                   release="Bad_Name", kube_version="v1.20.0"),
        probe_case("order-deps-schema-kube", chart=dict(schema_chart, **dep), values=bad_values,
                   kube_version="v1.20.0", **base),
        probe_case("order-version-and-name", release="Bad_Name", kube_version="v1"),
        probe_case("order-version-and-deps", chart=dep, kube_version="abc"),
        probe_case("order-template-error-and-kube", chart=schema_chart, kube_version="v1.20.0",
                   templates={"probe.yaml": PROBE, "fail.yaml": '{{ fail "boom" }}'}),
        probe_case("order-template-error-and-schema", values=bad_values,
                   templates={"probe.yaml": PROBE, "fail.yaml": '{{ fail "boom" }}'}, **base),
        {"name": "order-corpus-alertmanager-schema-and-kube",
         "corpus": "prometheus-community_helm-charts__charts_alertmanager",
         "values": {"replicaCount": "x"}, "kube_version": "v1.20.0"},
        {"name": "order-corpus-alertmanager-kube",
         "corpus": "prometheus-community_helm-charts__charts_alertmanager",
         "kube_version": "v1.20.0"},
        {"name": "order-corpus-alertmanager-two-part",
         "corpus": "prometheus-community_helm-charts__charts_alertmanager",
         "kube_version": "1.24"},
    ]
    return cases


def schema_case(name, schema, values):
    return probe_case(name, values=values, files={"values.schema.json": json.dumps(schema)})


def schema_cases():
    """values.schema.json refusals whose errors nest (allOf, anyOf, oneOf, $ref, groups):
    Helm prints the validator's error tree, indented. Only cases whose order Helm keeps (no
    sibling properties failing in one schema: Helm lists those in Go map order)."""
    required_x = {"required": ["x"]}
    y_integer = {"properties": {"y": {"type": "integer"}}}
    return [
        schema_case("schema-allof-required", {"properties": {"a": {"allOf": [required_x]}}},
                    {"a": {}}),
        schema_case("schema-allof-two-subschemas",
                    {"properties": {"a": {"allOf": [required_x, y_integer, {"type": "object"}]}}},
                    {"a": {"y": "s"}}),
        schema_case("schema-allof-group",
                    {"properties": {"a": {"allOf": [dict(required_x, **y_integer)]}}},
                    {"a": {"y": "s"}}),
        schema_case("schema-allof-after-properties",
                    {"properties": {"a": {"properties": {"y": {"type": "integer"}},
                                          "allOf": [required_x]}}},
                    {"a": {"y": "s"}}),
        schema_case("schema-allof-nested",
                    {"properties": {"a": {"allOf": [{"allOf": [required_x]}]}}},
                    {"a": {}}),
        schema_case("schema-allof-in-items",
                    {"properties": {"l": {"items": {"allOf": [{"type": "integer"}]}}}},
                    {"l": ["x"]}),
        schema_case("schema-allof-root", {"allOf": [required_x]}, {}),
        schema_case("schema-anyof",
                    {"properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}}},
                    {"a": "s"}),
        schema_case("schema-anyof-group",
                    {"properties": {"a": {"anyOf": [dict(required_x, **y_integer),
                                                    {"type": "string"}]}}},
                    {"a": {"y": "s"}}),
        schema_case("schema-oneof",
                    {"properties": {"a": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]}}},
                    {"a": "s"}),
        schema_case("schema-ref-one",
                    {"definitions": {"p": required_x}, "properties": {"a": {"$ref": "#/definitions/p"}}},
                    {"a": {}}),
        schema_case("schema-ref-group",
                    {"definitions": {"p": dict(required_x, **y_integer)},
                     "properties": {"a": {"$ref": "#/definitions/p"}}},
                    {"a": {"y": "s"}}),
        schema_case("schema-nested-group",
                    {"properties": {"a": {"properties": {"b": dict(required_x, **y_integer)}}}},
                    {"a": {"b": {"y": "s"}}}),
        schema_case("schema-nested-group-and-root",
                    {"required": ["z"],
                     "properties": {"a": {"properties": {"b": dict(required_x, **y_integer)}}}},
                    {"a": {"b": {"y": "s"}}}),
        schema_case("schema-then",
                    {"properties": {"a": {"if": {"required": ["k"]}, "then": required_x}}},
                    {"a": {"k": 1}}),
        # metallb's shape: a null where an allOf of integer constraints applies.
        schema_case("schema-allof-null",
                    {"properties": {"p": {"properties": {"t": {"allOf": [{"type": "integer"},
                                                                          {"minimum": 1}]}}}}},
                    {"p": {"t": None}}),
    ] + schema_order_cases()


def schema_order_cases():
    """Where Helm's validator lists the errors of one schema in a fixed order: `required`
    before the properties' errors, the properties' before `additionalProperties`, array items
    by index, a string's and a number's keywords in the validator's order, the type's keywords
    before `allOf`/`anyOf`. One failing property each where Helm iterates a map."""
    closed_rbac = {"type": "object", "additionalProperties": False,
                   "properties": {"rbac": {"type": "object", "additionalProperties": False,
                                           "properties": {"enabled": {"type": "boolean"}}}}}
    return [
        # The issue's example (traefik's, opentelemetry-ebpf's shape).
        schema_case("schema-order-child-before-additional", closed_rbac,
                    {"extra": 1, "rbac": {"bogus": 1}}),
        schema_case("schema-order-required-before-child",
                    {"required": ["z"], "properties": {"a": {"type": "integer"}}}, {"a": "s"}),
        schema_case("schema-order-required-child-additional",
                    {"required": ["z"], "additionalProperties": False,
                     "properties": {"a": {"type": "integer"}}}, {"a": "s", "b": 1}),
        schema_case("schema-order-min-properties-required",
                    {"minProperties": 3, "required": ["z"]}, {"a": 1}),
        schema_case("schema-order-pattern-child-before-additional",
                    {"additionalProperties": False,
                     "patternProperties": {"^x-": {"type": "integer"}}}, {"x-a": "s", "b": 1}),
        schema_case("schema-order-additional-schema-child",
                    {"required": ["z"], "additionalProperties": {"type": "integer"}}, {"b": "s"}),
        schema_case("schema-order-items-by-index",
                    {"properties": {"l": {"minItems": 20, "items": {"type": "integer"}}}},
                    {"l": [0, 1, "two"] + list(range(3, 10)) + ["ten"]}),
        schema_case("schema-order-string-keywords",
                    {"properties": {"s": {"minLength": 5, "pattern": "^[0-9]+$"}}},
                    {"s": "ab"}),
        schema_case("schema-order-number-keywords",
                    {"properties": {"n": {"minimum": 10, "multipleOf": 3}}}, {"n": 5}),
        schema_case("schema-order-child-before-allof",
                    {"properties": {"a": {"type": "integer"}}, "allOf": [{"required": ["z"]}]},
                    {"a": "s"}),
        schema_case("schema-order-additional-before-anyof",
                    {"additionalProperties": False, "properties": {"a": {}},
                     "anyOf": [{"required": ["a"]}, {"required": ["c"]}]}, {"b": 1}),
        schema_case("schema-order-nested-child-before-additional",
                    {"properties": {"p": closed_rbac}}, {"p": {"extra": 1, "rbac": {"bogus": 1}}}),
    ]


def build_chart(root, case):
    meta = {"apiVersion": "v2", "name": "c", "version": "0.1.0"}
    meta.update(case.get("chart") or {})
    os.makedirs(os.path.join(root, "templates"))
    with open(os.path.join(root, "Chart.yaml"), "w") as f:
        for k, v in meta.items():
            f.write("%s: %s\n" % (k, json.dumps(v)))
    for rel, text in (case.get("templates") or {}).items():
        with open(os.path.join(root, "templates", rel), "w") as f:
            f.write(text)
    for rel, text in (case.get("files") or {}).items():
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)


def answer(case, shared):
    with tempfile.TemporaryDirectory() as d:
        if "corpus" in case:
            root = os.path.join(shared, "helm-corpus", "charts", case["corpus"])
        else:
            root = os.path.join(d, "c")
            build_chart(root, case)
        opts = {"namespace": "default", "dry_run": "client"}
        if case.get("kube_version"):
            opts["kube_version"] = case["kube_version"]
        try:
            with helm.Config(kubeconfig_content=KUBECONFIG, storage_driver="memory",
                             namespace="default") as cfg:
                with helm.Chart.load(root) as chart:
                    out = _native.call_string(
                        "helm_install", cfg._raw(), cfg._context_arg(None), chart._raw(), None,
                        case.get("release", "release-name"), json.dumps(case.get("values") or {}),
                        json.dumps(opts))
            return {"manifest": json.loads(out).get("manifest", "")}
        except helm.HelmError as e:
            return {"error": str(e)}


def main():
    shared = sys.argv[1]
    cases = (release_name_cases() + kube_version_cases() + kube_constraint_cases() + order_cases()
             + schema_cases())
    seen = set()
    for case in cases:
        assert case["name"] not in seen, case["name"]
        seen.add(case["name"])
        case["expect"] = answer(case, shared)
    json.dump(cases, sys.stdout, indent=1, ensure_ascii=False, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
