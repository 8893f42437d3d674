#!/usr/bin/env bash
# Fleet benchmark of `capstan operator` (issue 26 §4; docs/benchmarks.md "Issue 26"): for each
# N, a management API server, a few workload API servers (kube-apiserver + etcd each, the test
# harness) and N Clusters on the benchmark stack stacks/bench (about 25 objects per Cluster,
# each Cluster's in its own namespace); measures the first apply, the switch of all to the next
# release, an idle drift interval and drift repair (examples/operator_scale); then the floor
# (issue 36 §5): the same objects of as many Clusters applied by `capstan apply` alone to the
# same servers, as many applies at once as the operator runs reconciles, and the operator's
# times divided by it. Everything runs under `nice -n 19`, the API servers too. Prints ready-to-paste markdown tables and keeps
# them in target/bench-operator/.
#
#   scripts/bench-operator.sh [options] [N ...]        (default N: 100)
#     --shards S          also run each N with S operator shards (skipped, with a message,
#                         when the capstan binary has no --shard)
#     --shard-label KEY   the label that puts a Cluster on a shard (default
#                         sharding.capstan.dev/key)
#     --workloads W       workload API servers (default 3)
#     --drift-interval D  the operator's --drift-interval and the idle window (default 1m)
#     --drift-samples K   objects deleted on random Clusters (default 30)
#     --concurrency C     the operator's --concurrency (default 8)
#     --run-timeout T     longest time one run (one N, one shard count) may take (default 60m)
#     --phase-timeout T   longest time one phase (first apply, switch) may take (default 20m;
#                         3,000 Clusters on a loaded machine need more)
#     --profile           profile each first apply with `perf record` (the operator and the
#                         workload API servers; `perf report` by process and symbol beside
#                         the tables)
#     --capi V,...        the Cluster API CRDs, each run in turn: v1beta1 (v1.6.0's), v1beta2
#                         (v1.14's, only v1beta2 served; the release controller off, the
#                         releases reported ready by the driver) (default v1beta1)
#     --no-floor          leave out the floor (its columns show –): request counts and
#                         times in a third of the run's time
#     --no-build          use the binaries already in $CARGO_TARGET_DIR/release (default
#                         target/release)
#
# Ctrl-C or a timeout stops the run; every process it started is stopped with it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

usage() { sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "bench-operator: ERROR: $*" >&2; exit 1; }

FLOOR_ARGS=() CAPI=v1beta1 SHARDS=1 SHARD_LABEL=sharding.capstan.dev/key WORKLOADS=3 DRIFT=1m SAMPLES=30 CONCURRENCY=8 RUN_TIMEOUT=60m PHASE_TIMEOUT=20m BUILD=1 PROFILE=0
COUNTS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --shards) SHARDS=${2:?}; shift 2 ;;
        --shard-label) SHARD_LABEL=${2:?}; shift 2 ;;
        --workloads) WORKLOADS=${2:?}; shift 2 ;;
        --drift-interval) DRIFT=${2:?}; shift 2 ;;
        --drift-samples) SAMPLES=${2:?}; shift 2 ;;
        --concurrency) CONCURRENCY=${2:?}; shift 2 ;;
        --run-timeout) RUN_TIMEOUT=${2:?}; shift 2 ;;
        --phase-timeout) PHASE_TIMEOUT=${2:?}; shift 2 ;;
        --profile) PROFILE=1; shift ;;
        --capi) CAPI=${2:?}; shift 2 ;;
        --no-floor) FLOOR_ARGS=(--no-floor); shift ;;
        --no-build) BUILD=0; shift ;;
        -h|--help) usage ;;
        -*) echo "bench-operator: unknown option $1" >&2; usage ;;
        *) [[ $1 =~ ^[0-9]+$ ]] || die "N must be a number, got '$1'"; COUNTS+=("$1"); shift ;;
    esac
done
[ ${#COUNTS[@]} -gt 0 ] || COUNTS=(100)
[[ $SHARDS =~ ^[0-9]+$ ]] && [ "$SHARDS" -ge 1 ] || die "--shards must be a number >= 1"

deps="$(scripts/install-test-deps.sh)" || die "scripts/install-test-deps.sh failed"
CAPSTAN_KUBE_APISERVER="$(sed -n 's/^KUBE_APISERVER=//p' <<<"$deps")"
CAPSTAN_ETCD="$(sed -n 's/^ETCD=//p' <<<"$deps")"
[ -x "$CAPSTAN_KUBE_APISERVER" ] && [ -x "$CAPSTAN_ETCD" ] || die "no kube-apiserver/etcd from install-test-deps.sh"
export CAPSTAN_KUBE_APISERVER CAPSTAN_ETCD

if [ "$BUILD" = 1 ]; then
    nice -n 19 cargo build --release --quiet --bin capstan --example operator_scale
fi
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
CAPSTAN="$TARGET/release/capstan"
BENCH="$TARGET/release/examples/operator_scale"
[ -x "$CAPSTAN" ] && [ -x "$BENCH" ] || die "missing $CAPSTAN or $BENCH (run without --no-build)"
export CAPSTAN_BIN="$CAPSTAN"

SHARD_RUNS=(1)
if [ "$SHARDS" -gt 1 ]; then
    if "$CAPSTAN" operator --help 2>/dev/null | grep -qE -- '--shard[ =<]'; then
        SHARD_RUNS+=("$SHARDS")
    else
        echo "bench-operator: SKIPPED the runs with $SHARDS shards: $CAPSTAN operator has no --shard flag" >&2
    fi
fi

OUT_DIR="$TARGET/bench-operator"
mkdir -p "$OUT_DIR"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
ROWS="$OUT_DIR/rows-$STAMP.txt"
LOG="$OUT_DIR/run-$STAMP.log"
: >"$ROWS"

# A phase that times out keeps the operators' whole logs here.
export CAPSTAN_BENCH_KEEP_LOGS="$OUT_DIR/logs-$STAMP"

BENCH_NAME=bench-operator
. scripts/lib/bench-run.sh

PROFILE_ARGS=()
if [ "$PROFILE" = 1 ]; then
    command -v perf >/dev/null || die "--profile needs perf (Debian: linux-perf)"
    mkdir -p "$OUT_DIR/profile-$STAMP"
    PROFILE_ARGS=(--perf-dir "$OUT_DIR/profile-$STAMP")
fi

IFS=, read -r -a CAPI_RUNS <<<"$CAPI"
for c in "${CAPI_RUNS[@]}"; do [[ $c =~ ^v1beta[12]$ ]] || die "--capi takes v1beta1 and v1beta2, got '$c'"; done

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
LOADS=()
failed=0
for n in "${COUNTS[@]}"; do
    for capi in "${CAPI_RUNS[@]}"; do
        for shards in "${SHARD_RUNS[@]}"; do
            label="$n Clusters, $shards shard(s), $capi"
            LOADS+=("$label: $(cut -d' ' -f1-3 /proc/loadavg)")
            echo "bench-operator: $label (log: $LOG)" >&2
            bench_run "$label" "$OUT_DIR/out-$STAMP-$n-$shards-$capi.txt" \
                "$BENCH" "$n" --shards "$shards" --shard-label "$SHARD_LABEL" --workloads "$WORKLOADS" \
                --drift-interval "$DRIFT" --drift-samples "$SAMPLES" --concurrency "$CONCURRENCY" \
                --phase-timeout "$PHASE_TIMEOUT" --capi "$capi" "${FLOOR_ARGS[@]}" "${PROFILE_ARGS[@]}"
        done
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# The tables: each table's header once, then its rows in run order.
TABLES="$OUT_DIR/tables-$STAMP.md"
{
    echo "Run $STAMP at $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores," \
        "load average $load_before before and $load_after after," \
        "$WORKLOADS workload API servers, operator --concurrency $CONCURRENCY, drift interval $DRIFT."
    echo
    printf 'Load average before each run (1, 5, 15 min): %s.\n' "$(IFS=';'; echo "${LOADS[*]}" | sed 's/;/; /g')"
    bench_tables "$ROWS" converge requests verbs breakdown management-phases management drift cpu
} >"$TABLES"
cat "$TABLES"
echo "bench-operator: tables in $TABLES" >&2
exit "$failed"
