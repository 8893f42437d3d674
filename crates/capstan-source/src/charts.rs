//! Chart dependencies from Helm repositories, into the cache: `index.yaml` fetched with its
//! validators (ETag, Last-Modified) and kept, chart archives downloaded, checked against the
//! index's digest and kept content-addressed with the repository, name, version and digest
//! they were resolved to. The decisions (which version, is the lock in sync) are
//! `chart::deps`'; this module is the I/O around them. `oci://` repositories are read through
//! the OCI source's registry client ([`oci`]).
//!
//! A render asks [`ChartResolver::resolve`] (through `chart::deps::DependencyResolver`): a
//! dependency already in the cache costs no request; a range is decided against the cached
//! index (fetched once); `capstan dependency update` refreshes indexes (one 304 when unchanged).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reqwest::header::{AUTHORIZATION, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, LOCATION};
use reqwest::{StatusCode, Url};

use capstan_chart::deps::index::chart_url;
use capstan_chart::deps::lock::{self, Lock, LockedDependency, OUT_OF_SYNC};
use capstan_chart::deps::reference::apply_mirror;
use capstan_chart::deps::{
    DependencyResolver, RepoIndex, RepositoryRef, choose_version, exact_version, missing_dependencies,
    no_valid_version_message, parse_repository, version_satisfies,
};
use capstan_chart::load;
use capstan_chart::{Chart, Dependency};

use super::cache::{BlobCheck, Cache, CacheError, CachedFile, Expected, ReleaseManifest};
use super::net::{NetworkTimeouts, host_of, reqwest_timeout};

pub(crate) mod oci;
pub mod policy;
mod provenance;
pub mod verdicts;

pub use policy::RepositoryPolicy;
pub use provenance::ChartSourceError;
pub use verdicts::{Outcome, Signer, Verdict};

/// Largest `index.yaml` read (the big public indexes are tens of MiB).
const MAX_INDEX_SIZE: u64 = 128 * 1024 * 1024;
/// Largest chart archive downloaded (Helm's load limit on the total).
const MAX_CHART_SIZE: u64 = load::MAX_TOTAL_SIZE;
const MAX_REDIRECTS: usize = 5;

/// How a repository is authenticated.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    Basic { username: String, password: String },
    Bearer(String),
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
            Auth::Bearer(_) => f.write_str("Bearer(<redacted>)"),
        }
    }
}

/// Credentials for the repositories below one URL; sent only to that URL's origin (scheme,
/// host, port) and path, never on a redirect elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub url: String,
    pub auth: Auth,
}

impl Credential {
    /// `URL=basic:USER:PASSWORD` or `URL=bearer:TOKEN` (the form of
    /// `--repository-credential` and `CAPSTAN_REPOSITORY_CREDENTIALS`).
    pub fn parse(text: &str) -> Result<Credential, String> {
        let (url, secret) = text
            .split_once('=')
            .ok_or("a repository credential is URL=basic:USER:PASSWORD or URL=bearer:TOKEN")?;
        Url::parse(url).map_err(|e| format!("repository credential: {url:?} is not a URL: {e}"))?;
        let auth = if let Some(rest) = secret.strip_prefix("basic:") {
            let (username, password) = rest
                .split_once(':')
                .ok_or_else(|| format!("repository credential for {url}: basic:USER:PASSWORD"))?;
            Auth::Basic {
                username: username.into(),
                password: password.into(),
            }
        } else if let Some(token) = secret.strip_prefix("bearer:") {
            Auth::Bearer(token.into())
        } else {
            return Err(format!(
                "repository credential for {url}: basic:USER:PASSWORD or bearer:TOKEN"
            ));
        };
        Ok(Credential {
            url: url.into(),
            auth,
        })
    }

    fn applies_to(&self, url: &Url) -> bool {
        let Ok(base) = Url::parse(&self.url) else {
            return false;
        };
        let base_path = base.path().trim_end_matches('/');
        base.scheme() == url.scheme()
            && base.host_str() == url.host_str()
            && base.port_or_known_default() == url.port_or_known_default()
            && (url.path() == base_path
                || url.path().starts_with(&format!("{base_path}/"))
                || base_path.is_empty())
    }
}

/// What the resolver is told.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `(FROM, TO)`: a repository URL (or `@name`) and what to fetch instead.
    pub mirrors: Vec<(String, String)>,
    pub credentials: Vec<Credential>,
    /// Only the cache: no request at all.
    pub offline: bool,
    /// Fetch indexes again (conditionally) even when one is cached (`dependency update`).
    pub refresh: bool,
    /// Connect and response timeouts of every request (the release sources' type and flags).
    pub timeouts: NetworkTimeouts,
    /// `--keyring`: every chart from a Helm or OCI repository must carry a Helm provenance
    /// signed by one of these keys (`helm pull --verify`); `None`: nothing is checked.
    pub keyring: Option<crate::verify::provenance::Keyring>,
    /// `--verify-key`: every `oci://` chart must carry a cosign signature by one of these keys.
    pub cosign: crate::verify::Policy,
    /// `--dependency-policy`: per repository, what its charts must carry instead of
    /// `keyring` and `cosign` (the longest matching URL wins; see [`policy`]).
    pub repository_policies: Vec<RepositoryPolicy>,
    /// Rules that win over `repository_policies` wherever one of them covers the repository
    /// (the operator: a ClusterStack's `spec.dependencyPolicy`); the longest one wins.
    pub overriding_policies: Vec<RepositoryPolicy>,
}

/// A dependency that could not be resolved: the chart, the dependency, the repository (as
/// written and, when mirrored, where it was fetched) and what went wrong.
/// (`dependency` is empty for what concerns the whole chart, e.g. an out-of-sync lock.)
#[derive(Debug, thiserror::Error)]
#[error("chart {chart}: {}{message}", if dependency.is_empty() { String::new() } else { format!("dependency {dependency} from {repository}: ") })]
pub struct DependencyError {
    pub chart: String,
    pub dependency: String,
    pub repository: String,
    pub message: String,
}

/// Failures below one dependency (wrapped into [`DependencyError`]).
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("{0}")]
    Message(String),
    /// A connect or response timeout expired (a GET is tried again `retries` times).
    #[error("{0}")]
    TimedOut(String),
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// The cached archive failed its digest check (and was removed), and fetching it again
    /// failed too: both said, so a damaged cache is not mistaken for a network fault.
    #[error("{damaged}; fetching it again failed: {refetch}")]
    RefetchAfterDamage {
        damaged: DamagedCopy,
        refetch: Box<FetchError>,
    },
}

/// A cached chart archive whose content no longer matched its digest; removed from the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DamagedCopy {
    name: String,
    version: String,
    /// The digest the cache recorded for it.
    expected: String,
    /// What the file held (size, sha256).
    actual_size: u64,
    actual: String,
}

impl std::fmt::Display for DamagedCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the cached copy of {} {} failed its digest check (expected sha256:{}, the file holds {} bytes with sha256:{}) and was removed",
            self.name, self.version, self.expected, self.actual_size, self.actual
        )
    }
}

/// `result`, or when it failed after the cached copy was found damaged, both facts.
fn after_damage<T>(result: Result<T, FetchError>, damaged: Option<DamagedCopy>) -> Result<T, FetchError> {
    match (result, damaged) {
        (Err(refetch), Some(damaged)) => Err(FetchError::RefetchAfterDamage {
            damaged,
            refetch: Box::new(refetch),
        }),
        (result, _) => result,
    }
}

fn msg(s: impl Into<String>) -> FetchError {
    FetchError::Message(s.into())
}

/// The index state kept in the cache for one repository URL.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct IndexState {
    url: String,
    etag: Option<String>,
    last_modified: Option<String>,
    body: String,
}

/// Resolves chart dependencies through the cache. Cheap to share (`Sync`): the operator's
/// controllers use one.
#[derive(Debug, Clone)]
pub struct ChartResolver {
    cache: Cache,
    settings: Settings,
    http: reqwest::Client,
    /// Indexes this resolver already fetched (or re-validated): a refresh happens once per
    /// repository and resolver, however many charts ask.
    refreshed: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// What the signature checks found ([`ChartResolver::verdicts`]).
    verdicts: verdicts::Verdicts,
}

/// One dependency as it was resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub name: String,
    /// As Chart.yaml writes it (what Chart.lock records).
    pub repository: String,
    pub version: String,
    /// The archive's sha256 (hex), or empty for a `file://` directory.
    pub sha256: String,
    /// The archive's path in the cache, or the `file://` directory.
    pub path: PathBuf,
}

/// Where a dependency is fetched from, after mirrors.
enum Repo {
    Http(String),
    /// `oci://HOST/PATH` ([`oci`]).
    Oci(String),
    File(PathBuf),
}

impl ChartResolver {
    pub fn new(cache: Cache, settings: Settings) -> Result<ChartResolver, String> {
        let http = settings
            .timeouts
            .reqwest_builder()
            .user_agent(concat!("capstan/", env!("CARGO_PKG_VERSION")))
            // Redirects by hand: credentials never follow one to another origin.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(ChartResolver {
            cache,
            settings,
            http,
            refreshed: Default::default(),
            verdicts: Default::default(),
        })
    }

    /// Every signature check this resolver (and its clones) made, signed or refused, in order.
    pub fn verdicts(&self) -> Vec<Verdict> {
        self.verdicts.all()
    }

    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The chart with every dependency its `charts/` lacks loaded from the cache (fetched
    /// when missing there). Versions come from `Chart.lock` when it is in sync with
    /// Chart.yaml, else from the constraints (Helm's choice). Vendored charts stay as they are.
    pub fn resolve_chart(
        &self,
        mut chart: Chart,
        chart_dir: Option<&Path>,
    ) -> Result<Chart, DependencyError> {
        // A dependency without a repository can only be vendored: left missing, the render
        // refuses it with `helm template`'s message.
        let missing: Vec<Dependency> = missing_dependencies(&chart)
            .into_iter()
            .filter(|d| !d.repository.trim().is_empty())
            .cloned()
            .collect();
        if missing.is_empty() {
            return Ok(chart);
        }
        let lock = self.lock_in_sync(&chart);
        let resolved = self.resolve_all(&chart, &missing, lock.as_ref(), chart_dir)?;
        for (dep, r) in missing.iter().zip(&resolved) {
            let sub = self
                .load_resolved(r)
                .map_err(|message| self.error(&chart, dep, message))?;
            chart.dependencies.push(sub);
        }
        chart.dependencies.sort_by(|a, b| a.name().cmp(b.name()));
        chart.memo = Default::default();
        Ok(chart)
    }

    /// Each dependency `charts/` lacks, resolved (fetched into the cache when missing) as
    /// [`resolve_chart`](Self::resolve_chart) would load it: `releases mirror` copies these.
    pub fn resolve_dependencies(
        &self,
        chart: &Chart,
        chart_dir: Option<&Path>,
    ) -> Result<Vec<Resolved>, DependencyError> {
        let missing: Vec<Dependency> = missing_dependencies(chart)
            .into_iter()
            .filter(|d| !d.repository.trim().is_empty())
            .cloned()
            .collect();
        if missing.is_empty() {
            return Ok(Vec::new());
        }
        let lock = self.lock_in_sync(chart);
        self.resolve_all(chart, &missing, lock.as_ref(), chart_dir)
    }

    /// The chart's Chart.lock when it matches Chart.yaml.
    fn lock_in_sync(&self, chart: &Chart) -> Option<Lock> {
        let lock = Lock::parse(chart.lock.as_deref()?).ok()?;
        lock.in_sync(&chart.metadata.dependencies).then_some(lock)
    }

    /// Resolves `deps` of `chart` (every failure collected, so "no version matches" lists all
    /// of them like Helm's message).
    fn resolve_all(
        &self,
        chart: &Chart,
        deps: &[Dependency],
        lock: Option<&Lock>,
        chart_dir: Option<&Path>,
    ) -> Result<Vec<Resolved>, DependencyError> {
        let mut out = Vec::new();
        let mut no_match: Vec<(&Dependency, String, Vec<String>)> = Vec::new();
        for dep in deps {
            let wanted = lock
                .and_then(|l| l.version_of(&dep.name, &dep.repository))
                .unwrap_or(&dep.version)
                .to_string();
            match self.resolve_one(chart, dep, &wanted, chart_dir) {
                Ok(Ok(r)) => out.push(r),
                Ok(Err(available)) => no_match.push((dep, dep.repository.clone(), available)),
                Err(e) => return Err(e),
            }
        }
        if !no_match.is_empty() {
            let pairs: Vec<(&Dependency, &str)> = no_match.iter().map(|(d, r, _)| (*d, r.as_str())).collect();
            let available: Vec<String> = no_match
                .iter()
                .map(|(d, _, vs)| {
                    format!(
                        "{}: {}",
                        d.name,
                        if vs.is_empty() {
                            "none".into()
                        } else {
                            vs.join(", ")
                        }
                    )
                })
                .collect();
            let message = format!(
                "{} (versions available: {})",
                no_valid_version_message(&pairs),
                available.join("; ")
            );
            return Err(self.error(chart, no_match[0].0, message));
        }
        Ok(out)
    }

    /// One dependency: `Ok(Err(versions))` when nothing matches the constraint.
    fn resolve_one(
        &self,
        chart: &Chart,
        dep: &Dependency,
        wanted: &str,
        chart_dir: Option<&Path>,
    ) -> Result<Result<Resolved, Vec<String>>, DependencyError> {
        let err = |message: String| self.error(chart, dep, message);
        match self.repo(dep, chart_dir).map_err(err)? {
            Repo::File(dir) => {
                let sub = load::load(&dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
                let matches = version_satisfies(wanted, &sub.metadata.version);
                if !matches {
                    return Ok(Err(vec![sub.metadata.version.clone()]));
                }
                Ok(Ok(Resolved {
                    name: dep.name.clone(),
                    repository: dep.repository.clone(),
                    version: sub.metadata.version.clone(),
                    sha256: String::new(),
                    path: dir,
                }))
            }
            Repo::Http(url) => {
                let mut damaged = None;
                let result = self.resolve_http(dep, &url, wanted, &mut damaged);
                let resolved = after_damage(result, damaged).map_err(|e| err(e.to_string()))?;
                self.checked(chart, dep, resolved).map_err(|e| err(e.to_string()))
            }
            Repo::Oci(url) => {
                let mut damaged = None;
                let result = self.resolve_oci(dep, &url, wanted, &mut damaged);
                let resolved = after_damage(result, damaged).map_err(|e| err(e.to_string()))?;
                self.checked(chart, dep, resolved).map_err(|e| err(e.to_string()))
            }
        }
    }

    /// `resolved` once its signatures pass the settings' policy (see [`provenance`]).
    fn checked(
        &self,
        chart: &Chart,
        dep: &Dependency,
        resolved: Result<Resolved, Vec<String>>,
    ) -> Result<Result<Resolved, Vec<String>>, FetchError> {
        if let Ok(r) = &resolved {
            self.check_signatures(chart, dep, r)?;
        }
        Ok(resolved)
    }

    fn repo(&self, dep: &Dependency, chart_dir: Option<&Path>) -> Result<Repo, String> {
        let mirrored = apply_mirror(&dep.repository, &self.settings.mirrors);
        let reference = parse_repository(mirrored.as_deref().unwrap_or(&dep.repository))?;
        match reference {
            RepositoryRef::None => Err("no repository given, and charts/ does not hold it".into()),
            RepositoryRef::Http(url) => Ok(Repo::Http(url)),
            RepositoryRef::Oci(url) => Ok(Repo::Oci(url)),
            RepositoryRef::Named(_) => Err(format!(
                "no repository definition for {}. Please add the missing repos via 'helm repo add' (capstan: --repository-mirror {}=URL)",
                dep.repository, dep.repository
            )),
            RepositoryRef::File(path) => {
                let dir = chart_dir.ok_or(
                    "a file:// dependency needs the chart's directory (this chart was read from an archive)",
                )?;
                Ok(Repo::File(dir.join(path)))
            }
        }
    }

    fn error(&self, chart: &Chart, dep: &Dependency, message: String) -> DependencyError {
        let mirrored = apply_mirror(&dep.repository, &self.settings.mirrors);
        DependencyError {
            chart: chart.name().to_string(),
            dependency: dep.name.clone(),
            repository: match mirrored {
                Some(to) => format!("{} (mirror {to})", dep.repository),
                None => dep.repository.clone(),
            },
            message,
        }
    }

    /// A dependency from a Helm repository (`url`, after mirrors); a cached copy found
    /// damaged (and removed) on the way is recorded in `damaged`.
    fn resolve_http(
        &self,
        dep: &Dependency,
        url: &str,
        wanted: &str,
        damaged: &mut Option<DamagedCopy>,
    ) -> Result<Result<Resolved, Vec<String>>, FetchError> {
        let key_base = upstream_key_base(&dep.repository);
        // An exact version already in the cache costs nothing.
        if let Some(exact) = exact_version(wanted)
            && let Some(r) = self.cached_at(
                &chart_key(&key_base, &dep.name, &exact),
                dep,
                &exact,
                None,
                damaged,
            )?
        {
            return Ok(Ok(r));
        }
        if self.settings.offline
            && let Some(exact) = exact_version(wanted)
        {
            return Err(msg(format!(
                "offline: {} {exact} is not in the cache (run once online, or `capstan dependency update`)",
                dep.name
            )));
        }
        let index = self.index(url)?;
        let Some(versions) = index.versions(&dep.name) else {
            // Helm's words.
            return Err(msg(format!("{} chart not found in repo {}", dep.name, url)));
        };
        let Some(version) =
            choose_version(&dep.name, wanted, versions.iter().copied()).map_err(|e| msg(e.to_string()))?
        else {
            return Ok(Err(versions.iter().map(|v| v.to_string()).collect()));
        };
        let entry = index
            .entry(&dep.name, &version)
            .ok_or_else(|| msg(format!("{} {version}: not in the index", dep.name)))?;
        let digest = entry.digest.trim_start_matches("sha256:").to_ascii_lowercase();
        let expected = Expected {
            size: None,
            sha256: (digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit())).then_some(digest),
        };
        // Kept under the chart's own repository: a mirror changes where bytes come from, not
        // which chart it is (the index's digest decides that).
        let key = chart_key(&key_base, &dep.name, &version);
        let want = expected.sha256.as_deref();
        if let Some(r) = self.cached_at(&key, dep, &version, want, damaged)? {
            return Ok(Ok(r));
        }
        if self.settings.offline {
            return Err(msg(format!(
                "offline: {} {version} is not in the cache (run once online, or `capstan dependency update`)",
                dep.name
            )));
        }
        let archive_url = chart_url(url, &entry.urls[0]);
        let _lock = self.cache.lock_release(&key)?;
        // Another process may have fetched it while this one waited for the lock.
        if let Some(r) = self.cached_at(&key, dep, &version, want, damaged)? {
            return Ok(Ok(r));
        }
        let file_name = format!("{}-{version}.tgz", dep.name);
        let blob = self.download(&archive_url, &file_name, &expected)?;
        let manifest = ReleaseManifest {
            key: key.clone(),
            origin: serde_json::json!({
                "repository": dep.repository,
                "fetched_from": url,
                "name": dep.name,
                "version": version,
                "url": archive_url,
                "digest": format!("sha256:{}", blob.sha256),
            })
            .to_string(),
            files: BTreeMap::from([(file_name, blob.clone())]),
        };
        self.cache.commit_release(&manifest)?;
        Ok(Ok(Resolved {
            name: dep.name.clone(),
            repository: dep.repository.clone(),
            version,
            path: self.cache.blob_path(&blob.sha256)?,
            sha256: blob.sha256,
        }))
    }

    /// The chart recorded under the cache key `key`, when complete and its archive re-hashes
    /// to its digest, and (`want`) that digest is the one the index names. An archive that
    /// fails the check is removed and recorded in `damaged`, for the message should fetching
    /// it again fail.
    fn cached_at(
        &self,
        key: &str,
        dep: &Dependency,
        version: &str,
        want: Option<&str>,
        damaged: &mut Option<DamagedCopy>,
    ) -> Result<Option<Resolved>, FetchError> {
        let Some(manifest) = self.cache.manifest(key)? else {
            return Ok(None);
        };
        let Some(file) = manifest.files.values().next() else {
            return Ok(None);
        };
        if want.is_some_and(|want| want != file.sha256) {
            // Another archive under the same name and version: the index's is fetched.
            return Ok(None);
        }
        match self.cache.check_blob(&file.sha256, file.size)? {
            BlobCheck::Intact => Ok(Some(Resolved {
                name: dep.name.clone(),
                repository: dep.repository.clone(),
                version: version.to_string(),
                path: self.cache.blob_path(&file.sha256)?,
                sha256: file.sha256.clone(),
            })),
            BlobCheck::Missing => Ok(None),
            BlobCheck::Damaged { size, sha256 } => {
                let copy = DamagedCopy {
                    name: dep.name.clone(),
                    version: version.to_string(),
                    expected: file.sha256.clone(),
                    actual_size: size,
                    actual: sha256,
                };
                tracing::warn!(release = key, "{copy}; fetching it again");
                *damaged = Some(copy);
                Ok(None)
            }
        }
    }

    fn load_resolved(&self, r: &Resolved) -> Result<Chart, String> {
        if r.sha256.is_empty() {
            return load::load(&r.path).map_err(|e| format!("{}: {e}", r.path.display()));
        }
        let data = std::fs::read(&r.path).map_err(|e| format!("{}: {e}", r.path.display()))?;
        let actual = super::cache::hex(&sha2::Digest::finalize(sha2::Digest::chain_update(
            <sha2::Sha256 as sha2::Digest>::new(),
            &data,
        )));
        if actual != r.sha256 {
            return Err(format!(
                "cached {} {} does not match its digest (expected {}, got {actual}); remove it from the cache",
                r.name, r.version, r.sha256
            ));
        }
        load::load_archive(&data, &format!("{}-{}.tgz", r.name, r.version)).map_err(|e| e.to_string())
    }

    /// The repository's index: the cached one unless refreshing; else fetched (conditionally).
    fn index(&self, url: &str) -> Result<RepoIndex, FetchError> {
        let key = index_key(url);
        let state: Option<IndexState> = self
            .cache
            .read_state(&key)?
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        let fresh = self.refreshed.lock().map(|r| r.contains(url)).unwrap_or(false);
        if let Some(state) = &state
            && (!self.settings.refresh || self.settings.offline || fresh)
        {
            return RepoIndex::parse(&state.body).map_err(|e| msg(format!("cached index of {url}: {e}")));
        }
        if self.settings.offline {
            return Err(msg(format!("offline: the index of {url} is not in the cache")));
        }
        let index_url = format!("{}/index.yaml", url.trim_end_matches('/'));
        let mut headers = Vec::new();
        if let Some(s) = &state {
            if let Some(etag) = &s.etag {
                headers.push((IF_NONE_MATCH, etag.clone()));
            }
            if let Some(lm) = &s.last_modified {
                headers.push((IF_MODIFIED_SINCE, lm.clone()));
            }
        }
        let response = self.get(&index_url, &headers, MAX_INDEX_SIZE)?;
        if let Ok(mut r) = self.refreshed.lock() {
            r.insert(url.to_string());
        }
        if response.status == StatusCode::NOT_MODIFIED
            && let Some(s) = state
        {
            return RepoIndex::parse(&s.body).map_err(|e| msg(format!("cached index of {url}: {e}")));
        }
        if !response.status.is_success() {
            return Err(msg(format!("GET {index_url}: HTTP {}", response.status)));
        }
        let body = String::from_utf8(response.body)
            .map_err(|_| msg(format!("{index_url}: index.yaml is not UTF-8")))?;
        // Checked before it is kept: a malformed index never replaces a good one.
        let index = RepoIndex::parse(&body).map_err(|e| msg(format!("{index_url}: {e}")))?;
        let state = IndexState {
            url: url.to_string(),
            etag: response.etag,
            last_modified: response.last_modified,
            body,
        };
        let bytes = serde_json::to_vec(&state).map_err(|e| msg(e.to_string()))?;
        self.cache.write_state(&key, &bytes)?;
        Ok(index)
    }

    /// Downloads `url` into a blob, checked against `expected` (nothing is kept otherwise).
    fn download(&self, url: &str, name: &str, expected: &Expected) -> Result<CachedFile, FetchError> {
        let response = self.get(url, &[], MAX_CHART_SIZE)?;
        if !response.status.is_success() {
            return Err(msg(format!("GET {url}: HTTP {}", response.status)));
        }
        self.cache
            .put_blob(name, &response.body[..], expected)
            .map_err(|e| match e {
                CacheError::Checksum { expected, actual, .. } => msg(format!(
                    "{url}: the download does not match the index's digest (expected sha256:{expected}, got sha256:{actual}); nothing was kept"
                )),
                other => other.into(),
            })
    }

    /// One GET, redirects followed by hand (credentials only to their own origin), the body
    /// read whole up to `limit` bytes. Runs on its own thread and runtime, so callers may be
    /// synchronous or inside an async runtime.
    fn get(
        &self,
        url: &str,
        headers: &[(reqwest::header::HeaderName, String)],
        limit: u64,
    ) -> Result<Response, FetchError> {
        let http = self.http.clone();
        let credentials = self.settings.credentials.clone();
        let timeouts = self.settings.timeouts;
        let url = url.to_string();
        let headers = headers.to_vec();
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| msg(format!("async runtime: {e}")))?;
                    let mut tries = 0;
                    loop {
                        tries += 1;
                        match runtime.block_on(fetch(&http, &credentials, &timeouts, &url, &headers, limit)) {
                            Err(FetchError::TimedOut(_)) if tries <= timeouts.retries => continue,
                            Err(FetchError::TimedOut(m)) if tries > 1 => {
                                return Err(msg(format!("{m}, {tries} tries")));
                            }
                            other => return other,
                        }
                    }
                })
                .join()
                .unwrap_or_else(|_| Err(msg("the HTTP thread panicked")))
        })
    }

    /// `capstan dependency update`/`build`: resolves every dependency of the chart in `dir`
    /// into `charts/` (`<name>-<version>.tgz`, written atomically) and writes `Chart.lock`
    /// (unless its digest is unchanged, as Helm). `use_lock`: `build` — the lock's versions,
    /// refused when out of sync; without a lock, as `update`.
    pub fn update_dir(&self, dir: &Path, use_lock: bool) -> Result<Vec<Resolved>, DependencyError> {
        let chart_err = |message: String| DependencyError {
            chart: dir.display().to_string(),
            dependency: String::new(),
            repository: String::new(),
            message,
        };
        let chart = load::load(dir).map_err(|e| chart_err(e.to_string()))?;
        let deps = chart.metadata.dependencies.clone();
        let old_lock = chart.lock.as_deref().and_then(|t| Lock::parse(t).ok());
        let lock = match (&old_lock, use_lock) {
            (Some(l), true) if !l.in_sync(&deps) => return Err(chart_err(OUT_OF_SYNC.into())),
            (Some(l), true) => Some(l.clone()),
            _ => None,
        };
        let resolved = self.resolve_all(&chart, &deps, lock.as_ref(), Some(dir))?;
        let charts_dir = dir.join("charts");
        std::fs::create_dir_all(&charts_dir)
            .map_err(|e| chart_err(format!("{}: {e}", charts_dir.display())))?;
        let mut written = Vec::new();
        for r in &resolved {
            if r.sha256.is_empty() {
                // file:// dependencies: Helm packages them; capstan loads them from their directory
                // at render time instead (nothing to write).
                continue;
            }
            let name = format!("{}-{}.tgz", r.name, r.version);
            write_atomically(&r.path, &charts_dir.join(&name)).map_err(chart_err)?;
            written.push(name);
        }
        // Helm's "Deleting outdated charts": archives of charts no longer wanted.
        if let Ok(entries) = std::fs::read_dir(&charts_dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let dep_archive = deps.iter().any(|d| name.starts_with(&format!("{}-", d.name)));
                if name.ends_with(".tgz") && dep_archive && !written.contains(&name) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        let locked: Vec<LockedDependency> = resolved
            .iter()
            .map(|r| LockedDependency {
                name: r.name.clone(),
                repository: r.repository.clone(),
                version: r.version.clone(),
            })
            .collect();
        let generated = lock::rfc3339_nano(time::OffsetDateTime::now_utc());
        let new_lock = Lock::new(&deps, locked, generated);
        if old_lock.as_ref().is_none_or(|l| l.digest != new_lock.digest) {
            let path = dir.join("Chart.lock");
            let tmp = dir.join(".Chart.lock.capstan-tmp");
            std::fs::write(&tmp, new_lock.to_yaml())
                .and_then(|()| std::fs::rename(&tmp, &path))
                .map_err(|e| chart_err(format!("{}: {e}", path.display())))?;
        }
        Ok(resolved)
    }
}

impl DependencyResolver for ChartResolver {
    fn resolve(&self, chart: Chart, chart_dir: Option<&Path>) -> Result<Chart, String> {
        self.resolve_chart(chart, chart_dir).map_err(|e| e.to_string())
    }
}

fn write_atomically(from: &Path, to: &Path) -> Result<(), String> {
    let tmp = to.with_extension("tgz.capstan-tmp");
    std::fs::copy(from, &tmp)
        .and_then(|_| std::fs::File::open(&tmp)?.sync_all())
        .and_then(|()| std::fs::rename(&tmp, to))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: {e}", to.display())
        })
}

/// A cache key segment list for a URL: `[A-Za-z0-9._-]` only.
fn url_segments(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    rest.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let clean: String = s
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            if clean == "." || clean == ".." {
                format!("_{clean}")
            } else {
                clean
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The part of a chart's cache key that names its repository: the repository as Chart.yaml
/// writes it, before mirrors (`@name` and `alias:name` alike), so that every mirror of it
/// shares one cached copy of each chart.
fn upstream_key_base(repository: &str) -> String {
    match parse_repository(repository) {
        Ok(RepositoryRef::Oci(url)) => format!("oci/{}", url.trim_start_matches("oci://")),
        Ok(RepositoryRef::Named(name)) => format!("named/{name}"),
        _ => repository.to_string(),
    }
}

fn chart_key(url: &str, name: &str, version: &str) -> String {
    format!(
        "charts/{}/{}/{}",
        url_segments(url),
        url_segments(name),
        url_segments(version)
    )
}

fn index_key(url: &str) -> String {
    format!("chart-index/{}", url_segments(url))
}

struct Response {
    status: StatusCode,
    etag: Option<String>,
    last_modified: Option<String>,
    body: Vec<u8>,
}

async fn fetch(
    http: &reqwest::Client,
    credentials: &[Credential],
    timeouts: &NetworkTimeouts,
    url: &str,
    headers: &[(reqwest::header::HeaderName, String)],
    limit: u64,
) -> Result<Response, FetchError> {
    let mut current = Url::parse(url).map_err(|e| msg(format!("{url}: not a URL: {e}")))?;
    for _ in 0..=MAX_REDIRECTS {
        let mut req = http.get(current.clone());
        for (name, value) in headers {
            req = req.header(name, value);
        }
        if let Some(c) = credentials.iter().find(|c| c.applies_to(&current)) {
            req = match &c.auth {
                Auth::Basic { username, password } => req.basic_auth(username, Some(password)),
                Auth::Bearer(token) => req.header(AUTHORIZATION, format!("Bearer {token}")),
            };
        }
        let shown = redacted(&current);
        let failed = |e: reqwest::Error, what: &str| match reqwest_timeout(&e) {
            Some(kind) => FetchError::TimedOut(format!(
                "GET {shown}: {}",
                timeouts.describe(kind, &host_of(current.as_str()))
            )),
            None => msg(format!("GET {shown}: {what}: {}", error_chain(&e))),
        };
        let mut resp = req
            .send()
            .await
            .map_err(|e| failed(e, "repository unreachable"))?;
        let status = resp.status();
        if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
            let location = resp
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| msg(format!("GET {shown}: HTTP {status} without a Location")))?;
            current = current
                .join(location)
                .map_err(|e| msg(format!("GET {shown}: bad redirect {location:?}: {e}")))?;
            continue;
        }
        let header = |name| {
            resp.headers()
                .get(name)
                .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
                .map(str::to_string)
        };
        let etag = header(ETAG);
        let last_modified = header(LAST_MODIFIED);
        if let Some(len) = resp.content_length()
            && len > limit
        {
            return Err(msg(format!(
                "GET {shown}: {len} bytes is more than the limit of {limit}"
            )));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| failed(e, "reading the response"))?
        {
            if (body.len() + chunk.len()) as u64 > limit {
                return Err(msg(format!("GET {shown}: more than the limit of {limit} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        return Ok(Response {
            status,
            etag,
            last_modified,
            body,
        });
    }
    Err(msg(format!("GET {url}: more than {MAX_REDIRECTS} redirects")))
}

/// A URL without user information (never printed).
fn redacted(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_stay_with_their_origin() {
        let c = Credential::parse("https://charts.example/private=basic:u:p:w").unwrap();
        assert_eq!(
            c.auth,
            Auth::Basic {
                username: "u".into(),
                password: "p:w".into()
            }
        );
        let cases = [
            ("https://charts.example/private/index.yaml", true),
            ("https://charts.example/private", true),
            ("https://charts.example/privateer/index.yaml", false),
            ("http://charts.example/private/index.yaml", false),
            ("https://charts.example:8443/private/index.yaml", false),
            ("https://cdn.example/private/x.tgz", false),
        ];
        for (url, want) in cases {
            assert_eq!(c.applies_to(&Url::parse(url).unwrap()), want, "{url}");
        }
        assert!(!format!("{c:?}").contains("p:w"));
        let b = Credential::parse("https://r.example=bearer:tok").unwrap();
        assert!(!format!("{b:?}").contains("tok"));
        assert!(Credential::parse("https://r.example=token").is_err());
    }

    #[test]
    fn keys() {
        assert_eq!(
            chart_key("https://helm.cilium.io/", "cilium", "1.17.4"),
            "charts/helm.cilium.io/cilium/1.17.4"
        );
        assert_eq!(
            index_key("http://127.0.0.1:8080/a b/../x"),
            "chart-index/127.0.0.1_8080/a_b/_../x"
        );
    }
}
