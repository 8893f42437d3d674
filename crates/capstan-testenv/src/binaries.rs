//! Locating the etcd and kube-apiserver binaries.

use std::path::{Path, PathBuf};

/// The two server binaries a [`super::TestCluster`] runs.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub etcd: PathBuf,
    pub kube_apiserver: PathBuf,
}

impl Binaries {
    /// Finds both binaries or says which is missing and how to get it.
    pub fn find() -> Result<Self, String> {
        let kube_apiserver = match std::env::var_os("CAPSTAN_KUBE_APISERVER") {
            Some(p) => PathBuf::from(p),
            None => cache_dir().join("k8s/bin/kube-apiserver"),
        };
        let etcd = match std::env::var_os("CAPSTAN_ETCD") {
            Some(p) => PathBuf::from(p),
            None => find_in_path("etcd").unwrap_or_else(|| PathBuf::from("/usr/bin/etcd")),
        };
        for (what, path) in [("kube-apiserver", &kube_apiserver), ("etcd", &etcd)] {
            if !is_executable(path) {
                return Err(format!(
                    "{what} not found at {} (run scripts/install-test-deps.sh)",
                    path.display()
                ));
            }
        }
        Ok(Self { etcd, kube_apiserver })
    }

    /// [`Binaries::find`], turning a miss into a printed skip (or a CI failure).
    pub fn find_or_skip(test: &str) -> Option<Self> {
        match Self::find() {
            Ok(b) => Some(b),
            Err(reason) => {
                super::skip_or_fail(test, &reason);
                None
            }
        }
    }
}

fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    base.join("capstan")
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
