//! Cluster-stack releases in an OCI registry ([`layout`](super::layout)): list a repository's
//! tags, pull a release into the verified [`Cache`] (the same crash safety as a GitHub pull:
//! blobs verified and renamed into place, the release manifest last), and publish a release
//! directory (an existing tag is never overwritten).
//!
//! The cache records the OCI manifest digest of each pulled tag (a state file written after the
//! release), so checking that a cached tag is unchanged costs one `HEAD`.

use std::collections::BTreeMap;
use std::path::Path;

use bytes::Bytes;

use crate::cache::{Cache, CacheError, CachedFile, Expected, ReleaseManifest};
use crate::pull::{PullProgress, PullSummary};
use capstan_stack::ReleaseTag;
use capstan_stack::metadata::{METADATA_FILE, Metadata};
use capstan_stack::release::{HASHES_FILE, Release};

use super::client::{Client, OciError, check_host, check_repository};
use super::layout::{self, LayoutError};
use super::manifest::OCI_MANIFEST;

/// A repository in a registry: `oci://HOST/REPO`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OciRepo {
    /// `HOST` or `HOST:PORT`.
    pub host: String,
    /// The repository's path, e.g. `kaas/cluster-stacks`.
    pub repository: String,
}

impl std::fmt::Display for OciRepo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oci://{}/{}", self.host, self.repository)
    }
}

impl OciRepo {
    /// `oci://HOST/REPO` (the `oci://` prefix is optional).
    pub fn parse(text: &str) -> Result<OciRepo, OciError> {
        let rest = text.strip_prefix("oci://").unwrap_or(text);
        let (host, repository) = rest
            .split_once('/')
            .ok_or_else(|| OciError::BadRepository(format!("{text} (expected oci://HOST/REPO)")))?;
        check_host(host)?;
        check_repository(repository)?;
        Ok(OciRepo {
            host: host.to_string(),
            repository: repository.to_string(),
        })
    }

    /// `oci://HOST/REPO@TAG`.
    pub fn parse_with_tag(text: &str) -> Result<(OciRepo, String), OciError> {
        let (repo, tag) = text
            .rsplit_once('@')
            .ok_or_else(|| OciError::BadReference(format!("{text} (expected oci://HOST/REPO@TAG)")))?;
        super::client::check_reference(tag)?;
        Ok((OciRepo::parse(repo)?, tag.to_string()))
    }

    /// `HOST` as a cache key segment (`:` and brackets are not allowed there).
    fn host_key(&self) -> String {
        self.host.replace(':', "_").replace(['[', ']'], "")
    }

    /// The cache key of release `tag` of this repository.
    pub fn key(&self, tag: &str) -> String {
        format!("oci/{}/{}/{tag}", self.host_key(), self.repository)
    }

    fn digest_key(&self, tag: &str) -> String {
        format!("oci-digest/{}/{}/{tag}", self.host_key(), self.repository)
    }
}

/// Errors of pulling or publishing a release; each names the repository and tag.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error(transparent)]
    Oci(#[from] OciError),
    #[error("{repo}:{tag}: {source}")]
    Layout {
        repo: String,
        tag: String,
        #[source]
        source: LayoutError,
    },
    #[error("{repo}:{tag}: {source}")]
    Cache {
        repo: String,
        tag: String,
        #[source]
        source: Box<CacheError>,
    },
    #[error("{repo}: {tag:?} is not a cluster-stack release tag (PROVIDER-NAME-MAJOR-MINOR-VERSION)")]
    NotAReleaseTag { repo: String, tag: String },
    #[error("{repo} has no release {tag:?}; it has: {available}")]
    UnknownTag {
        repo: String,
        tag: String,
        available: String,
    },
    #[error("{repo}:{tag}: hashes.json: {message}")]
    Hashes {
        repo: String,
        tag: String,
        message: String,
    },
    #[error("{repo}:{tag} exists already; a published release is never overwritten")]
    Exists { repo: String, tag: String },
    #[error("{dir}: {message}")]
    Directory { dir: String, message: String },
    #[error("{repo}:{tag}: the lock wait failed: {message}")]
    Join {
        repo: String,
        tag: String,
        message: String,
    },
}

/// The complete release `tag` of `repo` in `cache`, if it is there (no network). Every file is
/// re-hashed, as for GitHub releases: a damaged one is removed and the release reads as absent,
/// so a pull downloads it again. Temp files of killed pulls are removed on the way.
pub fn cached(cache: &Cache, repo: &OciRepo, tag: &str) -> Result<Option<ReleaseManifest>, ReleaseError> {
    crate::pull::clean_stale_temps(cache);
    cache
        .release_verified(&repo.key(tag))
        .map_err(|source| ReleaseError::Cache {
            repo: repo.to_string(),
            tag: tag.to_string(),
            source: Box::new(source),
        })
}

/// The OCI manifest digest the cached release of `tag` was pulled at.
pub fn cached_digest(cache: &Cache, repo: &OciRepo, tag: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct State {
        digest: String,
    }
    let bytes = cache.read_state(&repo.digest_key(tag)).ok()??;
    serde_json::from_slice::<State>(&bytes).ok().map(|s| s.digest)
}

/// Every tag of the repository (all pages), unordered as the registry lists them.
pub async fn tags(client: &Client, repo: &OciRepo) -> Result<Vec<String>, ReleaseError> {
    Ok(client.tags(&repo.repository).await?)
}

/// The error for a tag the repository does not have, listing the release tags it has.
async fn unknown_tag(client: &Client, repo: &OciRepo, tag: &str) -> ReleaseError {
    let available = match client.tags(&repo.repository).await {
        Ok(tags) => {
            let mut releases: Vec<String> = tags
                .into_iter()
                .filter(|t| ReleaseTag::parse(t).is_ok())
                .collect();
            releases.sort();
            let more = releases.len().saturating_sub(20);
            releases.truncate(20);
            match (releases.is_empty(), more) {
                (true, _) => "no cluster-stack releases".to_string(),
                (false, 0) => releases.join(", "),
                (false, more) => format!("{} and {more} more", releases.join(", ")),
            }
        }
        Err(e) => format!("(its tags could not be listed: {e})"),
    };
    ReleaseError::UnknownTag {
        repo: repo.to_string(),
        tag: tag.to_string(),
        available,
    }
}

/// Pulls release `tag` of `repo` into `cache`. A release complete in the cache is returned
/// without a request, or, with `revalidate`, after one `HEAD` shows the tag still names the
/// manifest it was pulled at. Otherwise, under the release's lock: the manifest is read as a
/// release (refusals in [`layout::read_manifest`]), every missing blob streamed into the
/// cache and verified, `hashes.json` checked against a hash version's tag, the release
/// committed, and the manifest digest recorded.
pub async fn pull(
    client: &Client,
    cache: &Cache,
    repo: &OciRepo,
    tag: &str,
    revalidate: bool,
    mut progress: impl FnMut(PullProgress),
) -> Result<PullSummary, ReleaseError> {
    let (repo_text, tag_text) = (repo.to_string(), tag.to_string());
    if ReleaseTag::parse(tag).is_err() {
        return Err(ReleaseError::NotAReleaseTag {
            repo: repo_text,
            tag: tag_text,
        });
    }
    let cache_err = |source| ReleaseError::Cache {
        repo: repo.to_string(),
        tag: tag.to_string(),
        source: Box::new(source),
    };
    // Complete in the cache and (when revalidated) the tag's digest unchanged.
    let unchanged = |manifest: ReleaseManifest| PullSummary {
        manifest,
        downloaded_bytes: 0,
        downloaded_files: 0,
        was_complete: true,
    };
    let key = repo.key(tag);
    let mut current_digest = None;
    if let Some(manifest) = cache.release_verified(&key).map_err(cache_err)? {
        if !revalidate {
            return Ok(unchanged(manifest));
        }
        match client.head_manifest(&repo.repository, tag).await? {
            None => return Err(unknown_tag(client, repo, tag).await),
            Some(head) => {
                if head.digest.is_some() && head.digest == cached_digest(cache, repo, tag) {
                    return Ok(unchanged(manifest));
                }
                current_digest = head.digest;
            }
        }
    }
    // Serialise fetches of this release across threads and processes.
    let lock_cache = cache.clone();
    let lock_key = key.clone();
    let _lock = tokio::task::spawn_blocking(move || lock_cache.lock_release(&lock_key))
        .await
        .map_err(|e| ReleaseError::Join {
            repo: repo.to_string(),
            tag: tag.to_string(),
            message: e.to_string(),
        })?
        .map_err(cache_err)?;
    if let Some(manifest) = cache.release_verified(&key).map_err(cache_err)?
        && (!revalidate || (current_digest.is_some() && current_digest == cached_digest(cache, repo, tag)))
    {
        return Ok(unchanged(manifest));
    }
    let oci_manifest = match client.manifest(&repo.repository, tag).await {
        Ok(m) => m,
        Err(OciError::NotFound { .. }) => return Err(unknown_tag(client, repo, tag).await),
        Err(e) => return Err(e.into()),
    };
    let release =
        layout::read_manifest(&oci_manifest.bytes, client.config().max_blob_size).map_err(|source| {
            ReleaseError::Layout {
                repo: repo.to_string(),
                tag: tag.to_string(),
                source,
            }
        })?;
    // Blobs already in the cache (re-hashed: a damaged one is removed and downloaded again).
    let mut present = Vec::with_capacity(release.files.len());
    let mut missing = (0u64, 0usize);
    for f in &release.files {
        let sha = f.descriptor.sha256().unwrap_or_default();
        let here = cache
            .has_verified_blob(sha, f.descriptor.size)
            .map_err(cache_err)?;
        if !here {
            missing = (missing.0 + f.descriptor.size, missing.1 + 1);
        }
        present.push(here);
    }
    progress(PullProgress::Start {
        bytes: missing.0,
        files: missing.1,
    });
    let mut files = BTreeMap::new();
    let (mut downloaded_bytes, mut downloaded_files) = (0u64, 0usize);
    for (f, here) in release.files.iter().zip(present) {
        let sha = f.descriptor.sha256().unwrap_or_default().to_string();
        let size = f.descriptor.size;
        if here {
            files.insert(f.name.clone(), CachedFile { sha256: sha, size });
            continue;
        }
        let expected = Expected {
            size: Some(size),
            sha256: Some(sha),
        };
        let mut writer = cache.blob_writer(&f.name, &expected).map_err(cache_err)?;
        let mut write_error = None;
        let read = client
            .blob(&repo.repository, &f.descriptor, &f.name, |chunk| {
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
        downloaded_bytes += read?;
        downloaded_files += 1;
        let stored = writer.finish().map_err(cache_err)?;
        files.insert(f.name.clone(), stored);
    }
    crate::pull::check_hashes(cache, &files, tag).map_err(|message| ReleaseError::Hashes {
        repo: repo.to_string(),
        tag: tag.to_string(),
        message,
    })?;
    let manifest = ReleaseManifest {
        key: key.clone(),
        origin: format!("{repo}:{tag}@{}", oci_manifest.digest),
        files,
    };
    cache.commit_release(&manifest).map_err(cache_err)?;
    // After the release: a crash in between costs one re-pull of a manifest, nothing else.
    let state = serde_json::json!({"digest": oci_manifest.digest}).to_string();
    cache
        .write_state(&repo.digest_key(tag), state.as_bytes())
        .map_err(cache_err)?;
    Ok(PullSummary {
        manifest,
        downloaded_bytes,
        downloaded_files,
        was_complete: false,
    })
}

/// How a release is published.
#[derive(Clone, Debug, Default)]
pub struct PushOptions {
    /// The tag; default the release's own tag (from its metadata and ClusterClass chart).
    pub tag: Option<String>,
    /// `org.opencontainers.image.created`; default now, `YYYY-MM-DDTHH:MM:SSZ` in UTC.
    pub created: Option<String>,
    /// The `hash` annotation (its first 7 characters are kept); default `clusterStack` of the
    /// release's `hashes.json`, else empty.
    pub hash: Option<String>,
}

/// What a push did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushSummary {
    pub tag: String,
    /// The manifest's digest.
    pub digest: String,
    pub files: usize,
    pub bytes: u64,
}

/// The current time as csctl's counterpart writes `created`.
pub fn now_created() -> String {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    capstan_go::time::GoTime {
        unix,
        nanos: 0,
        zone: capstan_go::time::Zone::utc(),
    }
    .format("2006-01-02T15:04:05Z")
}

/// Publishes the release directory `dir` as `repo:TAG` in csctl's layout: every regular file
/// (symlinks and subdirectories are not part of a release) as a layer in name order, the empty
/// config, the manifest last. Refused when the tag exists (checked first; the registry API has
/// no conditional PUT, so two pushers racing for one tag are not told apart).
pub async fn push(
    client: &Client,
    repo: &OciRepo,
    dir: &Path,
    opts: &PushOptions,
) -> Result<PushSummary, ReleaseError> {
    let dir_err = |message: String| ReleaseError::Directory {
        dir: dir.display().to_string(),
        message,
    };
    let tag = match &opts.tag {
        Some(t) => t.clone(),
        None => Release::load(dir)
            .map_err(|e| dir_err(e.to_string()))?
            .tag()
            .tag(),
    };
    if ReleaseTag::parse(&tag).is_err() {
        return Err(ReleaseError::NotAReleaseTag {
            repo: repo.to_string(),
            tag,
        });
    }
    let metadata = Metadata::load(&dir.join(METADATA_FILE)).map_err(|e| dir_err(e.to_string()))?;
    let hash = match &opts.hash {
        Some(h) => h.clone(),
        None => stack_hash(dir).map_err(dir_err)?,
    };
    if client.head_manifest(&repo.repository, &tag).await?.is_some() {
        return Err(ReleaseError::Exists {
            repo: repo.to_string(),
            tag,
        });
    }
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| dir_err(e.to_string()))? {
        let entry = entry.map_err(|e| dir_err(e.to_string()))?;
        let kind = entry.file_type().map_err(|e| dir_err(e.to_string()))?;
        if kind.is_file() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    let mut files = Vec::new();
    let mut bytes = 0u64;
    for name in &names {
        layout::check_title(name).map_err(|p| dir_err(format!("file {name}: {p}")))?;
        let data = std::fs::read(dir.join(name)).map_err(|e| dir_err(format!("{name}: {e}")))?;
        let size = data.len() as u64;
        bytes += size;
        let digest = client.push_blob(&repo.repository, Bytes::from(data)).await?;
        let sha = digest.trim_start_matches("sha256:").to_string();
        files.push((name.clone(), sha, size));
    }
    client
        .push_blob(&repo.repository, Bytes::from_static(b"{}"))
        .await?;
    let created = opts.created.clone().unwrap_or_else(now_created);
    let body = layout::release_manifest(&files, &metadata.kubernetes, &hash, &created);
    let digest = client
        .put_manifest(&repo.repository, &tag, OCI_MANIFEST, Bytes::from(body))
        .await?;
    Ok(PushSummary {
        tag,
        digest,
        files: files.len(),
        bytes,
    })
}

/// csctl's stable mode against a repository's tags: the stack's newest stable release there
/// (if any) and the version a new one gets, the next major (`v1` for the first).
pub fn next_stable(
    tags: &[String],
    stack: &capstan_stack::StackName,
) -> (Option<ReleaseTag>, capstan_stack::Version) {
    let latest = tags
        .iter()
        .filter_map(|t| ReleaseTag::parse(t).ok())
        .filter(|t| t.stack() == stack && t.version().is_stable())
        .max_by_key(|t| t.version().major());
    let next = latest.as_ref().map_or(1, |t| t.version().major() + 1);
    (latest, capstan_stack::Version::stable(next))
}

/// The `hash` annotation of a published release's manifest.
pub async fn published_hash(
    client: &Client,
    repo: &OciRepo,
    tag: &str,
) -> Result<Option<String>, ReleaseError> {
    let m = client.manifest(&repo.repository, tag).await?;
    let layout = layout::read_manifest(&m.bytes, u64::MAX).map_err(|source| ReleaseError::Layout {
        repo: repo.to_string(),
        tag: tag.to_string(),
        source,
    })?;
    Ok(layout.hash)
}

/// `clusterStack` of the release's `hashes.json`, else empty.
fn stack_hash(dir: &Path) -> Result<String, String> {
    let path = dir.join(HASHES_FILE);
    let Ok(text) = std::fs::read(&path) else {
        return Ok(String::new());
    };
    let json: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| format!("{HASHES_FILE}: not JSON: {e}"))?;
    Ok(json
        .get("clusterStack")
        .and_then(|v| v.as_str())
        .unwrap_or("")
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        let r = OciRepo::parse("oci://registry.scs.community/kaas/cluster-stacks").unwrap();
        assert_eq!(r.host, "registry.scs.community");
        assert_eq!(r.repository, "kaas/cluster-stacks");
        assert_eq!(r.to_string(), "oci://registry.scs.community/kaas/cluster-stacks");
        let (r, tag) = OciRepo::parse_with_tag("oci://127.0.0.1:5000/kaas/cs@docker-ferrol-1-27-v1").unwrap();
        assert_eq!(
            (r.host.as_str(), tag.as_str()),
            ("127.0.0.1:5000", "docker-ferrol-1-27-v1")
        );
        assert_eq!(
            r.key("docker-ferrol-1-27-v1"),
            "oci/127.0.0.1_5000/kaas/cs/docker-ferrol-1-27-v1"
        );
        for bad in [
            "oci://host",
            "oci://ho st/x",
            "oci://host/Upper",
            "oci://host/a/../b",
        ] {
            assert!(OciRepo::parse(bad).is_err(), "{bad}");
        }
        assert!(OciRepo::parse_with_tag("oci://host/x@../y").is_err());
        assert!(OciRepo::parse_with_tag("oci://host/x").is_err());
    }

    #[test]
    fn stable_mode_takes_the_next_major() {
        let stack = capstan_stack::StackName::parse("docker-ferrol-1-27").unwrap();
        let tags = |list: &[&str]| list.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let table: &[(&[&str], Option<&str>, &str)] = &[
            (&[], None, "v1"),
            (&["latest", "docker-ferrol-1-27-v0-sha-abcdefg"], None, "v1"),
            (
                &[
                    "docker-ferrol-1-27-v1",
                    "docker-ferrol-1-27-v3",
                    "docker-ferrol-1-27-v2",
                ],
                Some("docker-ferrol-1-27-v3"),
                "v4",
            ),
            (
                &["docker-ferrol-1-27-v10", "docker-ferrol-1-27-v9"],
                Some("docker-ferrol-1-27-v10"),
                "v11",
            ),
            (
                &[
                    "docker-ferrol-1-28-v5",
                    "docker-scs-1-27-v7",
                    "docker-ferrol-1-27-v1-alpha.0",
                ],
                None,
                "v1",
            ),
        ];
        for (list, latest, next) in table {
            let (l, n) = next_stable(&tags(list), &stack);
            assert_eq!(l.map(|t| t.tag()).as_deref(), *latest, "{list:?}");
            assert_eq!(n.to_string(), *next, "{list:?}");
        }
    }

    #[test]
    fn created_is_utc_seconds() {
        let c = now_created();
        assert_eq!(c.len(), 20, "{c}");
        assert!(c.ends_with('Z') && c.as_bytes()[10] == b'T', "{c}");
    }
}
