//! Pull a GitHub release into the [`Cache`]: under the release's lock, skip it when already
//! complete, else download every asset, verify size and GitHub's sha256 digest, store the
//! blobs, and write the manifest last.

use std::collections::BTreeMap;

use super::cache::{Cache, CacheError, Expected, ReleaseManifest};
use super::github::{Client, GitHubError};

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
}

/// The cache key of a GitHub release.
pub fn github_key(repo: &str, tag: &str) -> String {
    format!("github/{repo}/{tag}")
}

/// Pull `tag` of `repo` into `cache`. `progress(bytes)` is called as bytes arrive.
pub async fn pull_github(
    client: &Client,
    cache: &Cache,
    repo: &str,
    tag: &str,
    mut progress: impl FnMut(u64),
) -> Result<PullSummary, PullError> {
    let key = github_key(repo, tag);
    let cache_err = |source| PullError::Cache {
        release: format!("{repo} {tag}"),
        source,
    };
    if let Some(manifest) = cache.release(&key).map_err(cache_err)? {
        return Ok(PullSummary {
            manifest,
            downloaded_bytes: 0,
            downloaded_files: 0,
        });
    }
    let releases = client.releases(repo).await?;
    let Some(release) = releases.iter().find(|r| r.tag == tag) else {
        let mut tags: Vec<_> = releases.iter().map(|r| r.tag.as_str()).collect();
        tags.truncate(20);
        return Err(PullError::UnknownTag {
            repo: repo.to_string(),
            tag: tag.to_string(),
            available: if tags.is_empty() {
                "no releases".into()
            } else {
                tags.join(", ")
            },
        });
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
    if let Some(manifest) = cache.release(&key).map_err(cache_err)? {
        return Ok(PullSummary {
            manifest,
            downloaded_bytes: 0,
            downloaded_files: 0,
        });
    }
    let mut files = BTreeMap::new();
    let mut downloaded_bytes = 0;
    let mut downloaded_files = 0;
    for asset in &release.assets {
        super::cache::check_file_name(&asset.name).map_err(cache_err)?;
        if let Some(sha) = &asset.sha256
            && cache.has_blob(sha, asset.size).map_err(cache_err)?
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
        let mut buf = Vec::with_capacity(usize::try_from(asset.size).unwrap_or(0).min(1 << 26));
        let limit = asset.size;
        let n = client
            .download(asset, |chunk| {
                if (buf.len() + chunk.len()) as u64 > limit {
                    return Err(std::io::Error::other(format!(
                        "more than the {limit} bytes GitHub announced"
                    )));
                }
                buf.extend_from_slice(chunk);
                progress(chunk.len() as u64);
                Ok(())
            })
            .await?;
        downloaded_bytes += n;
        downloaded_files += 1;
        let expected = Expected {
            size: Some(asset.size),
            sha256: asset.sha256.clone(),
        };
        let stored = cache
            .put_blob(&asset.name, &buf[..], &expected)
            .map_err(cache_err)?;
        files.insert(asset.name.clone(), stored);
    }
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
    })
}
