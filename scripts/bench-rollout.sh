#!/usr/bin/env bash
# Rollout benchmark of `capstan operator` (issue 33; docs/benchmarks.md "Issue 33"): for each
# N, a management API server (kube-apiserver + etcd of the test harness, with an audit log),
# N Clusters on docker-ferrol-1-27-v1 in four waves (1 %, 9 %, 40 %, 50 % by default, soak 0)
# and one ClusterStackRollout moving them to v2, with Cluster API simulated by the rollout
# tests' simulator (tests/it/rollout_sim.rs: a Cluster reports upgraded a fixed time after its
# class changed). The measured operator runs only the rollout controller; the others run in a
# second process acting as another user (examples/rollout_scale). Per wave and in total: wall
# time against the simulated Cluster API floor (ceil(Clusters / maxInFlight) upgrades in a row),
# the overhead beyond it, the rollout operator's requests by verb (audit log) and CPU seconds
# per process, the rollout operator's memory. Issue 48: `--steps 2` moves every Cluster two
# Kubernetes minors across stacks instead (docker-example-1-27 → -1-28 → -1-29, `from: auto`),
# `--preflight` gives every Cluster a kubeconfig Secret naming one workload API server (its
# requests counted from its own audit log), so the pre-flight reads real evidence. Issue 47:
# `--capi v1beta2` on Cluster API v1.14's CRDs serving only v1beta2. Lists run every
# combination one after the other in one run (`--steps 1,2 --capi v1beta1,v1beta2`). Prints
# ready-to-paste markdown tables and keeps them in $CARGO_TARGET_DIR/bench-rollout/ (default
# target/); the load average before each run is in a line under the run's own.
#
#   scripts/bench-rollout.sh [options] [N ...]        (default N: 1000)
#     --steps S,...         switches per Cluster: 1 (one stack, v1 → v2) or 2 (two minors)
#                           (default 1)
#     --preflight           every Cluster's kubeconfig names a workload API server
#     --capi V,...          the Cluster API CRDs: v1beta1, v1beta2 (default v1beta1)
#     --waves P,P,...       the waves' shares in percent (default 1,9,40,50)
#     --max-in-flight M     every wave's maxInFlight, a number or "P%" (default 20%)
#     --upgrade S           simulated upgrade time per Cluster, seconds (default 5)
#     --concurrency C       the rollout operator's --concurrency (default 4)
#     --run-timeout T       longest time one run may take (default 60m)
#     --nice N              run everything under `nice -n N` (default 0: at 19 a loaded
#                           machine starves the API server, whose time is part of the figures)
#     --debug               debug builds instead of release builds
#     --no-build            use the binaries already built
#
# Needs CAPSTAN_SHARED (the shared CAPI CRDs and cluster-stack releases). Ctrl-C or a timeout
# stops the run; every process it started is stopped with it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

usage() { sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "bench-rollout: ERROR: $*" >&2; exit 1; }

WAVES=1,9,40,50 MAX_IN_FLIGHT=20% UPGRADE=5 CONCURRENCY=4 RUN_TIMEOUT=60m NICE=0 PROFILE=release BUILD=1
STEPS=1 CAPI=v1beta1 PREFLIGHT=()
COUNTS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --waves) WAVES=${2:?}; shift 2 ;;
        --max-in-flight) MAX_IN_FLIGHT=${2:?}; shift 2 ;;
        --upgrade) UPGRADE=${2:?}; shift 2 ;;
        --concurrency) CONCURRENCY=${2:?}; shift 2 ;;
        --run-timeout) RUN_TIMEOUT=${2:?}; shift 2 ;;
        --nice) NICE=${2:?}; shift 2 ;;
        --debug) PROFILE=debug; shift ;;
        --steps) STEPS=${2:?}; shift 2 ;;
        --capi) CAPI=${2:?}; shift 2 ;;
        --preflight) PREFLIGHT=(--preflight); shift ;;
        --no-build) BUILD=0; shift ;;
        -h|--help) usage ;;
        -*) echo "bench-rollout: unknown option $1" >&2; usage ;;
        *) [[ $1 =~ ^[0-9]+$ ]] || die "N must be a number, got '$1'"; COUNTS+=("$1"); shift ;;
    esac
done
[ ${#COUNTS[@]} -gt 0 ] || COUNTS=(1000)
[ -n "${CAPSTAN_SHARED:-}" ] || [ -d "$ROOT/../shared" ] || die "CAPSTAN_SHARED is not set and ../shared is missing"

deps="$(scripts/install-test-deps.sh)" || die "scripts/install-test-deps.sh failed"
CAPSTAN_KUBE_APISERVER="$(sed -n 's/^KUBE_APISERVER=//p' <<<"$deps")"
CAPSTAN_ETCD="$(sed -n 's/^ETCD=//p' <<<"$deps")"
[ -x "$CAPSTAN_KUBE_APISERVER" ] && [ -x "$CAPSTAN_ETCD" ] || die "no kube-apiserver/etcd from install-test-deps.sh"
export CAPSTAN_KUBE_APISERVER CAPSTAN_ETCD

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
if [ "$BUILD" = 1 ]; then
    release=(--release)
    [ "$PROFILE" = release ] || release=()
    nice -n 19 cargo build "${release[@]}" --quiet --bin capstan --example rollout_scale
fi
CAPSTAN="$TARGET/$PROFILE/capstan"
BENCH="$TARGET/$PROFILE/examples/rollout_scale"
[ -x "$CAPSTAN" ] && [ -x "$BENCH" ] || die "missing $CAPSTAN or $BENCH (run without --no-build)"
export CAPSTAN_BIN="$CAPSTAN"

OUT_DIR="$TARGET/bench-rollout"
mkdir -p "$OUT_DIR"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
ROWS="$OUT_DIR/rows-$STAMP.txt"
LOG="$OUT_DIR/run-$STAMP.log"
: >"$ROWS"

BENCH_NAME=bench-rollout BENCH_NICE=$NICE
. scripts/lib/bench-run.sh

IFS=, read -r -a STEP_RUNS <<<"$STEPS"
IFS=, read -r -a CAPI_RUNS <<<"$CAPI"
for s in "${STEP_RUNS[@]}"; do [[ $s =~ ^[12]$ ]] || die "--steps takes 1 and 2, got '$s'"; done
for c in "${CAPI_RUNS[@]}"; do [[ $c =~ ^v1beta[12]$ ]] || die "--capi takes v1beta1 and v1beta2, got '$c'"; done

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
LOADS=()
failed=0
for n in "${COUNTS[@]}"; do
    for capi in "${CAPI_RUNS[@]}"; do
        for steps in "${STEP_RUNS[@]}"; do
            label="$n Clusters, $steps step(s), $capi${PREFLIGHT:+, workload}"
            LOADS+=("$label: $(cut -d' ' -f1-3 /proc/loadavg)")
            echo "bench-rollout: $label (log: $LOG)" >&2
            bench_run "$label" "$OUT_DIR/out-$STAMP-$n-$steps-$capi.txt" \
                "$BENCH" "$n" --waves "$WAVES" --max-in-flight "$MAX_IN_FLIGHT" --upgrade-secs "$UPGRADE" \
                --concurrency "$CONCURRENCY" --steps "$steps" --capi "$capi" "${PREFLIGHT[@]}"
        done
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# The tables: each table's header once, then its rows in run order.
TABLES="$OUT_DIR/tables-$STAMP.md"
{
    echo "Run $STAMP at $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores," \
        "load average $load_before before and $load_after after," \
        "$PROFILE build, waves $WAVES %, maxInFlight $MAX_IN_FLIGHT, simulated upgrade ${UPGRADE} s, operator --concurrency $CONCURRENCY."
    echo
    printf 'Load average before each run (1, 5, 15 min): %s.\n' "$(IFS=';'; echo "${LOADS[*]}" | sed 's/;/; /g')"
    bench_tables "$ROWS" time requests workload cpu memory
} >"$TABLES"
cat "$TABLES"
echo "bench-rollout: tables in $TABLES" >&2
exit "$failed"
