#!/usr/bin/env bash
# Writes build/hot-functions.txt: the mangled names of the functions a render runs, hottest
# first, which build.rs hands to the linker so release builds keep them together (the first
# render of a fresh process then faults in a few pages of code; docs/benchmarks.md, cold
# start). Rerun after larger engine changes or a toolchain/dependency update: names that no
# longer exist are skipped by the linker, so a stale list only costs the benefit.
#
# Records, with callgrind: every corpus chart without key generation rendered once in one
# process (examples/render_corpus), and `capstan render` of the example stack's chart and of
# metrics-server (the CLI's own path: flags, stream, output). Takes a few minutes.
#
# Environment: CAPSTAN_SHARED as for scripts/bench-render.sh; valgrind must be installed.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
. scripts/lib/shared-corpus.sh
command -v valgrind >/dev/null || { echo "gen-hot-functions.sh: valgrind is needed" >&2; exit 2; }

cargo build --release --quiet --bin capstan --example render_corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/corpus.out" \
    target/release/examples/render_corpus --reps 1 --skip-rsa >/dev/null 2>"$work/corpus.log" \
    || { tail -5 "$work/corpus.log" >&2; exit 1; }
metrics_server=$(find "$SHARED/helm-corpus/charts" -maxdepth 1 -name '*metrics-server*' | head -1)
for chart in stacks/example/cluster-class "$metrics_server"; do
    [ -d "$chart" ] || continue
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/cli-$(basename "$chart").out" \
        target/release/capstan render "$chart" >/dev/null 2>>"$work/cli.log"
done

python3 - "$work" > build/hot-functions.txt <<'PYEOF'
import collections, glob, re, sys

# callgrind's compressed names: `fn=(id) name` defines an id, `fn=(id)` refers to it; a cost
# line after `fn=` starts with a position and the cost. `'N` marks a recursion level.
cost = collections.Counter()
for path in glob.glob(sys.argv[1] + "/*.out"):
    names, current = {}, None
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if m:
                kind, ident, name = m.groups()
                if name:
                    names[ident] = re.sub(r"'\d+$", "", name)
                if kind == "fn":
                    current = names.get(ident)
                    cost[current] += 0
                continue
            if current and line[:1] in "0123456789+-*":
                fields = line.split()
                if len(fields) >= 2 and fields[1].isdigit():
                    cost[current] += int(fields[1])
# Symbols only: no addresses, no `(below main)`, nothing with spaces.
keep = [n for n, _ in cost.most_common() if n and re.fullmatch(r"[A-Za-z_$.][\w$.]*", n) and n != "main"]
# src/warmup.rs finds the ordered code between these two markers and prefetches it.
markers = ["capstan_hot_code_begin", "capstan_hot_code_end"]
keep = [n for n in keep if n not in markers]
print("\n".join([markers[0]] + keep + [markers[1]]))
PYEOF
echo "build/hot-functions.txt: $(wc -l < build/hot-functions.txt) functions" >&2
