#!/usr/bin/env bash
# Proves the operator image runs as the chart's Deployment runs it: builds it
# (scripts/build-image.sh), unpacks it with umoci into a bare root file system, and runs its
# entrypoint from that root file system alone (chroot, as the image's non-root user, with an
# empty environment) as `capstan operator` with in-cluster configuration: the service-account
# token, CA and namespace files at the in-cluster paths inside the root file system, and
# KUBERNETES_SERVICE_HOST/PORT pointing at the test API server (examples/test_cluster.rs).
# The RBAC is the chart's (`capstan install`, webhooks off: no kubelet here runs the pod), the
# token the chart's service account's. Passes when the operator reports ready and reconciles
# one ClusterStack whose source is a local directory inside the image's file system
# (stacks/example): its ClusterStackRelease is created and the stack's status names it.
# Fails when the unpacked image exceeds 60 MB, or its binary carries debug information or
# lacks its symbol table (backtraces name functions through it).
#
#   scripts/test-image.sh [--no-build] [--debug]
#
# --debug: a debug build (faster to build; the image is then larger and slower, but the same
# files otherwise).
#
# Needs root (chroot, buildah); installs buildah and umoci (Debian) when missing. Not part of
# scripts/test.sh; docs/testing.md says how long it takes.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
TAG=localhost/capstan:image-test
# The largest unpacked image accepted, in bytes (a stripped binary and its libraries: ~45 MB).
MAX_IMAGE_BYTES=60000000
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BUILD=1
PROFILE=release
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) BUILD=0; shift ;;
        --debug) PROFILE=debug; shift ;;
        *) echo "usage: $0 [--no-build] [--debug]" >&2; exit 2 ;;
    esac
done
start=$(date +%s)
say() { echo "test-image: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (chroot into the image's root file system)"
missing=()
command -v umoci >/dev/null || missing+=(umoci)
command -v kubectl >/dev/null || missing+=(kubernetes-client)
if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]} (Debian)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cargo_profile=(--release)
[ "$PROFILE" = debug ] && cargo_profile=()
cargo build "${cargo_profile[@]}" --locked --quiet --bin capstan --example test_cluster
CAPSTAN=$TARGET_DIR/$PROFILE/capstan
if [ "$BUILD" = 1 ]; then
    scripts/build-image.sh --tag "$TAG" --binary "$CAPSTAN" >&2
fi
buildah=(buildah --storage-driver vfs)
if [ -n "${CAPSTAN_BUILDAH_ROOT:-}" ]; then
    buildah+=(--root "$CAPSTAN_BUILDAH_ROOT" --runroot "$CAPSTAN_BUILDAH_ROOT/run")
fi

WORK=$(mktemp -d)
OPERATOR_PID=""
cleanup() {
    local rc=$?
    if [ -n "$OPERATOR_PID" ] && kill "$OPERATOR_PID" 2>/dev/null; then
        # As the kubelet does: SIGTERM, then SIGKILL after the grace period (here 15 s).
        for _ in $(seq 1 75); do kill -0 "$OPERATOR_PID" 2>/dev/null || break; sleep 0.2; done
        if kill -0 "$OPERATOR_PID" 2>/dev/null; then
            say "warning: the operator did not stop within 15 s of SIGTERM; killed"
            kill -9 "$OPERATOR_PID" 2>/dev/null
        fi
        wait "$OPERATOR_PID" 2>/dev/null || true
    fi
    exec 3>&- 2>/dev/null
    wait 2>/dev/null || true
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT

# The image as pushed, unpacked: only its layers, nothing from this machine.
"${buildah[@]}" push --quiet "$TAG" "oci:$WORK/oci:capstan" >/dev/null
umoci raw unpack --image "$WORK/oci:capstan" "$WORK/rootfs"
rootfs=$WORK/rootfs
# The image's configuration (user, entrypoint) from the OCI layout: index → manifest → config.
image_config() {
    python3 - "$WORK/oci" "$1" <<'PYEOF'
import json, os, sys
layout, field = sys.argv[1], sys.argv[2]
blob = lambda d: json.load(open(os.path.join(layout, "blobs", *d.split(":"))))
manifest = blob(json.load(open(os.path.join(layout, "index.json")))["manifests"][0]["digest"])
value = blob(manifest["config"]["digest"])["config"].get(field) or ""
print(" ".join(value) if isinstance(value, list) else value)
PYEOF
}
user=$(image_config User)
entrypoint=$(image_config Entrypoint)
[ "$user" = 65532:65532 ] || fail "the image's user is '$user', not 65532:65532"
[ ! -e "$rootfs/bin/sh" ] && [ ! -e "$rootfs/usr/bin/sh" ] || fail "the image holds a shell"
image_bytes=$(du -sb "$rootfs" | cut -f1)
say "image unpacked: $image_bytes bytes ($(du -sh "$rootfs" | cut -f1)), user $user, entrypoint $entrypoint"
if [ "$PROFILE" = release ] && [ "$image_bytes" -gt "$MAX_IMAGE_BYTES" ]; then
    fail "the unpacked image is $image_bytes bytes, more than $MAX_IMAGE_BYTES"
fi
image_binary=$rootfs/usr/local/bin/capstan
sections=$(readelf -S -W "$image_binary")
# Debug information: the .debug_* sections but .debug_gdb_scripts (34 bytes loaded with the
# program: the name of Rust's pretty-printers for gdb).
debug_sections=$(grep -o ' \.debug_[a-z_]*' <<<"$sections" | grep -v debug_gdb_scripts || true)
[ -z "$debug_sections" ] || fail "the image's binary carries debug information:$(tr '\n' ' ' <<<"$debug_sections")"
grep -q ' \.symtab ' <<<"$sections" || fail "the image's binary has no symbol table (backtraces would name no function)"
[ "$(nm -C "$image_binary" | grep -c ' capstan::')" -gt 0 ] || fail "the image's binary names no capstan function"

# The API server (fd 3 keeps it alive).
mkfifo "$WORK/stdin"
"$TARGET_DIR/$PROFILE/examples/test_cluster" <"$WORK/stdin" >"$WORK/kubeconfig-path" 2>"$WORK/cluster.log" &
exec 3>"$WORK/stdin"
for _ in $(seq 1 600); do
    [ -s "$WORK/kubeconfig-path" ] && break
    sleep 0.2
done
export KUBECONFIG
KUBECONFIG=$(head -1 "$WORK/kubeconfig-path")
[ -f "$KUBECONFIG" ] || { cat "$WORK/cluster.log" >&2; fail "the test API server did not start"; }
server=$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}')
hostport=${server#https://}
say "API server $server"

# The chart's objects: CRDs, namespace, service account, RBAC (the Deployment is applied too,
# but no kubelet runs it).
"$CAPSTAN" install --kubeconfig "$KUBECONFIG" --image "$TAG" --set webhook.enabled=false >"$WORK/install.log" 2>&1 \
    || { cat "$WORK/install.log" >&2; fail "capstan install"; }

# In-cluster configuration, where the kubelet would mount it.
sa=$rootfs/var/run/secrets/kubernetes.io/serviceaccount
mkdir -p "$sa"
kubectl -n capstan-system create token capstan --duration=1h >"$sa/token"
kubectl config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$sa/ca.crt"
printf capstan-system >"$sa/namespace"
# The stack, inside the image's file system (a local source reads a mounted volume).
mkdir -p "$rootfs/stacks"
cp -r stacks/example "$rootfs/stacks/example"
health=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# The Deployment's arguments (deploy/capstan/templates/deployment.yaml), webhooks off.
env -i KUBERNETES_SERVICE_HOST="${hostport%:*}" KUBERNETES_SERVICE_PORT="${hostport##*:}" POD_NAME=capstan-image-test \
    /usr/sbin/chroot --userspec=65532:65532 "$rootfs" $entrypoint operator \
    --log-format=json --drift-interval=10m --concurrency=4 \
    --metrics-addr=127.0.0.1:0 --health-addr="127.0.0.1:$health" \
    --leader-elect --leader-election-namespace=capstan-system \
    --cache-dir=/var/cache/capstan >"$WORK/operator.log" 2>&1 &
OPERATOR_PID=$!

ready=""
for _ in $(seq 1 150); do
    kill -0 "$OPERATOR_PID" 2>/dev/null || { cat "$WORK/operator.log" >&2; fail "the operator exited"; }
    if [ "$(curl -s "http://127.0.0.1:$health/readyz" || true)" = ok ]; then ready=1; break; fi
    sleep 0.2
done
[ -n "$ready" ] || { cat "$WORK/operator.log" >&2; fail "the operator never reported ready"; }
say "operator ready (in-cluster configuration, uid 65532)"

kubectl apply -f - >/dev/null <<'EOF'
apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata:
  name: example
  namespace: capstan-system
spec:
  provider: docker
  name: example
  kubernetesVersion: "1.30"
  channel: custom
  autoSubscribe: true
  noProvider: true
  interval: 1m
  source:
    local:
      path: /stacks/example
EOF

release=""
for _ in $(seq 1 300); do
    release=$(kubectl -n capstan-system get clusterstackreleases -o jsonpath='{.items[*].metadata.name}' 2>/dev/null || true)
    latest=$(kubectl -n capstan-system get clusterstack example -o jsonpath='{.status.latestRelease}' 2>/dev/null || true)
    [ -n "$release" ] && [ -n "$latest" ] && break
    sleep 0.2
done
[ -n "$release" ] && [ -n "$latest" ] \
    || { cat "$WORK/operator.log" >&2; fail "the ClusterStack was not reconciled (releases: '$release', latest: '${latest:-}')"; }
if grep -q '"level":"ERROR"' "$WORK/operator.log"; then
    grep '"level":"ERROR"' "$WORK/operator.log" >&2
    fail "the operator logged errors"
fi
say "ClusterStack reconciled: ClusterStackRelease $release, status.latestRelease $latest"
say "passed in $(($(date +%s) - start)) s"
