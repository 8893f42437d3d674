#!/usr/bin/env bash
# Builds capstan's operator image without Docker and without pulling a base image: a release
# binary built here, laid out by scripts/image-rootfs.sh (the binary, the shared libraries ldd
# lists, CA certificates, a non-root user) and committed `FROM scratch` with Debian's buildah
# (installed when missing; vfs storage, chroot isolation: no daemon, no overlay mounts, runs in
# a container or VM as root). The same files as the Dockerfile's image.
#
#   scripts/build-image.sh [--tag NAME:TAG] [--binary PATH] [--archive FILE]
#
# Leaves the image in buildah's local storage as NAME:TAG (default capstan:dev) and writes it
# as a docker-archive tarball (default target/image/capstan.tar), which
# `kind load image-archive` and `k3d image import` take; the binary's debug information, which
# the image leaves out, goes next to it (capstan.debug). README.md, "Operator image".
#
# Environment: CAPSTAN_BUILDAH_ROOT, a storage directory of its own (default: buildah's,
# /var/lib/containers/storage for root).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
TAG=capstan:dev
BINARY=""
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
ARCHIVE="$TARGET_DIR/image/capstan.tar"
while [ $# -gt 0 ]; do
    case "$1" in
        --tag) TAG=$2; shift 2 ;;
        --binary) BINARY=$2; shift 2 ;;
        --archive) ARCHIVE=$2; shift 2 ;;
        *) echo "usage: $0 [--tag NAME:TAG] [--binary PATH] [--archive FILE]" >&2; exit 2 ;;
    esac
done

if ! command -v buildah >/dev/null; then
    echo "installing buildah (Debian package)…" >&2
    if [ "$(id -u)" != 0 ]; then
        echo "build-image.sh: buildah is missing and only root can install it: apt-get install buildah" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah >/dev/null
fi

if [ -z "$BINARY" ]; then
    echo "building the release binary…" >&2
    cargo build --release --locked --quiet --bin capstan
    BINARY="$TARGET_DIR/release/capstan"
fi

buildah=(buildah --storage-driver vfs)
if [ -n "${CAPSTAN_BUILDAH_ROOT:-}" ]; then
    buildah+=(--root "$CAPSTAN_BUILDAH_ROOT" --runroot "$CAPSTAN_BUILDAH_ROOT/run")
fi
export BUILDAH_ISOLATION=chroot

work=$(mktemp -d)
ctr=""
cleanup() {
    [ -n "$ctr" ] && "${buildah[@]}" rm "$ctr" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

DEBUG_FILE="$(dirname "$ARCHIVE")/capstan.debug"
scripts/image-rootfs.sh "$BINARY" "$work/rootfs" "$DEBUG_FILE"

version=$("$BINARY" version --json | sed -n 's/.*"version":"\([^"]*\)".*/\1/p')
ctr=$("${buildah[@]}" from --name "capstan-build-$$" scratch)
# As one tar archive, which buildah unpacks with the owners and modes it holds (a plain copy
# would make every file root's, the cache directory too).
tar -C "$work/rootfs" --numeric-owner -cf "$work/rootfs.tar" .
"${buildah[@]}" add --quiet "$ctr" "$work/rootfs.tar" / >/dev/null
"${buildah[@]}" config \
    --user 65532:65532 \
    --entrypoint '["/usr/local/bin/capstan"]' \
    --cmd operator \
    --os linux --arch amd64 \
    --label org.opencontainers.image.source=https://github.com/capstan-project/capstan \
    --label "org.opencontainers.image.description=capstan: release manager and operator for Cluster API cluster stacks" \
    --label org.opencontainers.image.licenses=Apache-2.0 \
    --label "org.opencontainers.image.version=$version" \
    --label "org.opencontainers.image.revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    "$ctr"
"${buildah[@]}" commit --quiet --rm "$ctr" "$TAG" >/dev/null
ctr=""

mkdir -p "$(dirname "$ARCHIVE")"
rm -f "$ARCHIVE"
"${buildah[@]}" push --quiet "$TAG" "docker-archive:$ARCHIVE:$TAG" >/dev/null
echo "image $TAG (capstan $version): in buildah's storage and in $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1)); debug information in $DEBUG_FILE"
