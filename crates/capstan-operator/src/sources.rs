//! Where a ClusterStack's releases come from, as the controllers see it: list every release
//! tag of a source, and fetch one release into the verified cache.
//!
//! GitHub clients are kept per API URL and token, so each repository is re-polled with its
//! ETag (an unchanged repository costs one `304`). A git source yields the release of its
//! ref's current commit plus the releases it built before (kept in the cache). A local source
//! is a directory of release directories (or a release directory, or a stack source tree). An
//! OCI source lists its repository's tags (registry clients kept per host and credentials, so
//! tokens are reused) and pulls a release once into the cache.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::api::StackSource;
use capstan_source::cache::{Cache, ReleaseManifest};
use capstan_source::git::{self, GitSpec};
use capstan_source::github::{self, Token};
use capstan_source::oci::{self, OciRepo};
use capstan_source::verify::{Policy, Refusal, Verified};
use capstan_source::{local, pull};
use capstan_stack::name::ReleaseTag;

/// A source with its credentials read.
#[derive(Clone, Debug)]
pub enum Resolved {
    GitHub {
        api_url: String,
        /// `owner/repo`.
        repo: String,
        token: Option<String>,
    },
    Oci {
        repo: OciRepo,
        credentials: oci::Credentials,
        insecure: bool,
    },
    Git(GitSpec),
    Local(PathBuf),
}

impl Resolved {
    /// A source of a ClusterStack; `token` is the credential its Secret holds, if any (an OCI
    /// source takes it as a static registry token).
    pub fn of(
        source: &StackSource,
        default_api_url: &str,
        token: Option<String>,
    ) -> Result<Resolved, oci::OciError> {
        Ok(match source {
            StackSource::Github(gh) => Resolved::GitHub {
                api_url: gh.api_url.clone().unwrap_or_else(|| default_api_url.to_string()),
                repo: format!("{}/{}", gh.owner, gh.repo),
                token,
            },
            StackSource::Oci(o) => Resolved::Oci {
                repo: OciRepo::parse(&o.repository)?,
                credentials: token.map_or(oci::Credentials::Anonymous, oci::Credentials::Token),
                insecure: false,
            },
            StackSource::Git(g) => Resolved::Git(GitSpec {
                url: g.url.clone(),
                reference: g.ref_.clone().unwrap_or_else(|| "HEAD".into()),
                path: g.path.clone().unwrap_or_default().trim_matches('/').to_string(),
            }),
            StackSource::Local(l) => Resolved::Local(PathBuf::from(&l.path)),
        })
    }

    /// For messages: `github owner/repo`, `git URL#REF`, `local PATH`.
    /// The kind of source in one word (`github`, `oci`, `git`, `local`), a metrics label.
    pub fn kind(&self) -> &'static str {
        match self {
            Resolved::GitHub { .. } => "github",
            Resolved::Oci { .. } => "oci",
            Resolved::Git(_) => "git",
            Resolved::Local(_) => "local",
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Resolved::GitHub { repo, .. } => format!("github {repo}"),
            Resolved::Oci { repo, .. } => repo.to_string(),
            Resolved::Git(spec) => format!("git {spec}"),
            Resolved::Local(path) => format!("local {}", path.display()),
        }
    }
}

/// A release that is complete on disk: in the cache, or a local directory.
#[derive(Clone, Debug)]
pub enum Fetched {
    Cached(ReleaseManifest),
    Local(PathBuf),
}

impl Fetched {
    /// A digest of the release's content: changes when any file changes.
    pub fn digest(&self) -> Result<String, SourceError> {
        let mut hasher = Sha256::new();
        match self {
            Fetched::Cached(manifest) => {
                for (name, file) in &manifest.files {
                    hasher.update(name.as_bytes());
                    hasher.update([0]);
                    hasher.update(file.sha256.as_bytes());
                    hasher.update([0]);
                }
            }
            Fetched::Local(dir) => hash_dir(dir, dir, &mut hasher)?,
        }
        Ok(capstan_source::cache::hex(&hasher.finalize()))
    }

    /// Loads release `release` (its tag) for rendering (blocking: reads and verifies files);
    /// an error names a cached release's files as the release's, not as the scratch copy's.
    pub fn open(&self, cache: &Cache, release: &str) -> Result<local::Opened, SourceError> {
        match self {
            Fetched::Cached(manifest) => local::open_cached_as(cache, manifest, release),
            Fetched::Local(dir) => local::open(dir),
        }
        .map_err(SourceError::Open)
    }
}

fn hash_dir(root: &Path, dir: &Path, hasher: &mut Sha256) -> Result<(), SourceError> {
    let io = |source: std::io::Error| SourceError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let kind = entry.file_type().map_err(io)?;
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        if kind.is_dir() {
            hash_dir(root, &path, hasher)?;
        } else if kind.is_file() {
            hasher.update(rel.as_bytes());
            hasher.update([0]);
            hasher.update(Sha256::digest(std::fs::read(&path).map_err(io)?));
        }
    }
    Ok(())
}

/// Why a source could not be listed or a release fetched or opened.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("listing releases of {describe}: {cause}")]
    List {
        describe: String,
        #[source]
        cause: Box<SourceCause>,
    },
    #[error("fetching {tag} from {describe}: {cause}")]
    Fetch {
        tag: String,
        describe: String,
        #[source]
        cause: Box<SourceCause>,
    },
    /// A client of a registry or of GitHub could not be made.
    #[error(transparent)]
    Client(Box<SourceCause>),
    /// A fetched release could not be read.
    #[error(transparent)]
    Open(local::LocalError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What failed inside a list or a fetch.
#[derive(Debug, thiserror::Error)]
pub enum SourceCause {
    #[error(transparent)]
    GitHub(#[from] github::GitHubError),
    #[error(transparent)]
    Oci(#[from] oci::OciError),
    #[error(transparent)]
    OciRelease(#[from] oci::release::ReleaseError),
    #[error(transparent)]
    Pull(#[from] pull::PullError),
    #[error(transparent)]
    Cache(#[from] capstan_source::cache::CacheError),
    #[error(transparent)]
    Git(#[from] git::GitError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the ref {reference} no longer builds this release and the cache does not hold it")]
    RefMoved { reference: String },
    #[error("no release directory with tag {tag} in {path}")]
    NoLocalRelease { tag: String, path: PathBuf },
    #[error("{0}")]
    Task(#[source] tokio::task::JoinError),
    #[error(transparent)]
    Signature(Box<oci::signature::SignatureError>),
    #[error("the cache does not record the manifest digest of {repo}:{tag}")]
    NoDigest { repo: String, tag: String },
}

/// What a release's signatures say under a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verification {
    /// Signed by a trusted key; `fresh` when the signatures were read now (not the cache's
    /// recorded verification).
    Verified { verified: Verified, fresh: bool },
    /// The signatures were read and none passes.
    Refused(Refusal),
    /// The source carries no signatures to check (not an OCI registry).
    Unsupported,
}

/// A GitHub client per API URL and token.
type ClientKey = (String, Option<String>);
/// A registry client per host, credentials and insecure flag.
type OciKey = (String, oci::Credentials, bool);

/// Access to every source the operator follows.
pub struct Sources {
    cache: Cache,
    clients: Mutex<HashMap<ClientKey, Arc<github::Client>>>,
    observer: Option<github::Observer>,
    oci_clients: Mutex<HashMap<OciKey, Arc<oci::Client>>>,
    oci_observer: Option<oci::client::Observer>,
    /// The releases compiled from the cache, by digest (both release controllers compile).
    compiled: crate::compiled::CompiledReleases,
}

impl Sources {
    pub fn new(cache: Cache, observer: Option<github::Observer>) -> Sources {
        Sources {
            cache,
            clients: Mutex::new(HashMap::new()),
            observer,
            oci_clients: Mutex::new(HashMap::new()),
            oci_observer: None,
            compiled: Default::default(),
        }
    }

    /// Hears every registry response (e.g. to count an idle poll's requests).
    pub fn with_oci_observer(mut self, observer: oci::client::Observer) -> Sources {
        self.oci_observer = Some(observer);
        self
    }

    /// The registry client of `repo` with these credentials (kept, so tokens are reused).
    fn oci(
        &self,
        repo: &OciRepo,
        credentials: &oci::Credentials,
        insecure: bool,
    ) -> Result<Arc<oci::Client>, SourceError> {
        let key = (repo.host.clone(), credentials.clone(), insecure);
        let mut clients = self.oci_clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let config = oci::Config {
            credentials: credentials.clone(),
            insecure,
            observer: self.oci_observer.clone(),
            ..oci::Config::default()
        };
        let client = Arc::new(
            oci::Client::new(&repo.host, config).map_err(|e| SourceError::Client(Box::new(e.into())))?,
        );
        clients.insert(key, client.clone());
        Ok(client)
    }

    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The compiled releases kept in memory.
    pub fn compiled(&self) -> &crate::compiled::CompiledReleases {
        &self.compiled
    }

    fn github(&self, api_url: &str, token: &Option<String>) -> Result<Arc<github::Client>, SourceError> {
        let key = (api_url.to_string(), token.clone());
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let config = github::Config {
            base_url: api_url.to_string(),
            token: token.clone().map(Token::new),
            observer: self.observer.clone(),
            ..github::Config::default()
        };
        let client =
            Arc::new(github::Client::new(config).map_err(|e| SourceError::Client(Box::new(e.into())))?);
        clients.insert(key, client.clone());
        Ok(client)
    }

    /// Every release tag of `source` (all pages), unordered. Tags that are not release tags
    /// are skipped.
    pub async fn list(&self, source: &Resolved) -> Result<Vec<ReleaseTag>, SourceError> {
        let describe = source.describe();
        let fail = |cause: SourceCause| SourceError::List {
            describe: describe.clone(),
            cause: Box::new(cause),
        };
        let tags: Vec<String> = match source {
            Resolved::GitHub { api_url, repo, token } => {
                let client = self.github(api_url, token)?;
                let releases = client.releases(repo).await.map_err(|e| fail(e.into()))?;
                releases.into_iter().map(|r| r.tag).collect()
            }
            Resolved::Oci {
                repo,
                credentials,
                insecure,
            } => {
                let client = self.oci(repo, credentials, *insecure)?;
                oci::release::tags(&client, repo)
                    .await
                    .map_err(|e| fail(e.into()))?
            }
            Resolved::Git(spec) => {
                let cache = self.cache.clone();
                let spec = spec.clone();
                let built = tokio::task::spawn_blocking(move || {
                    let current = git::pull_git(&cache, &spec)?;
                    let prefix = format!("{}/", git::url_key(&spec.url));
                    let mut tags: Vec<String> = cache
                        .releases()?
                        .into_iter()
                        .filter_map(|key| key.strip_prefix(&prefix).map(str::to_string))
                        .collect();
                    tags.push(current.tag);
                    Ok::<_, SourceCause>(tags)
                })
                .await
                .map_err(|e| fail(SourceCause::Task(e)))?;
                built.map_err(fail)?
            }
            Resolved::Local(path) => local_tags(path).map_err(fail)?,
        };
        let mut out: Vec<ReleaseTag> = tags.iter().filter_map(|t| ReleaseTag::parse(t).ok()).collect();
        out.sort_by_key(ReleaseTag::tag);
        out.dedup();
        Ok(out)
    }

    /// Release `tag` of `source`, complete on disk (downloaded into the cache when missing;
    /// nothing is sent when it is complete there already).
    pub async fn fetch(&self, source: &Resolved, tag: &ReleaseTag) -> Result<Fetched, SourceError> {
        let describe = source.describe();
        let fail = |cause: SourceCause| SourceError::Fetch {
            tag: tag.tag(),
            describe: describe.clone(),
            cause: Box::new(cause),
        };
        match source {
            Resolved::GitHub { api_url, repo, token } => {
                if let Some(manifest) =
                    pull::cached_github(&self.cache, repo, &tag.tag()).map_err(|e| fail(e.into()))?
                {
                    return Ok(Fetched::Cached(manifest));
                }
                let client = self.github(api_url, token)?;
                let summary = pull::pull_github(&client, &self.cache, repo, &tag.tag(), |_| {})
                    .await
                    .map_err(|e| fail(e.into()))?;
                Ok(Fetched::Cached(summary.manifest))
            }
            Resolved::Oci {
                repo,
                credentials,
                insecure,
            } => {
                let client = self.oci(repo, credentials, *insecure)?;
                // A release complete in the cache is used without a request.
                let summary = oci::release::pull(&client, &self.cache, repo, &tag.tag(), false, |_| {})
                    .await
                    .map_err(|e| fail(e.into()))?;
                Ok(Fetched::Cached(summary.manifest))
            }
            Resolved::Git(spec) => {
                let key = format!("{}/{}", git::url_key(&spec.url), tag.tag());
                match self.cache.release(&key).map_err(|e| fail(e.into()))? {
                    Some(manifest) => Ok(Fetched::Cached(manifest)),
                    None => Err(fail(SourceCause::RefMoved {
                        reference: spec.reference.clone(),
                    })),
                }
            }
            Resolved::Local(path) => {
                let dir = local_release_dir(path, tag).map_err(fail)?;
                Ok(Fetched::Local(dir))
            }
        }
    }
}

impl Sources {
    /// Whether release `tag` of `source`, fetched before, passes `policy`: the cache's
    /// recorded verification when it still holds (no request), else its cosign signatures
    /// read from the registry and a pass recorded.
    pub async fn verify(
        &self,
        source: &Resolved,
        tag: &ReleaseTag,
        policy: &Policy,
    ) -> Result<Verification, SourceError> {
        let Resolved::Oci {
            repo,
            credentials,
            insecure,
        } = source
        else {
            return Ok(Verification::Unsupported);
        };
        let tag_text = tag.tag();
        let fail = |cause: SourceCause| SourceError::Fetch {
            tag: tag_text.clone(),
            describe: source.describe(),
            cause: Box::new(cause),
        };
        let digest = oci::release::cached_digest(&self.cache, repo, &tag_text).ok_or_else(|| {
            fail(SourceCause::NoDigest {
                repo: repo.to_string(),
                tag: tag_text.clone(),
            })
        })?;
        if let Some(verified) =
            oci::signature::cached_verification(&self.cache, repo, &tag_text, &digest, policy)
        {
            return Ok(Verification::Verified {
                verified,
                fresh: false,
            });
        }
        let client = self.oci(repo, credentials, *insecure)?;
        match oci::signature::verify(&client, &self.cache, repo, &tag_text, &digest, policy).await {
            Ok(verified) => Ok(Verification::Verified {
                verified,
                fresh: true,
            }),
            Err(oci::signature::SignatureError::Refused { refusal, .. }) => {
                Ok(Verification::Refused(refusal))
            }
            Err(e) => Err(fail(SourceCause::Signature(Box::new(e)))),
        }
    }
}

/// The release tags of a local source: its own (a release dir or source tree named after its
/// tag is not required: the release's metadata says) or those of its subdirectories.
fn local_tags(path: &Path) -> Result<Vec<String>, SourceCause> {
    let mut tags = Vec::new();
    for dir in local_candidates(path)? {
        if let Some(tag) = local_tag(&dir) {
            tags.push(tag);
        }
    }
    Ok(tags)
}

fn local_candidates(path: &Path) -> Result<Vec<PathBuf>, SourceCause> {
    if local::kind(path).is_some() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path).map_err(|source| SourceCause::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| local::kind(p).is_some())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// The tag of a local release directory (from its metadata and the directory's assets).
fn local_tag(dir: &Path) -> Option<String> {
    match local::kind(dir)? {
        local::Kind::ReleaseDir => capstan_stack::release::Release::load(dir)
            .ok()
            .map(|r| r.tag().tag()),
        local::Kind::SourceTree => {
            let version = capstan_stack::build::hash_version(dir).ok()?;
            capstan_stack::build::release_tag(dir, &version)
                .ok()
                .map(|t| t.tag())
        }
    }
}

fn local_release_dir(path: &Path, tag: &ReleaseTag) -> Result<PathBuf, SourceCause> {
    let wanted = tag.tag();
    local_candidates(path)?
        .into_iter()
        .find(|dir| local_tag(dir).as_deref() == Some(wanted.as_str()))
        .ok_or_else(|| SourceCause::NoLocalRelease {
            tag: wanted.clone(),
            path: path.to_path_buf(),
        })
}
