//! Content-addressed, crash-safe cache of release files.
//!
//! Layout under the cache root:
//! - `blobs/sha256/<hex>`: file contents, named by their sha256. A blob is written to
//!   `tmp/<unique>` (inside the cache, so the rename stays on one file system), hashed while
//!   written, checked against the expected size and sha256, fsynced, renamed into place, and
//!   the directory fsynced. A blob therefore exists only complete and verified.
//! - `releases/<key>.json`: a release's manifest (file name → sha256 + size), written the same
//!   way, and only after every blob it names is in place: a release is complete exactly when its
//!   manifest exists. A crash before that leaves at most unreferenced blobs and temp files, which
//!   [`Cache::gc`] removes; the next fetch redoes the release.
//! - `locks/<key>.lock`: an exclusive file lock held while a release is fetched, so concurrent
//!   fetches of one release (threads or processes) run one after the other and the second finds
//!   the release complete.
//!
//! Nothing in the cache is followed through a symlink: entries that are symlinks are errors.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

/// Errors of the cache; each names the file or release concerned.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cache {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{name}: size mismatch: expected {expected} bytes, got {actual} (truncated or corrupt download)")]
    Size {
        name: String,
        expected: u64,
        actual: u64,
    },
    #[error("{name}: sha256 mismatch: expected {expected}, got {actual}")]
    Checksum {
        name: String,
        expected: String,
        actual: String,
    },
    #[error("{what} {value:?} is not a valid {kind}")]
    InvalidName {
        what: &'static str,
        value: String,
        kind: &'static str,
    },
    #[error("cache {path}: is a symlink; the cache never follows symlinks")]
    Symlink { path: PathBuf },
    #[error("release {release}: manifest {path}: {message}")]
    Manifest {
        release: String,
        path: PathBuf,
        message: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> CacheError + '_ {
    move |source| CacheError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What a file must be: its size and/or sha256 (lower-case hex), when known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    pub size: Option<u64>,
    pub sha256: Option<String>,
}

/// One file of a cached release.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CachedFile {
    pub sha256: String,
    pub size: u64,
}

/// A complete release in the cache: its key and files by name.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReleaseManifest {
    /// The key the release is stored under (e.g. `github.com/owner/repo/tag`, sanitised).
    pub key: String,
    /// Where it came from (free text for humans, e.g. the repository and tag).
    pub origin: String,
    pub files: BTreeMap<String, CachedFile>,
}

/// A handle to a cache directory.
#[derive(Clone, Debug)]
pub struct Cache {
    root: PathBuf,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Lower-case hex of a sha256 digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A release key: `[A-Za-z0-9._-]` segments joined by `/`, no `.`/`..` segments.
fn check_key(key: &str) -> Result<(), CacheError> {
    let ok = !key.is_empty()
        && key.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        });
    if ok {
        Ok(())
    } else {
        Err(CacheError::InvalidName {
            what: "release key",
            value: key.to_string(),
            kind: "cache key (segments of [A-Za-z0-9._-] joined by '/')",
        })
    }
}

/// A file name inside a release: one path segment, no separators, not `.`/`..`.
pub fn check_file_name(name: &str) -> Result<(), CacheError> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(CacheError::InvalidName {
            what: "file name",
            value: name.to_string(),
            kind: "release file name (one path segment)",
        });
    }
    Ok(())
}

fn check_sha(sha: &str) -> Result<(), CacheError> {
    if sha.len() == 64 && sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err(CacheError::InvalidName {
            what: "sha256",
            value: sha.to_string(),
            kind: "sha256 (64 lower-case hex digits)",
        })
    }
}

/// `lstat` that refuses symlinks; `None` when absent.
fn no_symlink(path: &Path) -> Result<Option<fs::Metadata>, CacheError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(CacheError::Symlink {
            path: path.to_path_buf(),
        }),
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// A lock file, made when missing and never truncated (its content does not matter; the
/// lock is on the open file).
fn open_lock_file(path: &Path) -> Result<File, CacheError> {
    no_symlink(path)?;
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io_err(path))
}

fn fsync_dir(dir: &Path) -> Result<(), CacheError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_err(dir))
}

fn create_dir_no_symlink(dir: &Path) -> Result<(), CacheError> {
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    match no_symlink(dir)? {
        Some(m) if m.is_dir() => Ok(()),
        _ => Err(CacheError::Io {
            path: dir.to_path_buf(),
            source: io::Error::other("not a directory"),
        }),
    }
}

/// A blob being written; see [`Cache::blob_writer`].
#[derive(Debug)]
pub struct BlobWriter<'a> {
    cache: &'a Cache,
    name: String,
    expected: Expected,
    tmp: PathBuf,
    file: Option<File>,
    hasher: Sha256,
    size: u64,
}

impl BlobWriter<'_> {
    /// Append `data`; more than the expected size is an error at once.
    pub fn write(&mut self, data: &[u8]) -> Result<(), CacheError> {
        self.size += data.len() as u64;
        if let Some(max) = self.expected.size
            && self.size > max
        {
            return Err(CacheError::Size {
                name: self.name.clone(),
                expected: max,
                actual: self.size,
            });
        }
        self.hasher.update(data);
        let file = self.file.as_mut().ok_or_else(|| CacheError::Io {
            path: self.tmp.clone(),
            source: io::Error::other("blob writer already finished"),
        })?;
        file.write_all(data).map_err(io_err(&self.tmp))
    }

    /// Verify size and sha256, fsync, rename into `blobs/sha256/<hex>`.
    pub fn finish(mut self) -> Result<CachedFile, CacheError> {
        let file = self.file.take().ok_or_else(|| CacheError::Io {
            path: self.tmp.clone(),
            source: io::Error::other("blob writer already finished"),
        })?;
        let hasher = std::mem::take(&mut self.hasher);
        let result = self
            .cache
            .finish_blob(&self.name, &self.tmp, file, hasher, self.size, &self.expected);
        if result.is_err() {
            let _ = fs::remove_file(&self.tmp);
        }
        // Renamed away or removed: nothing left for drop.
        self.tmp = PathBuf::new();
        result
    }
}

impl Drop for BlobWriter<'_> {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            self.file = None;
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// An exclusive lock on one release key (and the cache's write lock, shared); released on
/// drop.
#[derive(Debug)]
pub struct ReleaseLock {
    _file: File,
    _writing: File,
}

impl Cache {
    /// Open (and create) a cache at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Cache, CacheError> {
        let root = root.into();
        for sub in ["", "blobs/sha256", "releases", "tmp", "locks", "state"] {
            create_dir_no_symlink(&root.join(sub))?;
        }
        Ok(Cache { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of the blob with this sha256 (whether or not it exists).
    pub fn blob_path(&self, sha256: &str) -> Result<PathBuf, CacheError> {
        check_sha(sha256)?;
        Ok(self.root.join("blobs/sha256").join(sha256))
    }

    /// Whether a blob of this sha256 and size is present.
    pub fn has_blob(&self, sha256: &str, size: u64) -> Result<bool, CacheError> {
        let path = self.blob_path(sha256)?;
        Ok(no_symlink(&path)?.is_some_and(|m| m.is_file() && m.len() == size))
    }

    fn manifest_path(&self, key: &str) -> Result<PathBuf, CacheError> {
        check_key(key)?;
        Ok(self.root.join("releases").join(format!("{key}.json")))
    }

    /// Take the exclusive lock of `key` (blocks while another thread or process holds it),
    /// and the cache's write lock shared (blocks while a [`Cache::gc`] runs).
    pub fn lock_release(&self, key: &str) -> Result<ReleaseLock, CacheError> {
        check_key(key)?;
        let writing = self.write_lock(false)?;
        let path = self
            .root
            .join("locks")
            .join(format!("{}.lock", key.replace('/', "%")));
        let file = open_lock_file(&path)?;
        file.lock().map_err(io_err(&path))?;
        Ok(ReleaseLock {
            _file: file,
            _writing: writing,
        })
    }

    fn temp_file(&self) -> Result<(PathBuf, File), CacheError> {
        let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = self
            .root
            .join("tmp")
            .join(format!("{}-{n}.part", std::process::id()));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io_err(&path))?;
        Ok((path, file))
    }

    /// Write `content` as a blob, verifying it against `expected` (`name` is for errors).
    /// Returns the blob's sha256 and size. Nothing is left behind when verification fails.
    pub fn put_blob(
        &self,
        name: &str,
        mut content: impl Read,
        expected: &Expected,
    ) -> Result<CachedFile, CacheError> {
        let mut writer = self.blob_writer(name, expected)?;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match content.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(CacheError::Io {
                        path: PathBuf::from(name),
                        source: e,
                    });
                }
            };
            writer.write(&buf[..n])?;
        }
        writer.finish()
    }

    /// A blob written piece by piece (e.g. as a download arrives) to a temp file in the cache,
    /// hashed on the way; [`BlobWriter::finish`] verifies and renames it into place. Dropped
    /// unfinished (an error), it removes its temp file; a killed process leaves it in `tmp/`
    /// for [`Cache::gc`].
    pub fn blob_writer(&self, name: &str, expected: &Expected) -> Result<BlobWriter<'_>, CacheError> {
        if let Some(sha) = &expected.sha256 {
            check_sha(sha)?;
        }
        let (tmp, file) = self.temp_file()?;
        Ok(BlobWriter {
            cache: self,
            name: name.to_string(),
            expected: expected.clone(),
            tmp,
            file: Some(file),
            hasher: Sha256::new(),
            size: 0,
        })
    }

    fn finish_blob(
        &self,
        name: &str,
        tmp: &Path,
        file: File,
        hasher: Sha256,
        size: u64,
        expected: &Expected,
    ) -> Result<CachedFile, CacheError> {
        if let Some(want) = expected.size
            && want != size
        {
            return Err(CacheError::Size {
                name: name.to_string(),
                expected: want,
                actual: size,
            });
        }
        let sha = hex(&hasher.finalize());
        if let Some(want) = &expected.sha256
            && *want != sha
        {
            return Err(CacheError::Checksum {
                name: name.to_string(),
                expected: want.clone(),
                actual: sha,
            });
        }
        file.sync_all().map_err(io_err(tmp))?;
        drop(file);
        let dest = self.blob_path(&sha)?;
        no_symlink(&dest)?;
        fs::rename(tmp, &dest).map_err(io_err(&dest))?;
        fsync_dir(&self.root.join("blobs/sha256"))?;
        Ok(CachedFile { sha256: sha, size })
    }

    /// Record a release as complete. Every blob it names must be present; written last.
    pub fn commit_release(&self, manifest: &ReleaseManifest) -> Result<PathBuf, CacheError> {
        let path = self.manifest_path(&manifest.key)?;
        for (name, f) in &manifest.files {
            check_file_name(name)?;
            if !self.has_blob(&f.sha256, f.size)? {
                return Err(CacheError::Manifest {
                    release: manifest.key.clone(),
                    path,
                    message: format!("file {name} (sha256 {}) is not in the cache", f.sha256),
                });
            }
        }
        let parent = path.parent().unwrap_or(&self.root).to_path_buf();
        create_dir_no_symlink(&parent)?;
        let json = serde_json::to_vec_pretty(manifest).map_err(|e| CacheError::Manifest {
            release: manifest.key.clone(),
            path: path.clone(),
            message: e.to_string(),
        })?;
        let (tmp, mut file) = self.temp_file()?;
        let written = file
            .write_all(&json)
            .and_then(|()| file.sync_all())
            .map_err(io_err(&tmp));
        drop(file);
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        no_symlink(&path)?;
        fs::rename(&tmp, &path).map_err(io_err(&path))?;
        fsync_dir(&parent)?;
        Ok(path)
    }

    /// The manifest stored under `key` as it is, its blobs unchecked (`None`: absent or
    /// unreadable). For messages about a release the cache holds only in part.
    pub fn manifest(&self, key: &str) -> Result<Option<ReleaseManifest>, CacheError> {
        let path = self.manifest_path(key)?;
        if no_symlink(&path)?.is_none() {
            return Ok(None);
        }
        let bytes = fs::read(&path).map_err(io_err(&path))?;
        // A manifest is renamed into place complete; garbage means outside damage.
        Ok(serde_json::from_slice::<ReleaseManifest>(&bytes)
            .ok()
            .filter(|m| m.key == key))
    }

    /// The complete release stored under `key`, if any. A manifest whose blobs are missing or
    /// of the wrong size (damage from outside) reads as absent, so the release is redone.
    /// Sizes only: [`Cache::release_verified`] re-hashes.
    pub fn release(&self, key: &str) -> Result<Option<ReleaseManifest>, CacheError> {
        let Some(manifest) = self.manifest(key)? else {
            return Ok(None);
        };
        for (name, f) in &manifest.files {
            check_file_name(name)?;
            if !self.has_blob(&f.sha256, f.size)? {
                return Ok(None);
            }
        }
        Ok(Some(manifest))
    }

    /// Like [`Cache::release`], with every blob re-hashed: what a fetch relies on before it
    /// skips the network. A blob whose content no longer matches its name (a flipped bit, an
    /// edit from outside) is removed — it is wrong for every release that names it — and the
    /// release reads as absent, so the next fetch downloads just what is missing.
    pub fn release_verified(&self, key: &str) -> Result<Option<ReleaseManifest>, CacheError> {
        let Some(manifest) = self.release(key)? else {
            return Ok(None);
        };
        let mut whole = true;
        for (name, f) in &manifest.files {
            if !self.has_verified_blob(&f.sha256, f.size)? {
                tracing::warn!(release = key, file = %name, sha256 = %f.sha256, "a cached file is damaged; removed it so that it is fetched again");
                whole = false;
            }
        }
        Ok(whole.then_some(manifest))
    }

    /// Whether a blob of this sha256 and size is present and its content hashes to its name.
    /// A blob that does not is removed (it can never become right).
    pub fn has_verified_blob(&self, sha256: &str, size: u64) -> Result<bool, CacheError> {
        Ok(matches!(self.check_blob(sha256, size)?, BlobCheck::Intact))
    }

    /// The blob of this sha256 and size re-hashed: intact, missing, or damaged (present but of
    /// another size or content — then removed, since it can never become right).
    pub fn check_blob(&self, sha256: &str, size: u64) -> Result<BlobCheck, CacheError> {
        let path = self.blob_path(sha256)?;
        if !no_symlink(&path)?.is_some_and(|m| m.is_file()) {
            return Ok(BlobCheck::Missing);
        }
        let (actual_size, actual) = hash_file(&path)?;
        if actual_size == size && actual == sha256 {
            return Ok(BlobCheck::Intact);
        }
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&path)(e)),
        }
        Ok(BlobCheck::Damaged {
            size: actual_size,
            sha256: actual,
        })
    }

    /// Re-hash every file of a release; `Err` names the first that differs.
    pub fn verify_release(&self, manifest: &ReleaseManifest) -> Result<(), CacheError> {
        for (name, f) in &manifest.files {
            let path = self.blob_path(&f.sha256)?;
            no_symlink(&path)?;
            let (size, sha) = hash_file(&path)?;
            if size != f.size {
                return Err(CacheError::Size {
                    name: name.clone(),
                    expected: f.size,
                    actual: size,
                });
            }
            if sha != f.sha256 {
                return Err(CacheError::Checksum {
                    name: name.clone(),
                    expected: f.sha256.clone(),
                    actual: sha,
                });
            }
        }
        Ok(())
    }

    /// Copy the files of a complete release into `dir` (created; a release directory, e.g. for
    /// rendering). Each blob is re-hashed on the way, so damage in the cache is an error.
    pub fn export(&self, manifest: &ReleaseManifest, dir: &Path) -> Result<(), CacheError> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        for (name, f) in &manifest.files {
            check_file_name(name)?;
            let src = self.blob_path(&f.sha256)?;
            no_symlink(&src)?;
            let dest = dir.join(name);
            let mut from = File::open(&src).map_err(io_err(&src))?;
            let mut to = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&dest)
                .map_err(io_err(&dest))?;
            let mut hasher = Sha256::new();
            let mut buf = vec![0u8; 64 * 1024];
            let mut size = 0u64;
            loop {
                let n = from.read(&mut buf).map_err(io_err(&src))?;
                if n == 0 {
                    break;
                }
                size += n as u64;
                hasher.update(&buf[..n]);
                to.write_all(&buf[..n]).map_err(io_err(&dest))?;
            }
            let sha = hex(&hasher.finalize());
            if size != f.size || sha != f.sha256 {
                return Err(CacheError::Checksum {
                    name: format!("{} ({name})", manifest.key),
                    expected: f.sha256.clone(),
                    actual: sha,
                });
            }
        }
        Ok(())
    }

    /// Keys of the complete releases whose last segment is `tag` (any source).
    pub fn find_tag(&self, tag: &str) -> Result<Vec<String>, CacheError> {
        Ok(self
            .releases()?
            .into_iter()
            .filter(|k| k.rsplit('/').next() == Some(tag))
            .collect())
    }

    /// A small state file (e.g. a repository's last listing, for conditional re-polls) stored
    /// under `state/<key>.json`; `None` when absent. Not part of any release; GC leaves it.
    pub fn read_state(&self, key: &str) -> Result<Option<Vec<u8>>, CacheError> {
        check_key(key)?;
        let path = self.root.join("state").join(format!("{key}.json"));
        if no_symlink(&path)?.is_none() {
            return Ok(None);
        }
        fs::read(&path).map(Some).map_err(io_err(&path))
    }

    /// Replace a state file atomically (temp file in the cache, fsync, rename).
    pub fn write_state(&self, key: &str, bytes: &[u8]) -> Result<(), CacheError> {
        check_key(key)?;
        let path = self.root.join("state").join(format!("{key}.json"));
        let parent = path.parent().unwrap_or(&self.root).to_path_buf();
        create_dir_no_symlink(&parent)?;
        let (tmp, mut file) = self.temp_file()?;
        let written = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(io_err(&tmp));
        drop(file);
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        no_symlink(&path)?;
        fs::rename(&tmp, &path).map_err(io_err(&path))
    }

    /// Keys of every complete release.
    pub fn releases(&self) -> Result<Vec<String>, CacheError> {
        let mut out = Vec::new();
        let base = self.root.join("releases");
        walk_manifests(&base, &base, &mut out)?;
        out.sort();
        Ok(out)
    }

    /// The time the manifest of `key` was written (for "newest" among builds whose version
    /// does not order them).
    pub fn release_written(&self, key: &str) -> Result<Option<std::time::SystemTime>, CacheError> {
        let path = self.manifest_path(key)?;
        Ok(no_symlink(&path)?.and_then(|m| m.modified().ok()))
    }

    /// Remove temp files of writers that are gone: a pull killed mid-download leaves its
    /// `tmp/<pid>-<n>.part`. A file is stale when the process that named it no longer runs,
    /// or when nothing wrote to it for [`STALE_TEMP_AGE`] (its pid was reused); files of this
    /// process and of live writers are left alone. Returns what was removed.
    pub fn clean_stale_temps(&self) -> Result<Vec<Removed>, CacheError> {
        let tmp = self.root.join("tmp");
        let now = std::time::SystemTime::now();
        let mut removed = Vec::new();
        for entry in fs::read_dir(&tmp).map_err(io_err(&tmp))? {
            let entry = entry.map_err(io_err(&tmp))?;
            let path = entry.path();
            let Ok(meta) = entry.metadata() else {
                continue; // gone meanwhile
            };
            let age = meta
                .modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .unwrap_or_default();
            let name = entry.file_name().to_string_lossy().into_owned();
            if !temp_is_stale(&name, age, std::process::id(), &process_runs) {
                continue;
            }
            match fs::remove_file(&path) {
                Ok(()) => removed.push(Removed {
                    kind: RemovedKind::Temp,
                    name: format!("tmp/{name}"),
                    bytes: meta.len(),
                }),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(&path)(e)),
            }
        }
        Ok(removed)
    }

    /// Remove releases not in `keep`, blobs no remaining release references, and temp files
    /// of writers that are gone ([`Cache::clean_stale_temps`]). Waits until no fetch is in
    /// flight (every fetch holds the cache's write lock shared, see [`Cache::lock_release`])
    /// and keeps fetches out while it runs. Returns what it removed.
    pub fn gc(&self, keep: &BTreeSet<String>) -> Result<Vec<Removed>, CacheError> {
        let _exclusive = self.write_lock(true)?;
        let mut removed = Vec::new();
        let mut referenced = BTreeSet::new();
        for key in self.releases()? {
            let path = self.manifest_path(&key)?;
            if keep.contains(&key) {
                if let Some(m) = self.manifest(&key)? {
                    referenced.extend(m.files.values().map(|f| f.sha256.clone()));
                }
            } else {
                let bytes = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                fs::remove_file(&path).map_err(io_err(&path))?;
                removed.push(Removed {
                    kind: RemovedKind::Release,
                    name: key,
                    bytes,
                });
            }
        }
        let blobs = self.root.join("blobs/sha256");
        for entry in fs::read_dir(&blobs).map_err(io_err(&blobs))? {
            let entry = entry.map_err(io_err(&blobs))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !referenced.contains(&name) {
                let p = entry.path();
                let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
                fs::remove_file(&p).map_err(io_err(&p))?;
                removed.push(Removed {
                    kind: RemovedKind::Blob,
                    name,
                    bytes,
                });
            }
        }
        removed.extend(self.clean_stale_temps()?);
        Ok(removed)
    }

    /// The cache-wide write lock: shared by every fetch (through [`Cache::lock_release`]),
    /// exclusive for [`Cache::gc`], so a GC never removes the blobs of a release being fetched.
    fn write_lock(&self, exclusive: bool) -> Result<File, CacheError> {
        let path = self.root.join("locks").join("cache-write.lock");
        let file = open_lock_file(&path)?;
        if exclusive {
            file.lock().map_err(io_err(&path))?;
        } else {
            file.lock_shared().map_err(io_err(&path))?;
        }
        Ok(file)
    }
}

/// A temp file untouched this long is stale even when a process of its pid runs (the pid was
/// reused): a live writer writes to its file all the time.
pub const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Whether the temp file `name` (`<pid>-<n>.part`, `age` since its last write) belongs to no
/// live writer. `own_pid`'s files are never stale; `runs` says whether a pid is a process.
pub fn temp_is_stale(name: &str, age: std::time::Duration, own_pid: u32, runs: &dyn Fn(u32) -> bool) -> bool {
    let pid = name.split_once('-').and_then(|(pid, _)| pid.parse::<u32>().ok());
    match pid {
        Some(pid) if pid == own_pid => false,
        Some(pid) if !runs(pid) => true,
        _ => age >= STALE_TEMP_AGE,
    }
}

/// Whether a process of this pid runs (Linux `/proc`; elsewhere assumed running, so only
/// the age decides).
fn process_runs(pid: u32) -> bool {
    let proc_dir = Path::new("/proc");
    !proc_dir.join("self").exists() || proc_dir.join(pid.to_string()).exists()
}

/// What [`Cache::gc`] or [`Cache::clean_stale_temps`] removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removed {
    pub kind: RemovedKind,
    /// The release key, the blob's sha256, or the temp file's path under the cache.
    pub name: String,
    /// Bytes freed.
    pub bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RemovedKind {
    Release,
    Blob,
    Temp,
}

/// What [`Cache::check_blob`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobCheck {
    Intact,
    Missing,
    /// Present but wrong (removed): the size and sha256 it had.
    Damaged { size: u64, sha256: String },
}

/// Size and sha256 of a file (never through a symlink).
fn hash_file(path: &Path) -> Result<(u64, String), CacheError> {
    no_symlink(path)?;
    let mut file = File::open(path).map_err(io_err(path))?;
    let mut hasher = Sha256::new();
    let size = io::copy(&mut file, &mut hasher).map_err(io_err(path))?;
    Ok((size, hex(&hasher.finalize())))
}

fn walk_manifests(base: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), CacheError> {
    for entry in fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let path = entry.path();
        let ft = entry.file_type().map_err(io_err(&path))?;
        if ft.is_symlink() {
            return Err(CacheError::Symlink { path });
        }
        if ft.is_dir() {
            walk_manifests(base, &path, out)?;
        } else if let Some(rel) = path
            .strip_prefix(base)
            .ok()
            .and_then(|r| r.to_str())
            .and_then(|r| r.strip_suffix(".json"))
        {
            out.push(rel.to_string());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(b: &[u8]) -> String {
        hex(&Sha256::digest(b))
    }

    fn tmp_files(c: &Cache) -> usize {
        fs::read_dir(c.root().join("tmp")).unwrap().count()
    }

    #[test]
    fn verified_blob_then_manifest_makes_a_complete_release() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let exp = Expected {
            size: Some(5),
            sha256: Some(sha(b"hello")),
        };
        let f = c.put_blob("a.tgz", &b"hello"[..], &exp).unwrap();
        assert!(c.has_blob(&f.sha256, 5).unwrap());
        assert_eq!(c.release("gh/o/r/t1").unwrap(), None);
        let m = ReleaseManifest {
            key: "gh/o/r/t1".into(),
            origin: "o/r t1".into(),
            files: BTreeMap::from([("a.tgz".to_string(), f)]),
        };
        c.commit_release(&m).unwrap();
        assert_eq!(c.release("gh/o/r/t1").unwrap(), Some(m.clone()));
        c.verify_release(&m).unwrap();
        assert_eq!(c.releases().unwrap(), vec!["gh/o/r/t1".to_string()]);
        assert_eq!(tmp_files(&c), 0);
    }

    #[test]
    fn truncated_and_wrong_checksum_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let short = c
            .put_blob(
                "x.tgz",
                &b"hel"[..],
                &Expected {
                    size: Some(5),
                    sha256: None,
                },
            )
            .unwrap_err();
        assert!(
            short
                .to_string()
                .contains("x.tgz: size mismatch: expected 5 bytes, got 3"),
            "{short}"
        );
        let long = c
            .put_blob(
                "x.tgz",
                &b"hello world"[..],
                &Expected {
                    size: Some(5),
                    sha256: None,
                },
            )
            .unwrap_err();
        assert!(matches!(long, CacheError::Size { .. }));
        let bad = c
            .put_blob(
                "y.tgz",
                &b"hello"[..],
                &Expected {
                    size: Some(5),
                    sha256: Some(sha(b"other")),
                },
            )
            .unwrap_err();
        assert!(bad.to_string().starts_with("y.tgz: sha256 mismatch"), "{bad}");
        assert_eq!(tmp_files(&c), 0);
        assert_eq!(fs::read_dir(c.root().join("blobs/sha256")).unwrap().count(), 0);
    }

    #[test]
    fn blob_writer_streams_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let exp = Expected {
            size: Some(10),
            sha256: Some(sha(b"0123456789")),
        };
        let mut w = c.blob_writer("a.tgz", &exp).unwrap();
        w.write(b"01234").unwrap();
        assert_eq!(tmp_files(&c), 1);
        w.write(b"56789").unwrap();
        let f = w.finish().unwrap();
        assert!(c.has_blob(&f.sha256, 10).unwrap());
        // Abandoned half way (a failed download): the temp file goes with it.
        let mut w = c.blob_writer("b.tgz", &exp).unwrap();
        w.write(b"01").unwrap();
        drop(w);
        // More than announced fails at once.
        let mut w = c.blob_writer("c.tgz", &exp).unwrap();
        let e = w.write(b"0123456789!").unwrap_err();
        assert!(
            e.to_string()
                .contains("c.tgz: size mismatch: expected 10 bytes, got 11"),
            "{e}"
        );
        drop(w);
        assert_eq!(tmp_files(&c), 0);
        assert_eq!(fs::read_dir(c.root().join("blobs/sha256")).unwrap().count(), 1);
    }

    #[test]
    fn manifest_needs_its_blobs_and_damage_reads_as_absent() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let m = ReleaseManifest {
            key: "k".into(),
            origin: String::new(),
            files: BTreeMap::from([(
                "a".to_string(),
                CachedFile {
                    sha256: sha(b"a"),
                    size: 1,
                },
            )]),
        };
        let e = c.commit_release(&m).unwrap_err();
        assert!(e.to_string().contains("file a (sha256"), "{e}");
        c.put_blob("a", &b"a"[..], &Expected::default()).unwrap();
        c.commit_release(&m).unwrap();
        fs::remove_file(c.blob_path(&sha(b"a")).unwrap()).unwrap();
        assert_eq!(c.release("k").unwrap(), None);
        fs::write(c.root().join("releases/k.json"), b"{garbage").unwrap();
        assert_eq!(c.release("k").unwrap(), None);
    }

    #[test]
    fn bad_names_and_symlinks_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        for key in ["", "../x", "a//b", "a/./b", "a b"] {
            assert!(c.release(key).is_err(), "{key:?}");
        }
        for name in ["../a", "a/b", "..", ""] {
            assert!(check_file_name(name).is_err(), "{name:?}");
        }
        let outside = dir.path().join("outside.json");
        fs::write(&outside, b"{}").unwrap();
        std::os::unix::fs::symlink(&outside, c.root().join("releases/evil.json")).unwrap();
        assert!(matches!(c.release("evil"), Err(CacheError::Symlink { .. })));
    }

    #[test]
    fn gc_keeps_referenced_and_removes_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let a = c.put_blob("a", &b"a"[..], &Expected::default()).unwrap();
        let b = c.put_blob("b", &b"b"[..], &Expected::default()).unwrap();
        c.put_blob("orphan", &b"o"[..], &Expected::default()).unwrap();
        // A pid above Linux's pid_max: no process runs with it.
        fs::write(c.root().join("tmp/4999999-9.part"), b"crash").unwrap();
        for (key, f) in [("r/one", &a), ("r/two", &b)] {
            c.commit_release(&ReleaseManifest {
                key: key.into(),
                origin: String::new(),
                files: BTreeMap::from([("f".to_string(), f.clone())]),
            })
            .unwrap();
        }
        let removed = c.gc(&BTreeSet::from(["r/one".to_string()])).unwrap();
        let kinds: Vec<(RemovedKind, u64)> = removed.iter().map(|r| (r.kind, r.bytes)).collect();
        // r/two's manifest, blobs b and orphan, the temp file (with their sizes).
        assert_eq!(kinds.len(), 4, "{removed:?}");
        assert_eq!(removed[0].name, "r/two");
        assert_eq!(
            &kinds[1..],
            [
                (RemovedKind::Blob, 1),
                (RemovedKind::Blob, 1),
                (RemovedKind::Temp, 5)
            ]
        );
        assert!(c.release("r/one").unwrap().is_some());
        assert_eq!(c.releases().unwrap(), vec!["r/one".to_string()]);
    }

    #[test]
    fn stale_temp_files() {
        let min = std::time::Duration::from_secs(60);
        let hour = STALE_TEMP_AGE;
        let runs = |pid: u32| pid == 20 || pid == 30;
        let table = [
            // (name, age) → stale, with this process 10 and 20, 30 running
            (("10-1.part", hour), false), // this process's own
            (("20-1.part", min), false),  // a live writer
            (("20-1.part", hour), true),  // untouched for an hour: its pid was reused
            (("40-3.part", min), true),   // its process is gone (a killed pull)
            (("junk", min), false),
            (("junk", hour), true),
        ];
        for ((name, age), want) in table {
            assert_eq!(temp_is_stale(name, age, 10, &runs), want, "{name} {age:?}");
        }
    }

    #[test]
    fn a_flipped_byte_is_found_and_its_blob_removed() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let f = c.put_blob("a", &b"hello"[..], &Expected::default()).unwrap();
        let m = ReleaseManifest {
            key: "k".into(),
            origin: String::new(),
            files: BTreeMap::from([("a".to_string(), f.clone())]),
        };
        c.commit_release(&m).unwrap();
        assert_eq!(c.release_verified("k").unwrap(), Some(m.clone()));
        fs::write(c.blob_path(&f.sha256).unwrap(), b"hellp").unwrap();
        // The size-only check is fooled; the verified one is not, and removes the blob.
        assert_eq!(c.release("k").unwrap(), Some(m.clone()));
        assert_eq!(c.release_verified("k").unwrap(), None);
        assert!(!c.blob_path(&f.sha256).unwrap().exists());
        assert_eq!(c.manifest("k").unwrap(), Some(m));
    }

    #[test]
    fn release_lock_serialises_threads() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let counter = std::sync::Arc::new(std::sync::Mutex::new((0, 0)));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let c = c.clone();
                let counter = counter.clone();
                std::thread::spawn(move || {
                    let _l = c.lock_release("o/r/t").unwrap();
                    {
                        let mut g = counter.lock().unwrap();
                        g.0 += 1;
                        g.1 = g.1.max(g.0);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    counter.lock().unwrap().0 -= 1;
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(
            counter.lock().unwrap().1,
            1,
            "two holders of one release lock at once"
        );
    }
}
