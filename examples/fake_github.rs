//! Serves release directories through the fake GitHub of the tests (`crates/capstan-testenv/src/fake_github.rs`)
//! and prints its API URL on stdout; runs until stdin closes. For trying the release commands
//! offline:
//!
//! ```sh
//! coproc cargo run --example fake_github -- scs/cluster-stacks ../shared/cluster-stack-releases/*
//! read -r URL <&"${COPROC[0]}"
//! capstan releases list scs/cluster-stacks --github-url "$URL"
//! ```
//!
//! Arguments: `OWNER/REPO DIR…` (each DIR one release, its name the tag, its files the assets).

// Examples may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((repo, dirs)) = args.split_first() else {
        return Err("usage: fake_github OWNER/REPO DIR…".into());
    };
    let gh = capstan_testenv::fake_github::FakeGitHub::start().await;
    let mut dirs: Vec<&String> = dirs.iter().collect();
    dirs.sort();
    for dir in dirs {
        gh.add_release_dir(repo, std::path::Path::new(dir))?;
    }
    println!("{}", gh.base_url());
    tokio::task::block_in_place(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
    });
    Ok(())
}
