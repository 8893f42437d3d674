//! A registry client for the distribution API v2: ping, manifests (HEAD and GET, by tag or
//! digest, with every manifest kind accepted), blobs streamed with size and digest checked
//! (over the limit refused before anything is read), tag lists across pages (`Link`, else
//! `n`/`last`), blob uploads (monolithic or chunked) and manifest PUTs.
//!
//! Authentication as registries ask for it: a `WWW-Authenticate: Bearer` challenge is answered
//! at the token endpoint it names (anonymously, or with the user name and password), the token
//! kept per scope until it expires; a `Basic` challenge with the user name and password; a
//! static token is sent as Bearer from the first request. Credentials go to the registry's own
//! origin and its token endpoint only: redirects (blob storage) are followed without them.
//!
//! Every request has the source layer's timeouts ([`NetworkTimeouts`]: connect, and response —
//! for the head, then for each read of the body); a timed-out idempotent request is sent again
//! `retries` times. `429` is retried after `Retry-After` (bounded); `5xx` and other network
//! errors only for idempotent requests, with jittered doubling backoff. Plain `http://` only for loopback hosts or when `insecure`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, HeaderMap, LINK, LOCATION,
    RETRY_AFTER, WWW_AUTHENTICATE,
};
use reqwest::{Method, StatusCode, Url};
use sha2::{Digest, Sha256};

use super::auth::{Challenge, Credentials, parse_challenge, parse_token_response};
use super::manifest::{Descriptor, manifest_accept, sha256_hex};
use crate::net::{NetworkTimeouts, TimeoutKind, human, reqwest_timeout};

/// What the client saw of one response (for request counts and metrics).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestSeen {
    pub method: String,
    /// Host of the request (the registry, a token endpoint, blob storage).
    pub host: String,
    /// Its path (no query).
    pub path: String,
    pub status: u16,
}

/// Hears every response, e.g. to count requests.
pub type Observer = Arc<dyn Fn(&RequestSeen) + Send + Sync>;

/// Client settings.
#[derive(Clone)]
pub struct Config {
    pub credentials: Credentials,
    /// Plain `http://` for a registry that is not on loopback (never the default).
    pub insecure: bool,
    /// Connect and response timeouts, and how often a timed-out idempotent request is retried.
    pub timeouts: NetworkTimeouts,
    /// Retries of one request (429; 5xx and network errors other than timeouts of idempotent
    /// requests).
    pub max_retries: u32,
    /// First backoff; doubles per retry, with jitter, capped at `max_wait`.
    pub backoff: Duration,
    /// Longest single wait; a `Retry-After` beyond it fails at once.
    pub max_wait: Duration,
    /// Largest manifest read.
    pub max_manifest_size: u64,
    /// Largest blob read: a larger descriptor (or `Content-Length`) is refused before reading.
    pub max_blob_size: u64,
    /// Tags asked for per page (`n`).
    pub page_size: u32,
    /// Uploads larger than this go in `PATCH` chunks of this size.
    pub chunk_size: usize,
    pub observer: Option<Observer>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("credentials", &self.credentials)
            .field("insecure", &self.insecure)
            .field("timeouts", &self.timeouts)
            .field("max_retries", &self.max_retries)
            .field("max_blob_size", &self.max_blob_size)
            .field("page_size", &self.page_size)
            .finish_non_exhaustive()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            credentials: Credentials::Anonymous,
            insecure: false,
            timeouts: NetworkTimeouts::default(),
            max_retries: 4,
            backoff: Duration::from_millis(500),
            max_wait: Duration::from_secs(60),
            max_manifest_size: 4 << 20,
            max_blob_size: 512 << 20,
            page_size: 100,
            chunk_size: 16 << 20,
            observer: None,
        }
    }
}

/// Errors of the registry client; each names the registry, repository or URL.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("{0:?} is not a registry host (HOST or HOST:PORT)")]
    BadHost(String),
    #[error(
        "{0:?} is not a repository name (lower-case components of a-z, 0-9, '.', '_', '-' joined by '/')"
    )]
    BadRepository(String),
    #[error("{0:?} is not a tag or digest")]
    BadReference(String),
    #[error(
        "registry {host}: plain http is used only for loopback registries; allow it for {host} with the insecure flag"
    )]
    Insecure { host: String },
    #[error("{method} {url}: {message}")]
    Http {
        method: String,
        url: String,
        message: String,
    },
    #[error("{method} {url}: unauthorized (HTTP 401) {tried}: {message}")]
    Unauthorized {
        method: String,
        url: String,
        tried: String,
        message: String,
    },
    #[error("{method} {url}: access denied (HTTP 403) {tried}: {message}")]
    Forbidden {
        method: String,
        url: String,
        tried: String,
        message: String,
    },
    #[error("{what} not found on {registry} (HTTP 404): {message}")]
    NotFound {
        registry: String,
        what: String,
        message: String,
    },
    #[error(
        "{method} {url}: rate limited (HTTP 429); the registry asks to wait {wait_secs} s, longer than {max_wait_secs} s or after {retries} retries"
    )]
    RateLimited {
        method: String,
        url: String,
        wait_secs: u64,
        max_wait_secs: u64,
        retries: u32,
    },
    #[error("{method} {url}: HTTP {status}: {message}")]
    Status {
        method: String,
        url: String,
        status: u16,
        message: String,
    },
    #[error("{url}: invalid response: {message}")]
    Invalid { url: String, message: String },
    #[error("{what}: {size} bytes is over the limit of {limit} bytes; not read")]
    TooLarge { what: String, size: u64, limit: u64 },
    #[error("{what}: {message}")]
    Digest { what: String, message: String },
    #[error("{what}: writing: {message}")]
    Sink { what: String, message: String },
}

/// A manifest as the registry returned it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    pub bytes: Bytes,
    /// `sha256:<hex>` of `bytes`.
    pub digest: String,
    pub media_type: Option<String>,
}

/// What a `HEAD` of a manifest tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestHead {
    /// `Docker-Content-Digest`, when the registry sends it.
    pub digest: Option<String>,
    pub media_type: Option<String>,
    pub size: Option<u64>,
}

/// Whether `host` (with or without port) is a loopback address or `localhost`.
pub fn is_loopback(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, p)| {
            if p.bytes().all(|b| b.is_ascii_digit()) {
                h
            } else {
                host
            }
        })
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `HOST` or `HOST:PORT` (`[v6]:PORT` too).
pub fn check_host(host: &str) -> Result<(), OciError> {
    let bad = || OciError::BadHost(host.to_string());
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let (ip, after) = rest.split_once(']').ok_or_else(bad)?;
        ip.parse::<std::net::Ipv6Addr>().map_err(|_| bad())?;
        (None, after.strip_prefix(':'))
    } else {
        match host.split_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(host), None),
        }
    };
    if let Some(name) = name {
        let ok = !name.is_empty()
            && name.split('.').all(|l| {
                !l.is_empty()
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !ok {
            return Err(bad());
        }
    }
    if let Some(port) = port
        && port.parse::<u16>().is_err()
    {
        return Err(bad());
    }
    Ok(())
}

/// A repository name: lower-case components of `[a-z0-9]` separated by `.`, `_`, `__` or
/// dashes, joined by `/` (the distribution spec's grammar).
pub fn check_repository(repo: &str) -> Result<(), OciError> {
    let component = |c: &str| {
        let b = c.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|&x| x.is_ascii_lowercase() || x.is_ascii_digit() || matches!(x, b'.' | b'_' | b'-'))
            && !c.contains("..")
            && !c.contains("___")
    };
    if repo.len() <= 255 && repo.split('/').all(component) {
        Ok(())
    } else {
        Err(OciError::BadRepository(repo.to_string()))
    }
}

/// A tag (`[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`) or a `sha256:` digest.
pub fn check_reference(reference: &str) -> Result<(), OciError> {
    let tag = reference.len() <= 128
        && reference
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        && reference
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if tag || sha256_hex(reference).is_some() {
        Ok(())
    } else {
        Err(OciError::BadReference(reference.to_string()))
    }
}

fn pull_scope(repo: &str) -> String {
    format!("repository:{repo}:pull")
}

fn push_scope(repo: &str) -> String {
    format!("repository:{repo}:pull,push")
}

/// A jitter factor in [0.5, 1.0) from the clock.
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    0.5 + f64::from(nanos % 1000) / 2000.0
}

/// An error with its causes (`reqwest` says "error sending request" and keeps the why, e.g.
/// "connection refused" or a TLS failure, in its sources).
/// `Retry-After` in seconds (the HTTP-date form is treated as absent: the backoff applies).
fn retry_after(h: &HeaderMap) -> Option<Duration> {
    h.get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name)?.to_str().ok()
}

/// The message of a registry's error body (`{"errors":[{"code","message"}]}`), else its start.
fn error_text(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Errors {
        errors: Vec<ErrorEntry>,
    }
    #[derive(serde::Deserialize)]
    struct ErrorEntry {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    if let Ok(e) = serde_json::from_slice::<Errors>(body)
        && !e.errors.is_empty()
    {
        return e
            .errors
            .iter()
            .map(|e| format!("{} {}", e.code, e.message).trim().to_string())
            .collect::<Vec<_>>()
            .join("; ");
    }
    let text: String = String::from_utf8_lossy(body).chars().take(300).collect();
    if text.trim().is_empty() {
        "(no message)".into()
    } else {
        text.trim().to_string()
    }
}

#[derive(Default)]
struct AuthState {
    /// The registry asked for Basic: send it from now on.
    basic: bool,
    /// The token endpoint of the last Bearer challenge (realm, service): a scope without a
    /// live token gets one there before its request, not after a 401.
    bearer: Option<(String, Option<String>)>,
    /// Bearer tokens per scope, with their expiry.
    tokens: HashMap<String, (String, Instant)>,
}

/// One request to send (rebuilt for every attempt).
struct Request<'a> {
    method: Method,
    url: Url,
    headers: Vec<(reqwest::header::HeaderName, String)>,
    body: Option<Bytes>,
    scope: &'a str,
    idempotent: bool,
}

/// The client of one registry. Cheap to share (`&self` methods); keeps tokens per scope.
pub struct Client {
    http: reqwest::Client,
    config: Config,
    host: String,
    base: Url,
    auth: Mutex<AuthState>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base.as_str())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client of the registry at `host` (`HOST[:PORT]`): `https://`, or `http://` for a
    /// loopback host (and for any host with `config.insecure`).
    pub fn new(host: &str, config: Config) -> Result<Client, OciError> {
        check_host(host)?;
        let scheme = if is_loopback(host) || config.insecure {
            "http"
        } else {
            "https"
        };
        let base =
            Url::parse(&format!("{scheme}://{host}")).map_err(|_| OciError::BadHost(host.to_string()))?;
        Client::with_base(host, base, config)
    }

    /// A client of a registry at an explicit base URL (`https://…`; `http://` only for
    /// loopback or with `config.insecure`).
    pub fn with_base(host: &str, base: Url, config: Config) -> Result<Client, OciError> {
        if base.scheme() == "http" && !is_loopback(host) && !config.insecure {
            return Err(OciError::Insecure {
                host: host.to_string(),
            });
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("capstan/", env!("CARGO_PKG_VERSION")))
            // Redirects are followed by hand so credentials never leave the registry's origin.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.timeouts.connect)
            .read_timeout(config.timeouts.response)
            .build()
            .map_err(|e| OciError::Http {
                method: "connect".into(),
                url: base.to_string(),
                message: e.to_string(),
            })?;
        Ok(Client {
            http,
            config,
            host: host.to_string(),
            base,
            auth: Mutex::new(AuthState::default()),
        })
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    fn url(&self, path: &str) -> Result<Url, OciError> {
        self.base.join(path).map_err(|e| OciError::Invalid {
            url: format!("{}{path}", self.base),
            message: e.to_string(),
        })
    }

    fn same_origin(&self, url: &Url) -> bool {
        url.scheme() == self.base.scheme()
            && url.host_str() == self.base.host_str()
            && url.port_or_known_default() == self.base.port_or_known_default()
    }

    fn observe(&self, method: &Method, url: &Url, status: StatusCode) {
        if let Some(observe) = &self.config.observer {
            observe(&RequestSeen {
                method: method.to_string(),
                host: url.host_str().unwrap_or("").to_string(),
                path: url.path().to_string(),
                status: status.as_u16(),
            });
        }
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let base = self.config.backoff.saturating_mul(1u32 << attempt.min(16));
        base.min(self.config.max_wait).mul_f64(jitter())
    }

    /// What the client sends: the static token; else a live token of the scope; else Basic
    /// once the registry asked for it.
    fn authorization(&self, scope: &str) -> Option<String> {
        if let Credentials::Token(t) = &self.config.credentials {
            return Some(format!("Bearer {t}"));
        }
        let state = self.auth.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((token, expires)) = state.tokens.get(scope)
            && Instant::now() < *expires
        {
            return Some(format!("Bearer {token}"));
        }
        if state.basic {
            return self.config.credentials.basic_header();
        }
        None
    }

    /// How the request was authenticated, for a 401/403 message (no secret in it).
    fn tried(&self) -> String {
        match &self.config.credentials {
            Credentials::Anonymous => "anonymously (no credentials given)".into(),
            Credentials::Basic { username, .. } => format!("as user {username:?}"),
            Credentials::Token(_) => "with the given access token".into(),
        }
    }

    /// Answers a challenge; `false` when there is nothing to answer it with.
    async fn answer(&self, challenge: Challenge, scope: &str) -> Result<bool, OciError> {
        match challenge {
            Challenge::Basic => {
                if self.config.credentials.basic_header().is_none() {
                    return Ok(false);
                }
                self.auth.lock().unwrap_or_else(|e| e.into_inner()).basic = true;
                Ok(true)
            }
            Challenge::Bearer {
                realm,
                service,
                scope: asked,
            } => {
                if matches!(self.config.credentials, Credentials::Token(_)) {
                    // A static token that is refused is not exchanged for another.
                    return Ok(false);
                }
                self.auth.lock().unwrap_or_else(|e| e.into_inner()).bearer =
                    Some((realm.clone(), service.clone()));
                let mut url = Url::parse(&realm).map_err(|e| OciError::Invalid {
                    url: realm.clone(),
                    message: format!("token realm is not a URL: {e}"),
                })?;
                let realm_host = url.host_str().unwrap_or("").to_string();
                if url.scheme() != "https" && !(is_loopback(&realm_host) || self.config.insecure) {
                    return Err(OciError::Insecure { host: realm_host });
                }
                {
                    let mut q = url.query_pairs_mut();
                    if let Some(service) = &service {
                        q.append_pair("service", service);
                    }
                    q.append_pair("scope", asked.as_deref().unwrap_or(scope));
                }
                let mut req = self.http.get(url.clone());
                if let Some(basic) = self.config.credentials.basic_header() {
                    req = req.header(AUTHORIZATION, basic);
                }
                let resp = tokio::time::timeout(self.config.timeouts.response, req.send())
                    .await
                    .map_err(|_| OciError::Http {
                        method: "GET".into(),
                        url: realm.clone(),
                        message: format!(
                            "token endpoint: {}",
                            self.config
                                .timeouts
                                .describe(TimeoutKind::Response, &host_of_url(&url))
                        ),
                    })?
                    .map_err(|e| OciError::Http {
                        method: "GET".into(),
                        url: realm.clone(),
                        message: format!("token endpoint: {}", crate::net::error_chain(&e)),
                    })?;
                self.observe(&Method::GET, &url, resp.status());
                let status = resp.status();
                let body = read_limited(resp, 1 << 20, &realm, self.config.timeouts.response).await?;
                if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                    return Err(OciError::Unauthorized {
                        method: "GET".into(),
                        url: realm,
                        tried: format!("at the token endpoint {}", self.tried()),
                        message: error_text(&body),
                    });
                }
                if !status.is_success() {
                    return Err(OciError::Status {
                        method: "GET".into(),
                        url: realm,
                        status: status.as_u16(),
                        message: error_text(&body),
                    });
                }
                let (token, expires_in) = parse_token_response(&body).ok_or_else(|| OciError::Invalid {
                    url: realm.clone(),
                    message: "the token endpoint's answer has no token".into(),
                })?;
                // Renewed a little before it runs out (a short-lived token is used as it is).
                let lifetime = if expires_in > 10 {
                    Duration::from_secs(expires_in - 5)
                } else {
                    Duration::from_secs(expires_in)
                };
                self.auth
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .tokens
                    .insert(scope.to_string(), (token, Instant::now() + lifetime));
                Ok(true)
            }
        }
    }

    /// The token endpoint to ask before sending for `scope`: the registry spoke Bearer before
    /// and there is no live token of this scope.
    fn token_due(&self, scope: &str) -> Option<Challenge> {
        if scope.is_empty() || matches!(self.config.credentials, Credentials::Token(_)) {
            return None;
        }
        let state = self.auth.lock().unwrap_or_else(|e| e.into_inner());
        let live = state
            .tokens
            .get(scope)
            .is_some_and(|(_, expires)| Instant::now() < *expires);
        let (realm, service) = state.bearer.clone().filter(|_| !live)?;
        Some(Challenge::Bearer {
            realm,
            service,
            scope: None,
        })
    }

    /// Sends with authentication and retries; returns any final response (statuses are the
    /// caller's to judge).
    async fn send(&self, req: Request<'_>) -> Result<reqwest::Response, OciError> {
        if self.same_origin(&req.url)
            && let Some(challenge) = self.token_due(req.scope)
        {
            self.answer(challenge, req.scope).await?;
        }
        let mut attempt = 0u32;
        let mut timeouts_retried = 0u32;
        let mut challenged = false;
        let method_name = req.method.to_string();
        loop {
            let mut rb = self.http.request(req.method.clone(), req.url.clone());
            for (name, value) in &req.headers {
                rb = rb.header(name, value);
            }
            if let Some(body) = &req.body {
                rb = rb.header(CONTENT_LENGTH, body.len()).body(body.clone());
            }
            if self.same_origin(&req.url)
                && let Some(auth) = self.authorization(req.scope)
            {
                rb = rb.header(AUTHORIZATION, auth);
            }
            let failure = |message: String| OciError::Http {
                method: method_name.clone(),
                url: req.url.to_string(),
                message,
            };
            // A timeout (ours for the head, reqwest's for connecting or a read) is retried as
            // often as the timeouts say; other network errors up to `max_retries` times.
            // Why the request is sent again (logged with the wait).
            let mut reason = String::new();
            let mut after_timeout = |kind: TimeoutKind, reason: &mut String| {
                let described = self.config.timeouts.describe(kind, &self.host);
                if req.idempotent && timeouts_retried < self.config.timeouts.retries {
                    timeouts_retried += 1;
                    *reason = described;
                    Ok(self.backoff(attempt))
                } else if timeouts_retried > 0 {
                    Err(failure(format!("{described}, {} tries", timeouts_retried + 1)))
                } else {
                    Err(failure(described))
                }
            };
            let wait = match tokio::time::timeout(self.config.timeouts.response, rb.send()).await {
                Err(_) => after_timeout(TimeoutKind::Response, &mut reason)?,
                Ok(Err(e)) => match reqwest_timeout(&e) {
                    Some(kind) => after_timeout(kind, &mut reason)?,
                    None if req.idempotent
                        && attempt < self.config.max_retries
                        && !e.is_builder()
                        && !crate::net::is_tls_error(&e) =>
                    {
                        reason = crate::net::error_chain(&e);
                        self.backoff(attempt)
                    }
                    None => return Err(failure(crate::net::error_chain(&e))),
                },
                Ok(Ok(resp)) => {
                    let status = resp.status();
                    self.observe(&req.method, &req.url, status);
                    if status == StatusCode::UNAUTHORIZED && !challenged && self.same_origin(&req.url) {
                        challenged = true;
                        let challenge = resp
                            .headers()
                            .get_all(WWW_AUTHENTICATE)
                            .iter()
                            .filter_map(|v| v.to_str().ok())
                            .filter_map(parse_challenge)
                            .next();
                        if let Some(challenge) = challenge
                            && self.answer(challenge, req.scope).await?
                        {
                            continue;
                        }
                        return Ok(resp);
                    }
                    if status == StatusCode::TOO_MANY_REQUESTS {
                        let wait = retry_after(resp.headers()).unwrap_or_else(|| self.backoff(attempt));
                        if attempt >= self.config.max_retries || wait > self.config.max_wait {
                            return Err(OciError::RateLimited {
                                method: method_name,
                                url: req.url.to_string(),
                                wait_secs: wait.as_secs(),
                                max_wait_secs: self.config.max_wait.as_secs(),
                                retries: attempt,
                            });
                        }
                        reason = "rate limited (HTTP 429)".into();
                        wait
                    } else if status.is_server_error() && req.idempotent && attempt < self.config.max_retries
                    {
                        reason = format!("HTTP {}", status.as_u16());
                        retry_after(resp.headers())
                            .unwrap_or_else(|| self.backoff(attempt))
                            .min(self.config.max_wait)
                    } else {
                        return Ok(resp);
                    }
                }
            };
            attempt += 1;
            tracing::warn!(
                method = %req.method,
                url = %req.url,
                attempt,
                wait_ms = wait.as_millis() as u64,
                reason,
                "retrying registry request"
            );
            tokio::time::sleep(wait).await;
        }
    }

    /// Turns a non-success response into the error its status means.
    async fn fail(&self, method: &str, url: &Url, what: &str, resp: reqwest::Response) -> OciError {
        let status = resp.status();
        let body = read_limited(resp, 64 << 10, url.as_str(), self.config.timeouts.response)
            .await
            .unwrap_or_default();
        let message = error_text(&body);
        match status {
            StatusCode::UNAUTHORIZED => OciError::Unauthorized {
                method: method.into(),
                url: url.to_string(),
                tried: self.tried(),
                message,
            },
            StatusCode::FORBIDDEN => OciError::Forbidden {
                method: method.into(),
                url: url.to_string(),
                tried: self.tried(),
                message,
            },
            StatusCode::NOT_FOUND => OciError::NotFound {
                registry: self.host.clone(),
                what: what.to_string(),
                message,
            },
            _ => OciError::Status {
                method: method.into(),
                url: url.to_string(),
                status: status.as_u16(),
                message,
            },
        }
    }

    /// A read of `url` (`GET` or `HEAD`) under the token `scope`, with `accept` as its Accept
    /// header when given: no body, so tried again on a timeout or a 5xx like every idempotent
    /// request.
    async fn read(
        &self,
        method: Method,
        url: &Url,
        scope: &str,
        accept: Option<&str>,
    ) -> Result<reqwest::Response, OciError> {
        self.send(Request {
            method,
            url: url.clone(),
            headers: accept.map(|a| (ACCEPT, a.to_string())).into_iter().collect(),
            body: None,
            scope,
            idempotent: true,
        })
        .await
    }

    /// `GET /v2/`: the registry speaks the API and the credentials are accepted.
    pub async fn ping(&self) -> Result<(), OciError> {
        let url = self.url("/v2/")?;
        let resp = self.read(Method::GET, &url, "", None).await?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(self.fail("GET", &url, "the registry API (/v2/)", resp).await)
        }
    }

    fn manifest_url(&self, repo: &str, reference: &str) -> Result<Url, OciError> {
        check_repository(repo)?;
        check_reference(reference)?;
        self.url(&format!("/v2/{repo}/manifests/{reference}"))
    }

    /// `HEAD` of a manifest: `None` when the registry has no such tag or digest.
    pub async fn head_manifest(&self, repo: &str, reference: &str) -> Result<Option<ManifestHead>, OciError> {
        let url = self.manifest_url(repo, reference)?;
        let scope = pull_scope(repo);
        let resp = self
            .read(Method::HEAD, &url, &scope, Some(&manifest_accept()))
            .await?;
        if resp.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !resp.status().is_success() {
            return Err(self
                .fail("HEAD", &url, &format!("manifest {repo}:{reference}"), resp)
                .await);
        }
        let h = resp.headers();
        Ok(Some(ManifestHead {
            digest: header(h, "docker-content-digest").map(str::to_string),
            media_type: header(h, "content-type").map(str::to_string),
            size: header(h, "content-length").and_then(|v| v.parse().ok()),
        }))
    }

    /// A manifest by tag or digest, at most `max_manifest_size` bytes, its digest computed
    /// (and checked against a digest reference and the registry's `Docker-Content-Digest`).
    pub async fn manifest(&self, repo: &str, reference: &str) -> Result<Manifest, OciError> {
        let url = self.manifest_url(repo, reference)?;
        let scope = pull_scope(repo);
        let what = format!("manifest {repo}:{reference}");
        let resp = self
            .read(Method::GET, &url, &scope, Some(&manifest_accept()))
            .await?;
        if !resp.status().is_success() {
            return Err(self.fail("GET", &url, &what, resp).await);
        }
        let announced = header(resp.headers(), "docker-content-digest").map(str::to_string);
        let media_type = header(resp.headers(), "content-type").map(str::to_string);
        if let Some(len) = resp.content_length()
            && len > self.config.max_manifest_size
        {
            return Err(OciError::TooLarge {
                what,
                size: len,
                limit: self.config.max_manifest_size,
            });
        }
        let bytes = read_limited(
            resp,
            self.config.max_manifest_size,
            &what,
            self.config.timeouts.response,
        )
        .await?;
        let digest = format!("sha256:{}", super::super::cache::hex(&Sha256::digest(&bytes)));
        if sha256_hex(reference).is_some() && reference != digest {
            return Err(OciError::Digest {
                what,
                message: format!("content has digest {digest}"),
            });
        }
        if let Some(announced) = announced
            && sha256_hex(&announced).is_some()
            && announced != digest
        {
            return Err(OciError::Digest {
                what,
                message: format!("the registry announced {announced}, the content has {digest}"),
            });
        }
        Ok(Manifest {
            bytes,
            digest,
            media_type,
        })
    }

    /// The referrers of manifest `digest` (`GET /v2/<repo>/referrers/<digest>`, OCI
    /// distribution 1.1): the image index the registry answers, at most `max_manifest_size`
    /// bytes; `None` when the registry has no referrers API (404), where clients fall back to
    /// the tag `sha256-<hex>`.
    pub async fn referrers(&self, repo: &str, digest: &str) -> Result<Option<Bytes>, OciError> {
        check_repository(repo)?;
        if sha256_hex(digest).is_none() {
            return Err(OciError::BadReference(digest.to_string()));
        }
        let url = self.url(&format!("/v2/{repo}/referrers/{digest}"))?;
        let scope = pull_scope(repo);
        let what = format!("referrers of {repo}@{digest}");
        let resp = self
            .read(Method::GET, &url, &scope, Some(super::manifest::OCI_INDEX))
            .await?;
        if resp.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !resp.status().is_success() {
            return Err(self.fail("GET", &url, &what, resp).await);
        }
        let bytes = read_limited(
            resp,
            self.config.max_manifest_size,
            &what,
            self.config.timeouts.response,
        )
        .await?;
        Ok(Some(bytes))
    }

    /// Streams the blob `desc` into `sink`. Refused before any byte is read when its size is
    /// over `max_blob_size` (or the registry announces more than the descriptor says); more
    /// bytes than the descriptor's size stop the read at once; the length and sha256 are
    /// checked at the end. Redirects (to blob storage) are followed without credentials.
    /// Returns the bytes read.
    pub async fn blob(
        &self,
        repo: &str,
        desc: &Descriptor,
        what: &str,
        mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> Result<u64, OciError> {
        check_repository(repo)?;
        let what = format!("{what} (blob {} of {repo})", desc.digest);
        let Some(want_hex) = desc.sha256() else {
            return Err(OciError::Digest {
                what,
                message: "only sha256 digests are supported".into(),
            });
        };
        if desc.size > self.config.max_blob_size {
            return Err(OciError::TooLarge {
                what,
                size: desc.size,
                limit: self.config.max_blob_size,
            });
        }
        let scope = pull_scope(repo);
        let mut url = self.url(&format!("/v2/{repo}/blobs/{}", desc.digest))?;
        let mut resp = None;
        for _ in 0..6 {
            let r = self.read(Method::GET, &url, &scope, None).await?;
            if !r.status().is_redirection() {
                resp = Some(r);
                break;
            }
            let location = header(r.headers(), "location").ok_or_else(|| OciError::Invalid {
                url: url.to_string(),
                message: "redirect without Location".into(),
            })?;
            url = url.join(location).map_err(|e| OciError::Invalid {
                url: url.to_string(),
                message: format!("bad redirect Location: {e}"),
            })?;
        }
        let Some(mut resp) = resp else {
            return Err(OciError::Invalid {
                url: url.to_string(),
                message: "too many redirects".into(),
            });
        };
        if !resp.status().is_success() {
            return Err(self.fail("GET", &url, &what, resp).await);
        }
        if let Some(len) = resp.content_length()
            && len != desc.size
        {
            if len > self.config.max_blob_size {
                return Err(OciError::TooLarge {
                    what,
                    size: len,
                    limit: self.config.max_blob_size,
                });
            }
            return Err(OciError::Digest {
                what,
                message: format!(
                    "the registry announces {len} bytes, the manifest says {}",
                    desc.size
                ),
            });
        }
        let mut hasher = Sha256::new();
        let mut n = 0u64;
        loop {
            let chunk = tokio::time::timeout(self.config.timeouts.response, resp.chunk())
                .await
                .map_err(|_| OciError::Http {
                    method: "GET".into(),
                    url: url.to_string(),
                    message: format!("{what}: {}", silence(self.config.timeouts.response)),
                })?
                .map_err(|e| OciError::Http {
                    method: "GET".into(),
                    url: url.to_string(),
                    message: format!("{what}: {}", crate::net::error_chain(&e)),
                })?;
            let Some(chunk) = chunk else { break };
            n += chunk.len() as u64;
            if n > desc.size {
                return Err(OciError::Digest {
                    what,
                    message: format!("more than the {} bytes the manifest says", desc.size),
                });
            }
            hasher.update(&chunk);
            sink(&chunk).map_err(|e| OciError::Sink {
                what: what.clone(),
                message: e.to_string(),
            })?;
        }
        if n != desc.size {
            return Err(OciError::Digest {
                what,
                message: format!("{n} bytes arrived, the manifest says {} (truncated)", desc.size),
            });
        }
        let got = super::super::cache::hex(&hasher.finalize());
        if got != want_hex {
            return Err(OciError::Digest {
                what,
                message: format!("content has digest sha256:{got}: not the blob the manifest names"),
            });
        }
        Ok(n)
    }

    /// Whether the repository holds a blob (`HEAD`).
    pub async fn blob_exists(&self, repo: &str, digest: &str) -> Result<bool, OciError> {
        check_repository(repo)?;
        let url = self.url(&format!("/v2/{repo}/blobs/{digest}"))?;
        let scope = push_scope(repo);
        let resp = self.read(Method::HEAD, &url, &scope, None).await?;
        match resp.status() {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(self
                .fail("HEAD", &url, &format!("blob {digest} of {repo}"), resp)
                .await),
        }
    }

    /// Uploads `data` as a blob (skipped when the repository has it): `POST` an upload, then
    /// one `PUT` with the content, or `PATCH` chunks and a closing `PUT` when it is larger than
    /// `chunk_size`. Returns its `sha256:` digest.
    pub async fn push_blob(&self, repo: &str, data: Bytes) -> Result<String, OciError> {
        let digest = format!("sha256:{}", super::super::cache::hex(&Sha256::digest(&data)));
        if self.blob_exists(repo, &digest).await? {
            return Ok(digest);
        }
        let scope = push_scope(repo);
        let what = format!("upload of blob {digest} to {repo}");
        let start = self.url(&format!("/v2/{repo}/blobs/uploads/"))?;
        let resp = self
            .send(Request {
                method: Method::POST,
                url: start.clone(),
                headers: Vec::new(),
                body: Some(Bytes::new()),
                scope: &scope,
                idempotent: false,
            })
            .await?;
        if resp.status() != StatusCode::ACCEPTED {
            return Err(self.fail("POST", &start, &what, resp).await);
        }
        let mut location = self.location(&start, resp.headers())?;
        let chunk = self.config.chunk_size.max(1);
        let mut last = Bytes::new();
        if data.len() <= chunk {
            last = data;
        } else {
            let mut offset = 0usize;
            while offset < data.len() {
                let end = (offset + chunk).min(data.len());
                let resp = self
                    .send(Request {
                        method: Method::PATCH,
                        url: location.clone(),
                        headers: vec![
                            (CONTENT_TYPE, "application/octet-stream".into()),
                            (CONTENT_RANGE, format!("{offset}-{}", end - 1)),
                        ],
                        body: Some(data.slice(offset..end)),
                        scope: &scope,
                        idempotent: false,
                    })
                    .await?;
                if resp.status() != StatusCode::ACCEPTED {
                    return Err(self.fail("PATCH", &location, &what, resp).await);
                }
                location = self.location(&location, resp.headers())?;
                offset = end;
            }
        }
        location.query_pairs_mut().append_pair("digest", &digest);
        let resp = self
            .send(Request {
                method: Method::PUT,
                url: location.clone(),
                headers: vec![(CONTENT_TYPE, "application/octet-stream".into())],
                body: Some(last),
                scope: &scope,
                idempotent: false,
            })
            .await?;
        if resp.status() != StatusCode::CREATED {
            return Err(self.fail("PUT", &location, &what, resp).await);
        }
        Ok(digest)
    }

    fn location(&self, from: &Url, h: &HeaderMap) -> Result<Url, OciError> {
        let loc = h
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| OciError::Invalid {
                url: from.to_string(),
                message: "upload answer without Location".into(),
            })?;
        let url = from.join(loc).map_err(|e| OciError::Invalid {
            url: from.to_string(),
            message: format!("bad Location: {e}"),
        })?;
        if !self.same_origin(&url) {
            return Err(OciError::Invalid {
                url: from.to_string(),
                message: format!("upload Location {url} is on another host; not sending the content there"),
            });
        }
        Ok(url)
    }

    /// `PUT` a manifest under a tag (or digest). Returns its digest.
    pub async fn put_manifest(
        &self,
        repo: &str,
        reference: &str,
        media_type: &str,
        body: Bytes,
    ) -> Result<String, OciError> {
        let url = self.manifest_url(repo, reference)?;
        let scope = push_scope(repo);
        let digest = format!("sha256:{}", super::super::cache::hex(&Sha256::digest(&body)));
        let resp = self
            .send(Request {
                method: Method::PUT,
                url: url.clone(),
                headers: vec![(CONTENT_TYPE, media_type.to_string())],
                body: Some(body),
                scope: &scope,
                idempotent: true,
            })
            .await?;
        if resp.status() != StatusCode::CREATED && !resp.status().is_success() {
            return Err(self
                .fail("PUT", &url, &format!("manifest {repo}:{reference}"), resp)
                .await);
        }
        Ok(digest)
    }

    /// Every tag of `repo`, across pages: the `Link` header's next page, else (a registry
    /// that sends none) `last=` the page's last tag while pages come full.
    pub async fn tags(&self, repo: &str) -> Result<Vec<String>, OciError> {
        check_repository(repo)?;
        let scope = pull_scope(repo);
        let n = self.config.page_size.max(1);
        let mut url = self.url(&format!("/v2/{repo}/tags/list?n={n}"))?;
        let mut all: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            let resp = self.read(Method::GET, &url, &scope, None).await?;
            if !resp.status().is_success() {
                return Err(self.fail("GET", &url, &format!("repository {repo}"), resp).await);
            }
            let next = header(resp.headers(), LINK.as_str()).and_then(super::super::github::next_link);
            let body = read_limited(resp, 16 << 20, url.as_str(), self.config.timeouts.response).await?;
            #[derive(serde::Deserialize)]
            struct Page {
                #[serde(default)]
                tags: Option<Vec<String>>,
            }
            let page: Page = serde_json::from_slice(&body).map_err(|e| OciError::Invalid {
                url: url.to_string(),
                message: format!("tag list: {e}"),
            })?;
            let tags = page.tags.unwrap_or_default();
            let full = tags.len() >= n as usize;
            let mut fresh = 0;
            for t in tags {
                if seen.insert(t.clone()) {
                    all.push(t);
                    fresh += 1;
                }
            }
            let next = match next {
                Some(link) => Some(url.join(&link).map_err(|e| OciError::Invalid {
                    url: url.to_string(),
                    message: format!("bad Link: {e}"),
                })?),
                None if full && fresh > 0 => {
                    let mut u = self.url(&format!("/v2/{repo}/tags/list"))?;
                    u.query_pairs_mut()
                        .append_pair("n", &n.to_string())
                        .append_pair("last", all.last().map_or("", String::as_str));
                    Some(u)
                }
                None => None,
            };
            match next {
                Some(u) if fresh > 0 && self.same_origin(&u) => url = u,
                _ => return Ok(all),
            }
        }
        Ok(all)
    }
}

/// What an expired response timeout while a body is read says (the URL is the error's).
fn silence(idle: Duration) -> String {
    format!("sent nothing more for {} (response timeout)", human(idle))
}

/// `host:port` of a URL (a token endpoint may be on another host than the registry).
fn host_of_url(url: &Url) -> String {
    match (url.host_str(), url.port_or_known_default()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_string(),
        _ => url.to_string(),
    }
}

/// The body, at most `limit` bytes (more is an error), each read bounded by `idle`.
async fn read_limited(
    mut resp: reqwest::Response,
    limit: u64,
    what: &str,
    idle: Duration,
) -> Result<Bytes, OciError> {
    let mut out = Vec::new();
    loop {
        let chunk = tokio::time::timeout(idle, resp.chunk())
            .await
            .map_err(|_| OciError::Http {
                method: "GET".into(),
                url: what.to_string(),
                message: silence(idle),
            })?
            .map_err(|e| OciError::Http {
                method: "GET".into(),
                url: what.to_string(),
                message: crate::net::error_chain(&e),
            })?;
        let Some(chunk) = chunk else { break };
        if (out.len() + chunk.len()) as u64 > limit {
            return Err(OciError::TooLarge {
                what: what.to_string(),
                size: (out.len() + chunk.len()) as u64,
                limit,
            });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for (host, want) in [
            ("127.0.0.1:5000", true),
            ("localhost", true),
            ("LOCALHOST:80", true),
            ("[::1]:5000", true),
            ("127.1.2.3", true),
            ("registry.scs.community", false),
            ("10.0.0.1:5000", false),
            ("localhost.example.com", false),
        ] {
            assert_eq!(is_loopback(host), want, "{host}");
        }
    }

    #[test]
    fn names() {
        for (repo, ok) in [
            ("kaas/cluster-stacks", true),
            ("a", true),
            ("a/b.c_d-e/f__g", true),
            ("Kaas/x", false),
            ("a//b", false),
            ("/a", false),
            ("a/", false),
            ("-a", false),
            ("a/../b", false),
            ("a..b", false),
        ] {
            assert_eq!(check_repository(repo).is_ok(), ok, "{repo}");
        }
        for (host, ok) in [
            ("registry.scs.community", true),
            ("127.0.0.1:5000", true),
            ("[::1]:5000", true),
            ("host:port", false),
            ("a/b", false),
            ("", false),
            ("user@host", false),
        ] {
            assert_eq!(check_host(host).is_ok(), ok, "{host}");
        }
        for (reference, ok) in [
            ("docker-ferrol-1-27-v1", true),
            ("v0.1", true),
            (".x", false),
            ("../x", false),
            (
                "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                true,
            ),
            ("sha256:00", false),
        ] {
            assert_eq!(check_reference(reference).is_ok(), ok, "{reference}");
        }
    }

    #[test]
    fn plain_http_only_for_loopback_or_insecure() {
        assert!(Client::new("127.0.0.1:5000", Config::default()).is_ok());
        let remote = Url::parse("http://registry.example.com").unwrap();
        assert!(matches!(
            Client::with_base("registry.example.com", remote.clone(), Config::default()),
            Err(OciError::Insecure { .. })
        ));
        let insecure = Config {
            insecure: true,
            ..Config::default()
        };
        assert!(Client::with_base("registry.example.com", remote, insecure).is_ok());
        let c = Client::new("registry.example.com", Config::default()).unwrap();
        assert_eq!(c.base.scheme(), "https");
    }

    #[test]
    fn registry_error_bodies() {
        assert_eq!(
            error_text(
                br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{}}]}"#
            ),
            "MANIFEST_UNKNOWN manifest unknown"
        );
        assert_eq!(error_text(b""), "(no message)");
        assert_eq!(error_text(b"plain"), "plain");
    }
}
