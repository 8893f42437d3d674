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
    /// A release copied into a scratch directory that could not be read (named as the release's).
    #[error(transparent)]
    InRelease(Box<InRelease<LocalError>>),
}

/// An error about a release read from a temporary copy, told with the copy's files named as
/// the release's (`RELEASE/FILE`): the copy is removed with the [`Opened`] release (at once when
/// opening it fails), so its path would name nothing by the time a status or log is read.
#[derive(Debug)]
pub struct InRelease<E> {
    pub error: E,
    release: String,
    copy: Option<PathBuf>,
}

impl<E> InRelease<E> {
    /// `error` about release `release`, whose files were read from `copy` (`None`: from where
    /// they stay, named as they are).
    pub fn new(error: E, release: impl Into<String>, copy: Option<&Path>) -> InRelease<E> {
        InRelease {
            error,
            release: release.into(),
            copy: copy.map(Path::to_path_buf),
        }
    }
}

impl<E: std::fmt::Display> std::fmt::Display for InRelease<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.copy {
            Some(copy) => f.write_str(&name_in_release(&self.error.to_string(), copy, &self.release)),
            None => self.error.fmt(f),
        }
    }
}

impl<E: std::error::Error> std::error::Error for InRelease<E> {
    /// The error's own source: its text is this one's already.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// `text` with each path in the temporary copy `copy` of release `release` named as the
/// release's file (`RELEASE/FILE`), and the copy itself as the release.
pub fn name_in_release(text: &str, copy: &Path, release: &str) -> String {
    let copy = copy.display().to_string();
    let copy = copy.trim_end_matches('/');
    if copy.is_empty() {
        return text.to_string();
    }
    text.replace(&format!("{copy}/"), &format!("{release}/"))
        .replace(copy, release)
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

impl Opened {
    /// `error` about this release, naming a scratch copy's files as the release's
    /// ([`InRelease`]); a release read where it is keeps its paths.
    pub fn in_release<E>(&self, error: E) -> InRelease<E> {
        let copy = self.scratch.as_ref().map(|_| self.release.dir());
        InRelease::new(error, self.release.tag().to_string(), copy)
    }
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
            in_scratch(None, |dir| Ok(build::build(path, &version, dir)?))
        }
        None => Err(LocalError::NotARelease(path.display().to_string())),
    }
}

/// Opens a complete release of the cache (its files copied out and re-verified); its errors
/// name the scratch copy's paths — what a caller that knows the release's name uses
/// [`open_cached_as`] for (the CLI and the operator do).
pub fn open_cached(cache: &Cache, manifest: &ReleaseManifest) -> Result<Opened, LocalError> {
    in_scratch(None, |dir| {
        cache.export(manifest, dir)?;
        Ok(Release::load(dir)?)
    })
}

/// [`open_cached`] of release `release` (its tag), whose errors name the files as the
/// release's (`RELEASE/FILE`, [`InRelease`]), not in the scratch copy they are removed with.
pub fn open_cached_as(
    cache: &Cache,
    manifest: &ReleaseManifest,
    release: &str,
) -> Result<Opened, LocalError> {
    in_scratch(Some(release), |dir| {
        cache.export(manifest, dir)?;
        Ok(Release::load(dir)?)
    })
}

/// Runs `f` on a new scratch directory's `release` subdirectory; an error of a `named` release
/// names its files as the release's.
fn in_scratch(
    named: Option<&str>,
    f: impl FnOnce(&Path) -> Result<Release, LocalError>,
) -> Result<Opened, LocalError> {
    let scratch = scratch_dir()?;
    let dir = scratch.join("release");
    match f(&dir) {
        Ok(release) => Ok(Opened {
            release,
            scratch: Some(scratch),
        }),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&scratch);
            Err(match named {
                Some(release) => LocalError::InRelease(Box::new(InRelease::new(e, release, Some(&dir)))),
                None => e,
            })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_in_a_copy_are_named_as_the_release() {
        let copy = Path::new("/tmp/capstan-1-2-3/release");
        #[rustfmt::skip]
        let table: &[(&str, &str)] = &[
            (
                "release r-v3: cluster-class chart /tmp/capstan-1-2-3/release/r-cluster-class-v3.tgz: not gzip",
                "release r-v3: cluster-class chart r-v3/r-cluster-class-v3.tgz: not gzip",
            ),
            ("release /tmp/capstan-1-2-3/release: no metadata.yaml", "release r-v3: no metadata.yaml"),
            // Another directory beginning alike is not the copy's.
            ("/tmp/capstan-1-2-30/release/x.tgz", "/tmp/capstan-1-2-30/release/x.tgz"),
            ("no path", "no path"),
        ];
        for (text, want) in table {
            assert_eq!(name_in_release(text, copy, "r-v3"), *want, "{text}");
        }
    }
}
