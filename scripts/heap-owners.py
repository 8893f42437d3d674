#!/usr/bin/env python3
"""Sums a heaptrack profile of `capstan operator` by owner (docs/benchmarks.md, issue 36 §3).

    heaptrack_print -f FILE.zst -F leaked.folded --flamegraph-cost-type leaked
    scripts/heap-owners.py leaked.folded CLUSTERS

An allocation belongs to the drift watches or to the render store's memory when any frame of
its stack is theirs; else to the owner of the frame nearest the allocation that names one.
Prints a markdown table: MiB, and KiB per Cluster.
"""
import collections
import sys

# Owners any frame of the stack decides.
ANYWHERE = [
    ("drift watches", ["(drift.rs)", "capstan_operator::drift", "capstan_operator..drift"]),
    ("render store memory", ["capstan_operator::store::", "capstan_operator..store..", "StoredRender", "RenderStore"]),
]
# Owners the frame nearest the allocation decides, in this order within one frame.
NEAREST = [
    ("workload TLS (rustls, aws-lc)", ["rustls", "aws_lc"]),
    ("HTTP/2 connections (h2, hyper)", ["h2::", "h2..", "hyper::", "hyper..", "hyper_util"]),
    ("discovery", ["capstan_apply::discovery", "(discovery.rs)"]),
    ("workload client set-up", ["capstan_operator::addon::workload", "capstan_operator::addon::cache", "(workload.rs)", "(cache.rs)", "capstan_apply::client"]),
    ("Secrets", ["secret..Secret", "secret::Secret"]),
    ("ClusterAddons", ["ClusterAddon"]),
    ("ClusterStackReleases", ["ClusterStackRelease"]),
    ("other API objects (Clusters, ControlPlanes, InfraClusters)", ["DynamicObject", "capstan_operator::management", "(management.rs)", "k8s_openapi", "kube_runtime", "(reflect.rs)", "(store.rs)"]),
    ("compiled releases, charts, templates", ["capstan_chart", "capstan_template", "capstan_stack", "capstan_source", "capstan_encoding"]),
    ("metrics", ["prometheus_client", "capstan_operator::metrics", "(metrics.rs)"]),
    ("tracing", ["tracing_subscriber", "tracing_core", "sharded_slab"]),
    ("tokio (tasks, channels, timers)", ["tokio::", "tokio.."]),
]


def owner_of(frames):
    for name, marks in ANYWHERE:
        if any(mark in frame for frame in frames for mark in marks):
            return name
    for frame in reversed(frames):
        for name, marks in NEAREST:
            if any(mark in frame for mark in marks):
                return name
    return "other"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, clusters = sys.argv[1], int(sys.argv[2])
    totals = collections.Counter()
    with open(path, errors="replace") as folded:
        for line in folded:
            stack, _, cost = line.rstrip("\n").rpartition(" ")
            if cost.isdigit():
                totals[owner_of(stack.split(";"))] += int(cost)
    print(f"| owner | MiB at {clusters} Clusters | KiB per Cluster |")
    print("|---|---|---|")
    for owner, cost in totals.most_common():
        print(f"| {owner} | {cost / 2**20:.1f} | {cost / 1024 / clusters:.1f} |")
    total = sum(totals.values())
    print(f"| total | {total / 2**20:.1f} | {total / 1024 / clusters:.1f} |")


main()
