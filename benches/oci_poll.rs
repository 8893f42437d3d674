//! OCI registry as a release source, against the real registry (docker-registry with token
//! auth, as Harbor and registry.scs.community answer: anonymous pulls through a Bearer token):
//! requests per operation, counted by the client's observer and the token issuer, and median
//! wall times. A plain harness that prints a table:
//!
//! 1. listing a repository of 150 release tags (pages of 100): the first poll (challenge and
//!    token), and an idle re-poll with the token live;
//! 2. pulling a release into an empty cache, a pull of the cached release (no request), and a
//!    re-check that the cached tag is unchanged (one `HEAD`).
//!
//! `cargo bench --bench oci_poll`; skipped when docker-registry or the shared releases are
//! missing. Results in docs/benchmarks.md ("Issue 24").

// Benchmarks may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capstan_source::cache::Cache;
use capstan_source::oci::client::RequestSeen;
use capstan_source::oci::release::{self, OciRepo, PushOptions};
use capstan_source::oci::{Client, Config, Credentials};
use capstan_testenv::registry::{Auth, PASSWORD, Registry, TokenIssuer, USER};

const TAGS: usize = 150;
const ROUNDS: usize = 15;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let Some(bin) = capstan_testenv::registry::binary() else {
        eprintln!("oci_poll: docker-registry not found (scripts/install-test-deps.sh); skipped");
        return;
    };
    let shared = std::env::var_os("CAPSTAN_SHARED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .ancestors()
                .skip(1)
                .map(|d| d.join("shared"))
                .find(|d| d.is_dir())
                .unwrap_or_default()
        });
    let v1 = shared.join("cluster-stack-releases/docker-ferrol-1-27-v1");
    if !v1.is_dir() {
        eprintln!("oci_poll: {} missing (CAPSTAN_SHARED); skipped", v1.display());
        return;
    }
    let issuer = TokenIssuer::start();
    let tokens = issuer.requests.clone();
    let reg = Registry::start(&bin, Auth::Token(issuer));
    let repo = OciRepo::parse(&format!("oci://{}/kaas/cluster-stacks", reg.host())).unwrap();
    let seen: Arc<Mutex<Vec<RequestSeen>>> = Arc::default();
    let s = seen.clone();
    let observer: capstan_source::oci::client::Observer =
        Arc::new(move |r: &RequestSeen| s.lock().unwrap().push(r.clone()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let pusher = Client::new(
            &reg.host(),
            Config {
                credentials: Credentials::from_parts(Some(USER.into()), Some(PASSWORD.into()), None),
                ..Config::default()
            },
        )
        .unwrap();
        let opts = PushOptions {
            created: Some("2026-01-01T00:00:00Z".into()),
            ..PushOptions::default()
        };
        release::push(&pusher, &repo, &v1, &opts).await.unwrap();
        let m = pusher
            .manifest(&repo.repository, "docker-ferrol-1-27-v1")
            .await
            .unwrap();
        for i in 0..TAGS - 1 {
            let tag = format!("docker-ferrol-1-27-v{}", i + 100);
            pusher
                .put_manifest(
                    &repo.repository,
                    &tag,
                    capstan_source::oci::manifest::OCI_MANIFEST,
                    m.bytes.clone(),
                )
                .await
                .unwrap();
        }
    });
    let count = |f: &dyn Fn()| {
        seen.lock().unwrap().clear();
        let t0 = tokens.load(Ordering::SeqCst);
        f();
        (seen.lock().unwrap().len(), tokens.load(Ordering::SeqCst) - t0)
    };
    let client = || {
        Client::new(
            &reg.host(),
            Config {
                observer: Some(observer.clone()),
                ..Config::default()
            },
        )
        .unwrap()
    };
    println!(
        "| measurement | requests (registry + token endpoint) | tokens | wall time (median of {ROUNDS}) |"
    );
    println!("|---|---|---|---|");
    // 1. Listing.
    let mut first = Vec::new();
    let mut first_counts = (0, 0);
    for _ in 0..ROUNDS {
        let c = client();
        let t = Instant::now();
        first_counts = count(&|| {
            let tags = rt.block_on(release::tags(&c, &repo)).unwrap();
            assert_eq!(tags.len(), TAGS);
        });
        first.push(t.elapsed());
    }
    println!(
        "| first poll of {TAGS} tags (new client: challenge, token, 2 pages) | {} | {} | {} |",
        first_counts.0,
        first_counts.1,
        ms(median(first))
    );
    let c = client();
    rt.block_on(release::tags(&c, &repo)).unwrap();
    let mut idle = Vec::new();
    let mut idle_counts = (0, 0);
    for _ in 0..ROUNDS {
        let t = Instant::now();
        idle_counts = count(&|| {
            rt.block_on(release::tags(&c, &repo)).unwrap();
        });
        idle.push(t.elapsed());
    }
    println!(
        "| idle re-poll of {TAGS} tags (token live) | {} | {} | {} |",
        idle_counts.0,
        idle_counts.1,
        ms(median(idle))
    );
    // 2. Pulls.
    let tag = "docker-ferrol-1-27-v1";
    let mut cold = Vec::new();
    let mut cold_counts = (0, 0);
    let c = client();
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let t = Instant::now();
        cold_counts = count(&|| {
            rt.block_on(release::pull(&c, &cache, &repo, tag, false, |_| {}))
                .unwrap();
        });
        cold.push(t.elapsed());
    }
    println!(
        "| pull {tag} (5 files) into an empty cache (token live) | {} | {} | {} |",
        cold_counts.0,
        cold_counts.1,
        ms(median(cold))
    );
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    rt.block_on(release::pull(&c, &cache, &repo, tag, false, |_| {}))
        .unwrap();
    for (revalidate, what) in [
        (false, "pull it again (cached)"),
        (true, "pull it again, tag re-checked"),
    ] {
        let mut times = Vec::new();
        let mut counts = (0, 0);
        for _ in 0..ROUNDS {
            let t = Instant::now();
            counts = count(&|| {
                rt.block_on(release::pull(&c, &cache, &repo, tag, revalidate, |_| {}))
                    .unwrap();
            });
            times.push(t.elapsed());
        }
        println!("| {what} | {} | {} | {} |", counts.0, counts.1, ms(median(times)));
    }
}
