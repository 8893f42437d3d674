//! Crash safety of `capstan releases pull`: the process is killed (SIGKILL) at random points
//! of a slowed download from the fake GitHub, again and again into one cache. After every kill
//! no release may read as complete unless each of its files is byte-identical to the source;
//! a final pull completes and verifies.
//!
//! `CAPSTAN_PULL_KILLS=N` sets the number of kills (default 5); `scripts/fault-pull.sh` runs 20.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use capstan_source::cache::Cache;
use capstan_source::pull::github_key;
use capstan_testenv::fake_github::FakeGitHub;

const REPO: &str = "scs/cluster-stacks";
const TAG: &str = "docker-ferrol-1-27-v1";

/// A small xorshift generator: the seed is printed, so a failing run can be repeated with
/// `CAPSTAN_PULL_SEED`.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn files() -> BTreeMap<String, Vec<u8>> {
    let mut rng = Rng(0x5eed);
    (0..4)
        .map(|i| {
            let data: Vec<u8> = (0..150_000 + i * 37_000).map(|_| rng.next() as u8).collect();
            (format!("asset-{i}.tgz"), data)
        })
        .collect()
}

fn pull(base_url: &str, cache: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capstan"));
    cmd.args(["releases", "pull", REPO, TAG, "--github-url", base_url, "--cache"])
        .arg(cache)
        .env_remove("GITHUB_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Every complete release in the cache is byte-identical to the source. Returns whether the
/// release is complete.
fn check(cache: &Cache, source: &BTreeMap<String, Vec<u8>>, round: usize) -> bool {
    let keys = cache.releases().unwrap();
    let key = github_key(REPO, TAG);
    assert!(
        keys.iter().all(|k| *k == key),
        "round {round}: unexpected releases {keys:?}"
    );
    let Some(manifest) = cache.release(&key).unwrap() else {
        return false;
    };
    let names: Vec<&String> = manifest.files.keys().collect();
    assert_eq!(
        names,
        source.keys().collect::<Vec<_>>(),
        "round {round}: files of the release"
    );
    for (name, f) in &manifest.files {
        let blob = std::fs::read(cache.blob_path(&f.sha256).unwrap()).unwrap();
        assert!(
            blob == source[name],
            "round {round}: {name} reads as complete but differs from the source"
        );
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_pull_never_leaves_a_wrong_complete_release() {
    let kills: usize = std::env::var("CAPSTAN_PULL_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let seed: u64 = std::env::var("CAPSTAN_PULL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
                | 1
        });
    println!("pull_crash: {kills} kills, CAPSTAN_PULL_SEED={seed}");
    let source = files();
    let gh = FakeGitHub::start().await;
    gh.add_release(
        REPO,
        TAG,
        false,
        false,
        source.iter().map(|(n, d)| (n.clone(), d.clone())).collect(),
    );
    // ~20 chunks of 16 KiB per file, 4 ms apart: a pull takes a few hundred milliseconds.
    gh.throttle_assets(Some((16 * 1024, Duration::from_millis(4))));
    let base = gh.base_url();
    let tmp = tempfile::tempdir().unwrap();
    let result = tokio::task::spawn_blocking(move || {
        // How long one undisturbed pull takes (into a throw-away cache).
        let started = Instant::now();
        let out = pull(&base, &tmp.path().join("calibrate")).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let full = started.elapsed();
        println!("pull_crash: one pull takes {full:?}");

        let dir = tmp.path().join("cache");
        let cache = Cache::open(&dir).unwrap();
        let mut rng = Rng(seed);
        let mut completed_before_kill = 0;
        for round in 0..kills {
            // Kill anywhere between process start and the usual end (a pull that resumes
            // from an earlier round's blobs may finish sooner: that round checks a complete
            // release instead).
            let at = Duration::from_micros(rng.next() % (full.as_micros() as u64).max(1));
            let mut child = pull(&base, &dir).spawn().unwrap();
            std::thread::sleep(at);
            let _ = child.kill(); // SIGKILL
            let status = child.wait().unwrap();
            let complete = check(&cache, &source, round);
            println!("pull_crash: round {round}: killed at {at:?} ({status}); complete: {complete}");
            if complete {
                // Start over from an empty cache; partial state of killed pulls is kept
                // between rounds otherwise (the next pull must detect and redo it).
                completed_before_kill += 1;
                cache.gc(&Default::default()).unwrap();
            }
        }
        let out = pull(&base, &dir).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(check(&cache, &source, kills), "the final pull completes");
        let manifest = cache.release(&github_key(REPO, TAG)).unwrap().unwrap();
        cache.verify_release(&manifest).unwrap();
        // Leftovers of killed pulls are only temp files and unreferenced blobs: GC takes them.
        cache
            .gc(&std::collections::BTreeSet::from([github_key(REPO, TAG)]))
            .unwrap();
        assert_eq!(std::fs::read_dir(dir.join("tmp")).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_dir(dir.join("blobs/sha256")).unwrap().count(),
            source.len()
        );
        completed_before_kill
    })
    .await
    .unwrap();
    println!("pull_crash: {result} of {kills} kills came after the release was complete");
}
