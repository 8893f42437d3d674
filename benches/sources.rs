//! Release sources against the fake GitHub (`crates/capstan-testenv/src/fake_github.rs`), measured by hand
//! (requests and bytes are counts, not timings, so this is a plain harness that prints a
//! table; wall times are the median of several rounds):
//!
//! 1. polling 50 subscribed repositories (30 releases each): the first poll, then idle
//!    re-polls (ETag → one `304` per repository), one after the other and all at once;
//! 2. pulling a release of 4 × 8 MiB into an empty cache (throughput), then pulling it again
//!    (nothing may be transferred).
//!
//! `cargo bench --bench sources`; results in docs/benchmarks.md ("Issue 11").

// Benchmarks may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use capstan_source::cache::Cache;
use capstan_source::github::{Client, Config};
use capstan_source::pull::pull_github;
use capstan_testenv::fake_github::FakeGitHub;

const REPOS: usize = 50;
const ROUNDS: usize = 15;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

async fn poll_all(client: &Client, repos: &[String], concurrent: bool) {
    if concurrent {
        let all = futures::future::join_all(repos.iter().map(|r| client.releases(r))).await;
        for r in all {
            r.expect("poll");
        }
    } else {
        for r in repos {
            client.releases(r).await.expect("poll");
        }
    }
}

async fn bench() {
    let gh = FakeGitHub::start().await;
    let repos: Vec<String> = (0..REPOS).map(|i| format!("org{i}/stacks")).collect();
    for r in &repos {
        gh.add_synthetic(r, 30);
    }
    let config = || Config {
        base_url: gh.base_url(),
        ..Config::default()
    };
    println!("| measurement | requests | 304s | body bytes | wall time (median of {ROUNDS}) |");
    println!("|---|---|---|---|---|");
    for concurrent in [false, true] {
        let how = if concurrent { "all at once" } else { "one by one" };
        // First polls: fresh clients, full listings.
        let mut times = Vec::new();
        let mut counts = None;
        for _ in 0..ROUNDS {
            let client = Client::new(config()).expect("client");
            gh.reset_counts();
            let t = Instant::now();
            poll_all(&client, &repos, concurrent).await;
            times.push(t.elapsed());
            counts = Some(gh.counts());
        }
        let c = counts.expect("rounds ran");
        println!(
            "| first poll of {REPOS} repositories, {how} | {} | {} | {} | {} |",
            c.list,
            c.not_modified,
            c.body_bytes,
            ms(median(times))
        );
        // Idle re-polls: one client that has polled once.
        let client = Client::new(config()).expect("client");
        poll_all(&client, &repos, concurrent).await;
        let mut times = Vec::new();
        let mut counts = None;
        for _ in 0..ROUNDS {
            gh.reset_counts();
            let t = Instant::now();
            poll_all(&client, &repos, concurrent).await;
            times.push(t.elapsed());
            counts = Some(gh.counts());
        }
        let c = counts.expect("rounds ran");
        println!(
            "| idle re-poll of {REPOS} repositories, {how} | {} | {} | {} | {} |",
            c.list,
            c.not_modified,
            c.body_bytes,
            ms(median(times))
        );
    }

    // Pull throughput.
    let files: Vec<(String, Vec<u8>)> = (0..4u8)
        .map(|i| {
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(i);
            let data = (0..8 * 1024 * 1024)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            (format!("asset-{i}.tgz"), data)
        })
        .collect();
    let total: usize = files.iter().map(|(_, d)| d.len()).sum();
    gh.add_release("org/big", "docker-ferrol-1-27-v1", false, false, files);
    let mut times = Vec::new();
    let mut first_counts = None;
    let mut second = None;
    for _ in 0..5 {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cache = Cache::open(tmp.path()).expect("cache");
        let client = Client::new(config()).expect("client");
        gh.reset_counts();
        let t = Instant::now();
        let s = pull_github(&client, &cache, "org/big", "docker-ferrol-1-27-v1", |_| {})
            .await
            .expect("pull");
        times.push(t.elapsed());
        assert_eq!(s.downloaded_bytes as usize, total);
        first_counts = Some(gh.counts());
        gh.reset_counts();
        let t = Instant::now();
        let again = pull_github(&client, &cache, "org/big", "docker-ferrol-1-27-v1", |_| {})
            .await
            .expect("second pull");
        second = Some((t.elapsed(), again.downloaded_bytes, gh.counts()));
    }
    let t = median(times);
    let c = first_counts.expect("rounds ran");
    println!(
        "| pull 4 × 8 MiB into an empty cache | {} | 0 | {} | {} ({:.0} MiB/s) |",
        c.list + c.asset_api + c.asset_download,
        c.body_bytes,
        ms(t),
        total as f64 / 1048576.0 / t.as_secs_f64()
    );
    let (t2, bytes2, c2) = second.expect("rounds ran");
    println!(
        "| pull it again | {} | 0 | {} (downloaded: {bytes2}) | {} |",
        c2.list + c2.asset_api + c2.asset_download,
        c2.body_bytes,
        ms(t2)
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(bench());
}
