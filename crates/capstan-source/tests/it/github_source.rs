//! The GitHub releases client against the fake GitHub: pagination, conditional re-polls,
//! rate limits, 5xx retries, asset redirects without the token.

use std::time::Duration;

use capstan_source::github::{Client, Config, GitHubError, Token};
use capstan_testenv::fake_github::FakeGitHub;

fn client(gh: &FakeGitHub, token: Option<&str>) -> Client {
    Client::new(Config {
        base_url: gh.base_url(),
        token: token.map(Token::new),
        backoff: Duration::from_millis(10),
        max_wait: Duration::from_secs(2),
        ..Config::default()
    })
    .unwrap()
}

#[tokio::test]
async fn lists_every_page_then_idle_repoll_is_one_304() {
    let gh = FakeGitHub::start().await;
    gh.add_synthetic("org/stacks", 250);
    let c = client(&gh, None);
    let releases = c.releases("org/stacks").await.unwrap();
    assert_eq!(releases.len(), 250);
    assert_eq!(releases[0].tag, "docker-ferrol-1-27-v250");
    assert_eq!(gh.counts().list, 3);
    gh.reset_counts();
    let again = c.releases("org/stacks").await.unwrap();
    assert_eq!(again, releases);
    let n = gh.counts();
    assert_eq!((n.list, n.not_modified), (1, 1));
    // A new release is seen on the next poll.
    gh.add_synthetic("org/stacks", 1);
    assert_eq!(c.releases("org/stacks").await.unwrap().len(), 251);
}

#[tokio::test]
async fn idle_poll_of_50_repositories_is_one_bodiless_304_each() {
    let gh = FakeGitHub::start().await;
    let repos: Vec<String> = (0..50).map(|i| format!("org{i}/stacks")).collect();
    for r in &repos {
        gh.add_synthetic(r, 3);
    }
    let c = client(&gh, None);
    for r in &repos {
        c.releases(r).await.unwrap();
    }
    gh.reset_counts();
    for r in &repos {
        assert_eq!(c.releases(r).await.unwrap().len(), 3);
    }
    let n = gh.counts();
    assert_eq!((n.list, n.not_modified, n.body_bytes), (50, 50, 0));
}

#[tokio::test]
async fn drafts_skipped_prereleases_optional_tags_not_names() {
    let gh = FakeGitHub::start().await;
    gh.add_release("o/r", "docker-ferrol-1-27-v1", false, false, vec![]);
    gh.add_release("o/r", "docker-ferrol-1-27-v2-beta.1", false, true, vec![]);
    gh.add_release("o/r", "docker-ferrol-1-27-v3", true, false, vec![]);
    let tags = |rs: Vec<capstan_source::github::Release>| rs.into_iter().map(|r| r.tag).collect::<Vec<_>>();
    assert_eq!(
        tags(client(&gh, None).releases("o/r").await.unwrap()),
        ["docker-ferrol-1-27-v1"]
    );
    let with_pre = Client::new(Config {
        base_url: gh.base_url(),
        include_prereleases: true,
        ..Config::default()
    })
    .unwrap();
    assert_eq!(
        tags(with_pre.releases("o/r").await.unwrap()),
        ["docker-ferrol-1-27-v2-beta.1", "docker-ferrol-1-27-v1"]
    );
}

#[tokio::test]
async fn server_errors_are_retried_and_rate_limits_reported() {
    let gh = FakeGitHub::start().await;
    gh.add_synthetic("o/r", 2);
    let c = client(&gh, None);
    gh.fail_next(3, 502, None);
    assert_eq!(c.releases("o/r").await.unwrap().len(), 2);
    assert_eq!(gh.counts().list, 4);
    gh.fail_next(10, 500, None);
    let e = c.releases("o/missing").await.unwrap_err();
    assert!(matches!(e, GitHubError::Status { status: 500, .. }), "{e}");
    gh.fail_next(0, 500, None);
    let e = c.releases("o/missing").await.unwrap_err();
    assert!(matches!(e, GitHubError::NotFound { .. }), "{e}");
    // Exhausted with a reset far away: a clear error, no long sleep.
    gh.set_rate_limit(60, 0, 3600);
    c.forget("o/r");
    let e = c.releases("o/r").await.unwrap_err();
    assert!(e.to_string().contains("rate limit exhausted"), "{e}");
    // Exhausted with a reset in 1 s: waits and succeeds.
    gh.set_rate_limit(60, 0, 0);
    let fake = gh.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        fake.set_rate_limit(60, 60, 3600);
    });
    assert_eq!(c.releases("o/r").await.unwrap().len(), 2);
}

#[tokio::test]
async fn asset_download_follows_redirect_without_token() {
    let gh = FakeGitHub::start().await;
    let content: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    gh.add_release(
        "o/r",
        "docker-ferrol-1-27-v1",
        false,
        false,
        vec![("c.tgz".into(), content.clone())],
    );
    gh.require_token(Some("s3cret"));
    let c = client(&gh, Some("s3cret"));
    assert!(!format!("{c:?}").contains("s3cret"));
    let rel = c.releases("o/r").await.unwrap();
    let asset = &rel[0].assets[0];
    assert_eq!(asset.size, 200_000);
    assert!(asset.sha256.is_some());
    let mut got = Vec::new();
    let n = c
        .download(asset, |b| {
            got.extend_from_slice(b);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(n, 200_000);
    assert_eq!(got, content);
    let counts = gh.counts();
    assert_eq!((counts.asset_download, counts.asset_auth_rejected), (1, 0));
    let anon = client(&gh, None);
    assert!(
        anon.releases("o/r")
            .await
            .unwrap_err()
            .to_string()
            .contains("Bad credentials")
    );
}

#[tokio::test]
async fn pull_shared_releases_through_the_fake_then_nothing_on_second_pull() {
    let root = std::env::var_os("CAPSTAN_SHARED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(capstan_testenv::REPO_ROOT).join("../shared"))
        .join("cluster-stack-releases");
    if !root.is_dir() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "missing {}",
            root.display()
        );
        eprintln!("SKIPPED pull_shared_releases: {} is missing", root.display());
        return;
    }
    let gh = FakeGitHub::start().await;
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for d in &dirs {
        gh.add_release_dir("scs/cluster-stacks", d).unwrap();
    }
    let c = client(&gh, None);
    let tmp = tempfile::tempdir().unwrap();
    let cache = capstan_source::cache::Cache::open(tmp.path()).unwrap();
    for d in &dirs {
        let tag = d.file_name().unwrap().to_str().unwrap();
        let s = capstan_source::pull::pull_github(&c, &cache, "scs/cluster-stacks", tag, |_| {})
            .await
            .unwrap();
        for (name, f) in &s.manifest.files {
            let want = std::fs::read(d.join(name)).unwrap();
            assert_eq!(
                std::fs::read(cache.blob_path(&f.sha256).unwrap()).unwrap(),
                want,
                "{tag}/{name}"
            );
        }
        cache.verify_release(&s.manifest).unwrap();
        let again = capstan_source::pull::pull_github(&c, &cache, "scs/cluster-stacks", tag, |_| {})
            .await
            .unwrap();
        assert_eq!((again.downloaded_bytes, again.downloaded_files), (0, 0));
    }
    let e =
        capstan_source::pull::pull_github(&c, &cache, "scs/cluster-stacks", "docker-ferrol-1-27-v9", |_| {})
            .await
            .unwrap_err()
            .to_string();
    assert!(
        e.contains("has no release \"docker-ferrol-1-27-v9\"") && e.contains("docker-ferrol-1-27-v1"),
        "{e}"
    );
}

#[tokio::test]
async fn truncated_or_corrupt_downloads_leave_no_release() {
    let gh = FakeGitHub::start().await;
    gh.add_release(
        "o/r",
        "docker-ferrol-1-27-v1",
        false,
        false,
        vec![("a.tgz".into(), b"0123456789".to_vec())],
    );
    let c = client(&gh, None);
    let tmp = tempfile::tempdir().unwrap();
    let cache = capstan_source::cache::Cache::open(tmp.path()).unwrap();
    gh.truncate_assets(Some(4));
    let e = capstan_source::pull::pull_github(&c, &cache, "o/r", "docker-ferrol-1-27-v1", |_| {})
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("a.tgz: size mismatch: expected 10 bytes, got 4"),
        "{e}"
    );
    gh.truncate_assets(None);
    gh.corrupt_assets(true);
    let e = capstan_source::pull::pull_github(&c, &cache, "o/r", "docker-ferrol-1-27-v1", |_| {})
        .await
        .unwrap_err();
    assert!(e.to_string().contains("a.tgz: sha256 mismatch"), "{e}");
    assert!(cache.releases().unwrap().is_empty());
    assert_eq!(std::fs::read_dir(tmp.path().join("tmp")).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_dir(tmp.path().join("blobs/sha256"))
            .unwrap()
            .count(),
        0
    );
    gh.corrupt_assets(false);
    let ok = capstan_source::pull::pull_github(&c, &cache, "o/r", "docker-ferrol-1-27-v1", |_| {})
        .await
        .unwrap();
    assert_eq!(ok.downloaded_bytes, 10);
}

#[tokio::test]
async fn hashes_json_must_match_a_hash_version_tag() {
    let gh = FakeGitHub::start().await;
    let hashes = br#"{"clusterStack": "hipstswjj1vqsatkn5sbscwe1ghuyor8okw0r1aspq"}"#.to_vec();
    gh.add_release(
        "o/r",
        "docker-ferrol-1-27-v0-sha-hipstsw",
        false,
        false,
        vec![("hashes.json".into(), hashes.clone())],
    );
    gh.add_release(
        "o/r",
        "docker-ferrol-1-27-v0-sha-abcdefg",
        false,
        false,
        vec![("hashes.json".into(), hashes)],
    );
    let c = client(&gh, None);
    let tmp = tempfile::tempdir().unwrap();
    let cache = capstan_source::cache::Cache::open(tmp.path()).unwrap();
    capstan_source::pull::pull_github(&c, &cache, "o/r", "docker-ferrol-1-27-v0-sha-hipstsw", |_| {})
        .await
        .unwrap();
    let e = capstan_source::pull::pull_github(&c, &cache, "o/r", "docker-ferrol-1-27-v0-sha-abcdefg", |_| {})
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "release o/r docker-ferrol-1-27-v0-sha-abcdefg: hashes.json: clusterStack \"hipstswjj1vqsatkn5sbscwe1ghuyor8okw0r1aspq\" does not start with the tag's hash \"abcdefg\": the assets are not the release the tag names"
    );
    assert_eq!(
        cache.releases().unwrap(),
        ["github/o/r/docker-ferrol-1-27-v0-sha-hipstsw"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_pulls_of_one_release_download_once() {
    let gh = FakeGitHub::start().await;
    let files: Vec<(String, Vec<u8>)> = (0..4)
        .map(|i| (format!("f{i}.tgz"), vec![i as u8; 100_000]))
        .collect();
    gh.add_release("o/r", "docker-ferrol-1-27-v1", false, false, files);
    let c = client(&gh, None);
    let tmp = tempfile::tempdir().unwrap();
    let cache = capstan_source::cache::Cache::open(tmp.path()).unwrap();
    let pull = || capstan_source::pull::pull_github(&c, &cache, "o/r", "docker-ferrol-1-27-v1", |_| {});
    let (a, b) = tokio::join!(pull(), pull());
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.manifest, b.manifest);
    assert_eq!(a.downloaded_files + b.downloaded_files, 4);
    assert_eq!(gh.counts().asset_download, 4);
}

/// GitHub's secondary rate limit (a `403` with `Retry-After`): the client waits once, then
/// fails with a message that says what to do instead of retrying for minutes.
#[tokio::test]
async fn secondary_rate_limit_is_honoured_once_then_reported() {
    let gh = FakeGitHub::start().await;
    gh.add_synthetic("org/stacks", 3);
    let c = client(&gh, None);
    // One 403 with Retry-After: 1 → one wait of about a second, then the listing.
    gh.fail_next(1, 403, Some(1));
    let started = std::time::Instant::now();
    assert_eq!(c.releases("org/stacks").await.unwrap().len(), 3);
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    // Two in a row: the second is reported, after one wait only.
    gh.reset_counts();
    gh.fail_next(5, 403, Some(1));
    let e = c.releases("org/stacks").await.unwrap_err();
    assert_eq!(gh.counts().list, 2, "one wait, then the error");
    assert!(
        matches!(e, GitHubError::SecondaryRateLimited { waited: true, .. }),
        "{e:?}"
    );
    let msg = e.to_string();
    for want in ["secondary rate limit", "Retry-After: 1 s", "wait 1 s", "token"] {
        assert!(msg.contains(want), "{want:?} in {msg}");
    }
    // Longer than the client waits at all (max_wait 2 s): reported at once.
    gh.reset_counts();
    gh.fail_next(1, 403, Some(60));
    let e = c.releases("org/stacks").await.unwrap_err();
    assert_eq!(gh.counts().list, 1);
    assert!(e.to_string().contains("wait 60 s"), "{e}");
    gh.fail_next(0, 403, None);
}

/// A server that accepts connections and never answers: every request fails after the
/// response timeout (tried twice), naming the host and the timeout; nothing hangs.
#[tokio::test]
async fn silent_server_times_out_naming_host_and_timeout() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let c = Client::new(Config {
        base_url: format!("http://{addr}"),
        backoff: Duration::from_millis(10),
        timeouts: capstan_source::net::NetworkTimeouts {
            connect: Duration::from_secs(1),
            response: Duration::from_millis(500),
            retries: 1,
        },
        ..Config::default()
    })
    .unwrap();
    let started = std::time::Instant::now();
    let e = tokio::time::timeout(Duration::from_secs(20), c.releases("org/stacks"))
        .await
        .expect("the client gives up by itself")
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(e, GitHubError::Timeout { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!(
            "{addr} sent nothing for 0.5 s (response timeout), 2 tries"
        )),
        "{msg}"
    );
    drop(silent);
}

/// A connection refused (nothing listens on the port) is reported with its cause, as the
/// registry client reports it, not only as "error sending request".
#[tokio::test]
async fn a_refused_connection_names_the_cause() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let c = Client::new(Config {
        base_url: format!("http://127.0.0.1:{port}"),
        backoff: Duration::from_millis(10),
        max_retries: 1,
        ..Config::default()
    })
    .unwrap();
    let e = c.releases("org/stacks").await.unwrap_err();
    assert!(matches!(e, GitHubError::Http { .. }), "{e:?}");
    assert!(e.to_string().contains("Connection refused"), "{e}");
}

/// A certificate the client does not trust gets the same answer every time: one try, and the
/// error says it is the certificate.
#[tokio::test]
async fn an_untrusted_certificate_is_not_retried() {
    let server = capstan_testenv::untrusted_tls::UntrustedTls::start();
    let c = Client::new(Config {
        base_url: server.url.clone(),
        backoff: Duration::from_millis(10),
        max_retries: 3,
        ..Config::default()
    })
    .unwrap();
    let e = c.releases("org/stacks").await.unwrap_err();
    assert_eq!(server.offered(), 1, "{e}");
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
}
