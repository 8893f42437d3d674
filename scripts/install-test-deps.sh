#!/usr/bin/env bash
# Installs what capstan's tests need besides the Rust toolchain: etcd, a kube-apiserver, git,
# an OCI registry (Debian's docker-registry), Prometheus and mdBook (for the book).
#
# No Kubernetes binary can be downloaded here, so kube-apiserver is built from Debian's
# kubernetes source package (it vendors every Go dependency). Idempotent: the built binary is
# cached under ${XDG_CACHE_HOME:-$HOME/.cache}/capstan/ and everything is skipped when present.
#
# Prints the paths on success; exits non-zero with the reason on failure.
set -euo pipefail

cache="${XDG_CACHE_HOME:-$HOME/.cache}/capstan"
bin_dir="$cache/k8s/bin"
apiserver="$bin_dir/kube-apiserver"
log() { printf 'install-test-deps: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Parallel test runs (several worktrees, nextest) may call this at once: one installs, the
# others wait and then find the cached binary.
mkdir -p "$cache"
exec 9>"$cache/.install-test-deps.lock"
if command -v flock >/dev/null; then
  flock 9 || die "could not lock $cache/.install-test-deps.lock"
fi

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    die "need root for: $* (run as root or install sudo)"
  fi
}

apt_updated=0
apt_update_once() {
  if [ "$apt_updated" = 0 ]; then
    log "apt-get update"
    as_root apt-get update -qq || die "apt-get update failed"
    apt_updated=1
  fi
}

# 1. Debian packages: etcd for the API server's storage, Go to build kube-apiserver.
need_pkgs=()
command -v etcd >/dev/null || need_pkgs+=(etcd-server)
# git (with `git daemon`) serves the git-source tests a repository on loopback.
git daemon --help >/dev/null 2>&1 || need_pkgs+=(git)
# The CNCF distribution registry (v2.8) serves the OCI-source tests on loopback.
command -v docker-registry >/dev/null || need_pkgs+=(docker-registry)
# Prometheus (and promtool) check the install chart's rules and dashboard (tests/it/monitoring.rs).
command -v promtool >/dev/null || need_pkgs+=(prometheus)
if [ ! -x "$apiserver" ]; then
  command -v go >/dev/null || need_pkgs+=(golang-go)
  command -v rsync >/dev/null || need_pkgs+=(rsync)
  command -v jq >/dev/null || need_pkgs+=(jq)
  [ -d /usr/share/gocode/src/github.com/modern-go/reflect2 ] || need_pkgs+=(golang-github-modern-go-reflect2-dev)
  command -v dpkg-source >/dev/null || need_pkgs+=(dpkg-dev)
fi
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  apt_update_once
  log "apt-get install ${need_pkgs[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null \
    || die "apt-get install ${need_pkgs[*]} failed"
fi
command -v etcd >/dev/null || die "etcd is still missing after installing etcd-server"

# 2. kube-apiserver, built once from Debian's kubernetes 1.20 source package.
if [ -x "$apiserver" ]; then
  log "kube-apiserver cached at $apiserver (skipping build)"
else
  src_list=/etc/apt/sources.list.d/capstan-deb-src.list
  if ! grep -rqs '^deb-src .* bookworm main' /etc/apt/sources.list /etc/apt/sources.list.d/ \
     && ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/; then
    mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    mirror=${mirror:-http://deb.debian.org/debian}
    log "adding deb-src entry for bookworm main ($mirror)"
    echo "deb-src $mirror bookworm main" | as_root tee "$src_list" >/dev/null
    apt_updated=0
  fi
  apt_update_once

  work="$cache/k8s/build"
  rm -rf "$work"
  mkdir -p "$work"
  log "fetching Debian's kubernetes source package into $work"
  (cd "$work" && apt-get source -qq kubernetes >/dev/null 2>&1) \
    || (cd "$work" && apt-get source kubernetes) || die "apt-get source kubernetes failed"
  srcdir=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -n 1)
  [ -n "$srcdir" ] || die "no kubernetes-* source directory after apt-get source"
  log "source: $srcdir"

  # Kubernetes 1.20 vendors reflect2 v1.0.1, which crashes under Go >= 1.18 when decoding
  # custom resources; Debian's packaged reflect2 works.
  log "replacing vendored modern-go/reflect2 with Debian's copy"
  rm -rf "$srcdir/vendor/github.com/modern-go/reflect2"
  mkdir -p "$srcdir/vendor/github.com/modern-go/reflect2"
  rsync -a --exclude go.mod /usr/share/gocode/src/github.com/modern-go/reflect2/ \
    "$srcdir/vendor/github.com/modern-go/reflect2/"

  log "building kube-apiserver (about 10 minutes on 2 cores)"
  (
    cd "$srcdir"
    export GOPATH="$PWD/.go" CGO_ENABLED=0
    export GOCACHE="$cache/k8s/gocache"
    mkdir -p .go/src/k8s.io
    ln -sfn ../../.. .go/src/k8s.io/kubernetes
    make WHAT=cmd/kube-apiserver
  ) >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; die "kube-apiserver build failed (log: $work/build.log)"; }

  built=$(find "$srcdir/_output" -type f -name kube-apiserver -perm -u+x | head -n 1)
  [ -n "$built" ] || die "build finished but no kube-apiserver binary under $srcdir/_output"
  mkdir -p "$bin_dir"
  cp "$built" "$apiserver.tmp" && mv "$apiserver.tmp" "$apiserver"
  rm -rf "$work" "$cache/k8s/gocache"
  log "kube-apiserver built: $apiserver"
fi

# 3. mdBook, which builds and checks the book (docs/book, tests/it/book.rs): compiled from
# crates.io once, pinned, without the `serve`/`watch` features the tests do not use.
mdbook_version=0.4.52
mdbook="$cache/mdbook/$mdbook_version/bin/mdbook"
if [ -x "$mdbook" ]; then
  log "mdbook $mdbook_version cached at $mdbook (skipping build)"
else
  log "building mdbook $mdbook_version (a few minutes on 2 cores)"
  # Its own target directory: a CARGO_TARGET_DIR of the caller would keep the build.
  env -u CARGO_TARGET_DIR cargo install mdbook --locked --version "$mdbook_version" \
    --no-default-features --features search --root "$cache/mdbook/$mdbook_version" --quiet \
    || die "cargo install mdbook $mdbook_version failed"
fi
"$mdbook" --version >/dev/null 2>&1 || die "$mdbook does not run"

"$apiserver" --version >/dev/null 2>&1 || die "$apiserver does not run"
echo "KUBE_APISERVER=$apiserver"
echo "ETCD=$(command -v etcd)"
echo "DOCKER_REGISTRY=$(command -v docker-registry)"
echo "PROMETHEUS=$(command -v prometheus)"
echo "MDBOOK=$mdbook"
