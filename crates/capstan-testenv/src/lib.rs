//! Real Kubernetes for integration tests: an isolated etcd + kube-apiserver per [`TestCluster`],
//! or a namespace of the run's shared one ([`TestCluster::shared_or_start`]).
//!
//! Binaries come from `scripts/install-test-deps.sh` (cached under
//! `${XDG_CACHE_HOME:-$HOME/.cache}/capstan/k8s/bin/`) or from `CAPSTAN_KUBE_APISERVER` /
//! `CAPSTAN_ETCD`. When they are missing a test prints why and returns early, except under
//! `CI=true`, where a missing binary is a failure (CI must exercise the real server).
//!
//! Usage:
//! ```ignore
//! let Some(bins) = support::Binaries::find_or_skip("my_test") else { return };
//! let cluster = support::TestCluster::start(&bins, "mgmt").await.unwrap();
//! let client = cluster.client();
//! ```

// The test harness may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(dead_code)]

/// The repository's root (the workspace), where `testdata/`, `stacks/` and `deploy/` live.
pub const REPO_ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

pub mod audit;
mod binaries;
mod cluster;
mod crds;
pub mod fake_github;
pub mod keyless;
mod pki;
mod process;
pub mod proxy;
pub mod registry;
pub mod shared;
mod shared_server;
mod static_http;
pub mod untrusted_tls;

pub use binaries::Binaries;
pub use cluster::{TestCluster, client_from};
pub use crds::{CrdOptions, crd_files, install_crds, install_crds_with};
pub use process::ChildGuard;
pub use shared_server::{SHARED_KUBECONFIG_VAR, shared_kubeconfig};
pub use static_http::StaticServer;

use std::path::PathBuf;

/// Everything that can go wrong while setting up or talking to a test cluster.
#[derive(thiserror::Error)]
pub enum Error {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("generating TLS material: {0}")]
    Pki(#[from] rcgen::Error),
    #[error("kube: {0}")]
    Kube(#[from] kube::Error),
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("{path}: {message}")]
    Yaml { path: PathBuf, message: String },
    #[error("{0}")]
    Startup(String),
    #[error("timed out after {secs}s waiting for {what}")]
    Timeout { what: String, secs: u64 },
}

// `expect()` in tests prints Debug: show the readable message with its log excerpts instead.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}

/// Where the shared fixtures (`capi-crds/`, `helm-corpus/`, …) live: `CAPSTAN_SHARED`, else the
/// nearest ancestor of the crate directory that has a `shared/` sibling holding the fixture.
pub fn shared_path(rel: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CAPSTAN_SHARED") {
        let p = PathBuf::from(dir).join(rel);
        return p.exists().then_some(p);
    }
    let manifest = PathBuf::from(crate::REPO_ROOT);
    manifest
        .ancestors()
        .skip(1)
        .map(|dir| dir.join("shared").join(rel))
        .find(|p| p.exists())
}

/// True when running in CI, where skipping a real-cluster test is not acceptable.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skips (prints the reason) outside CI; fails under `CI=true`.
pub fn skip_or_fail(test: &str, reason: &str) {
    if in_ci() {
        panic!("{test}: {reason} (CI=true: a skip is a failure here)");
    }
    eprintln!("SKIPPED {test}: {reason}");
}
