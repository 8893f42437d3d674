//! Pull a GitHub release into the [`Cache`]: under the release's lock, skip it when already
//! complete, else download every asset, verify size and GitHub's sha256 digest, store the
//! blobs, and write the manifest last.

use std::collections::BTreeMap;

use capstan_stack::ReleaseTag;
use capstan_stack::release::HASHES_FILE;

use super::cache::{Cache, CacheError, Expected, ReleaseManifest};
use super::github::{Client, GitHubError, Release};

#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error("release {release}: {source}")]
    Cache {
        release: String,
        #[source]
        source: CacheError,
    },
    #[error("repository {repo} has no release {tag:?}; it has: {available}")]
    UnknownTag {
        repo: String,
        tag: String,
        available: String,
    },
    #[error("release {release}: hashes.json: {message}")]
    Hashes { release: String, message: String },
    #[error("release {release}: the lock wait failed: {message}")]
    Join { release: String, message: String },
}

/// What a pull did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullSummary {
    pub manifest: ReleaseManifest,
    /// Bytes downloaded (0 when the release was already complete in the cache).
    pub downloaded_bytes: u64,
    /// Files downloaded (blobs already present are not downloaded again).
    pub downloaded_files: usize,
    /// Whether the release was complete in the cache already (nothing was fetched, not even
    /// a listing). False for a first pull, even of a release with no files.
    pub was_complete: bool,
}

/// What a pull reports while it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullProgress {
    /// The download starts: this many bytes in this many files are missing from the cache.
    Start { bytes: u64, files: usize },
    /// This many more bytes arrived.
    Bytes(u64),
}

/// The cache key of a GitHub release.
pub fn github_key(repo: &str, tag: &str) -> String {
    format!("github/{repo}/{tag}")
}

/// The complete release `tag` of `repo` in `cache`, if it is there (no network). Every file
/// is re-hashed: a damaged one is removed and the release reads as absent, so a pull
/// downloads it again. Temp files of killed pulls are removed on the way.
pub fn cached_github(cache: &Cache, repo: &str, tag: &str) -> Result<Option<ReleaseManifest>, PullError> {
    clean_stale_temps(cache);
    cache
        .release_verified(&github_key(repo, tag))
        .map_err(|source| PullError::Cache {
            release: format!("{repo} {tag}"),
            source,
        })
}

/// Removes the temp files of killed pulls ([`Cache::clean_stale_temps`]); a failure is only
/// logged (it costs disk space, not correctness).
pub fn clean_stale_temps(cache: &Cache) {
    match cache.clean_stale_temps() {
        Ok(removed) if !removed.is_empty() => tracing::info!(
            files = removed.len(),
            bytes = removed.iter().map(|r| r.bytes).sum::<u64>(),
            "removed temp files of interrupted pulls"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not remove temp files of interrupted pulls"),
    }
}

/// The release of `releases` tagged `tag`, or an error listing the tags there are.
pub fn find_release<'a>(releases: &'a [Release], repo: &str, tag: &str) -> Result<&'a Release, PullError> {
    releases.iter().find(|r| r.tag == tag).ok_or_else(|| {
        let mut tags: Vec<_> = releases.iter().map(|r| r.tag.as_str()).collect();
        let more = tags.len().saturating_sub(20);
        tags.truncate(20);
        PullError::UnknownTag {
            repo: repo.to_string(),
            tag: tag.to_string(),
            available: if tags.is_empty() {
                "no releases".into()
            } else if more > 0 {
                format!("{} and {more} more", tags.join(", "))
            } else {
                tags.join(", ")
            },
        }
    })
}

/// Pull `tag` of `repo` into `cache`: nothing is fetched when the release is complete in the
/// cache; otherwise the repository's releases are listed and [`pull_release`] runs.
pub async fn pull_github(
    client: &Client,
    cache: &Cache,
    repo: &str,
    tag: &str,
    progress: impl FnMut(PullProgress),
) -> Result<PullSummary, PullError> {
    if let Some(manifest) = cached_github(cache, repo, tag)? {
        return Ok(PullSummary {
            manifest,
            downloaded_bytes: 0,
            downloaded_files: 0,
            was_complete: true,
        });
    }
    let releases = client.releases(repo).await?;
    let release = find_release(&releases, repo, tag)?;
    pull_release(client, cache, repo, release, progress).await
}

/// Pull one listed `release` of `repo` into `cache`. `progress` hears the size of what is
/// missing, then the bytes as they arrive.
pub async fn pull_release(
    client: &Client,
    cache: &Cache,
    repo: &str,
    release: &Release,
    mut progress: impl FnMut(PullProgress),
) -> Result<PullSummary, PullError> {
    let tag = release.tag.as_str();
    let key = github_key(repo, tag);
    let cache_err = |source| PullError::Cache {
        release: format!("{repo} {tag}"),
        source,
    };
    // Serialise fetches of this release across threads and processes (blocking lock).
    let lock_cache = cache.clone();
    let lock_key = key.clone();
    let _lock = tokio::task::spawn_blocking(move || lock_cache.lock_release(&lock_key))
        .await
        .map_err(|e| PullError::Join {
            release: key.clone(),
            message: e.to_string(),
        })?
        .map_err(cache_err)?;
    if let Some(manifest) = cache.release_verified(&key).map_err(cache_err)? {
        return Ok(PullSummary {
            manifest,
            downloaded_bytes: 0,
            downloaded_files: 0,
            was_complete: true,
        });
    }
    // Blobs already in the cache (re-hashed: a damaged one is removed and downloaded again).
    let mut present = Vec::with_capacity(release.assets.len());
    let mut missing = (0u64, 0usize);
    for asset in &release.assets {
        let here = match &asset.sha256 {
            Some(sha) => cache.has_verified_blob(sha, asset.size).map_err(cache_err)?,
            None => false,
        };
        if !here {
            missing = (missing.0 + asset.size, missing.1 + 1);
        }
        present.push(here);
    }
    progress(PullProgress::Start {
        bytes: missing.0,
        files: missing.1,
    });
    let mut files = BTreeMap::new();
    let mut downloaded_bytes = 0;
    let mut downloaded_files = 0;
    for (asset, here) in release.assets.iter().zip(present) {
        super::cache::check_file_name(&asset.name).map_err(cache_err)?;
        if let Some(sha) = &asset.sha256
            && here
        {
            files.insert(
                asset.name.clone(),
                super::cache::CachedFile {
                    sha256: sha.clone(),
                    size: asset.size,
                },
            );
            continue;
        }
        // Streamed into a temp file in the cache, hashed on the way, renamed when verified.
        let expected = Expected {
            size: Some(asset.size),
            sha256: asset.sha256.clone(),
        };
        let mut writer = cache.blob_writer(&asset.name, &expected).map_err(cache_err)?;
        let mut write_error = None;
        let n = client
            .download(asset, |chunk| {
                writer.write(chunk).map_err(|e| {
                    let message = e.to_string();
                    write_error = Some(e);
                    std::io::Error::other(message)
                })?;
                progress(PullProgress::Bytes(chunk.len() as u64));
                Ok(())
            })
            .await;
        if let Some(e) = write_error {
            return Err(cache_err(e));
        }
        let n = n?;
        downloaded_bytes += n;
        downloaded_files += 1;
        let stored = writer.finish().map_err(cache_err)?;
        files.insert(asset.name.clone(), stored);
    }
    check_hashes(cache, &files, tag).map_err(|message| PullError::Hashes {
        release: format!("{repo} {tag}"),
        message,
    })?;
    let manifest = ReleaseManifest {
        key: key.clone(),
        origin: format!("github {repo} {tag}"),
        files,
    };
    cache.commit_release(&manifest).map_err(cache_err)?;
    Ok(PullSummary {
        manifest,
        downloaded_bytes,
        downloaded_files,
        was_complete: false,
    })
}

/// csctl's `hashes.json` (when the release has one) must agree with a hash version's tag:
/// `v0-sha.<hash>` is the start of `clusterStack`, the content hash of the source it was built
/// from. A mismatch means the assets are not the ones the tag names; nothing is committed.
pub(crate) fn check_hashes(
    cache: &Cache,
    files: &BTreeMap<String, super::cache::CachedFile>,
    tag: &str,
) -> Result<(), String> {
    let Some(f) = files.get(HASHES_FILE) else {
        return Ok(());
    };
    let path = cache.blob_path(&f.sha256).map_err(|e| e.to_string())?;
    let text = std::fs::read(&path).map_err(|e| format!("cannot read: {e}"))?;
    let json: serde_json::Value = serde_json::from_slice(&text).map_err(|e| format!("not JSON: {e}"))?;
    let Some(stack_hash) = json.get("clusterStack") else {
        return Ok(());
    };
    let stack_hash = stack_hash
        .as_str()
        .ok_or_else(|| "clusterStack is not a string".to_string())?;
    if let Ok(parsed) = ReleaseTag::parse(tag)
        && parsed.version().is_hash()
        && let Some(pre) = parsed.version().prerelease()
        && !stack_hash.starts_with(&pre.patch)
    {
        return Err(format!(
            "clusterStack {stack_hash:?} does not start with the tag's hash {:?}: the assets are not the release the tag names",
            pre.patch
        ));
    }
    Ok(())
}
