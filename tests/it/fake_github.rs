//! The fake GitHub itself behaves like GitHub's documented REST API (pagination, ETag/304,
//! rate limits, injected 5xx, asset redirect to another host that refuses tokens). Checked with
//! a raw HTTP/1.1 client so nothing of capstan's client is assumed.

use capstan_testenv::fake_github::FakeGitHub;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("json body")
    }
}

/// GET `url` (http://host:port/path) with extra headers; the connection closes after one reply.
async fn get(url: &str, headers: &[(&str, &str)]) -> Resp {
    let rest = url.strip_prefix("http://").expect("http url");
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let mut s = tokio::net::TcpStream::connect(host).await.expect("connect");
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.expect("read");
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("header end");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let nl = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let n = usize::from_str_radix(std::str::from_utf8(&rest[..nl]).unwrap().trim(), 16).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&rest[nl + 2..nl + 2 + n]);
            rest = &rest[nl + 2 + n + 2..];
        }
        body = out;
    }
    Resp {
        status,
        headers,
        body,
    }
}

fn next_link(link: Option<&str>) -> Option<String> {
    link?.split(',').find_map(|part| {
        let (url, rel) = part.split_once(';')?;
        rel.contains("rel=\"next\"").then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
    })
}

#[tokio::test]
async fn pagination_links_cover_all_releases_newest_first() {
    let gh = FakeGitHub::start().await;
    gh.add_synthetic("org/stacks", 250);
    let mut url = Some(format!(
        "{}/repos/org/stacks/releases?per_page=100",
        gh.base_url()
    ));
    let mut tags = Vec::new();
    let mut pages = 0;
    while let Some(u) = url {
        let r = get(&u, &[]).await;
        assert_eq!(r.status, 200);
        pages += 1;
        if pages == 1 {
            let link = r.header("link").unwrap();
            assert!(link.contains("page=3>; rel=\"last\""), "{link}");
        }
        for rel in r.json().as_array().unwrap() {
            tags.push(rel["tag_name"].as_str().unwrap().to_string());
            assert_ne!(rel["name"], rel["tag_name"]);
        }
        url = next_link(r.header("link"));
    }
    assert_eq!(pages, 3);
    assert_eq!(tags.len(), 250);
    assert_eq!(tags[0], "docker-ferrol-1-27-v250");
    assert_eq!(tags[249], "docker-ferrol-1-27-v1");
    // Default page size is 30.
    let r = get(&format!("{}/repos/org/stacks/releases", gh.base_url()), &[]).await;
    assert_eq!(r.json().as_array().unwrap().len(), 30);
    assert_eq!(gh.counts().list, 4);
}

#[tokio::test]
async fn etag_304_does_not_cost_rate_limit() {
    let gh = FakeGitHub::start().await;
    gh.add_synthetic("o/r", 3);
    let url = format!("{}/repos/o/r/releases", gh.base_url());
    let first = get(&url, &[]).await;
    let etag = first.header("etag").unwrap().to_string();
    let remaining: u64 = first.header("x-ratelimit-remaining").unwrap().parse().unwrap();
    assert_eq!(first.header("x-ratelimit-limit"), Some("5000"));
    assert!(first.header("x-ratelimit-reset").is_some());
    let again = get(&url, &[("If-None-Match", &etag)]).await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(
        again
            .header("x-ratelimit-remaining")
            .unwrap()
            .parse::<u64>()
            .unwrap(),
        remaining
    );
    // A change makes the ETag stale.
    gh.add_synthetic("o/r", 1);
    let changed = get(&url, &[("If-None-Match", &etag)]).await;
    assert_eq!(changed.status, 200);
    assert_ne!(changed.header("etag").unwrap(), etag);
    assert_eq!(gh.counts().not_modified, 1);
}

#[tokio::test]
async fn rate_limit_exhaustion_and_injected_errors() {
    let gh = FakeGitHub::start().await;
    gh.add_synthetic("o/r", 1);
    let url = format!("{}/repos/o/r/releases", gh.base_url());
    gh.set_rate_limit(60, 1, 120);
    assert_eq!(get(&url, &[]).await.status, 200);
    let limited = get(&url, &[]).await;
    assert_eq!(limited.status, 403);
    assert_eq!(limited.header("x-ratelimit-remaining"), Some("0"));
    assert_eq!(limited.header("x-ratelimit-used"), Some("60"));
    assert!(
        limited.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("API rate limit exceeded")
    );
    gh.set_rate_limit(60, 60, 120);
    gh.fail_next(2, 503, Some(1));
    let e = get(&url, &[]).await;
    assert_eq!(e.status, 503);
    assert_eq!(e.header("retry-after"), Some("1"));
    assert_eq!(get(&url, &[]).await.status, 503);
    assert_eq!(get(&url, &[]).await.status, 200);
    assert_eq!(
        get(&format!("{}/repos/o/missing/releases", gh.base_url()), &[])
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn asset_redirects_to_another_host_that_refuses_tokens() {
    let gh = FakeGitHub::start().await;
    gh.add_release(
        "o/r",
        "docker-ferrol-1-27-v1",
        false,
        false,
        vec![("a.tgz".into(), b"hello".to_vec())],
    );
    let list = get(&format!("{}/repos/o/r/releases", gh.base_url()), &[])
        .await
        .json();
    let asset = &list[0]["assets"][0];
    assert_eq!(asset["size"], 5);
    assert_eq!(
        asset["digest"],
        "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    );
    let url = asset["url"].as_str().unwrap();
    let meta = get(url, &[]).await;
    assert_eq!(meta.status, 200);
    assert_eq!(meta.json()["name"], "a.tgz");
    let redirect = get(
        url,
        &[
            ("Accept", "application/octet-stream"),
            ("Authorization", "Bearer t"),
        ],
    )
    .await;
    assert_eq!(redirect.status, 302);
    let location = redirect.header("location").unwrap().to_string();
    assert!(location.contains(&gh.asset_host()));
    assert!(!location.contains(&gh.base_url()));
    let refused = get(&location, &[("Authorization", "Bearer t")]).await;
    assert_eq!(refused.status, 400);
    let ok = get(&location, &[]).await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.body, b"hello");
    gh.truncate_assets(Some(2));
    assert_eq!(get(&location, &[]).await.body, b"he");
    assert_eq!(gh.counts().asset_auth_rejected, 1);
}

#[tokio::test]
async fn serves_shared_release_directories() {
    let Some(root) = shared_releases() else { return };
    let gh = FakeGitHub::start().await;
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for d in &dirs {
        gh.add_release_dir("sovereigncloudstack/cluster-stacks", d)
            .unwrap();
    }
    let list = get(
        &format!(
            "{}/repos/sovereigncloudstack/cluster-stacks/releases",
            gh.base_url()
        ),
        &[],
    )
    .await
    .json();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), dirs.len());
    for rel in list {
        let tag = rel["tag_name"].as_str().unwrap();
        let dir = root.join(tag);
        for asset in rel["assets"].as_array().unwrap() {
            let bytes = std::fs::read(dir.join(asset["name"].as_str().unwrap())).unwrap();
            assert_eq!(asset["size"].as_u64().unwrap(), bytes.len() as u64);
        }
    }
}

fn shared_releases() -> Option<std::path::PathBuf> {
    let root = std::env::var_os("CAPSTAN_SHARED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"))
        .join("cluster-stack-releases");
    if root.is_dir() {
        return Some(root);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "shared releases missing: {}",
        root.display()
    );
    eprintln!(
        "SKIPPED serves_shared_release_directories: {} is missing",
        root.display()
    );
    None
}
