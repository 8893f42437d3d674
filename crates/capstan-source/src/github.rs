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

use super::net::{self, NetworkTimeouts};

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
    /// The first line of a file (e.g. a mounted Secret); an empty one is an error.
    pub fn from_file(path: &Path) -> Result<Token, GitHubError> {
        let text = std::fs::read_to_string(path).map_err(|e| GitHubError::TokenFile {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let token = Token::new(text.lines().next().unwrap_or(""));
        if token.0.is_empty() {
            // Sending no token silently would turn into confusing 404s and rate limits.
            return Err(GitHubError::TokenFile {
                path: path.display().to_string(),
                message: "its first line is empty: it holds no token".into(),
            });
        }
        Ok(token)
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
    #[error(
        "{url}: GitHub's secondary rate limit (HTTP {status} with Retry-After: {retry_after_secs} s){}: wait {retry_after_secs} s before trying again, make fewer requests at once, and use a token (GITHUB_TOKEN or --token-file) when none is set",
        if *waited { " again after waiting once" } else { ", longer than this client waits" }
    )]
    SecondaryRateLimited {
        url: String,
        status: u16,
        retry_after_secs: u64,
        /// Whether the client had waited once already.
        waited: bool,
    },
    #[error("{url}: {message}")]
    Timeout { url: String, message: String },
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
    /// Connect and response/idle timeouts of every request (API, assets, redirects).
    pub timeouts: NetworkTimeouts,
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
            .field("timeouts", &self.timeouts)
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
            timeouts: NetworkTimeouts::default(),
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
        let http = config
            .timeouts
            .reqwest_builder()
            .user_agent(concat!("capstan/", env!("CARGO_PKG_VERSION")))
            // Redirects are followed by hand so the token never leaves the API host.
            .redirect(reqwest::redirect::Policy::none())
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
        let mut timeouts_seen = 0u32;
        let mut waited_for_secondary_limit = false;
        loop {
            // Why the request is sent again (logged with the wait).
            let reason: String;
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
                    let limited = status == StatusCode::FORBIDDEN || status == StatusCode::TOO_MANY_REQUESTS;
                    match decide_limit(
                        limited,
                        exhausted,
                        retry_after,
                        header_u64(h, "x-ratelimit-reset").map(|r| r.saturating_sub(now_epoch())),
                        waited_for_secondary_limit,
                        attempt,
                        &self.config,
                    ) {
                        LimitDecision::NotLimited => {}
                        LimitDecision::Wait { wait, secondary } => {
                            waited_for_secondary_limit |= secondary;
                            attempt += 1;
                            let why = format!("rate limited (HTTP {})", status.as_u16());
                            self.pause(url, attempt, wait, &why).await;
                            continue;
                        }
                        LimitDecision::FailPrimary { reset_in } => {
                            return Err(GitHubError::RateLimited {
                                url: url.to_string(),
                                reset_in_secs: reset_in.as_secs(),
                                max_wait_secs: self.config.max_wait.as_secs(),
                            });
                        }
                        LimitDecision::FailSecondary { retry_after } => {
                            return Err(GitHubError::SecondaryRateLimited {
                                url: url.to_string(),
                                status: status.as_u16(),
                                retry_after_secs: retry_after.as_secs(),
                                waited: waited_for_secondary_limit,
                            });
                        }
                    }
                    if status.is_server_error() && attempt < self.config.max_retries {
                        reason = format!("HTTP {}", status.as_u16());
                        retry_after.unwrap_or_else(|| self.backoff(attempt))
                    } else {
                        return Ok(resp);
                    }
                }
                Err(e) if net::reqwest_timeout(&e).is_some() => {
                    // A GET is idempotent: try a timed-out one again, a few times only (each
                    // try may cost the whole timeout).
                    if timeouts_seen >= self.config.timeouts.retries {
                        return Err(self.net_error(url, &e, timeouts_seen + 1));
                    }
                    timeouts_seen += 1;
                    reason = net::error_chain(&e);
                    self.backoff(0)
                }
                Err(e) if attempt < self.config.max_retries && !e.is_builder() && !net::is_tls_error(&e) => {
                    reason = net::error_chain(&e);
                    self.backoff(attempt)
                }
                Err(e) => return Err(self.net_error(url, &e, attempt + 1)),
            };
            attempt += 1;
            self.pause(url, attempt, wait, &reason).await;
        }
    }

    async fn pause(&self, url: &str, attempt: u32, wait: Duration, reason: &str) {
        tracing::warn!(
            url,
            attempt,
            wait_ms = wait.as_millis() as u64,
            reason,
            "retrying GitHub request"
        );
        tokio::time::sleep(wait.min(self.config.max_wait)).await;
    }

    /// A failed request or body read as an error: a timeout names the host and the timeout.
    fn net_error(&self, url: &str, e: &reqwest::Error, tries: u32) -> GitHubError {
        match net::reqwest_timeout(e) {
            Some(kind) => GitHubError::Timeout {
                url: url.to_string(),
                message: format!(
                    "{}{}",
                    self.config.timeouts.describe(kind, &net::host_of(url)),
                    if tries > 1 {
                        format!(", {tries} tries")
                    } else {
                        String::new()
                    }
                ),
            },
            None => GitHubError::Http {
                url: url.to_string(),
                message: net::error_chain(e),
            },
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
            let body = resp.bytes().await.map_err(|e| self.net_error(&url, &e, 1))?;
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
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| self.net_error(&format!("asset {} ({url})", asset.name), &e, 1))?
        {
            n += chunk.len() as u64;
            sink(&chunk).map_err(|e| GitHubError::Http {
                url: format!("asset {}", asset.name),
                message: format!("writing: {e}"),
            })?;
        }
        Ok(n)
    }
}

/// What a rate-limited (or not) response means for the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LimitDecision {
    NotLimited,
    /// Wait this long and send again (`secondary`: a `Retry-After` wait, honoured once).
    Wait {
        wait: Duration,
        secondary: bool,
    },
    /// The primary limit is spent for longer than the client waits.
    FailPrimary {
        reset_in: Duration,
    },
    /// The secondary limit (`Retry-After`) again after one wait, or asking for too long.
    FailSecondary {
        retry_after: Duration,
    },
}

/// GitHub's rate limits: a `403`/`429` with `Retry-After` is the secondary limit, honoured
/// once (when not longer than `max_wait`); one with `X-RateLimit-Remaining: 0` is the primary
/// limit, waited for until its reset when that is soon enough.
fn decide_limit(
    limited_status: bool,
    exhausted: bool,
    retry_after: Option<Duration>,
    reset_in_secs: Option<u64>,
    waited_for_secondary: bool,
    attempt: u32,
    config: &Config,
) -> LimitDecision {
    if !limited_status {
        return LimitDecision::NotLimited;
    }
    if let Some(retry_after) = retry_after {
        return if waited_for_secondary || retry_after > config.max_wait {
            LimitDecision::FailSecondary { retry_after }
        } else {
            LimitDecision::Wait {
                wait: retry_after,
                secondary: true,
            }
        };
    }
    if !exhausted {
        return LimitDecision::NotLimited;
    }
    let reset_in = Duration::from_secs(reset_in_secs.unwrap_or(0) + 1);
    if reset_in > config.max_wait || attempt >= config.max_retries {
        LimitDecision::FailPrimary { reset_in }
    } else {
        LimitDecision::Wait {
            wait: reset_in,
            secondary: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_decisions() {
        let c = Config::default(); // max_wait 60 s, max_retries 4
        let s = Duration::from_secs;
        use LimitDecision::*;
        let table = [
            // (limited, exhausted, retry_after, reset_in, waited, attempt) → decision
            ((false, true, Some(s(5)), Some(5), false, 0), NotLimited),
            ((true, false, None, None, false, 0), NotLimited),
            (
                (true, false, Some(s(5)), None, false, 0),
                Wait {
                    wait: s(5),
                    secondary: true,
                },
            ),
            (
                (true, false, Some(s(5)), None, true, 1),
                FailSecondary { retry_after: s(5) },
            ),
            (
                (true, false, Some(s(61)), None, false, 0),
                FailSecondary { retry_after: s(61) },
            ),
            (
                (true, true, Some(s(5)), Some(3000), false, 0),
                Wait {
                    wait: s(5),
                    secondary: true,
                },
            ),
            (
                (true, true, None, Some(9), false, 0),
                Wait {
                    wait: s(10),
                    secondary: false,
                },
            ),
            (
                (true, true, None, Some(9), false, 4),
                FailPrimary { reset_in: s(10) },
            ),
            (
                (true, true, None, Some(3000), false, 0),
                FailPrimary { reset_in: s(3001) },
            ),
        ];
        for ((limited, exhausted, retry_after, reset, waited, attempt), want) in table {
            assert_eq!(
                decide_limit(limited, exhausted, retry_after, reset, waited, attempt, &c),
                want,
                "{limited} {exhausted} {retry_after:?} {reset:?} {waited} {attempt}"
            );
        }
    }
}
