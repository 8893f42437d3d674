#!/usr/bin/env bash
# Applies 1,000 objects (ConfigMaps, headless Services, Deployments) to a throw-away
# kube-apiserver v1.20 (the test harness, through `examples/test_cluster.rs`) with
# `capstan apply` and with `kubectl apply --server-side`, each into a fresh namespace, in one
# run; then re-applies the unchanged objects with both (no-op). Prints the times and ratios.
# See docs/benchmarks.md ("Issue 12: apply").
#
#   scripts/bench-apply.sh [--objects N] [--reps R] [--concurrency C]
#
# kubectl: the machine's if there is one, else Debian's `kubernetes-client` package is
# installed (once). The API server binaries come from scripts/install-test-deps.sh.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
OBJECTS=1000
REPS=3
CONCURRENCY=16
while [ $# -gt 0 ]; do
    case "$1" in
        --objects) OBJECTS=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --concurrency) CONCURRENCY=$2; shift 2 ;;
        *) echo "usage: $0 [--objects N] [--reps R] [--concurrency C]" >&2; exit 2 ;;
    esac
done

if ! command -v kubectl >/dev/null 2>&1; then
    echo "bench-apply: installing kubectl (Debian kubernetes-client)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubernetes-client >/dev/null
fi
KUBECTL=$(command -v kubectl)

cargo build --release --quiet --bin capstan --example test_cluster
CAPSTAN=$ROOT/target/release/capstan
WORK=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT

# The cluster lives as long as its stdin stays open (fd 3).
mkfifo "$WORK/stdin"
"$ROOT/target/release/examples/test_cluster" <"$WORK/stdin" >"$WORK/kubeconfig-path" &
exec 3>"$WORK/stdin"
for _ in $(seq 1 600); do
    [ -s "$WORK/kubeconfig-path" ] && break
    sleep 0.2
done
export KUBECONFIG
KUBECONFIG=$(head -1 "$WORK/kubeconfig-path")
[ -f "$KUBECONFIG" ] || { echo "bench-apply: the test cluster did not start" >&2; exit 1; }

# N objects in namespace $1: a Namespace, then ConfigMaps, Services and Deployments (40/30/30 %).
manifests() {
    local ns=$1 n=$OBJECTS cms svcs deps i
    cms=$((n * 4 / 10)); svcs=$((n * 3 / 10)); deps=$((n - cms - svcs - 1))
    printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n' "$ns"
    for i in $(seq 1 "$cms"); do
        printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: %s\ndata:\n  index: "%d"\n  payload: "%s"\n' \
            "$i" "$ns" "$i" "value-$i-0123456789abcdef"
    done
    for i in $(seq 1 "$svcs"); do
        printf -- '---\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc-%d\n  namespace: %s\nspec:\n  clusterIP: None\n  selector:\n    app: app-%d\n  ports:\n  - name: http\n    port: 80\n    protocol: TCP\n' \
            "$i" "$ns" "$i"
    done
    for i in $(seq 1 "$deps"); do
        printf -- '---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-%d\n  namespace: %s\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: app-%d\n  template:\n    metadata:\n      labels:\n        app: app-%d\n    spec:\n      containers:\n      - name: app\n        image: registry.example/app:1.0\n        ports:\n        - containerPort: 8080\n          protocol: TCP\n' \
            "$i" "$ns" "$i" "$i"
    done
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

echo "objects: $OBJECTS (one of them the Namespace), reps: $REPS, capstan --concurrency $CONCURRENCY"
echo "kubectl: $KUBECTL ($("$KUBECTL" version --client 2>/dev/null | head -1))"
printf 'rep\ttool\tfirst_s\tnoop_s\n'
for rep in $(seq 1 "$REPS"); do
    for tool in capstan kubectl; do
        ns="bench-$tool-$rep"
        manifests "$ns" >"$WORK/$ns.yaml"
        for phase in first noop; do
            t0=$(now)
            if [ "$tool" = capstan ]; then
                "$CAPSTAN" apply -f "$WORK/$ns.yaml" --concurrency "$CONCURRENCY" >"$WORK/$ns.$phase.out"
            else
                "$KUBECTL" apply --server-side -f "$WORK/$ns.yaml" >"$WORK/$ns.$phase.out"
            fi
            t1=$(now)
            eval "${phase}=\$(elapsed \$t0 \$t1)"
        done
        printf '%s\t%s\t%s\t%s\n' "$rep" "$tool" "$first" "$noop" | tee -a "$WORK/results.tsv"
    done
done
tail -1 "$WORK/bench-capstan-1.first.out"
tail -1 "$WORK/bench-capstan-1.noop.out"

awk -F'\t' '
    { first[$2] = first[$2] " " $3; noop[$2] = noop[$2] " " $4 }
    function median(list,   a, n, i, j, t) {
        n = split(list, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
        cf = median(first["capstan"]); kf = median(first["kubectl"])
        cn = median(noop["capstan"]); kn = median(noop["kubectl"])
        printf "median first apply: capstan %.2fs, kubectl %.2fs, kubectl/capstan %.1fx\n", cf, kf, kf / cf
        printf "median no-op re-apply: capstan %.2fs, kubectl %.2fs, kubectl/capstan %.1fx\n", cn, kn, kn / cn
        printf "capstan first/no-op: %.1fx\n", cf / cn
    }' "$WORK/results.tsv"
