//! Local releases for offline use: a release directory read where it is, a stack source tree
//! built (like `csctl create --mode hash`) at `v0-sha.<content hash>` into a scratch directory,
//! or a complete release of the [`Cache`] copied out into one. The scratch directory goes away
//! with the [`Opened`] release.

use std::path::{Path, PathBuf};

use capstan_stack::build::{self, BuildError, CSCTL_FILE};
use capstan_stack::metadata::METADATA_FILE;
use capstan_stack::release::{Release, ReleaseError};

use super::cache::{Cache, CacheError, ReleaseManifest};

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(transparent)]
    Release(#[from] ReleaseError),
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Cache(#[from] CacheError),
    #[error(
        "{0} is neither a release directory (it has no {METADATA_FILE}) nor a stack source tree (it has no {CSCTL_FILE})"
    )]
    NotARelease(String),
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

/// What a local directory holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A published release's files (`metadata.yaml`, chart archives).
    ReleaseDir,
    /// A stack source tree (`csctl.yaml`, `cluster-class/`, `cluster-addon/`).
    SourceTree,
}

/// The kind of `path`, when it is a directory of either kind.
pub fn kind(path: &Path) -> Option<Kind> {
    if !path.is_dir() {
        None
    } else if path.join(METADATA_FILE).is_file() {
        Some(Kind::ReleaseDir)
    } else if path.join(CSCTL_FILE).is_file() {
        Some(Kind::SourceTree)
    } else {
        None
    }
}

/// A loaded release; a scratch directory it lives in is removed on drop.
#[derive(Debug)]
pub struct Opened {
    pub release: Release,
    scratch: Option<PathBuf>,
}

impl Drop for Opened {
    fn drop(&mut self) {
        if let Some(dir) = &self.scratch {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Opens a release directory or a stack source tree.
pub fn open(path: &Path) -> Result<Opened, LocalError> {
    match kind(path) {
        Some(Kind::ReleaseDir) => Ok(Opened {
            release: Release::load(path)?,
            scratch: None,
        }),
        Some(Kind::SourceTree) => {
            let version = build::hash_version(path)?;
            in_scratch(|dir| Ok(build::build(path, &version, dir)?))
        }
        None => Err(LocalError::NotARelease(path.display().to_string())),
    }
}

/// Opens a complete release of the cache (its files copied out and re-verified).
pub fn open_cached(cache: &Cache, manifest: &ReleaseManifest) -> Result<Opened, LocalError> {
    in_scratch(|dir| {
        cache.export(manifest, dir)?;
        Ok(Release::load(dir)?)
    })
}

fn in_scratch(f: impl FnOnce(&Path) -> Result<Release, LocalError>) -> Result<Opened, LocalError> {
    let scratch = scratch_dir()?;
    match f(&scratch.join("release")) {
        Ok(release) => Ok(Opened {
            release,
            scratch: Some(scratch),
        }),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&scratch);
            Err(e)
        }
    }
}

/// A new, empty directory below the system's temp dir.
pub fn scratch_dir() -> Result<PathBuf, LocalError> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("capstan-{}-{nanos}-{n}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| LocalError::Io {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    Ok(dir)
}
