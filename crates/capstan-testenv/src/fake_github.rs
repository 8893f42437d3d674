//! A local imitation of the GitHub REST API for releases, for the source watcher's tests.
//!
//! Two listeners on 127.0.0.1: the API (`base_url()`, what a client calls `https://api.github.com`)
//! and an "asset host" on another port, where `GET /repos/{o}/{r}/releases/assets/{id}` with
//! `Accept: application/octet-stream` redirects (302) — like GitHub's redirect to its object
//! store, which rejects a request that still carries an `Authorization` header.
//!
//! Imitated semantics (GitHub REST docs: "Using pagination", "Rate limits", "Conditional
//! requests"): `per_page` (default 30, max 100) and `page`, a `Link` header with `next`/`last`
//! (and `prev`/`first`); a strong `ETag` per response and `If-None-Match` answered by `304 Not
//! Modified` that does not count against the rate limit; `X-RateLimit-Limit/Remaining/Reset/Used`
//! /`Resource` on every API response and `403` with GitHub's JSON body when the limit is spent;
//! injectable `5xx` (optionally with `Retry-After`); drafts and prereleases; release JSON shaped
//! like GitHub's (`tag_name`, `name`, `draft`, `prerelease`, `assets[]` with `id`, `name`,
//! `size`, `digest` `sha256:…`, `url`, `browser_download_url`). Releases list newest first.
//! Every request is counted (per path kind) for assertions.
//!
//! Use from a test file with `#[path = "support/fake_github.rs"] mod fake_github;`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

/// One file of a release.
#[derive(Clone, Debug)]
pub struct FakeAsset {
    pub id: u64,
    pub name: String,
    pub content: Arc<Vec<u8>>,
    /// Whether the API reports a `digest` (GitHub only does for newer uploads).
    pub with_digest: bool,
}

/// One release.
#[derive(Clone, Debug)]
pub struct FakeRelease {
    pub id: u64,
    pub tag_name: String,
    pub name: Option<String>,
    pub draft: bool,
    pub prerelease: bool,
    pub assets: Vec<FakeAsset>,
}

/// Counters of what the fake received.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// `GET …/releases` requests, including 304s and errors.
    pub list: u64,
    /// Of those, answered `304 Not Modified`.
    pub not_modified: u64,
    /// `GET …/releases/assets/{id}` on the API host.
    pub asset_api: u64,
    /// Downloads on the asset host (successful or not).
    pub asset_download: u64,
    /// Asset-host requests rejected because they carried `Authorization`.
    pub asset_auth_rejected: u64,
    /// Bytes of response bodies sent (API JSON + asset bytes).
    pub body_bytes: u64,
    /// Downloads on the asset host per asset id.
    pub downloads_by_asset: std::collections::BTreeMap<u64, u64>,
}

struct Inner {
    repos: HashMap<String, Vec<FakeRelease>>,
    next_id: u64,
    limit: u64,
    remaining: u64,
    reset_epoch: u64,
    /// Answer the next N API requests with this status.
    fail_next: u32,
    fail_status: u16,
    fail_retry_after: Option<u64>,
    /// Serve asset bodies cut to this many bytes (a truncated download).
    truncate_assets_to: Option<usize>,
    /// Serve asset bodies with their first byte flipped (a wrong checksum, right size).
    corrupt_assets: bool,
    /// Serve asset bodies slowly: chunks of this many bytes, this long apart.
    throttle: Option<(usize, std::time::Duration)>,
    /// Token the API requires when set (`Authorization: Bearer …` or `token …`).
    required_token: Option<String>,
    counts: Counts,
    api_addr: SocketAddr,
    asset_addr: SocketAddr,
}

/// Handle to a running fake; the servers stop when the tokio runtime does.
#[derive(Clone)]
pub struct FakeGitHub {
    inner: Arc<Mutex<Inner>>,
}

fn now_epoch() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl FakeGitHub {
    /// Start both listeners on free loopback ports (inside a tokio runtime).
    pub async fn start() -> FakeGitHub {
        let api = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind api");
        let assets = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind assets");
        let inner = Arc::new(Mutex::new(Inner {
            repos: HashMap::new(),
            next_id: 1000,
            limit: 5000,
            remaining: 5000,
            reset_epoch: now_epoch() + 3600,
            fail_next: 0,
            fail_status: 502,
            fail_retry_after: None,
            truncate_assets_to: None,
            corrupt_assets: false,
            throttle: None,
            required_token: None,
            counts: Counts::default(),
            api_addr: api.local_addr().expect("api addr"),
            asset_addr: assets.local_addr().expect("asset addr"),
        }));
        let fake = FakeGitHub { inner };
        let api_router = Router::new()
            .route("/repos/{owner}/{repo}/releases", get(list_releases))
            .route("/repos/{owner}/{repo}/releases/assets/{id}", get(get_asset))
            .with_state(fake.clone());
        let asset_router = Router::new()
            .route("/download/{id}", get(download_asset))
            .with_state(fake.clone());
        tokio::spawn(async move {
            let _ = axum::serve(api, api_router).await;
        });
        tokio::spawn(async move {
            let _ = axum::serve(assets, asset_router).await;
        });
        fake
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The API base URL (no trailing slash).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.lock().api_addr)
    }

    /// The asset host (`host:port`), different from the API's.
    pub fn asset_host(&self) -> String {
        self.lock().asset_addr.to_string()
    }

    /// Add a release at the newest position of `owner/repo` (which is created if needed).
    pub fn add_release(
        &self,
        repo: &str,
        tag: &str,
        draft: bool,
        prerelease: bool,
        files: Vec<(String, Vec<u8>)>,
    ) -> u64 {
        let mut inner = self.lock();
        inner.next_id += 1;
        let id = inner.next_id;
        let mut assets = Vec::new();
        for (name, content) in files {
            inner.next_id += 1;
            assets.push(FakeAsset {
                id: inner.next_id,
                name,
                content: Arc::new(content),
                with_digest: true,
            });
        }
        inner
            .repos
            .entry(repo.to_string())
            .or_default()
            .push(FakeRelease {
                id,
                tag_name: tag.to_string(),
                // Release names are free text on GitHub; make them differ from tags on purpose.
                name: Some(format!("Release {tag}")),
                draft,
                prerelease,
                assets,
            });
        id
    }

    /// The asset ids of release `tag` of `repo`.
    pub fn asset_ids(&self, repo: &str, tag: &str) -> Vec<u64> {
        self.lock()
            .repos
            .get(repo)
            .and_then(|releases| releases.iter().find(|r| r.tag_name == tag))
            .map(|r| r.assets.iter().map(|a| a.id).collect())
            .unwrap_or_default()
    }

    /// Create an empty repository (no releases).
    pub fn add_repo(&self, repo: &str) {
        self.lock().repos.entry(repo.to_string()).or_default();
    }

    /// Serve a release directory from disk: its name is the tag, its regular files the assets.
    pub fn add_release_dir(&self, repo: &str, dir: &Path) -> std::io::Result<u64> {
        let tag = dir
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| std::io::Error::other("release dir without a UTF-8 name"))?
            .to_string();
        let mut files = Vec::new();
        let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            if entry.file_type()?.is_file() {
                let name = entry.file_name().to_string_lossy().into_owned();
                files.push((name, std::fs::read(entry.path())?));
            }
        }
        Ok(self.add_release(repo, &tag, false, false, files))
    }

    /// Add `n` small synthetic stable releases `docker-ferrol-1-27-v1..=vn` (oldest first, so
    /// the listing shows `vn` first), each with one tiny asset.
    pub fn add_synthetic(&self, repo: &str, n: u32) {
        for i in 1..=n {
            let tag = format!("docker-ferrol-1-27-v{i}");
            self.add_release(
                repo,
                &tag,
                false,
                false,
                vec![("metadata.yaml".into(), format!("tag: {tag}\n").into_bytes())],
            );
        }
    }

    /// Mutate a repository's releases (e.g. drop digests, flip drafts).
    pub fn edit(&self, repo: &str, f: impl FnOnce(&mut Vec<FakeRelease>)) {
        f(self.lock().repos.entry(repo.to_string()).or_default());
    }

    /// Set the rate limit: `remaining` of `limit`, resetting `reset_in_secs` from now.
    pub fn set_rate_limit(&self, limit: u64, remaining: u64, reset_in_secs: u64) {
        let mut inner = self.lock();
        inner.limit = limit;
        inner.remaining = remaining;
        inner.reset_epoch = now_epoch() + reset_in_secs;
    }

    /// Answer the next `n` API requests with `status` (and `Retry-After` when given).
    pub fn fail_next(&self, n: u32, status: u16, retry_after: Option<u64>) {
        let mut inner = self.lock();
        inner.fail_next = n;
        inner.fail_status = status;
        inner.fail_retry_after = retry_after;
    }

    /// Cut every asset body to `n` bytes (with a matching `Content-Length`), or stop doing so.
    pub fn truncate_assets(&self, n: Option<usize>) {
        self.lock().truncate_assets_to = n;
    }

    /// Flip the first byte of every served asset body (or stop doing so).
    pub fn corrupt_assets(&self, on: bool) {
        self.lock().corrupt_assets = on;
    }

    /// Send asset bodies in `chunk`-byte pieces `every` apart (a slow download, for fault
    /// tests that kill a client mid-transfer), or at once again with `None`.
    pub fn throttle_assets(&self, throttle: Option<(usize, std::time::Duration)>) {
        self.lock().throttle = throttle;
    }

    /// Require this token on API requests (401 without it, like a private repository).
    pub fn require_token(&self, token: Option<&str>) {
        self.lock().required_token = token.map(str::to_string);
    }

    pub fn counts(&self) -> Counts {
        self.lock().counts.clone()
    }

    pub fn reset_counts(&self) {
        self.lock().counts = Counts::default();
    }
}

#[derive(serde::Deserialize)]
struct PageQuery {
    per_page: Option<String>,
    page: Option<String>,
}

fn rate_headers(inner: &Inner, headers: &mut HeaderMap) {
    let pairs = [
        ("x-ratelimit-limit", inner.limit.to_string()),
        ("x-ratelimit-remaining", inner.remaining.to_string()),
        ("x-ratelimit-reset", inner.reset_epoch.to_string()),
        (
            "x-ratelimit-used",
            (inner.limit - inner.remaining.min(inner.limit)).to_string(),
        ),
        ("x-ratelimit-resource", "core".to_string()),
    ];
    for (k, v) in pairs {
        if let Ok(v) = HeaderValue::from_str(&v) {
            headers.insert(k, v);
        }
    }
}

fn json_error(status: StatusCode, message: &str, doc: &str) -> (StatusCode, String) {
    let body = serde_json::json!({ "message": message, "documentation_url": doc }).to_string();
    (status, body)
}

/// Common gate of API requests: injected failures, auth, rate limit. `Err` is the response.
fn gate(inner: &mut Inner, headers: &HeaderMap) -> Result<(), Box<Response>> {
    if inner.fail_next > 0 {
        inner.fail_next -= 1;
        let status = StatusCode::from_u16(inner.fail_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (status, "{\"message\":\"Server Error\"}").into_response();
        if let Some(secs) = inner.fail_retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        return Err(Box::new(resp));
    }
    if let Some(token) = &inner.required_token {
        let got = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let ok = got.is_some_and(|g| g == format!("Bearer {token}") || g == format!("token {token}"));
        if !ok {
            let (s, b) = json_error(
                StatusCode::UNAUTHORIZED,
                "Bad credentials",
                "https://docs.github.com/rest",
            );
            return Err(Box::new((s, b).into_response()));
        }
    }
    Ok(())
}

fn rate_limited(inner: &Inner) -> Response {
    let (s, b) = json_error(
        StatusCode::FORBIDDEN,
        "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)",
        "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting",
    );
    let mut resp = (s, [(header::CONTENT_TYPE, "application/json; charset=utf-8")], b).into_response();
    rate_headers(inner, resp.headers_mut());
    resp
}

fn release_json(inner: &Inner, owner_repo: &str, r: &FakeRelease) -> serde_json::Value {
    let api = inner.api_addr;
    let assets: Vec<_> = r
        .assets
        .iter()
        .map(|a| {
            let mut v = serde_json::json!({
                "id": a.id,
                "name": a.name,
                "label": "",
                "content_type": "application/octet-stream",
                "state": "uploaded",
                "size": a.content.len(),
                "url": format!("http://{api}/repos/{owner_repo}/releases/assets/{}", a.id),
                "browser_download_url": format!("http://{api}/{owner_repo}/releases/download/{}/{}", r.tag_name, a.name),
            });
            v["digest"] = if a.with_digest {
                serde_json::Value::String(format!("sha256:{}", sha256_hex(&a.content)))
            } else {
                serde_json::Value::Null
            };
            v
        })
        .collect();
    serde_json::json!({
        "id": r.id,
        "url": format!("http://{api}/repos/{owner_repo}/releases/{}", r.id),
        "tag_name": r.tag_name,
        "target_commitish": "main",
        "name": r.name,
        "draft": r.draft,
        "prerelease": r.prerelease,
        "assets": assets,
    })
}

async fn list_releases(
    State(fake): State<FakeGitHub>,
    UrlPath((owner, repo)): UrlPath<(String, String)>,
    Query(q): Query<PageQuery>,
    headers: HeaderMap,
) -> Response {
    let mut inner = fake.lock();
    inner.counts.list += 1;
    if let Err(resp) = gate(&mut inner, &headers) {
        return *resp;
    }
    let key = format!("{owner}/{repo}");
    let Some(all) = inner.repos.get(&key) else {
        if inner.remaining == 0 {
            return rate_limited(&inner);
        }
        inner.remaining -= 1;
        let (s, b) = json_error(
            StatusCode::NOT_FOUND,
            "Not Found",
            "https://docs.github.com/rest/releases/releases#list-releases",
        );
        let mut resp = (s, b).into_response();
        rate_headers(&inner, resp.headers_mut());
        return resp;
    };
    let per_page: usize = q
        .per_page
        .as_deref()
        .and_then(|p| p.parse().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let page: usize = q.page.as_deref().and_then(|p| p.parse().ok()).unwrap_or(1).max(1);
    // Newest first. Drafts are listed (GitHub shows them to users with push access; the
    // fake always does, so clients must skip them).
    let newest_first: Vec<&FakeRelease> = all.iter().rev().collect();
    let last = newest_first.len().div_ceil(per_page).max(1);
    let items: Vec<_> = newest_first
        .iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .map(|r| release_json(&inner, &key, r))
        .collect();
    let body = serde_json::Value::Array(items).to_string();
    let etag = format!("\"{}\"", sha256_hex(body.as_bytes()));
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',').any(|t| {
                let t = t.trim();
                t == "*" || t == etag || t.strip_prefix("W/") == Some(etag.as_str())
            })
        });
    if matches {
        // "Making a conditional request does not count against your primary rate limit if a
        // 304 response is returned."
        inner.counts.not_modified += 1;
        let mut resp = StatusCode::NOT_MODIFIED.into_response();
        rate_headers(&inner, resp.headers_mut());
        if let Ok(v) = HeaderValue::from_str(&etag) {
            resp.headers_mut().insert(header::ETAG, v);
        }
        return resp;
    }
    if inner.remaining == 0 {
        return rate_limited(&inner);
    }
    inner.remaining -= 1;
    let base = format!(
        "http://{}/repos/{key}/releases?per_page={per_page}",
        inner.api_addr
    );
    let mut links = Vec::new();
    if page < last {
        links.push(format!("<{base}&page={}>; rel=\"next\"", page + 1));
        links.push(format!("<{base}&page={last}>; rel=\"last\""));
    }
    if page > 1 {
        links.push(format!("<{base}&page={}>; rel=\"prev\"", page - 1));
        links.push(format!("<{base}&page=1>; rel=\"first\""));
    }
    inner.counts.body_bytes += body.len() as u64;
    let mut resp = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        body,
    )
        .into_response();
    rate_headers(&inner, resp.headers_mut());
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    if !links.is_empty()
        && let Ok(v) = HeaderValue::from_str(&links.join(", "))
    {
        h.insert(header::LINK, v);
    }
    resp
}

fn find_asset<'a>(inner: &'a Inner, repo: &str, id: u64) -> Option<(&'a FakeRelease, &'a FakeAsset)> {
    inner
        .repos
        .get(repo)?
        .iter()
        .find_map(|r| r.assets.iter().find(|a| a.id == id).map(|a| (r, a)))
}

async fn get_asset(
    State(fake): State<FakeGitHub>,
    UrlPath((owner, repo, id)): UrlPath<(String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let mut inner = fake.lock();
    inner.counts.asset_api += 1;
    if let Err(resp) = gate(&mut inner, &headers) {
        return *resp;
    }
    if inner.remaining == 0 {
        return rate_limited(&inner);
    }
    inner.remaining -= 1;
    let key = format!("{owner}/{repo}");
    let Some((release, asset)) = find_asset(&inner, &key, id) else {
        let (s, b) = json_error(
            StatusCode::NOT_FOUND,
            "Not Found",
            "https://docs.github.com/rest/releases/assets",
        );
        let mut resp = (s, b).into_response();
        rate_headers(&inner, resp.headers_mut());
        return resp;
    };
    let wants_bytes = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/octet-stream"));
    let mut resp = if wants_bytes {
        // GitHub answers 302 to a signed URL on another host.
        let location = format!(
            "http://{}/download/{}?X-Amz-Signature=fake{}",
            inner.asset_addr, asset.id, asset.id
        );
        (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
    } else {
        let v = release_json(&inner, &key, release);
        let one = v["assets"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["id"] == asset.id))
            .cloned()
            .unwrap_or_default();
        (StatusCode::OK, axum::Json(one)).into_response()
    };
    rate_headers(&inner, resp.headers_mut());
    resp
}

async fn download_asset(
    State(fake): State<FakeGitHub>,
    UrlPath(id): UrlPath<u64>,
    headers: HeaderMap,
) -> Response {
    let mut inner = fake.lock();
    inner.counts.asset_download += 1;
    *inner.counts.downloads_by_asset.entry(id).or_default() += 1;
    if headers.contains_key(header::AUTHORIZATION) {
        inner.counts.asset_auth_rejected += 1;
        // What the object store says to a request with both a signature and a token.
        return (
            StatusCode::BAD_REQUEST,
            "<Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed</Message></Error>",
        )
            .into_response();
    }
    let found = inner
        .repos
        .values()
        .flat_map(|rs| rs.iter())
        .flat_map(|r| r.assets.iter())
        .find(|a| a.id == id)
        .map(|a| a.content.clone());
    let Some(content) = found else {
        return (StatusCode::NOT_FOUND, "NoSuchKey").into_response();
    };
    let len = inner
        .truncate_assets_to
        .map_or(content.len(), |n| n.min(content.len()));
    inner.counts.body_bytes += len as u64;
    let mut bytes = content[..len].to_vec();
    if inner.corrupt_assets
        && let Some(b) = bytes.first_mut()
    {
        *b ^= 0xff;
    }
    let body = match inner.throttle {
        None => Body::from(bytes),
        Some((chunk, every)) => {
            let chunk = chunk.max(1);
            let pieces: Vec<axum::body::Bytes> = bytes
                .chunks(chunk)
                .map(axum::body::Bytes::copy_from_slice)
                .collect();
            let stream = futures::stream::unfold(pieces.into_iter(), move |mut rest| async move {
                let next = rest.next()?;
                tokio::time::sleep(every).await;
                Some((Ok::<_, std::io::Error>(next), rest))
            });
            Body::from_stream(stream)
        }
    };
    let len = bytes_len_header(&inner, id);
    let mut resp = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/octet-stream")],
        body,
    )
        .into_response();
    if let Some(len) = len {
        resp.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    resp
}

/// The `Content-Length` of a (possibly truncated) asset body.
fn bytes_len_header(inner: &Inner, id: u64) -> Option<usize> {
    let content = inner
        .repos
        .values()
        .flat_map(|rs| rs.iter())
        .flat_map(|r| r.assets.iter())
        .find(|a| a.id == id)?
        .content
        .len();
    Some(inner.truncate_assets_to.map_or(content, |n| n.min(content)))
}
