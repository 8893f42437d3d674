//! GitHub releases client: every page (`Link: rel="next"`), tag names only, conditional
//! requests (`If-None-Match`: an unchanged first page is one `304`, which costs no rate limit),
//! rate limits (`X-RateLimit-Remaining/Reset`, `Retry-After`), bounded jittered backoff on 5xx,
//! and asset downloads that follow GitHub's redirect to its object store themselves, sending the
//! token only to the API's own host.
//!
//! Idle polling: the stored ETag is the first page's. Releases list newest first, so a new
//! release changes the first page; an edit of an old release on a later page is seen on the
//! next full listing (`forget` the repository, or a new release).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, ETAG, HeaderMap, IF_NONE_MATCH, LINK, LOCATION};
use reqwest::{StatusCode, Url};

/// A GitHub token; never printed.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    pub fn new(secret: impl Into<String>) -> Token {
        Token(secret.into().trim().to_string())
    }
    /// `GITHUB_TOKEN`, when set and not empty.
    pub fn from_env() -> Option<Token> {
        std::env::var("GITHUB_TOKEN")
            .ok()
            .filter(|t| !t.trim().is_empty())
            .map(Token::new)
    }
    /// The first line of a file (e.g. a mounted Secret).
    pub fn from_file(path: &Path) -> Result<Token, GitHubError> {
        let text = std::fs::read_to_string(path).map_err(|e| GitHubError::TokenFile {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(Token::new(text.lines().next().unwrap_or("")))
    }
}

/// Errors of the GitHub client; each names the repository or URL.
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    #[error("token file {path}: {message}")]
    TokenFile { path: String, message: String },
    #[error("repository {0:?} is not of the form owner/name")]
    BadRepo(String),
    #[error("{url}: {message}")]
    Http { url: String, message: String },
    #[error("{url}: HTTP {status}: {message}")]
    Status {
        url: String,
        status: u16,
        message: String,
    },
    #[error("repository {repo} not found (or not visible with the given token)")]
    NotFound { repo: String },
    #[error(
        "{url}: GitHub API rate limit exhausted; it resets in {reset_in_secs} s (more than the {max_wait_secs} s this client waits); set GITHUB_TOKEN for a higher limit"
    )]
    RateLimited {
        url: String,
        reset_in_secs: u64,
        max_wait_secs: u64,
    },
    #[error("{url}: invalid response: {message}")]
    Invalid { url: String, message: String },
}

/// One release asset.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Asset {
    pub id: u64,
    pub name: String,
    pub size: u64,
    /// Lower-case hex sha256 when GitHub reports a `sha256:` digest.
    pub sha256: Option<String>,
    /// The API URL of the asset (download with `Accept: application/octet-stream`).
    pub url: String,
}

/// One published release (drafts are never returned).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Release {
    /// The tag name: the release's identity (release *names* are free text and ignored).
    pub tag: String,
    pub prerelease: bool,
    pub assets: Vec<Asset>,
}

/// What the client saw of one API response (for metrics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseSeen {
    pub status: u16,
    /// `x-ratelimit-remaining`, when sent.
    pub rate_limit_remaining: Option<u64>,
}

/// Called for every response of the API (not of the asset host), e.g. to count requests.
pub type Observer = std::sync::Arc<dyn Fn(&ResponseSeen) + Send + Sync>;

/// Client settings.
#[derive(Clone)]
pub struct Config {
    /// API base, e.g. `https://api.github.com`.
    pub base_url: String,
    pub token: Option<Token>,
    /// Whether GitHub prereleases are listed.
    pub include_prereleases: bool,
    /// Retries of one request after 5xx / network errors / secondary limits.
    pub max_retries: u32,
    /// First backoff; doubles per retry, with jitter, capped at `max_wait`.
    pub backoff: Duration,
    /// Longest single wait (Retry-After, rate-limit reset, backoff).
    pub max_wait: Duration,
    pub per_page: u32,
    /// Hears every API response.
    pub observer: Option<Observer>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("base_url", &self.base_url)
            .field("token", &self.token)
            .field("include_prereleases", &self.include_prereleases)
            .field("max_retries", &self.max_retries)
            .field("per_page", &self.per_page)
            .field("observer", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            base_url: "https://api.github.com".into(),
            token: None,
            include_prereleases: false,
            max_retries: 4,
            backoff: Duration::from_millis(500),
            max_wait: Duration::from_secs(60),
            per_page: 100,
            observer: None,
        }
    }
}

/// What a listing of a repository left: the first page's ETag and every release (drafts
/// dropped, prereleases kept). A client that is given one ([`Client::restore`]) re-polls with
/// `If-None-Match`, e.g. a CLI run that stored the previous run's listing.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Listing {
    pub etag: String,
    pub releases: Vec<Release>,
}

/// The client. Cheap to share (`&self` methods); keeps ETags per repository.
#[derive(Debug)]
pub struct Client {
    http: reqwest::Client,
    config: Config,
    base: Url,
    cache: Mutex<HashMap<String, Listing>>,
}

#[derive(serde::Deserialize)]
struct ApiAsset {
    id: u64,
    name: String,
    size: u64,
    url: String,
    #[serde(default)]
    digest: Option<String>,
}

#[derive(serde::Deserialize)]
struct ApiRelease {
    tag_name: String,
    #[serde(default)]
    draft: bool,
    #[serde(default)]
    prerelease: bool,
    #[serde(default)]
    assets: Vec<ApiAsset>,
}

fn check_repo(repo: &str) -> Result<(), GitHubError> {
    let ok = repo.split_once('/').is_some_and(|(o, n)| {
        let seg = |s: &str| {
            !s.is_empty()
                && s != "."
                && s != ".."
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        };
        seg(o) && seg(n)
    });
    if ok {
        Ok(())
    } else {
        Err(GitHubError::BadRepo(repo.to_string()))
    }
}

/// The `rel="next"` target of a `Link` header.
pub fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        let is_next = params
            .split(';')
            .any(|p| p.trim() == "rel=\"next\"" || p.trim() == "rel=next");
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| url.to_string())
    })
}

fn header_u64(h: &HeaderMap, name: &str) -> Option<u64> {
    h.get(name)?.to_str().ok()?.trim().parse().ok()
}

fn now_epoch() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A jitter factor in [0.5, 1.0) from the clock (no randomness crate needed for this).
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    0.5 + f64::from(nanos % 1000) / 2000.0
}

impl Client {
    pub fn new(config: Config) -> Result<Client, GitHubError> {
        let base = Url::parse(config.base_url.trim_end_matches('/')).map_err(|e| GitHubError::Invalid {
            url: config.base_url.clone(),
            message: format!("not a URL: {e}"),
        })?;
        let http = reqwest::Client::builder()
            .user_agent(concat!("capstan/", env!("CARGO_PKG_VERSION")))
            // Redirects are followed by hand so the token never leaves the API host.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(15))
            .build()
            .map_err(|e| GitHubError::Http {
                url: config.base_url.clone(),
                message: e.to_string(),
            })?;
        Ok(Client {
            http,
            config,
            base,
            cache: Mutex::new(HashMap::new()),
        })
    }

    fn same_origin(&self, url: &Url) -> bool {
        url.scheme() == self.base.scheme()
            && url.host_str() == self.base.host_str()
            && url.port_or_known_default() == self.base.port_or_known_default()
    }

    /// GET with retries; the token goes only to the API's origin.
    async fn get(
        &self,
        url: &str,
        accept: &str,
        if_none_match: Option<&str>,
    ) -> Result<reqwest::Response, GitHubError> {
        let parsed = Url::parse(url).map_err(|e| GitHubError::Invalid {
            url: url.to_string(),
            message: e.to_string(),
        })?;
        let mut attempt = 0u32;
        loop {
            let mut req = self.http.get(parsed.clone()).header(ACCEPT, accept);
            if let Some(tag) = if_none_match {
                req = req.header(IF_NONE_MATCH, tag);
            }
            if let Some(token) = &self.config.token
                && self.same_origin(&parsed)
            {
                req = req.header(AUTHORIZATION, format!("Bearer {}", token.0));
            }
            let wait = match req.send().await {
                Ok(resp) => {
                    let status = resp.status();
                    let h = resp.headers();
                    if let Some(observe) = &self.config.observer
                        && self.same_origin(&parsed)
                    {
                        observe(&ResponseSeen {
                            status: status.as_u16(),
                            rate_limit_remaining: header_u64(h, "x-ratelimit-remaining"),
                        });
                    }
                    let retry_after = header_u64(h, "retry-after").map(Duration::from_secs);
                    let exhausted = header_u64(h, "x-ratelimit-remaining") == Some(0);
                    if (status == StatusCode::FORBIDDEN || status == StatusCode::TOO_MANY_REQUESTS)
                        && (exhausted || retry_after.is_some())
                    {
                        let wait = retry_after.unwrap_or_else(|| {
                            let reset = header_u64(h, "x-ratelimit-reset").unwrap_or(0);
                            Duration::from_secs(reset.saturating_sub(now_epoch()) + 1)
                        });
                        if wait > self.config.max_wait || attempt >= self.config.max_retries {
                            return Err(GitHubError::RateLimited {
                                url: url.to_string(),
                                reset_in_secs: wait.as_secs(),
                                max_wait_secs: self.config.max_wait.as_secs(),
                            });
                        }
                        wait
                    } else if status.is_server_error() && attempt < self.config.max_retries {
                        retry_after.unwrap_or_else(|| self.backoff(attempt))
                    } else {
                        return Ok(resp);
                    }
                }
                Err(e) if attempt < self.config.max_retries && !e.is_builder() => self.backoff(attempt),
                Err(e) => {
                    return Err(GitHubError::Http {
                        url: url.to_string(),
                        message: e.to_string(),
                    });
                }
            };
            attempt += 1;
            tracing::warn!(
                url,
                attempt,
                wait_ms = wait.as_millis() as u64,
                "retrying GitHub request"
            );
            tokio::time::sleep(wait.min(self.config.max_wait)).await;
        }
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let base = self.config.backoff.saturating_mul(1u32 << attempt.min(16));
        base.min(self.config.max_wait).mul_f64(jitter())
    }

    async fn fail(url: &str, resp: reqwest::Response) -> GitHubError {
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap_or_default();
        let message = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_string))
            .unwrap_or_else(|| body.chars().take(200).collect());
        GitHubError::Status {
            url: url.to_string(),
            status,
            message,
        }
    }

    /// All published releases of `owner/name`, newest first as GitHub lists them. Drafts are
    /// skipped; prereleases only with `include_prereleases`.
    pub async fn releases(&self, repo: &str) -> Result<Vec<Release>, GitHubError> {
        check_repo(repo)?;
        let cached = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(repo)
            .cloned();
        let mut url = format!(
            "{}/repos/{repo}/releases?per_page={}",
            self.base.as_str().trim_end_matches('/'),
            self.config.per_page
        );
        let mut all = Vec::new();
        let mut first_etag = None;
        let mut first = true;
        loop {
            let etag = if first {
                cached.as_ref().map(|c| c.etag.as_str())
            } else {
                None
            };
            let resp = self.get(&url, "application/vnd.github+json", etag).await?;
            if first
                && resp.status() == StatusCode::NOT_MODIFIED
                && let Some(c) = cached
            {
                return Ok(self.filter(c.releases));
            }
            if resp.status() == StatusCode::NOT_FOUND {
                return Err(GitHubError::NotFound {
                    repo: repo.to_string(),
                });
            }
            if !resp.status().is_success() {
                return Err(Self::fail(&url, resp).await);
            }
            if first {
                first_etag = resp
                    .headers()
                    .get(ETAG)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
            }
            let next = resp
                .headers()
                .get(LINK)
                .and_then(|v| v.to_str().ok())
                .and_then(next_link);
            let body = resp.bytes().await.map_err(|e| GitHubError::Http {
                url: url.clone(),
                message: e.to_string(),
            })?;
            let page: Vec<ApiRelease> = serde_json::from_slice(&body).map_err(|e| GitHubError::Invalid {
                url: url.clone(),
                message: e.to_string(),
            })?;
            all.extend(page.into_iter().filter(|r| !r.draft).map(|r| {
                Release {
                    tag: r.tag_name,
                    prerelease: r.prerelease,
                    assets: r
                        .assets
                        .into_iter()
                        .map(|a| Asset {
                            id: a.id,
                            name: a.name,
                            size: a.size,
                            sha256: a
                                .digest
                                .and_then(|d| d.strip_prefix("sha256:").map(str::to_ascii_lowercase)),
                            url: a.url,
                        })
                        .collect(),
                }
            }));
            first = false;
            match next {
                Some(n) => url = n,
                None => break,
            }
        }
        if let Some(etag) = first_etag {
            self.cache.lock().unwrap_or_else(|e| e.into_inner()).insert(
                repo.to_string(),
                Listing {
                    etag,
                    releases: all.clone(),
                },
            );
        }
        Ok(self.filter(all))
    }

    /// The last listing of `repo` this client holds (to keep it across processes).
    pub fn listing(&self, repo: &str) -> Option<Listing> {
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(repo)
            .cloned()
    }

    /// Start from a stored listing of `repo`: the next poll is a conditional request.
    pub fn restore(&self, repo: &str, listing: Listing) {
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(repo.to_string(), listing);
    }

    /// Drop the stored ETag of a repository (the next listing reads every page).
    pub fn forget(&self, repo: &str) {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).remove(repo);
    }

    fn filter(&self, releases: Vec<Release>) -> Vec<Release> {
        releases
            .into_iter()
            .filter(|r| self.config.include_prereleases || !r.prerelease)
            .collect()
    }

    /// Download an asset, handing each chunk to `sink`. Follows GitHub's redirect to the
    /// object store without the token. Returns the number of bytes received.
    pub async fn download(
        &self,
        asset: &Asset,
        mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> Result<u64, GitHubError> {
        let mut url = asset.url.clone();
        let mut resp = self.get(&url, "application/octet-stream", None).await?;
        for _ in 0..5 {
            if !resp.status().is_redirection() {
                break;
            }
            let location = resp
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| GitHubError::Invalid {
                    url: url.clone(),
                    message: "redirect without Location".into(),
                })?;
            let next = Url::parse(&url)
                .and_then(|u| u.join(location))
                .map_err(|e| GitHubError::Invalid {
                    url: url.clone(),
                    message: format!("bad redirect Location: {e}"),
                })?;
            url = next.to_string();
            resp = self.get(&url, "application/octet-stream", None).await?;
        }
        if !resp.status().is_success() {
            return Err(Self::fail(&url, resp).await);
        }
        let mut n = 0u64;
        while let Some(chunk) = resp.chunk().await.map_err(|e| GitHubError::Http {
            url: format!("asset {} ({url})", asset.name),
            message: e.to_string(),
        })? {
            n += chunk.len() as u64;
            sink(&chunk).map_err(|e| GitHubError::Http {
                url: format!("asset {}", asset.name),
                message: format!("writing: {e}"),
            })?;
        }
        Ok(n)
    }
}
